//===- TsrToLinalgPass.cpp - The tsr-to-linalg pass -----------------------===//
#include "tessera/Conversion/TsrToLinalg/Passes.h"
#include "tessera/Conversion/TsrToLinalg/TsrToLinalg.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsrt/IR/TsrtDialect.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRTOLINALG
#include "tessera/Conversion/TsrToLinalg/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {
struct TsrToLinalgPass : mlir::tessera::impl::TsrToLinalgBase<TsrToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    TsrToLinalgTypeConverter converter;
    RewritePatternSet patterns(ctx);
    populateTsrToLinalgConversionPatterns(converter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);

    ConversionTarget target(*ctx);
    target.addIllegalDialect<tsr::TsrDialect>();
    target.addLegalDialect<affine::AffineDialect, arith::ArithDialect,
                           linalg::LinalgDialect, math::MathDialect,
                           scf::SCFDialect, tensor::TensorDialect,
                           tsrt::TsrtDialect>();
    // Recomputations start at barriers, which only bufferization removes
    // (RematBarrier.cpp): CSE runs in between.
    target.addLegalOp<tsr::RematBarrierOp>();
    // Transfers to host memory and back keep their form through
    // bufferization; tsr-collectives-to-runtime makes them calls.
    target.addLegalOp<tsr::OffloadStartOp, tsr::OffloadWaitOp,
                      tsr::PrefetchStartOp, tsr::PrefetchWaitOp>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType()) &&
             converter.isLegal(&op.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    // A program's inputs are its caller's: never written in place.
    auto readOnly = BoolAttr::get(ctx, false);
    getOperation().walk([&](func::FuncOp f) {
      if (f.isExternal())
        return;
      for (auto [i, type] : llvm::enumerate(f.getArgumentTypes()))
        if (isa<TensorType>(type))
          f.setArgAttr(i,
                       bufferization::BufferizationDialect::kWritableAttrName,
                       readOnly);
    });
  }
};
} // namespace
