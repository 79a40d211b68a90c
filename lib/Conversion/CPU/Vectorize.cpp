//===- Vectorize.cpp - Tile linalg ops on buffers and vectorize the tiles -===//
//
// Every linalg op with static shapes whose body the upstream vectorizer
// supports is tiled (scf.for, tile sizes that divide the loop ranges) so that
// one tile is a small static vector, then each tile becomes vector.transfer
// reads, vector arithmetic, vector.multi_reduction and transfer writes. The
// upstream lowering patterns then bring the vector ops down to what
// convert-vector-to-scf and convert-vector-to-llvm accept, and accumulators
// that a reduction loop reads and writes at the same place stay in registers.
//
//===----------------------------------------------------------------------===//
#include "tessera/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRCPUVECTORIZE
#include "tessera/Conversion/CPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// Element types whose vectors load and store like their scalars (i1 memrefs
/// hold one byte per element, i1 vectors one bit).
bool isVectorizableElementType(Type type) {
  if (type.isF32() || type.isF64())
    return true;
  auto integer = dyn_cast<IntegerType>(type);
  return integer && integer.isSignless() && integer.getWidth() >= 8 &&
         integer.getWidth() <= 64 && llvm::isPowerOf2_32(integer.getWidth());
}

/// The largest divisor of `n` that is at most `limit`.
int64_t largestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0)
      return d;
  return 1;
}

/// An affine expression as `sum(coefficients[d] * d) + constant`.
struct LinearExpr {
  SmallVector<int64_t> coefficients;
  int64_t constant = 0;
};

/// Decomposes sums of dimensions times constants (convolution and pooling
/// windows: `d1 * 2 + d4`); nothing for mod, floordiv and symbols.
std::optional<LinearExpr> decompose(AffineExpr expr, unsigned numDims) {
  LinearExpr linear;
  linear.coefficients.assign(numDims, 0);
  std::function<bool(AffineExpr, int64_t)> add = [&](AffineExpr e,
                                                     int64_t scale) {
    if (auto dim = dyn_cast<AffineDimExpr>(e)) {
      linear.coefficients[dim.getPosition()] += scale;
      return true;
    }
    if (auto constant = dyn_cast<AffineConstantExpr>(e)) {
      linear.constant += scale * constant.getValue();
      return true;
    }
    auto binary = dyn_cast<AffineBinaryOpExpr>(e);
    if (!binary)
      return false;
    if (e.getKind() == AffineExprKind::Add)
      return add(binary.getLHS(), scale) && add(binary.getRHS(), scale);
    if (e.getKind() != AffineExprKind::Mul)
      return false;
    if (auto constant = dyn_cast<AffineConstantExpr>(binary.getRHS()))
      return add(binary.getLHS(), scale * constant.getValue());
    if (auto constant = dyn_cast<AffineConstantExpr>(binary.getLHS()))
      return add(binary.getRHS(), scale * constant.getValue());
    return false;
  };
  if (!add(expr, 1))
    return std::nullopt;
  return linear;
}

/// The reduction loops that index an operand through a compound expression
/// (the window loops of a convolution or pooling: `d6` in `d3 + d6`).
llvm::SmallDenseSet<unsigned> getWindowLoops(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  llvm::SmallDenseSet<unsigned> loops;
  for (AffineMap map : op.getIndexingMapsArray())
    for (AffineExpr expr : map.getResults())
      if (!isa<AffineDimExpr, AffineConstantExpr>(expr))
        expr.walk([&](AffineExpr e) {
          auto dim = dyn_cast<AffineDimExpr>(e);
          if (dim &&
              iterators[dim.getPosition()] == utils::IteratorType::reduction)
            loops.insert(dim.getPosition());
        });
  return loops;
}

/// Chooses the tile of `op` that becomes one vector: the loops that index the
/// innermost (contiguous) dimensions of the largest operand, as many as fit in
/// `maxElements` and share the iterator type of the innermost one; every other
/// loop steps by one. Window loops of convolutions and pooling never take
/// part. Returns the tile size of each loop (its full range where the loop is
/// not tiled), or nothing if the vector would be a single element.
std::optional<SmallVector<int64_t>> chooseVectorTile(linalg::LinalgOp op,
                                                     int64_t maxElements) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || llvm::any_of(ranges, [](int64_t r) {
        return ShapedType::isDynamic(r) || r == 0;
      }))
    return std::nullopt;
  llvm::SmallDenseSet<unsigned> windowLoops = getWindowLoops(op);
  auto isVectorLoop = [&](AffineExpr expr) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    return dim && !windowLoops.contains(dim.getPosition());
  };

  // The operand that moves the most data decides which loops are contiguous;
  // on a tie the output wins.
  OpOperand *reference = nullptr;
  int64_t referenceSize = -1;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || type.getRank() == 0 ||
        !isVectorLoop(op.getMatchingIndexingMap(&operand).getResults().back()))
      continue;
    int64_t size = type.getNumElements();
    if (size > referenceSize ||
        (size == referenceSize && op.isDpsInit(&operand))) {
      reference = &operand;
      referenceSize = size;
    }
  }
  if (!reference)
    return std::nullopt;
  SmallVector<unsigned> candidates;
  for (AffineExpr expr :
       llvm::reverse(op.getMatchingIndexingMap(reference).getResults())) {
    if (!isVectorLoop(expr))
      break;
    unsigned dim = cast<AffineDimExpr>(expr).getPosition();
    if (llvm::is_contained(candidates, dim))
      break;
    candidates.push_back(dim);
  }

  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> tile(ranges.size(), 1);
  int64_t budget = maxElements;
  for (unsigned dim : candidates) {
    if (iterators[dim] != iterators[candidates.front()])
      break;
    tile[dim] = largestDivisorAtMost(ranges[dim], budget);
    budget /= tile[dim];
    if (tile[dim] != ranges[dim])
      break;
  }
  if (budget == maxElements)
    return std::nullopt;
  return tile;
}

/// The innermost loop of `operand`'s indexing map when it is a permutation.
std::optional<unsigned> innermostLoop(linalg::LinalgOp op, OpOperand *operand) {
  AffineMap map = op.getMatchingIndexingMap(operand);
  if (!map.isPermutation() || map.getNumResults() == 0)
    return std::nullopt;
  return cast<AffineDimExpr>(map.getResults().back()).getPosition();
}

/// The loops of a transpose (one input, one output, both indexed by
/// permutations that differ in their innermost loop): the input's innermost
/// and the output's.
std::optional<std::pair<unsigned, unsigned>>
getTransposeLoops(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0 ||
      llvm::any_of(op.getStaticLoopRanges(),
                   [](int64_t r) { return ShapedType::isDynamic(r); }))
    return std::nullopt;
  std::optional<unsigned> in = innermostLoop(op, op.getDpsInputOperand(0));
  std::optional<unsigned> out = innermostLoop(op, op.getDpsInitOperand(0));
  if (!in || !out || *in == *out)
    return std::nullopt;
  return std::make_pair(*in, *out);
}

/// Whether `op` is one this pass tiles and vectorizes. Generics with window
/// accesses are checked for good after tiling (`viewWindowAccesses`).
bool isCandidate(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.hasDynamicShape() ||
      isa<linalg::ConvolutionOpInterface>(op.getOperation()))
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    // Inputs the body ignores (the window shape of pooling) are never read.
    if (op.isDpsInput(&operand) && !op.payloadUsesValueFromOperand(&operand))
      continue;
    Type type = operand.get().getType();
    if (!isa<MemRefType>(type) && !type.isIntOrFloat())
      return false;
    if (!isVectorizableElementType(getElementTypeOrSelf(type)))
      return false;
  }
  if (linalg::allIndexingsAreProjectedPermutation(op))
    return succeeded(linalg::vectorizeOpPrecondition(op));
  return isa<linalg::GenericOp>(op) && !op.hasIndexSemantics();
}

/// Puts the loops of range one first (generalizing a named op if needed), so
/// that no vector has a trailing unit dimension (leading ones fold away).
void moveUnitLoopsOutward(RewriterBase &rewriter, linalg::LinalgOp &op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<unsigned> order;
  for (auto [dim, range] : llvm::enumerate(ranges))
    if (range == 1)
      order.push_back(dim);
  for (auto [dim, range] : llvm::enumerate(ranges))
    if (range != 1)
      order.push_back(dim);
  if (llvm::equal(order, llvm::seq<unsigned>(0, ranges.size())))
    return;
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generalized =
        linalg::generalizeNamedOp(rewriter, op);
    if (failed(generalized))
      return;
    generic = *generalized;
    op = generic;
  }
  FailureOr<linalg::GenericOp> interchanged =
      linalg::interchangeGenericOp(rewriter, generic, order);
  if (succeeded(interchanged))
    op = *interchanged;
}

/// Rewrites the window accesses of a tiled convolution or pooling generic,
/// whose window loops have range one, into strided views: `x[d1 * 2 + d4]`
/// with `d4` of range one reads `subview(x)[d1]` with stride 2. Afterwards
/// every indexing map is a projected permutation, as the vectorizer wants.
FailureOr<linalg::GenericOp> viewWindowAccesses(RewriterBase &rewriter,
                                                linalg::GenericOp op) {
  if (linalg::allIndexingsAreProjectedPermutation(op))
    return op;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned numLoops = ranges.size();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  llvm::SmallBitVector used(numLoops);
  rewriter.setInsertionPoint(op);
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (map.isProjectedPermutation(/*allowZeroInResults=*/true)) {
      for (AffineExpr expr : map.getResults())
        if (auto dim = dyn_cast<AffineDimExpr>(expr))
          used.set(dim.getPosition());
      maps.push_back(map);
      if (op.isDpsInput(&operand))
        inputs.push_back(operand.get());
      continue;
    }
    if (!op.isDpsInput(&operand))
      return failure();
    SmallVector<OpFoldResult> offsets, sizes, strides;
    SmallVector<AffineExpr> results;
    for (AffineExpr expr : map.getResults()) {
      std::optional<LinearExpr> linear = decompose(expr, numLoops);
      if (!linear || linear->constant < 0)
        return failure();
      std::optional<unsigned> vectorDim;
      for (auto [dim, coefficient] : llvm::enumerate(linear->coefficients)) {
        if (coefficient < 0)
          return failure();
        if (coefficient == 0 || ranges[dim] == 1)
          continue;
        if (vectorDim)
          return failure();
        vectorDim = dim;
      }
      offsets.push_back(rewriter.getIndexAttr(linear->constant));
      if (vectorDim) {
        sizes.push_back(rewriter.getIndexAttr(ranges[*vectorDim]));
        strides.push_back(
            rewriter.getIndexAttr(linear->coefficients[*vectorDim]));
        results.push_back(rewriter.getAffineDimExpr(*vectorDim));
        used.set(*vectorDim);
      } else {
        sizes.push_back(rewriter.getIndexAttr(1));
        strides.push_back(rewriter.getIndexAttr(1));
        results.push_back(rewriter.getAffineConstantExpr(0));
      }
    }
    AffineMap viewMap = AffineMap::get(numLoops, 0, results, op.getContext());
    if (!viewMap.isProjectedPermutation(/*allowZeroInResults=*/true))
      return failure();
    maps.push_back(viewMap);
    inputs.push_back(memref::SubViewOp::create(
        rewriter, op.getLoc(), operand.get(), offsets, sizes, strides));
  }
  // Every loop must keep an operand that gives its range.
  if (!used.all())
    return failure();
  auto viewed = linalg::GenericOp::create(rewriter, op.getLoc(), TypeRange(),
                                          inputs, op.getDpsInits(), maps,
                                          op.getIteratorTypesArray());
  rewriter.inlineRegionBefore(op.getRegion(), viewed.getRegion(),
                              viewed.getRegion().end());
  rewriter.eraseOp(op);
  return viewed;
}

/// The buffer a memref value is a view of.
Value getRootBuffer(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

/// Whether two index lists name the same position (equal values or equal
/// constants).
bool sameIndices(ValueRange a, ValueRange b) {
  return a.size() == b.size() &&
         llvm::all_of(llvm::zip_equal(a, b), [](auto pair) {
           return isEqualConstantIntOrValue(
               getAsOpFoldResult(std::get<0>(pair)),
               getAsOpFoldResult(std::get<1>(pair)));
         });
}

/// Keeps an accumulator in registers across the reduction loop `loop`: the
/// transfer_read / transfer_write pair of one loop-invariant place in its body
/// becomes a loop-carried vector, read before the loop and written after it.
/// The caller guarantees that nothing else in the loop accesses that buffer.
FailureOr<scf::ForOp> hoistAccumulator(RewriterBase &rewriter,
                                       scf::ForOp loop) {
  for (Operation &op : loop.getBody()->without_terminator()) {
    auto write = dyn_cast<vector::TransferWriteOp>(&op);
    if (!write || !loop.isDefinedOutsideOfLoop(write.getBase()) ||
        !llvm::all_of(write.getIndices(), [&](Value index) {
          return loop.isDefinedOutsideOfLoop(index);
        }))
      continue;
    vector::TransferReadOp read;
    bool otherUse = false;
    for (Operation *user : write.getBase().getUsers()) {
      if (user == write || !loop->isAncestor(user))
        continue;
      auto candidate = dyn_cast<vector::TransferReadOp>(user);
      if (read || !candidate || candidate->getBlock() != write->getBlock() ||
          !candidate->isBeforeInBlock(write) ||
          !sameIndices(candidate.getIndices(), write.getIndices()) ||
          candidate.getVectorType() != write.getVectorType() ||
          candidate.getPermutationMap() != write.getPermutationMap() ||
          candidate.getMask() || write.getMask())
        otherUse = true;
      else
        read = candidate;
    }
    if (otherUse || !read)
      continue;

    rewriter.moveOpBefore(read, loop);
    FailureOr<LoopLikeOpInterface> newLoop =
        cast<LoopLikeOpInterface>(loop.getOperation())
            .replaceWithAdditionalYields(
                rewriter, read.getResult(),
                /*replaceInitOperandUsesInLoop=*/true,
                [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
                  return SmallVector<Value>{write.getVector()};
                });
    if (failed(newLoop))
      return failure();
    auto forOp = cast<scf::ForOp>(newLoop->getOperation());
    rewriter.moveOpAfter(write, forOp);
    rewriter.modifyOpInPlace(write, [&] {
      write.getValueToStoreMutable().assign(forOp.getResults().back());
    });
    return forOp;
  }
  return failure();
}

/// Tiles `op` by `tile` and vectorizes the tile; leaves `op` unchanged if the
/// tile cannot be vectorized. Reduction loops are innermost, and the
/// accumulator of a tile stays in registers across them.
LogicalResult tileAndVectorize(RewriterBase &rewriter, linalg::LinalgOp op,
                               ArrayRef<int64_t> tile) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<OpFoldResult> tileSizes;
  SmallVector<int64_t> parallelFirst, reductionLast;
  int64_t reductionLoops = 0;
  for (auto [dim, size, range, iterator] :
       llvm::enumerate(tile, ranges, iterators)) {
    bool tiled = size != range;
    tileSizes.push_back(rewriter.getIndexAttr(tiled ? size : 0));
    if (iterator == utils::IteratorType::reduction) {
      reductionLast.push_back(dim);
      reductionLoops += tiled;
    } else {
      parallelFirst.push_back(dim);
    }
  }
  llvm::append_range(parallelFirst, reductionLast);
  scf::SCFTilingOptions options;
  options.setTileSizes(tileSizes).setInterchange(parallelFirst);

  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return failure();
  // Only an output that shares no buffer with an input may stay in registers.
  bool outputAliasesInput =
      llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *input) {
        return llvm::any_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
          return getRootBuffer(input->get()) == getRootBuffer(init.get());
        });
      });
  auto tiledOp = cast<linalg::LinalgOp>(tiled->tiledOps.back());
  auto undo = [&] {
    // Drop the loop nest again; the original op keeps its loop lowering.
    if (!tiled->loops.empty())
      rewriter.eraseOp(tiled->loops.front());
    else
      rewriter.eraseOp(tiledOp);
    return failure();
  };
  if (auto generic = dyn_cast<linalg::GenericOp>(tiledOp.getOperation())) {
    FailureOr<linalg::GenericOp> viewed = viewWindowAccesses(rewriter, generic);
    if (failed(viewed))
      return undo();
    tiledOp = *viewed;
  }
  moveUnitLoopsOutward(rewriter, tiledOp);
  if (failed(linalg::vectorizeOpPrecondition(tiledOp)))
    return undo();
  rewriter.setInsertionPoint(tiledOp);
  FailureOr<linalg::VectorizationResult> vectorized =
      linalg::vectorize(rewriter, tiledOp);
  if (failed(vectorized))
    return undo();
  rewriter.replaceOp(tiledOp, vectorized->replacements);
  rewriter.eraseOp(op);

  SmallVector<LoopLikeOpInterface> loops = tiled->loops;
  for (LoopLikeOpInterface loop : llvm::reverse(loops))
    moveLoopInvariantCode(loop);
  if (outputAliasesInput)
    return success();
  for (int64_t i = 0; i < reductionLoops; ++i) {
    auto loop = cast<scf::ForOp>(loops[loops.size() - 1 - i].getOperation());
    while (true) {
      FailureOr<scf::ForOp> hoisted = hoistAccumulator(rewriter, loop);
      if (failed(hoisted))
        break;
      loop = *hoisted;
    }
    loops[loops.size() - 1 - i] = loop;
  }
  return success();
}

/// Tiles a transpose by a square of its two innermost loops (see
/// getTransposeLoops), read from the input row by row and written to the
/// output row by row with a vector.transpose in between. The tile
/// chooseVectorTile would pick follows the output's rows only and reads the
/// input one element per row, a cache line per element: a 3072x768 matrix
/// took 16 ms that way, 3 ms so. A loop whose range the square's side does
/// not divide (a vocabulary of 50257) is split first; the remainder takes
/// the ordinary tile.
LogicalResult tileTranspose(RewriterBase &rewriter, linalg::LinalgOp op,
                            int64_t maxElements) {
  std::optional<std::pair<unsigned, unsigned>> loops = getTransposeLoops(op);
  if (!loops)
    return failure();
  int64_t side = 1;
  while (4 * side * side <= maxElements)
    side *= 2;
  if (side == 1)
    return failure();
  SmallVector<int64_t> tile(op.getStaticLoopRanges().size(), 1);
  bool split = false;
  for (unsigned dim : {loops->first, loops->second}) {
    int64_t range = op.getStaticLoopRanges()[dim];
    tile[dim] = std::min(range, side);
    if (range <= side || range % side == 0)
      continue;
    rewriter.setInsertionPoint(op);
    auto [main, rest] =
        linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()), dim,
                        rewriter.getIndexAttr(range / side * side));
    auto remainder = cast<linalg::LinalgOp>(rest.getOperation());
    moveUnitLoopsOutward(rewriter, remainder);
    if (std::optional<SmallVector<int64_t>> t =
            chooseVectorTile(remainder, maxElements))
      (void)tileAndVectorize(rewriter, remainder, *t);
    op = cast<linalg::LinalgOp>(main.getOperation());
    split = true;
  }
  // Once split, the original op is gone: a part that does not vectorize
  // keeps its loop lowering.
  if (failed(tileAndVectorize(rewriter, op, tile)) && !split)
    return failure();
  return success();
}

} // namespace

/// Vector canonicalizations plus the patterns that fold away what tiling
/// leaves behind: leading unit dimensions, transfer permutations, broadcasts
/// feeding elementwise ops. Reductions over unit dimensions become plain
/// combines here, before multi_reduction is lowered. vector.shape_cast's
/// canonicalizations stay out: in MLIR 22 they rewrite
/// shape_cast(broadcast(vector<3x3x1> to vector<3x3x3x1>)) to vector<3x3x3>
/// into a broadcast that stretches the wrong dimension.
static void populateCleanupPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  vector::populateSinkVectorOpsPatterns(patterns);
  vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
  for (RegisteredOperationName name : ctx->getRegisteredOperations())
    if (name.getDialectNamespace() ==
            vector::VectorDialect::getDialectNamespace() &&
        name.getStringRef() != vector::ShapeCastOp::getOperationName())
      name.getCanonicalizationPatterns(patterns, ctx);
  affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
  memref::SubViewOp::getCanonicalizationPatterns(patterns, ctx);
}

void mlir::tessera::populateCpuVectorLoweringPatterns(
    RewritePatternSet &patterns) {
  populateCleanupPatterns(patterns);
  vector::populateVectorMultiReductionLoweringPatterns(
      patterns, vector::VectorMultiReductionLowering::InnerReduction);
}

namespace {
struct TsrCpuVectorizePass
    : tessera::impl::TsrCpuVectorizeBase<TsrCpuVectorizePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (vectorSize <= 1)
      return;
    IRRewriter rewriter(&getContext());
    // Copies into or out of strided views (padding) become linalg.copy, which
    // vectorizes; contiguous ones stay memcpy.
    func.walk([&](memref::CopyOp copy) {
      auto source = cast<MemRefType>(copy.getSource().getType());
      auto target = cast<MemRefType>(copy.getTarget().getType());
      if (!source.hasStaticShape() ||
          !isVectorizableElementType(source.getElementType()) ||
          (source.getLayout().isIdentity() && target.getLayout().isIdentity()))
        return;
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    });
    SmallVector<linalg::LinalgOp> work;
    func.walk([&](linalg::LinalgOp op) {
      if (isCandidate(op))
        work.push_back(op);
    });
    if (work.empty())
      return;
    for (linalg::LinalgOp op : work) {
      moveUnitLoopsOutward(rewriter, op);
      if (succeeded(tileTranspose(rewriter, op, vectorSize)))
        continue;
      if (std::optional<SmallVector<int64_t>> tile =
              chooseVectorTile(op, vectorSize))
        (void)tileAndVectorize(rewriter, op, *tile);
    }

    MLIRContext *ctx = &getContext();
    RewritePatternSet cleanup(ctx), lowering(ctx);
    populateCleanupPatterns(cleanup);
    tessera::populateCpuVectorLoweringPatterns(lowering);
    if (failed(applyPatternsGreedily(func, std::move(cleanup))))
      return signalPassFailure();
    if (failed(applyPatternsGreedily(func, std::move(lowering))))
      return signalPassFailure();
  }
};
} // namespace
