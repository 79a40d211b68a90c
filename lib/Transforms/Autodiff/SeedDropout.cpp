//===- SeedDropout.cpp - Per-step dropout masks ---------------------------===//
#include "tessera/Transforms/Autodiff/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRSEEDDROPOUT
#include "tessera/Transforms/Autodiff/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

struct TsrSeedDropoutPass
    : tessera::impl::TsrSeedDropoutBase<TsrSeedDropoutPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f))
      return signalPassFailure();
    SmallVector<tsr::DropoutOp> unseeded;
    f->walk([&](tsr::DropoutOp op) {
      if (!op.getSeedOffset())
        unseeded.push_back(op);
    });
    if (unseeded.empty())
      return;
    OpBuilder b(&getContext());
    unsigned index = f->getNumArguments();
    if (failed(f->insertArgument(
            index, RankedTensorType::get({}, b.getI64Type()),
            b.getDictionaryAttr(
                {b.getNamedAttr(tsr::attr::kName, b.getStringAttr("rng.step")),
                 b.getNamedAttr(
                     tsr::attr::kRole,
                     tsr::RoleAttr::get(b.getContext(), tsr::Role::rng))}),
            f->getLoc())))
      return signalPassFailure();
    Value step = f->getArgument(index);
    for (tsr::DropoutOp op : unseeded)
      op.getSeedOffsetMutable().assign(step);
  }
};

} // namespace
