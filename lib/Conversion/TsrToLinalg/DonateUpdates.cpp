//===- DonateUpdates.cpp - Write updated values into their arguments ------===//
#include "tessera/Conversion/TsrToLinalg/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRDONATEUPDATES
#include "tessera/Conversion/TsrToLinalg/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

bool isView(Operation *op) {
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp,
             tensor::ExtractSliceOp>(op);
}

/// The argument whose buffer `v` may share after bufferization: `v` itself,
/// or the source of the views that produce it.
BlockArgument viewedArgument(Value v) {
  while (Operation *op = v.getDefiningOp()) {
    if (!isView(op))
      return nullptr;
    v = op->getOperand(0);
  }
  return dyn_cast<BlockArgument>(v);
}

/// The init of the op that writes `v`, if that op is a linalg op of
/// `body` whose payload never reads that init and which writes it into a
/// fresh tensor.empty used by nothing else: an op that may write `v` into
/// any buffer of its type.
OpOperand *freshInit(Value v, Block &body) {
  auto op = v.getDefiningOp<linalg::LinalgOp>();
  if (!op || op->getBlock() != &body || !op.hasPureTensorSemantics())
    return nullptr;
  OpOperand *init = op.getDpsInitOperand(cast<OpResult>(v).getResultNumber());
  auto empty = init->get().getDefiningOp<tensor::EmptyOp>();
  if (!empty || !empty->hasOneUse() || op.payloadUsesValueFromOperand(init))
    return nullptr;
  return init;
}

/// Whether `writer` may overwrite `arg` in place: every other op that
/// reads it (or a view of it) runs before, and each read of `writer`'s own
/// is one `ownRead` accepts (so bufferization's conflict analysis finds
/// nothing to copy).
bool readBefore(BlockArgument arg, Operation *writer, func::ReturnOp ret,
                function_ref<bool(OpOperand &, Value)> ownRead) {
  SmallVector<Value> worklist = {arg};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      // A read in a region (a gather's tensor.extract) is its op's.
      Operation *user =
          writer->getBlock()->findAncestorOpInBlock(*use.getOwner());
      if (!user)
        return false;
      if (user == ret) // tsr-donate-updates rejected other returns of it.
        continue;
      if (isView(user)) {
        worklist.push_back(user->getResult(0));
        continue;
      }
      if (user == writer) {
        if (!ownRead(use, v))
          return false;
        continue;
      }
      if (!user->isBeforeInBlock(writer))
        return false;
    }
  }
  return true;
}

/// Whether `init`'s op may overwrite `arg` in place: it reads `arg` only
/// directly, element for element as it writes.
bool overwritable(BlockArgument arg, OpOperand *init, func::ReturnOp ret) {
  auto writer = cast<linalg::LinalgOp>(init->getOwner());
  return readBefore(arg, writer, ret, [&](OpOperand &use, Value v) {
    return use.getOwner() == writer.getOperation() && v == arg &&
           writer.getMatchingIndexingMap(&use) ==
               writer.getMatchingIndexingMap(init);
  });
}

/// Whether the call `v` is a result of writes it into the buffer of `arg`,
/// its operand, in place: the callee returns the result in the buffer of
/// the argument it passes `arg` as (its `tsr.in_place`), `arg` is passed
/// once, and every other op that reads it (or a view of it) runs before.
bool writtenByCall(Value v, BlockArgument arg, func::ReturnOp ret,
                   SymbolTable &symbols) {
  auto call = v.getDefiningOp<func::CallOp>();
  if (!call || call->getBlock() != ret->getBlock())
    return false;
  auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
  auto inPlace =
      callee ? callee->getAttrOfType<DenseI64ArrayAttr>(tsr::attr::kInPlace)
             : DenseI64ArrayAttr();
  unsigned i = cast<OpResult>(v).getResultNumber();
  if (!inPlace || i >= inPlace.size() || inPlace[i] < 0 ||
      call.getOperand(inPlace[i]) != arg ||
      llvm::count(call.getOperands(), Value(arg)) != 1)
    return false;
  return readBefore(arg, call, ret,
                    [&](OpOperand &, Value read) { return read == arg; });
}

/// Donates the results of `f` that `tsr.updates` marks; see the pass.
void donate(func::FuncOp f, SymbolTable &symbols) {
  if (f.isExternal() || !f.getBody().hasOneBlock())
    return;
  MLIRContext *ctx = f.getContext();
  StringAttr updatesName = StringAttr::get(ctx, tsr::attr::kUpdates);
  Block &body = f.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<int64_t> inPlace(f.getNumResults(), -1);
  DenseSet<unsigned> donated;
  for (unsigned k = 0; k < f.getNumResults(); ++k) {
    auto updates = f.getResultAttrOfType<IntegerAttr>(k, updatesName);
    if (!updates)
      continue;
    f.removeResultAttr(k, updatesName);
    unsigned j = updates.getInt();
    BlockArgument arg = f.getArgument(j);
    Value v = ret.getOperand(k);
    if (arg.getType() != v.getType() || donated.count(j))
      continue;
    // Another result that may be the argument's buffer would read it
    // after this one overwrote it.
    bool shared = false;
    for (auto [i, other] : llvm::enumerate(ret.getOperands()))
      shared |= i != k && viewedArgument(other) == arg;
    if (shared)
      continue;
    if (v != arg && !writtenByCall(v, arg, ret, symbols)) {
      OpOperand *init = freshInit(v, body);
      if (!init || !overwritable(arg, init, ret))
        continue;
      Operation *empty = init->get().getDefiningOp();
      init->set(arg);
      empty->erase();
    }
    // tsr-to-linalg made every argument read-only.
    f.setArgAttr(j, bufferization::BufferizationDialect::kWritableAttrName,
                 BoolAttr::get(ctx, true));
    inPlace[k] = j;
    donated.insert(j);
  }
  if (!donated.empty())
    f->setAttr(tsr::attr::kInPlace, DenseI64ArrayAttr::get(ctx, inPlace));
}

struct TsrDonateUpdatesPass
    : tessera::impl::TsrDonateUpdatesBase<TsrDonateUpdatesPass> {
  void runOnOperation() override {
    // Callees (a repeated layer's update cell) first: a caller's result
    // is in place where the call writes it into the caller's argument.
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto f : module.getOps<func::FuncOp>())
      if (f.isPrivate())
        donate(f, symbols);
    for (auto f : module.getOps<func::FuncOp>())
      if (f.isPublic())
        donate(f, symbols);
  }
};

} // namespace
