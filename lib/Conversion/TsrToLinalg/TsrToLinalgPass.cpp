//===- TsrToLinalgPass.cpp - The tsr-to-linalg pass -----------------------===//
#include "tessera/Conversion/TsrToLinalg/Passes.h"
#include "tessera/Conversion/TsrToLinalg/TsrToLinalg.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"

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
                           bufferization::BufferizationDialect,
                           memref::MemRefDialect, LLVM::LLVMDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType()) &&
             converter.isLegal(&op.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
