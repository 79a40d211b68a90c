//===- FuseElementwise.cpp - Elementwise fusion that keeps GEMMs named ----===//
//
// Upstream's elementwise fusion and reshape propagation, with one control:
// no fusion or reshape folding into or out of linalg.matmul and
// linalg.batch_matmul. Upstream's `linalg-fuse-elementwise-ops` folds the
// collapse_shape/expand_shape around a matmul into the op, which turns it
// into a rank-3 or rank-4 linalg.generic that tsr-linalg-to-blas cannot hand
// to cblas_sgemm; the GEMMs of every transformer block were lost that way.
//
// Then a second round fuses a loop nest whose results are used by one
// other elementwise loop nest and otherwise only returned, keeping the
// returned results as results of the fused op: an optimizer's new moments
// are returned and read by the parameter update, and become one loop
// nest with it (one pass over each parameter's state instead of three).
//
//===----------------------------------------------------------------------===//
#include "tessera/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRCPUFUSEELEMENTWISE
#include "tessera/Conversion/CPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {
bool isGemm(Operation *op) {
  return isa_and_nonnull<linalg::MatmulOp, linalg::BatchMatmulOp>(op);
}

/// Whether a call lies between `producer` and `consumer` in their block:
/// fusing across it would keep the producer's operands alive through the
/// callee (a pipeline stage sums each micro-batch's gradients right after
/// its backward call; fused, every micro-batch's would live to the end).
/// lib/Analysis/PeakMemory.cpp models the same rule.
bool callBetween(Operation *producer, Operation *consumer) {
  if (producer->getBlock() != consumer->getBlock())
    return true;
  for (Operation *op = producer->getNextNode(); op && op != consumer;
       op = op->getNextNode())
    if (isa<CallOpInterface>(op))
      return true;
  return false;
}

/// Fuses a producer generic into the one elementwise generic that reads it
/// (at one operand, element for element), when its other uses are only
/// returns: the fused op yields the returned results too, so the producer's
/// loop nest and its separate pass over memory go. Upstream's fusion of a
/// producer with other uses keeps the producer and recomputes it in the
/// consumer; nothing is recomputed here. lib/Analysis/PeakMemory.cpp
/// models the same rule.
struct FuseKeepingReturnedResults : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    if (!consumer.hasPureTensorSemantics() ||
        consumer.getNumReductionLoops() != 0)
      return failure();
    for (OpOperand *operand : consumer.getDpsInputOperands()) {
      auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
      if (!producer || !returnedOrReadAt(producer, operand) ||
          !consumer.getMatchingIndexingMap(operand).isPermutation() ||
          callBetween(producer, consumer) ||
          !linalg::areElementwiseOpsFusable(operand))
        continue;
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, operand);
      if (failed(fused))
        continue;
      for (auto [from, to] : fused->replacements)
        rewriter.replaceAllUsesWith(from, to);
      rewriter.eraseOp(consumer);
      rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }

  /// Whether every use of `producer` is `operand` or a return, with at
  /// least one return (with none, it has one user: upstream's case).
  static bool returnedOrReadAt(Operation *producer, OpOperand *operand) {
    bool returned = false;
    for (OpOperand &use : producer->getUses()) {
      if (&use == operand)
        continue;
      if (!isa<func::ReturnOp>(use.getOwner()))
        return false;
      returned = true;
    }
    return returned;
  }
};

struct TsrCpuFuseElementwisePass
    : tessera::impl::TsrCpuFuseElementwiseBase<TsrCpuFuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // As upstream: fuse a producer only into its single user; never across a
    // GEMM, in either direction, nor across a call.
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      return producer && producer->hasOneUse() && !isGemm(producer) &&
             !isGemm(fused->getOwner()) &&
             !callBetween(producer, fused->getOwner());
    };
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    // A reshape of an empty tensor is an empty tensor of the new shape;
    // otherwise bufferization allocates the old one and never uses it.
    tensor::populateFoldTensorEmptyPatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(
        patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, control);
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    // After the first round, so that its loop nests are final: a returned
    // producer joins the loop nest that reads it whole.
    RewritePatternSet keeping(ctx);
    keeping.add<FuseKeepingReturnedResults>(ctx);
    linalg::GenericOp::getCanonicalizationPatterns(keeping, ctx);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(keeping), config)))
      return signalPassFailure();
  }
};
} // namespace
