//===- Remat.cpp - Recompute marked forward ops in the backward pass ------===//
//
// The apply half of rematerialization: clones every op marked
// tsr.remat = "recompute" right before the first backward op that needs
// it, reading the other forward values through tsr.remat_barrier, and
// marks the clones tsr.remat = "recomputed".
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Remat/Remat.h"
#include "tessera/Transforms/Remat/Passes.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRREMAT
#include "tessera/Transforms/Remat/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

bool isBackward(Operation *op) { return op->hasAttr(tsr::attr::kBackward); }

struct TsrRematPass : tessera::impl::TsrRematBase<TsrRematPass> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (!f.isExternal())
        applyRemat(f);
  }
};

} // namespace

void mlir::tessera::applyRemat(func::FuncOp f) {
  Block &body = f.getBody().front();
  SmallVector<Operation *> marked;
  for (Operation &op : body)
    if (auto mark = op.getAttrOfType<StringAttr>(tsr::attr::kRemat);
        mark && mark.getValue() == "recompute")
      marked.push_back(&op);
  if (marked.empty())
    return;
  // Where each clone goes: before the first backward op that reads the
  // op's results or reads the clone of a marked op that reads them
  // (marked ops in reverse program order, so consumers come first).
  DenseSet<Operation *> isMarked(marked.begin(), marked.end());
  DenseMap<Operation *, Operation *> place;
  auto earlier = [](Operation *a, Operation *b) {
    return !a ? b : !b ? a : (a->isBeforeInBlock(b) ? a : b);
  };
  for (Operation *op : llvm::reverse(marked)) {
    Operation *at = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (!top)
        continue;
      if (isBackward(top))
        at = earlier(at, top);
      else if (isMarked.contains(top))
        at = earlier(at, place.lookup(top));
    }
    if (at)
      place[op] = at;
  }
  OpBuilder b(f.getContext());
  IRMapping clones;
  for (Operation *op : marked) {
    op->removeAttr(tsr::attr::kRemat);
    Operation *at = place.lookup(op);
    if (!at)
      continue;
    b.setInsertionPoint(at);
    IRMapping operands;
    for (Value operand : op->getOperands()) {
      if (Value clone = clones.lookupOrNull(operand)) {
        operands.map(operand, clone);
        continue;
      }
      auto barrier = tsr::RematBarrierOp::create(b, operand.getLoc(), operand);
      barrier->setAttr(tsr::attr::kBackward, b.getUnitAttr());
      operands.map(operand, barrier);
    }
    Operation *clone = b.clone(*op, operands);
    clone->setAttr(tsr::attr::kBackward, b.getUnitAttr());
    clone->setAttr(tsr::attr::kRemat, b.getStringAttr("recomputed"));
    for (auto [result, cloned] :
         llvm::zip(op->getResults(), clone->getResults())) {
      clones.map(result, cloned);
      result.replaceUsesWithIf(cloned, [&](OpOperand &use) {
        Operation *top = body.findAncestorOpInBlock(*use.getOwner());
        return top && isBackward(top) && top != clone;
      });
    }
  }
}
