//===- SubgroupReduce.cpp - gpu.subgroup_reduce as butterfly shuffles -----===//
#include "tessera/Conversion/GPU/Passes.h"

#include "Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPULOWERSUBGROUPREDUCE
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

struct TsrGpuLowerSubgroupReducePass
    : tessera::impl::TsrGpuLowerSubgroupReduceBase<
          TsrGpuLowerSubgroupReducePass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Values of up to 32 bits in one 32-bit shuffle per step; the 64-bit
    // patterns (lower benefit) take what those leave: f64.
    populateGpuLowerSubgroupReduceToShufflePatterns(
        patterns, tessera::kWarpSize, /*shuffleBitwidth=*/32, /*benefit=*/2);
    populateGpuLowerSubgroupReduceToShufflePatterns(
        patterns, tessera::kWarpSize, /*shuffleBitwidth=*/64, /*benefit=*/1);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult left = getOperation().walk([](gpu::SubgroupReduceOp op) {
      op.emitError("tsr-gpu-lower-subgroup-reduce: no shuffle lowering for "
                   "a subgroup reduction of ")
          << op.getType();
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
