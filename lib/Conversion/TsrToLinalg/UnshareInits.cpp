//===- UnshareInits.cpp - An init of its own for every output -------------===//
#include "tessera/Conversion/TsrToLinalg/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRUNSHAREINITS
#include "tessera/Conversion/TsrToLinalg/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// The uses of `v`, the first in program order first.
SmallVector<OpOperand *> usesInOrder(Value v) {
  SmallVector<OpOperand *> uses =
      llvm::map_to_vector(v.getUses(), [](OpOperand &u) { return &u; });
  llvm::stable_sort(uses, [](OpOperand *a, OpOperand *b) {
    Operation *x = a->getOwner(), *y = b->getOwner();
    if (x->getBlock() != y->getBlock())
      return x->getBlock() < y->getBlock();
    return x != y && x->isBeforeInBlock(y);
  });
  return uses;
}

/// Clones `ops` (a chain, each using the previous one's result) right before
/// every use of the last one's result but the first.
void unshare(ArrayRef<Operation *> ops) {
  SmallVector<OpOperand *> uses = usesInOrder(ops.back()->getResult(0));
  for (OpOperand *use : llvm::drop_begin(uses)) {
    Operation *owner = use->getOwner();
    OpBuilder b(owner);
    IRMapping map;
    Operation *copy = nullptr;
    for (Operation *op : ops)
      copy = b.clone(*op, map);
    use->set(copy->getResult(0));
  }
}

struct TsrUnshareInitsPass
    : tessera::impl::TsrUnshareInitsBase<TsrUnshareInitsPass> {
  void runOnOperation() override {
    // Fills first (each with an empty of its own), then the empties left.
    SmallVector<std::pair<tensor::EmptyOp, linalg::FillOp>> fills;
    getOperation().walk([&](linalg::FillOp fill) {
      auto empty = fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
      if (empty && fill.hasPureTensorSemantics() &&
          !fill->getResult(0).hasOneUse())
        fills.push_back({empty, fill});
    });
    for (auto [empty, fill] : fills)
      unshare({empty, fill});
    SmallVector<Operation *> empties;
    getOperation().walk([&](tensor::EmptyOp empty) {
      if (!empty->getResult(0).hasOneUse())
        empties.push_back(empty);
    });
    for (Operation *empty : empties)
      unshare({empty});
  }
};

} // namespace
