//===- RematPlan.cpp - Which saved activations to recompute ---------------===//
//
// The decide half of rematerialization: marks the forward ops whose results
// the backward pass will recompute (tsr.remat = "recompute") and records
// the policy on the public functions. Under a memory budget (policy auto)
// it tries the policies in order of added work on copies of the module and
// takes the first whose predicted footprint fits. tsr-remat applies the
// marks.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Remat/Passes.h"
#include "tessera/Transforms/Remat/Remat.h"

#include "tessera/Analysis/CostModel.h"
#include "tessera/Analysis/PeakMemory.h"
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

/// The saved results the policy recomputes: the roots of the marking.
SmallVector<Operation *> roots(func::FuncOp f, StringRef policy) {
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

/// The bytes `f` needs while it runs: its arguments, its results and the
/// peak of its own allocations (the tsr-level prediction, equal to the
/// runtime allocator's count).
int64_t footprint(func::FuncOp f) {
  int64_t bytes = predictPeakMemory(f).peakBytes;
  for (Type t :
       llvm::concat<const Type>(f.getArgumentTypes(), f.getResultTypes()))
    bytes += tsr::getStaticTensorBytes(t);
  return bytes;
}

/// The largest footprint of the module's public functions after `policy`.
int64_t footprintUnder(ModuleOp module, StringRef policy) {
  OwningOpRef<ModuleOp> copy(module.clone());
  int64_t bytes = 0;
  for (auto f : copy->getOps<func::FuncOp>()) {
    if (f.isExternal())
      continue;
    planRemat(f, policy);
    applyRemat(f);
  }
  for (auto f : copy->getOps<func::FuncOp>())
    if (f.isPublic() && !f.isExternal())
      bytes = std::max(bytes, footprint(f));
  return bytes;
}

struct TsrRematPlanPass : tessera::impl::TsrRematPlanBase<TsrRematPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (policy != "none" && policy != "selective" && policy != "full" &&
        policy != "auto") {
      module.emitError("unknown rematerialization policy '")
          << policy.getValue() << "' (expected none, selective, full or auto)";
      return signalPassFailure();
    }
    if ((policy == "auto") != (budget > 0)) {
      module.emitError("policy auto needs a memory budget, and a budget "
                       "needs policy auto");
      return signalPassFailure();
    }
    std::string chosen = policy;
    if (policy == "auto") {
      // The policies in order of added work: the first that fits.
      chosen.clear();
      int64_t smallest = 0;
      for (StringRef candidate : {"none", "selective", "full"}) {
        smallest = footprintUnder(module, candidate);
        if (smallest <= budget) {
          chosen = candidate.str();
          break;
        }
      }
      if (chosen.empty()) {
        module.emitError("the step needs at least ")
            << smallest << " bytes per rank (recomputing all it can), "
            << "over the memory budget of " << budget.getValue() << " bytes";
        return signalPassFailure();
      }
    }
    Builder b(module.getContext());
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      planRemat(f, chosen);
      if (f.isPublic())
        f->setAttr(tsr::attr::kRemat, b.getStringAttr(chosen));
    }
  }
};

} // namespace

/// Marks the roots and, recursively, the producers their recomputation
/// needs: every recomputable forward producer that is not itself a saved
/// value the policy keeps.
void mlir::tessera::planRemat(func::FuncOp f, StringRef policy) {
  if (policy == "none")
    return;
  SmallVector<Operation *> worklist = roots(f, policy);
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
