//===- RematPlan.cpp - Which saved activations to recompute ---------------===//
//
// The decide half of rematerialization: marks the forward ops whose results
// the backward pass will recompute (tsr.remat = "recompute"). tsr-remat
// applies the marks.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Remat/Passes.h"

#include "tessera/Analysis/CostModel.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRREMATPLAN
#include "tessera/Transforms/Remat/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

bool isBackward(Operation *op) { return op->hasAttr(tsr::attr::kBackward); }

/// Whether the backward pass may repeat `op`: a pure tsr op without regions
/// that communicates nothing. Constants are never repeated: they are not
/// activations.
bool isRecomputable(Operation *op) {
  return isa<tsr::TsrDialect>(op->getDialect()) && isMemoryEffectFree(op) &&
         op->getNumRegions() == 0 && !CostModel::isCollective(op) &&
         !isa<tsr::ConstantOp, tsr::RematBarrierOp>(op);
}

/// Whether a backward op reads a result of `op`.
bool isSaved(Operation *op) {
  for (Value result : op->getResults())
    for (Operation *user : result.getUsers())
      if (isBackward(user))
        return true;
  return false;
}

struct TsrRematPlanPass : tessera::impl::TsrRematPlanBase<TsrRematPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    if (policy != "none" && policy != "selective" && policy != "full") {
      getOperation().emitError("unknown rematerialization policy '")
          << policy.getValue() << "' (expected none, selective or full)";
      return signalPassFailure();
    }
    if (policy == "none")
      return;
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (!f.isExternal())
        plan(f);
  }

  /// The saved results the policy recomputes: the roots of the marking.
  SmallVector<Operation *> roots(func::FuncOp f) {
    SmallVector<Operation *> forward;
    for (Operation &op : f.getBody().front())
      if (!isBackward(&op) && isRecomputable(&op) && isSaved(&op))
        forward.push_back(&op);
    if (policy == "selective") {
      // The attention core: what has the shape of a softmax's result.
      SmallPtrSet<Type, 4> scores;
      for (Operation &op : f.getBody().front())
        if (!isBackward(&op) && isa<tsr::SoftmaxOp>(op))
          scores.insert(op.getResult(0).getType());
      return llvm::filter_to_vector(forward, [&](Operation *op) {
        return llvm::all_of(op->getResultTypes(),
                            [&](Type t) { return scores.contains(t); });
      });
    }
    // full: everything but the inputs of the normalizations.
    DenseSet<Value> kept;
    for (Operation &op : f.getBody().front())
      if (!isBackward(&op) && isa<tsr::LayerNormOp, tsr::BatchNormOp>(op))
        kept.insert(op.getOperand(0));
    return llvm::filter_to_vector(forward, [&](Operation *op) {
      return llvm::none_of(op->getResults(),
                           [&](Value v) { return kept.contains(v); });
    });
  }

  /// Marks the roots and, recursively, the producers their recomputation
  /// needs: every recomputable forward producer that is not itself a saved
  /// value the policy keeps.
  void plan(func::FuncOp f) {
    SmallVector<Operation *> worklist = roots(f);
    DenseSet<Operation *> recomputed(worklist.begin(), worklist.end());
    DenseSet<Operation *> saved;
    for (Operation &op : f.getBody().front())
      if (!isBackward(&op) && isSaved(&op))
        saved.insert(&op);
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      for (Value operand : op->getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if (!producer || isBackward(producer) || !isRecomputable(producer) ||
            recomputed.contains(producer) || saved.contains(producer))
          continue;
        recomputed.insert(producer);
        worklist.push_back(producer);
      }
    }
    Builder b(f.getContext());
    for (Operation *op : recomputed)
      op->setAttr(tsr::attr::kRemat, b.getStringAttr("recompute"));
  }
};

} // namespace
