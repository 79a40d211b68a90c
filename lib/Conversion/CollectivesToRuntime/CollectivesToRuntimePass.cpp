//===- CollectivesToRuntimePass.cpp - The tsr-collectives-to-runtime pass -===//
#include "tessera/Conversion/CollectivesToRuntime/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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

/// Whether a user of `buffer` in `op`'s block, after (or before) `op`,
/// satisfies `pred`.
bool hasUser(Operation *op, Value buffer, bool after,
             function_ref<bool(Operation *)> pred) {
  return llvm::any_of(buffer.getUsers(), [&](Operation *user) {
    return user != op && user->getBlock() == op->getBlock() &&
           (after ? op->isBeforeInBlock(user) : user->isBeforeInBlock(op)) &&
           pred(user);
  });
}

/// The errors the patterns cannot report (a tsrt or transfer op still on
/// tensors, a transfer of a strided view, an
/// async collective on a strided destination that no wait completes, a
/// wait on a strided buffer that no async collective writes), each on its op.
LogicalResult checkLowerable(ModuleOp module) {
  WalkResult walk = module.walk([](Operation *op) {
    if (isa<tsr::OffloadStartOp, tsr::OffloadWaitOp, tsr::PrefetchStartOp,
            tsr::PrefetchWaitOp>(op)) {
      for (Value operand : op->getOperands()) {
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
      return WalkResult::advance();
    }
    if (!isTsrt(op))
      return WalkResult::advance();
    auto dps = dyn_cast<DestinationStyleOpInterface>(op);
    if (!dps)
      return WalkResult::advance();
    if (!dps.hasPureBufferSemantics()) {
      op->emitOpError("is on tensors: tsr-collectives-to-runtime lowers the "
                      "bufferized form (run one-shot-bufferize first)");
      return WalkResult::interrupt();
    }
    Value init = dps.getDpsInitOperand(0)->get();
    if (!isStrided(init))
      return WalkResult::advance();
    if (op->hasAttr("async") &&
        !hasUser(op, init, /*after=*/true,
                 [](Operation *user) { return isa<tsrt::WaitOp>(user); })) {
      op->emitOpError("is async and writes a strided view (")
          << init.getType()
          << "), which it receives into a contiguous temporary that its "
             "tsrt.wait copies back, but no tsrt.wait of that buffer follows "
             "it in its block";
      return WalkResult::interrupt();
    }
    if (isa<tsrt::WaitOp>(op) &&
        !hasUser(op, init, /*after=*/false, [](Operation *user) {
          return isTsrt(user) && user->hasAttr("async");
        })) {
      op->emitOpError("waits on a strided view (")
          << init.getType()
          << ") that no async tsrt collective before it in its block writes";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

struct TsrCollectivesToRuntimePass
    : mlir::tessera::impl::TsrCollectivesToRuntimeBase<
          TsrCollectivesToRuntimePass> {
  TsrCollectivesToRuntimePass() = default;
  explicit TsrCollectivesToRuntimePass(CollectiveStreamBuilder stream)
      : stream(std::move(stream)) {}

  void runOnOperation() override {
    if (failed(checkLowerable(getOperation())))
      return signalPassFailure();
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    populateCollectivesToRuntimePatterns(
        patterns, stream ? stream : CollectiveStreamBuilder(buildNullStream));
    ConversionTarget target(*ctx);
    target.addIllegalDialect<tsrt::TsrtDialect>();
    target.addIllegalOp<tsr::OffloadStartOp, tsr::OffloadWaitOp,
                        tsr::PrefetchStartOp, tsr::PrefetchWaitOp>();
    target.addLegalDialect<arith::ArithDialect, func::FuncDialect,
                           LLVM::LLVMDialect, memref::MemRefDialect>();
    // The GPU's library ops become calls later, on their stream
    // (tsr-gpu-library-calls).
    target.addLegalOp<tsrt::GpuAttentionOp, tsrt::GpuAttentionBackwardOp>();
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }

  CollectiveStreamBuilder stream;
};

} // namespace

std::unique_ptr<Pass>
mlir::tessera::createTsrCollectivesToRuntime(CollectiveStreamBuilder stream) {
  return std::make_unique<TsrCollectivesToRuntimePass>(std::move(stream));
}
