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
    FailureOr<BlockArgument> step = getOrAddRngArgument(*f);
    if (failed(step))
      return signalPassFailure();
    for (tsr::DropoutOp op : unseeded)
      op.getSeedOffsetMutable().assign(*step);
  }
};

} // namespace
