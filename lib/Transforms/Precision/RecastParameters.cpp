//===- RecastParameters.cpp - Backward casts of parameters ----------------===//
#include "tessera/Transforms/Precision/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRRECASTPARAMETERS
#include "tessera/Transforms/Precision/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

struct TsrRecastParametersPass
    : tessera::impl::TsrRecastParametersBase<TsrRecastParametersPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp f) { recast(f); });
  }

  static void recast(func::FuncOp f) {
    if (f.isExternal())
      return;
    Block &body = f.getBody().front();
    SmallVector<tsr::CastOp> casts;
    for (auto cast : body.getOps<tsr::CastOp>()) {
      auto arg = dyn_cast<BlockArgument>(cast.getX());
      if (arg && arg.getOwner() == &body &&
          getArgRole(f, arg.getArgNumber()) == tsr::Role::param &&
          !cast->hasAttr(tsr::attr::kBackward))
        casts.push_back(cast);
    }
    for (tsr::CastOp cast : casts) {
      SmallVector<OpOperand *> backward;
      bool forward = false;
      Operation *first = nullptr;
      for (OpOperand &use : cast.getResult().getUses()) {
        Operation *user = body.findAncestorOpInBlock(*use.getOwner());
        if (!user || !user->hasAttr(tsr::attr::kBackward)) {
          forward = true;
          continue;
        }
        backward.push_back(&use);
        if (!first || user->isBeforeInBlock(first))
          first = user;
      }
      if (!forward || backward.empty())
        continue;
      OpBuilder b(first);
      auto barrier = tsr::RematBarrierOp::create(b, cast.getLoc(), cast.getX());
      auto again = tsr::CastOp::create(b, cast.getLoc(), cast.getType(),
                                       barrier.getResult());
      for (Operation *op : {barrier.getOperation(), again.getOperation()})
        op->setAttr(tsr::attr::kBackward, b.getUnitAttr());
      for (OpOperand *use : backward)
        use->set(again.getResult());
    }
  }
};

} // namespace
