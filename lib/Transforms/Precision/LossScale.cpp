//===- LossScale.cpp - Scale the loss before autodiff ---------------------===//
#include "tessera/Transforms/Precision/LossScale.h"
#include "tessera/Transforms/Precision/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/GradientRules.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"

#include <cmath>

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRLOSSSCALE
#include "tessera/Transforms/Precision/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

struct TsrLossScalePass : tessera::impl::TsrLossScaleBase<TsrLossScalePass> {
  using Base::Base;

  void runOnOperation() override {
    if (scale == "none")
      return;
    ModuleOp module = getOperation();
    bool dynamic = scale == "dynamic";
    std::optional<double> constant = parseConstantLossScale(scale);
    if (!dynamic && !constant) {
      module.emitError("loss scale '")
          << scale << "' is not none, dynamic or a positive number";
      return signalPassFailure();
    }
    if (dynamic && (!(init > 0) || !std::isfinite(init))) {
      module.emitError("the initial loss scale must be a positive number, "
                       "got ")
          << init.getValue();
      return signalPassFailure();
    }
    FailureOr<func::FuncOp> f =
        getTrainingFunction(module, getArgument(), function);
    if (failed(f))
      return signalPassFailure();
    func::FuncOp func = *f;
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (ret.getNumOperands() == 0 ||
        cast<RankedTensorType>(ret.getOperand(0).getType()).getRank() != 0 ||
        !isa<FloatType>(getElementTypeOrSelf(ret.getOperand(0).getType()))) {
      func.emitError("loss scaling needs the loss (a float scalar) as the "
                     "first result");
      return signalPassFailure();
    }
    OpBuilder b(ret);
    Value loss = ret.getOperand(0);
    Type element = getElementTypeOrSelf(loss.getType());
    Value s;
    if (dynamic) {
      unsigned index = func.getNumArguments();
      auto type = RankedTensorType::get({}, b.getF32Type());
      SmallVector<NamedAttribute> attrs{
          b.getNamedAttr(tsr::attr::kName, b.getStringAttr(kLossScaleState)),
          b.getNamedAttr(tsr::attr::kRole,
                         tsr::RoleAttr::get(b.getContext(), tsr::Role::state)),
          b.getNamedAttr(tsr::attr::kInit, b.getF64FloatAttr(init))};
      (void)func.insertArgument(index, type, b.getDictionaryAttr(attrs),
                                func.getLoc());
      s = func.getArgument(index);
    }
    Location loc = NameLoc::get(b.getStringAttr("loss_scale"), ret.getLoc());
    GradientBuilder g(b, loc);
    if (!s)
      s = g.scalar(b.getF32Type(), *constant);
    Value scaled = g.mul(loss, g.castTo(s, element));
    scaled.getDefiningOp()->setAttr(
        tsr::attr::kReason,
        b.getStringAttr("loss scaling: the gradients are scale times the "
                        "loss's"));
    ret.setOperand(0, scaled);
  }
};

} // namespace
