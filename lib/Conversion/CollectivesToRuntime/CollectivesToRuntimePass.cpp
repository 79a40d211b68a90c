//===- CollectivesToRuntimePass.cpp - The tsr-collectives-to-runtime pass -===//
#include "tessera/Conversion/CollectivesToRuntime/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRCOLLECTIVESTORUNTIME
#include "tessera/Conversion/CollectivesToRuntime/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

bool isStrided(Value buffer) {
  return !memref::isStaticShapeAndContiguousRowMajor(
      cast<MemRefType>(buffer.getType()));
}

bool isTsrt(Operation *op) {
  return isa_and_nonnull<tsrt::TsrtDialect>(op->getDialect());
}

/// The errors the patterns cannot report (a tsrt or transfer op still on
/// tensors or on a strided view, a collective queued after several
/// tokens), each on its op.
LogicalResult checkLowerable(ModuleOp module) {
  WalkResult walk = module.walk([](Operation *op) {
    if (isa<tsr::OffloadStartOp, tsr::OffloadWaitOp, tsr::PrefetchStartOp,
            tsr::PrefetchWaitOp>(op)) {
      for (Value operand : op->getOperands()) {
        if (isa<gpu::AsyncTokenType>(operand.getType()))
          continue;
        if (!isa<MemRefType>(operand.getType())) {
          op->emitOpError("is on tensors: tsr-collectives-to-runtime lowers "
                          "the bufferized form (run one-shot-bufferize "
                          "first)");
          return WalkResult::interrupt();
        }
        if (isStrided(operand)) {
          op->emitOpError("names a strided view (")
              << operand.getType()
              << "): the runtime transfers contiguous buffers";
          return WalkResult::interrupt();
        }
      }
      if (cast<gpu::AsyncOpInterface>(op).getAsyncDependencies().size() > 1) {
        op->emitOpError("is queued after several tokens: the runtime takes "
                        "one stream (run gpu-async-region, which chains one)");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    }
    // The GPU's library ops become calls later (tsr-gpu-library-calls).
    if (!isTsrt(op) || isa<tsrt::GpuGemmOp, tsrt::GpuAttentionOp,
                           tsrt::GpuAttentionBackwardOp>(op))
      return WalkResult::advance();
    auto dps = dyn_cast<DestinationStyleOpInterface>(op);
    if (!dps)
      return WalkResult::advance();
    if (!dps.hasPureBufferSemantics()) {
      op->emitOpError("is on tensors: tsr-collectives-to-runtime lowers the "
                      "bufferized form (run one-shot-bufferize first)");
      return WalkResult::interrupt();
    }
    for (Value operand : op->getOperands())
      if (isa<MemRefType>(operand.getType()) && isStrided(operand)) {
        op->emitOpError("names a strided view (")
            << operand.getType()
            << "): the runtime takes contiguous buffers (run "
               "tsr-contiguous-collectives first)";
        return WalkResult::interrupt();
      }
    if (cast<gpu::AsyncOpInterface>(op).getAsyncDependencies().size() > 1) {
      op->emitOpError("is queued after several tokens: the runtime takes "
                      "one stream (run gpu-async-region, which chains one)");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

struct TsrCollectivesToRuntimePass
    : mlir::tessera::impl::TsrCollectivesToRuntimeBase<
          TsrCollectivesToRuntimePass> {
  void runOnOperation() override {
    if (failed(checkLowerable(getOperation())))
      return signalPassFailure();
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    populateCollectivesToRuntimePatterns(patterns);
    ConversionTarget target(*ctx);
    target.addIllegalDialect<tsrt::TsrtDialect>();
    target.addIllegalOp<tsr::OffloadStartOp, tsr::OffloadWaitOp,
                        tsr::PrefetchStartOp, tsr::PrefetchWaitOp>();
    target.addLegalDialect<arith::ArithDialect, func::FuncDialect,
                           LLVM::LLVMDialect, memref::MemRefDialect>();
    // The GPU's library ops become calls later, on their stream
    // (tsr-gpu-library-calls).
    target.addLegalOp<tsrt::GpuGemmOp, tsrt::GpuAttentionOp,
                      tsrt::GpuAttentionBackwardOp>();
    // A stream's token as the call's pointer, which gpu-to-llvm resolves.
    target.addLegalOp<UnrealizedConversionCastOp>();
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
