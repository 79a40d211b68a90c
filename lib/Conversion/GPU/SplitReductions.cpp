//===- SplitReductions.cpp - Long reductions as chunks, then their partials
//===//
#include "tessera/Conversion/GPU/Passes.h"

#include "Kernels.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPUSPLITREDUCTIONS
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// How tsr-gpu-map runs a reduction: a warp per output (a row reduction,
/// its inputs read innermost along the reduction) or 8 warps per 32
/// outputs (a column reduction, read innermost along the last parallel
/// dimension).
struct Reduction {
  bool row;
  /// The output elements, the reduction iterations, the reduction loops.
  int64_t outputs = 1, iterations = 1;
  ReassociationIndices dims;
};

/// `op`'s reduction if tsr-gpu-map would run it on warps (its conditions,
/// on tensors), its body reads no loop index and its reduction loops are
/// consecutive and read contiguously by every operand, so that they
/// collapse into one.
std::optional<Reduction> classify(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0 ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isProjectedPermutation(); }))
    return std::nullopt;
  // splitReduction renumbers the loops without rewriting linalg.index.
  if (!isa<FloatType>(op.getRegionOutputArgs()[0].getType()) ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  SmallVector<Operation *> combiners;
  if (!matchReduction(op.getRegionOutputArgs(), 0, combiners) ||
      combiners.size() != 1 || !tessera::getWarpCombiner(combiners[0]))
    return std::nullopt;
  Reduction reduction;
  std::optional<unsigned> lastParallel;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (auto [d, range] : llvm::enumerate(op.getStaticLoopRanges())) {
    if (ShapedType::isDynamic(range) || range == 0)
      return std::nullopt;
    if (iterators[d] == utils::IteratorType::reduction) {
      if (!reduction.dims.empty() &&
          reduction.dims.back() != static_cast<int64_t>(d) - 1)
        return std::nullopt;
      reduction.dims.push_back(d);
      reduction.iterations *= range;
    } else {
      reduction.outputs *= range;
      lastParallel = d;
    }
  }
  if (reduction.dims.size() > 1 &&
      !linalg::areDimSequencesPreserved(op.getIndexingMapsArray(),
                                        {reduction.dims}))
    return std::nullopt;
  std::optional<bool> row;
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(in);
    if (map.getNumResults() == 0)
      continue;
    unsigned last = map.getDimPosition(map.getNumResults() - 1);
    if (iterators[last] == utils::IteratorType::reduction) {
      row = true;
      break;
    }
    if (last == lastParallel)
      row = false;
  }
  if (!row)
    return std::nullopt;
  reduction.row = *row;
  return reduction;
}

struct TsrGpuSplitReductionsPass
    : tessera::impl::TsrGpuSplitReductionsBase<TsrGpuSplitReductionsPass> {
  using Base::Base;

  /// The chunks to split `reduction` into, or 0 to leave it.
  int64_t chooseChunks(const Reduction &reduction) const {
    if (reduction.outputs * reduction.iterations < minElements)
      return 0;
    int64_t warps =
        reduction.row
            ? reduction.outputs
            : llvm::divideCeil(reduction.outputs, tessera::kWarpSize) *
                  (tessera::kBlockSize / tessera::kWarpSize);
    if (2 * warps >= targetWarps)
      return 0;
    int64_t minChunk = reduction.row ? minRowChunk : minColumnChunk;
    int64_t most =
        std::min(targetWarps / warps, reduction.iterations / minChunk);
    for (int64_t chunks = most; chunks >= 4; --chunks)
      if (reduction.iterations % chunks == 0)
        return chunks;
    return 0;
  }

  void runOnOperation() override {
    if (targetWarps < 1 || minRowChunk < 1 || minColumnChunk < 1 ||
        minElements < 1) {
      getOperation().emitError(
          "tsr-gpu-split-reductions: target-warps, min-row-chunk, "
          "min-column-chunk and min-elements must be at least 1");
      return signalPassFailure();
    }
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk(
        [&](linalg::GenericOp op) { candidates.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : candidates) {
      std::optional<Reduction> reduction = classify(op);
      if (!reduction)
        continue;
      int64_t chunks = chooseChunks(*reduction);
      if (chunks == 0)
        continue;
      linalg::LinalgOp target = op;
      rewriter.setInsertionPoint(op);
      if (reduction->dims.size() > 1) {
        FailureOr<linalg::CollapseResult> collapsed =
            linalg::collapseOpIterationDims(op, {reduction->dims}, rewriter);
        if (failed(collapsed))
          continue;
        rewriter.replaceOp(op, collapsed->results);
        target = collapsed->collapsedOp;
      }
      // The partials' dimension: after the output's for a row reduction,
      // outermost for a column one.
      unsigned index =
          reduction->row ? target.getRank(target.getDpsInitOperand(0)) : 0;
      auto control = [&](linalg::LinalgOp) {
        return linalg::SplitReductionOptions{chunks, index,
                                             /*innerParallel=*/false};
      };
      if (failed(linalg::splitReduction(rewriter, target, control))) {
        target->emitError("tsr-gpu-split-reductions: could not split this "
                          "reduction into ")
            << chunks << " chunks";
        return signalPassFailure();
      }
    }
  }
};

} // namespace
