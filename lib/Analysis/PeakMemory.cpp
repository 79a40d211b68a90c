//===- PeakMemory.cpp - Liveness and peak memory of a tsr function --------===//
#include "tessera/Analysis/PeakMemory.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// Ops whose result is a view of (or the same buffer as) operand 0.
bool isAlias(Operation *op) {
  return isa<tsr::ReshapeOp, tsr::StopGradientOp, tsr::IdentityOp, tsr::WaitOp>(
      op);
}

/// Ops that lower to one all-parallel loop nest reading their operands
/// elementwise (with broadcasting): fusible into a single user.
bool isElementwise(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>() ||
         isa<tsr::AddOp, tsr::SubOp, tsr::MulOp, tsr::DivOp, tsr::PowOp,
             tsr::MaxOp, tsr::MinOp, tsr::ModOp, tsr::AndOp, tsr::OrOp,
             tsr::XorOp, tsr::EqualOp, tsr::LessOp, tsr::LessEqualOp,
             tsr::GreaterOp, tsr::GreaterEqualOp, tsr::PReluOp, tsr::WhereOp,
             tsr::BroadcastOp>(op);
}

/// Ops that lower to a loop nest a fused producer can be folded into:
/// elementwise ops and reductions (not the GEMMs, which stay library
/// calls, nor ops with their own access patterns).
bool acceptsFusion(Operation *op) {
  return isElementwise(op) ||
         isa<tsr::ReduceSumOp, tsr::ReduceMeanOp, tsr::ReduceMaxOp,
             tsr::ReduceMinOp, tsr::ReduceProdOp>(op);
}

} // namespace

PeakMemory mlir::tessera::predictPeakMemory(func::FuncOp f) {
  PeakMemory result;
  if (f.getBody().empty())
    return result;
  Block &body = f.getBody().front();
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> position;
  for (Operation &op : body) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  int64_t end = ops.size();

  // The buffer a value lives in (itself, or what it aliases).
  DenseMap<Value, Value> owner;
  auto ownerOf = [&](Value v) {
    auto it = owner.find(v);
    return it == owner.end() ? v : it->second;
  };
  // Buffers: defined at `def`, last read at `last`.
  struct Buffer {
    int64_t bytes, def, last;
  };
  llvm::MapVector<Value, Buffer> buffers;
  // Extra bytes an op holds while it runs (a callee's peak).
  DenseMap<int64_t, int64_t> transient;

  auto use = [&](Value v, int64_t at) {
    auto it = buffers.find(ownerOf(v));
    if (it != buffers.end())
      it->second.last = std::max(it->second.last, at);
  };
  for (Operation *op : ops) {
    int64_t at = position[op];
    // A fused producer reads its operands where its user runs.
    int64_t readAt = at;
    if (isElementwise(op) && op->getNumResults() == 1 &&
        op->getResult(0).hasOneUse()) {
      Operation *user = *op->getResult(0).getUsers().begin();
      if (acceptsFusion(user) && user->getBlock() == &body)
        readAt = position[user];
    }
    for (Value operand : op->getOperands())
      use(operand, readAt);
    if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
              op, call.getCalleeAttr()))
        transient[at] += predictPeakMemory(callee).peakBytes;
    if (isa<func::ReturnOp>(op)) {
      for (Value operand : op->getOperands())
        use(operand, end);
      continue;
    }
    for (Value r : op->getResults()) {
      if (isAlias(op)) {
        owner[r] = ownerOf(op->getOperand(0));
        continue;
      }
      if (isa<tsr::ConstantOp>(op))
        continue;
      bool fused = isElementwise(op) && r.hasOneUse() &&
                   acceptsFusion(*r.getUsers().begin());
      if (fused)
        continue;
      buffers[r] = {tsr::getStaticTensorBytes(r.getType()), at, at};
    }
  }

  SmallVector<int64_t> live(end + 1, 0);
  for (auto &[value, buffer] : buffers)
    for (int64_t p = buffer.def; p <= buffer.last && p <= end; ++p)
      live[p] += buffer.bytes;
  int64_t at = -1;
  for (int64_t p = 0; p < end; ++p) {
    int64_t bytes = live[p] + transient.lookup(p);
    if (bytes > result.peakBytes) {
      result.peakBytes = bytes;
      at = p;
    }
  }
  if (at < 0)
    return result;
  result.peakOp = ops[at];
  for (auto &[value, buffer] : buffers)
    if (buffer.def <= at && at <= buffer.last)
      result.liveAtPeak.push_back({value, buffer.bytes});
  llvm::stable_sort(result.liveAtPeak,
                    [](auto &a, auto &b) { return a.second > b.second; });
  return result;
}
