//===- LayerPlan.cpp - Find the repeated layers of a forward pass ---------===//
#include "tessera/Transforms/Layers/Passes.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRLAYERPLAN
#include "tessera/Transforms/Layers/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// Constants: copied into every function that reads them, so they belong
/// to no layer.
bool isConstantLike(Operation *op) {
  return op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
         op->getNumResults() > 0 && isMemoryEffectFree(op);
}

/// What an op computes, blind to which values it reads: its name,
/// attributes (but the planners' marks), operand and result types, and
/// the same of the ops in its regions.
llvm::hash_code signature(Operation *op) {
  llvm::hash_code h = llvm::hash_value(op->getName().getStringRef());
  op->walk([&](Operation *inner) {
    h = llvm::hash_combine(h, inner->getName().getStringRef());
    for (NamedAttribute a : inner->getAttrDictionary())
      if (a.getName() != tsr::attr::kLayer && a.getName() != tsr::attr::kStage)
        h = llvm::hash_combine(h, a.getName(), a.getValue());
    for (Type t : inner->getOperandTypes())
      h = llvm::hash_combine(h, t);
    for (Type t : inner->getResultTypes())
      h = llvm::hash_combine(h, t);
  });
  return h;
}

/// The layers found: `count` copies of `period` ops from `ops[start]`.
struct Layers {
  int64_t start = 0, period = 0, count = 0;
  double cutBytes = 0;
  int64_t covered() const { return period * count; }
  bool betterThan(const Layers &o) const {
    if (covered() != o.covered())
      return covered() > o.covered();
    if (count != o.count)
      return count > o.count;
    return cutBytes < o.cutBytes;
  }
};

struct TsrLayerPlanPass : tessera::impl::TsrLayerPlanBase<TsrLayerPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f))
      return signalPassFailure();
    if (minOps < 1 || minLayers < 2) {
      f->emitError("tsr-layer-plan: min-ops must be at least 1 and "
                   "min-layers at least 2, got ")
          << minOps.getValue() << " and " << minLayers.getValue();
      return signalPassFailure();
    }
    plan(*f);
  }

  void plan(func::FuncOp f);
};

void TsrLayerPlanPass::plan(func::FuncOp f) {
  if (!f.getBody().hasOneBlock())
    return;
  Block &body = f.getBody().front();
  bool done = false;
  body.walk([&](Operation *op) {
    done |= op->hasAttr(tsr::attr::kBackward) || op->hasAttr(tsr::attr::kLayer);
  });
  if (done)
    return; // Differentiated or planned already.

  SmallVector<Operation *> ops;
  SmallVector<llvm::hash_code> sig;
  llvm::DenseMap<Operation *, int64_t> index;
  for (Operation &op : body.without_terminator()) {
    if (isConstantLike(&op))
      continue;
    index[&op] = static_cast<int64_t>(ops.size());
    ops.push_back(&op);
    sig.push_back(signature(&op));
  }
  auto n = static_cast<int64_t>(ops.size());

  // crossing[j]: bytes of the values live across the cut before ops[j]
  // (defined before it, read at or after it).
  SmallVector<double> delta(n + 1, 0), crossing(n + 1, 0);
  auto addLive = [&](Value v, int64_t from) {
    int64_t last = -1;
    for (Operation *user : v.getUsers())
      if (auto it = index.find(body.findAncestorOpInBlock(*user));
          it != index.end())
        last = std::max(last, it->second);
    if (last <= from)
      return;
    double bytes = double(tsr::getStaticTensorBytes(v.getType()));
    delta[from + 1] += bytes;
    delta[last + 1] -= bytes;
  };
  for (auto [i, op] : llvm::enumerate(ops))
    for (Value r : op->getResults())
      addLive(r, static_cast<int64_t>(i));
  for (BlockArgument arg : f.getArguments()) {
    int64_t first = n;
    for (Operation *user : arg.getUsers())
      if (auto it = index.find(body.findAncestorOpInBlock(*user));
          it != index.end())
        first = std::min(first, it->second);
    if (first < n)
      addLive(arg, first);
  }
  for (int64_t j = 1; j <= n; ++j)
    crossing[j] = crossing[j - 1] + delta[j];

  // Every run where the signatures repeat with period P: the copies it
  // holds, aligned where the cuts carry the fewest bytes.
  Layers best;
  for (int64_t p = minOps; 2 * p <= n; ++p) {
    for (int64_t i = 0; i + p < n;) {
      if (sig[i] != sig[i + p]) {
        ++i;
        continue;
      }
      int64_t from = i;
      while (i + p < n && sig[i] == sig[i + p])
        ++i;
      int64_t span = i - from + p, count = span / p;
      if (count < 2)
        continue;
      for (int64_t s = 0; s + count * p <= span; ++s) {
        Layers candidate{from + s, p, count, 0};
        for (int64_t k = 0; k <= count; ++k)
          candidate.cutBytes += crossing[from + s + k * p];
        if (candidate.betterThan(best))
          best = candidate;
      }
    }
  }
  if (best.count < 2)
    return;

  // How each copy reads its operands: a result of its own op (by position)
  // or a value from outside (by first use). Copies that read alike can
  // share one function.
  auto readPattern = [&](int64_t k) {
    int64_t begin = best.start + k * best.period;
    llvm::DenseMap<Value, int64_t> outside;
    SmallVector<int64_t> pattern;
    for (int64_t j = 0; j < best.period; ++j) {
      Operation *op = ops[begin + j];
      op->walk([&](Operation *inner) {
        for (Value v : inner->getOperands()) {
          Operation *def = v.getDefiningOp();
          if (def && op->isAncestor(def))
            continue;
          if (!def && op->isAncestor(v.getParentBlock()->getParentOp()))
            continue;
          Operation *top = def ? body.findAncestorOpInBlock(*def) : nullptr;
          auto it = top ? index.find(top) : index.end();
          if (it != index.end() && it->second >= begin &&
              it->second < begin + best.period) {
            pattern.push_back((it->second - begin) * 1024 +
                              cast<OpResult>(v).getResultNumber());
            continue;
          }
          auto [slot, fresh] = outside.try_emplace(v, outside.size());
          pattern.push_back(-1 - slot->second);
        }
      });
    }
    return pattern;
  };
  // The longest run of consecutive copies that read alike.
  int64_t runStart = 0, runLength = 1, bestStart = 0, bestLength = 1;
  SmallVector<int64_t> previous = readPattern(0);
  for (int64_t k = 1; k < best.count; ++k) {
    SmallVector<int64_t> pattern = readPattern(k);
    if (pattern == previous) {
      if (++runLength > bestLength) {
        bestLength = runLength;
        bestStart = runStart;
      }
    } else {
      runStart = k;
      runLength = 1;
    }
    previous = std::move(pattern);
  }
  if (bestLength < minLayers)
    return;

  Builder b(f.getContext());
  for (int64_t k = 0; k < bestLength; ++k) {
    int64_t begin = best.start + (bestStart + k) * best.period;
    for (int64_t j = 0; j < best.period; ++j)
      ops[begin + j]->setAttr(tsr::attr::kLayer, b.getI64IntegerAttr(k));
  }
}

} // namespace
