//===- Map.cpp - Each linalg op on buffers as a kernel of blocks, threads -===//
#include "tessera/Conversion/GPU/Passes.h"

#include "Kernels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPUMAP
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// Whether `op` or an op nested in it reads or writes a buffer.
bool touchesBufferWithin(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        return tessera::touchesBuffer(nested) ? WalkResult::interrupt()
                                              : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Splits `linear` into row-major coordinates of `shape` (none for a rank-0
/// one, `linear` itself for a rank-1 one).
SmallVector<Value> splitIndex(OpBuilder &b, Location loc, Value linear,
                              ArrayRef<int64_t> shape) {
  if (shape.empty())
    return {};
  if (shape.size() == 1)
    return {linear};
  auto split = affine::AffineDelinearizeIndexOp::create(b, loc, linear, shape,
                                                        /*hasOuterBound=*/true);
  return SmallVector<Value>(split.getResults());
}

/// `outer * size + inner`, an affine.apply at `b`'s insertion point (a
/// block's and thread's index into a linear one).
Value linearIndex(OpBuilder &b, Location loc, Value outer, int64_t size,
                  Value inner) {
  return affine::AffineApplyOp::create(
      b, loc,
      AffineMap::get(2, 0,
                     b.getAffineDimExpr(0) * size + b.getAffineDimExpr(1)),
      ValueRange{outer, inner});
}

/// Creates a kernel of one thread per index of [0, total), 256 to a block,
/// at `rewriter`'s insertion point; moves the insertion point into the
/// guard that the surplus threads of the last block skip and returns the
/// thread's index.
Value createLinearKernel(IRRewriter &rewriter, Location loc, int64_t total) {
  int64_t threads = std::min(total, tessera::kBlockSize);
  scf::ForallOp block = tessera::createKernel(
      rewriter, loc, llvm::divideCeil(total, threads), threads);
  Value blockId = cast<scf::ForallOp>(block->getParentOp()).getInductionVar(0);
  Value linear =
      linearIndex(rewriter, loc, blockId, threads, block.getInductionVar(0));
  Value inside = arith::CmpIOp::create(
      rewriter, loc, arith::CmpIPredicate::ult, linear,
      arith::ConstantIndexOp::create(rewriter, loc, total));
  auto guard = scf::IfOp::create(rewriter, loc, inside);
  rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
  return linear;
}

/// Replaces the loop nest `parallel` (no reductions, static bounds) by a
/// kernel with one thread per point of its iteration space.
LogicalResult linearize(IRRewriter &rewriter, scf::ParallelOp parallel) {
  Location loc = parallel.getLoc();
  if (!parallel.getInitVals().empty())
    return parallel.emitError("tsr-gpu-map: a parallel loop with "
                              "reductions has no mapping yet");
  SmallVector<int64_t> lower, step, trips;
  for (auto [lb, ub, st] :
       llvm::zip(parallel.getLowerBound(), parallel.getUpperBound(),
                 parallel.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           s = getConstantIntValue(st);
    if (!l || !u || !s || *s <= 0)
      return parallel.emitError("tsr-gpu-map: the GPU mapping needs "
                                "static loop bounds");
    lower.push_back(*l);
    step.push_back(*s);
    trips.push_back(std::max<int64_t>(0, llvm::divideCeil(*u - *l, *s)));
  }
  int64_t total = 1;
  for (int64_t t : trips)
    total *= t;
  rewriter.setInsertionPoint(parallel);
  if (total == 0) {
    rewriter.eraseOp(parallel);
    return success();
  }
  Value linear = createLinearKernel(rewriter, loc, total);
  SmallVector<Value> ivs = splitIndex(rewriter, loc, linear, trips);
  for (size_t i = 0; i < ivs.size(); ++i)
    if (lower[i] != 0 || step[i] != 1)
      ivs[i] = affine::AffineApplyOp::create(
          rewriter, loc,
          AffineMap::get(1, 0,
                         rewriter.getAffineDimExpr(0) * step[i] + lower[i]),
          ValueRange{ivs[i]});
  Block *body = parallel.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.inlineBlockBefore(
      body, rewriter.getInsertionBlock()->getTerminator(), ivs);
  rewriter.eraseOp(parallel);
  return success();
}

/// `op` with its parallel dimensions moved before its reductions, each
/// group in its order (a named op generalized first): its loop nest then
/// starts with the scf.parallel that becomes the threads, instead of a
/// reduction loop that would put the whole nest on one thread (a bias
/// gradient sums over the leading batch dimensions). Each output element's
/// reduction runs in the same order as before.
linalg::LinalgOp parallelFirst(IRRewriter &rewriter, linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> order;
  for (auto [i, it] : llvm::enumerate(iterators))
    if (it == utils::IteratorType::parallel)
      order.push_back(i);
  if (order.empty())
    return op;
  for (auto [i, it] : llvm::enumerate(iterators))
    if (it != utils::IteratorType::parallel)
      order.push_back(i);
  if (llvm::equal(order, llvm::seq<unsigned>(0, order.size())))
    return op;
  rewriter.setInsertionPoint(op);
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    FailureOr<linalg::GenericOp> general =
        linalg::generalizeNamedOp(rewriter, op);
    if (failed(general))
      return op;
    generic = *general;
  }
  FailureOr<linalg::GenericOp> swapped =
      linalg::interchangeGenericOp(rewriter, generic, order);
  return succeeded(swapped) ? linalg::LinalgOp(*swapped)
                            : linalg::LinalgOp(generic);
}

/// A scatter loop of tsr-to-linalg (tsr.scatter_shape: the updates' axis
/// and shape, visited in row-major order) as an scf.parallel over the
/// positions outside the axis holding an scf.for along it, each iteration
/// the original body at the same row-major index. Iterations that differ
/// outside the axis write different elements (the target is the update's
/// position with only the axis coordinate replaced), and along the axis the
/// order stays, so every element sees the same updates in the same order.
/// Null where the loop is not the one tsr-to-linalg makes.
scf::ParallelOp parallelizeScatter(IRRewriter &rewriter, scf::ForOp loop) {
  auto attr = loop->getAttrOfType<DenseI64ArrayAttr>(tsr::attr::kScatterShape);
  ArrayRef<int64_t> shape = attr.asArrayRef().drop_front();
  auto axis = static_cast<size_t>(attr[0]);
  int64_t total = 1, outside = 1;
  SmallVector<int64_t> outer;
  for (auto [d, size] : llvm::enumerate(shape)) {
    total *= size;
    if (d != axis) {
      outer.push_back(size);
      outside *= size;
    }
  }
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()),
                         ub = getConstantIntValue(loop.getUpperBound()),
                         step = getConstantIntValue(loop.getStep());
  if (!loop.getInitArgs().empty() || lb != 0 || ub != total || step != 1)
    return {};
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value zero = index(0), one = index(1);
  auto parallel =
      scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                              ValueRange{index(outside)}, ValueRange{one});
  rewriter.setInsertionPointToStart(parallel.getBody());
  SmallVector<Value> coords =
      splitIndex(rewriter, loc, parallel.getInductionVars()[0], outer);
  auto along = scf::ForOp::create(rewriter, loc, zero, index(shape[axis]), one);
  rewriter.setInsertionPointToStart(along.getBody());
  // The row-major index of (coords with the axis coordinate inserted).
  Value linear = zero;
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    Value coord =
        d == axis ? along.getInductionVar() : coords[d < axis ? d : d - 1];
    Value term = arith::MulIOp::create(rewriter, loc, coord, index(stride));
    linear = arith::AddIOp::create(rewriter, loc, linear, term);
    stride *= shape[d];
  }
  IRMapping map;
  map.map(loop.getInductionVar(), linear);
  for (Operation &op : loop.getBody()->without_terminator())
    rewriter.clone(op, map);
  rewriter.eraseOp(loop);
  return parallel;
}

/// How a reduction is mapped: a warp per output element (its input read
/// along a reduction dimension innermost), or a block per 32 output elements
/// (its input read along the last parallel dimension innermost).
enum class ReductionShape { Row, Column };

/// The combining op of a reduction's body and what it folds in.
struct Combiner {
  gpu::AllReduceOperation kind;
  Operation *op;
  /// The value of one iteration, combined into the output.
  Value element;
  ReductionShape shape;
};

/// The buffer `value` of `function` is in (a private function's callers
/// may pass one buffer twice).
Value bufferOf(Value value, func::FuncOp function) {
  return tessera::bufferRoot(value, !function.isPublic());
}

/// The combiner of `op` if `op` is a reduction that warps run: one output
/// written along parallel dimensions only, static bounds, at least a warp's
/// worth of reduction iterations, a body yielding `combine(out, element)`
/// (or `combine(element, out)`) in which the output is read by the
/// combiner only, and an input of identity layout whose innermost dimension
/// is a reduction dimension (a row reduction) or the last parallel one (a
/// column reduction); either way consecutive threads read consecutive
/// elements.
std::optional<Combiner> matchReduction(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0 || op->getNumRegions() != 1)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  auto isReduction = [&](unsigned d) {
    return iterators[d] == utils::IteratorType::reduction;
  };
  int64_t reduced = 1;
  std::optional<unsigned> lastParallel;
  for (auto [d, range] : llvm::enumerate(op.getStaticLoopRanges())) {
    if (ShapedType::isDynamic(range) || range == 0)
      return std::nullopt;
    if (isReduction(d))
      reduced *= range;
    else
      lastParallel = d;
  }
  if (reduced < tessera::kWarpSize)
    return std::nullopt;
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap written = op.getMatchingIndexingMap(init);
  if (!written.isProjectedPermutation() ||
      llvm::any_of(written.getResults(), [&](AffineExpr expr) {
        return isReduction(cast<AffineDimExpr>(expr).getPosition());
      }))
    return std::nullopt;
  // The innermost dimension of each input read at identity layout.
  std::optional<ReductionShape> shape;
  for (OpOperand *in : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(in->get().getType());
    AffineMap map = op.getMatchingIndexingMap(in);
    if (!type || map.getNumResults() == 0 || !type.getLayout().isIdentity())
      continue;
    auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
    if (!last)
      continue;
    if (isReduction(last.getPosition())) {
      shape = ReductionShape::Row;
      break;
    }
    if (last.getPosition() == lastParallel)
      shape = ReductionShape::Column;
  }
  if (!shape)
    return std::nullopt;
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  BlockArgument out = op.getMatchingBlockArgument(init);
  Operation *combine = yield.getValues()[0].getDefiningOp();
  if (!combine || combine->getBlock() != body ||
      combine->getNumOperands() != 2 || !out.hasOneUse() ||
      out.getUses().begin()->getOwner() != combine)
    return std::nullopt;
  std::optional<gpu::AllReduceOperation> kind =
      tessera::getWarpCombiner(combine);
  if (!kind)
    return std::nullopt;
  Value element = combine->getOperand(combine->getOperand(0) == out ? 1 : 0);
  if (element == out || !isa<FloatType>(element.getType()))
    return std::nullopt;
  // The body may read buffers other than the one it accumulates into (a
  // loss reads each sample's log-probability at its label).
  auto function = op->getParentOfType<func::FuncOp>();
  Value accumulated = bufferOf(init->get(), function);
  for (Operation &nested : body->without_terminator()) {
    if (auto read = dyn_cast<memref::LoadOp>(nested)) {
      if (bufferOf(read.getMemRef(), function) == accumulated)
        return std::nullopt;
      continue;
    }
    if (nested.getNumRegions() != 0 || !isPure(&nested))
      return std::nullopt;
  }
  return Combiner{*kind, combine, element, *shape};
}

/// The value that `kind` combines with anything to give it back.
Value identity(OpBuilder &b, Location loc, gpu::AllReduceOperation kind,
               FloatType type) {
  const llvm::fltSemantics &semantics = type.getFloatSemantics();
  APFloat value = APFloat::getZero(semantics, /*Negative=*/true);
  switch (kind) {
  case gpu::AllReduceOperation::MUL:
    value = APFloat::getOne(semantics);
    break;
  case gpu::AllReduceOperation::MAXIMUMF:
  case gpu::AllReduceOperation::MAXNUMF:
    value = APFloat::getInf(semantics, /*Negative=*/true);
    break;
  case gpu::AllReduceOperation::MINIMUMF:
  case gpu::AllReduceOperation::MINNUMF:
    value = APFloat::getInf(semantics);
    break;
  default:
    break;
  }
  return arith::ConstantOp::create(b, loc, FloatAttr::get(type, value));
}

/// Widest access, in bytes, of a vectorized elementwise kernel: one
/// 128-bit load or store per operand and thread (ld.global.v4.f32).
constexpr int64_t kVectorBytes = 16;

/// How an elementwise op runs `width` consecutive elements of its innermost
/// dimension per thread: which operands are read along it (a vector access)
/// and which body values differ between those elements.
struct VectorPlan {
  int64_t width;
  llvm::SmallBitVector alongInner;
  llvm::SmallPtrSet<Value, 16> varying;
};

/// Bytes of an element that a vector access loads as it is stored: integers
/// and floats of whole bytes (an i1 buffer holds a byte per element, a
/// vector<Nxi1> is packed bits), not index.
std::optional<int64_t> vectorElementBytes(Type type) {
  if (!isa<IntegerType, FloatType>(type) || type.getIntOrFloatBitWidth() % 8)
    return std::nullopt;
  return type.getIntOrFloatBitWidth() / 8;
}

/// The alignment of a vector access to `width` consecutive elements of
/// `element`: their bytes, at most 16.
llvm::MaybeAlign vectorAlignment(Type element, int64_t width) {
  return llvm::MaybeAlign(
      std::min<int64_t>(kVectorBytes, width * *vectorElementBytes(element)));
}

/// `value` through `map` as a vector of `width`: a uniform (scalar) value
/// broadcast.
Value widen(IRRewriter &rewriter, Location loc, IRMapping &map, Value value,
            int64_t width) {
  Value mapped = map.lookupOrDefault(value);
  if (isa<VectorType>(mapped.getType()))
    return mapped;
  return vector::BroadcastOp::create(
      rewriter, loc, VectorType::get({width}, mapped.getType()), mapped);
}

/// The plan of `op` if each thread can run `width` > 1 consecutive
/// iterations of loop `inner`: static bounds, every indexing map's results
/// dimensions or constants, an operand read along `inner` only through its
/// own innermost dimension (unit stride; the offset and the other strides
/// multiples of `width`, so that each thread's access is aligned), at least
/// one input and (unless `reduction`, whose output is written per element
/// of the other loops) every output read along it, and a body of
/// elementwise arith and math ops in which only values not depending on
/// `inner` may be indices. `width` is 16 bytes of the narrowest element
/// read along `inner`, halved until it divides `inner`'s trip count and
/// the layouts.
std::optional<VectorPlan> planVectorAccess(linalg::LinalgOp op, unsigned inner,
                                           bool reduction) {
  if (!op.hasPureBufferSemantics() || op->getNumRegions() != 1 ||
      op.getNumLoops() == 0)
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamicShape(ranges))
    return std::nullopt;
  Block *body = op.getBlock();
  VectorPlan plan;
  plan.alongInner.resize(op->getNumOperands());
  int64_t narrowest = kVectorBytes;
  // Layout constraints on the width: every stride but the innermost and the
  // offset of an operand read along the innermost loop.
  SmallVector<int64_t> multiples;
  for (OpOperand &operand : op->getOpOperands()) {
    if (reduction && op.isDpsInit(&operand))
      continue;
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type) {
      if (op.isDpsInit(&operand))
        return std::nullopt;
      continue;
    }
    std::optional<int64_t> bytes = vectorElementBytes(type.getElementType());
    if (!bytes)
      return std::nullopt;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    std::optional<unsigned> position;
    for (auto [i, result] : llvm::enumerate(map.getResults())) {
      if (isa<AffineConstantExpr>(result))
        continue;
      auto dim = dyn_cast<AffineDimExpr>(result);
      if (!dim)
        return std::nullopt;
      if (dim.getPosition() == inner) {
        if (position)
          return std::nullopt;
        position = i;
      }
    }
    if (!position) {
      if (op.isDpsInit(&operand))
        return std::nullopt;
      continue;
    }
    SmallVector<int64_t> strides;
    int64_t offset;
    if (*position != map.getNumResults() - 1 ||
        failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1 || ShapedType::isDynamic(offset) ||
        ShapedType::isDynamicShape(strides))
      return std::nullopt;
    plan.alongInner.set(operand.getOperandNumber());
    plan.varying.insert(op.getMatchingBlockArgument(&operand));
    narrowest = std::min(narrowest, *bytes);
    multiples.push_back(offset);
    llvm::append_range(multiples, ArrayRef(strides).drop_back());
  }
  if (plan.alongInner.none())
    return std::nullopt;
  for (Operation &nested : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(nested)) {
      // The position along `inner` (a one-hot's class) as an integer: a
      // vector of consecutive values.
      if (index.getDim() == inner) {
        if (!llvm::all_of(index->getUsers(), [](Operation *user) {
              auto cast = dyn_cast<arith::IndexCastOp>(user);
              return cast && isa<IntegerType>(cast.getType());
            }))
          return std::nullopt;
        plan.varying.insert(index.getResult());
      }
      continue;
    }
    if (nested.hasTrait<OpTrait::ConstantLike>())
      continue;
    if (nested.getNumRegions() != 0 || nested.getNumResults() == 0 ||
        !nested.hasTrait<OpTrait::Elementwise>() ||
        !isa<arith::ArithDialect, math::MathDialect>(nested.getDialect()))
      return std::nullopt;
    if (llvm::none_of(nested.getOperands(),
                      [&](Value v) { return plan.varying.contains(v); }))
      continue;
    for (Value result : nested.getResults()) {
      if (!isa<IntegerType, FloatType>(result.getType()))
        return std::nullopt;
      plan.varying.insert(result);
    }
  }
  for (plan.width = kVectorBytes / narrowest; plan.width > 1; plan.width /= 2)
    if (ranges[inner] % plan.width == 0 &&
        llvm::all_of(multiples, [&](int64_t m) { return m % plan.width == 0; }))
      return plan;
  return std::nullopt;
}

/// The plan of the elementwise `op` (every loop parallel) if its elements
/// can run `width` > 1 to a thread along its innermost loop.
std::optional<VectorPlan> planVectorized(linalg::LinalgOp op) {
  if (op.getNumLoops() == 0 || op.getNumLoops() != op.getNumParallelLoops())
    return std::nullopt;
  return planVectorAccess(op, op.getNumLoops() - 1, /*reduction=*/false);
}

/// Clones the ops of `body` (but `skip`) at the insertion point, through
/// `map`: an op on values that differ between the `plan.width` elements a
/// thread runs as the op on vectors, its uniform operands broadcast, the
/// others as they are; `linalg.index` of dimension d is `ivs[d]`, and an
/// integer cast of it along the vector's dimension the vector of the
/// `plan.width` consecutive positions from there.
void cloneVectorBody(IRRewriter &rewriter, Location loc, Block *body,
                     const VectorPlan &plan, ArrayRef<Value> ivs,
                     IRMapping &map, Operation *skip = nullptr) {
  for (Operation &nested : body->without_terminator()) {
    if (&nested == skip)
      continue;
    if (auto linalgIndex = dyn_cast<linalg::IndexOp>(nested)) {
      map.map(linalgIndex.getResult(), ivs[linalgIndex.getDim()]);
      continue;
    }
    if (auto cast = dyn_cast<arith::IndexCastOp>(nested);
        cast && cast.getIn().getDefiningOp<linalg::IndexOp>() &&
        plan.varying.contains(cast.getIn())) {
      auto integer = cast.getType();
      auto type = VectorType::get({plan.width}, integer);
      Value first = arith::IndexCastOp::create(rewriter, loc, integer,
                                               map.lookup(cast.getIn()));
      SmallVector<Attribute> offsets;
      for (int64_t k = 0; k < plan.width; ++k)
        offsets.push_back(rewriter.getIntegerAttr(integer, k));
      Value positions = arith::AddIOp::create(
          rewriter, loc,
          vector::BroadcastOp::create(rewriter, loc, type, first),
          arith::ConstantOp::create(rewriter, loc,
                                    DenseElementsAttr::get(type, offsets)));
      map.map(cast.getResult(), positions);
      continue;
    }
    if (!plan.varying.contains(nested.getResult(0))) {
      rewriter.clone(nested, map);
      continue;
    }
    SmallVector<Value> operands;
    for (Value operand : nested.getOperands())
      operands.push_back(widen(rewriter, loc, map, operand, plan.width));
    SmallVector<Type> types;
    for (Type type : nested.getResultTypes())
      types.push_back(VectorType::get({plan.width}, type));
    OperationState state(nested.getLoc(), nested.getName(), operands, types,
                         nested.getAttrs());
    Operation *vectorOp = rewriter.create(state);
    map.map(nested.getResults(), vectorOp->getResults());
  }
}

/// Builds the pieces of a reduction kernel for the matched `op`: the
/// parallel (output) and reduction index spaces, each linearized.
class ReductionEmitter {
public:
  ReductionEmitter(IRRewriter &rewriter, linalg::LinalgOp op,
                   const Combiner &combiner)
      : rewriter(rewriter), op(op), combiner(combiner), loc(op.getLoc()) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray())) {
      bool reduction = it == utils::IteratorType::reduction;
      (reduction ? reductionDims : parallelDims).push_back(d);
      (reduction ? reductionRanges : parallelRanges).push_back(ranges[d]);
      (reduction ? reduced : outputs) *= ranges[d];
    }
    ivs.resize(ranges.size());
  }

  /// Output elements and reduction iterations.
  int64_t outputs = 1, reduced = 1;

  /// The reduction loop that varies fastest in the linearized reduction
  /// space.
  unsigned innermostReduction() const { return reductionDims.back(); }

  Value index(int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  }

  /// Sets the parallel loop indices to those of output element `linear`.
  void setOutput(Value linear) {
    for (auto [d, coord] : llvm::zip(
             parallelDims, splitIndex(rewriter, loc, linear, parallelRanges)))
      ivs[d] = coord;
  }

  /// The fold of the elements of iterations first, first + step, ... of
  /// the linearized reduction space, from the combiner's identity: an
  /// scf.for at the insertion point. With `plan`, each of those iterations
  /// starts `plan->width` consecutive ones along the innermost reduction
  /// dimension: the inputs read along it are one aligned vector.load each,
  /// the body runs on vectors, and the elements are combined in order.
  Value fold(Value first, int64_t step, const VectorPlan *plan = nullptr) {
    auto type = cast<FloatType>(combiner.element.getType());
    auto loop = scf::ForOp::create(
        rewriter, loc, first, index(reduced), index(step),
        ValueRange{identity(rewriter, loc, combiner.kind, type)});
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(loop.getBody());
    for (auto [d, coord] : llvm::zip(
             reductionDims, splitIndex(rewriter, loc, loop.getInductionVar(),
                                       reductionRanges)))
      ivs[d] = coord;
    IRMapping map;
    for (OpOperand *in : op.getDpsInputOperands()) {
      bool vector = plan && plan->alongInner.test(in->getOperandNumber());
      Value value = source ? source(in, ivs, vector) : Value();
      if (!value)
        value = vector ? loadVector(in, plan->width) : load(in);
      map.map(op.getMatchingBlockArgument(in), value);
    }
    Value folded = loop.getRegionIterArg(0);
    if (plan) {
      cloneVectorBody(rewriter, loc, op.getBlock(), *plan, ivs, map,
                      combiner.op);
      Value elements = map.lookupOrDefault(combiner.element);
      for (int64_t k = 0; k < plan->width; ++k)
        folded = combine(
            folded, isa<VectorType>(elements.getType())
                        ? vector::ExtractOp::create(rewriter, loc, elements, k)
                              .getResult()
                        : elements);
    } else {
      for (Operation &nested : op.getBlock()->without_terminator()) {
        if (&nested == combiner.op)
          continue;
        if (auto position = dyn_cast<linalg::IndexOp>(nested))
          map.map(position.getResult(), ivs[position.getDim()]);
        else
          rewriter.clone(nested, map);
      }
      folded = combine(folded, map.lookup(combiner.element));
    }
    scf::YieldOp::create(rewriter, loc, folded);
    // Outside the loop only the parallel indices exist.
    for (unsigned d : reductionDims)
      ivs[d] = index(0);
    return loop.getResult(0);
  }

  /// `lhs (+) rhs` with the body's combining op.
  Value combine(Value lhs, Value rhs) {
    Operation *result = rewriter.clone(*combiner.op);
    result->setOperands(ValueRange{lhs, rhs});
    return result->getResult(0);
  }

  /// Where `cond` holds, combines `total` into the current output element.
  void accumulate(Value cond, function_ref<Value()> total) {
    OpBuilder::InsertionGuard guard(rewriter);
    auto store = scf::IfOp::create(rewriter, loc, cond);
    rewriter.setInsertionPoint(store.thenBlock()->getTerminator());
    OpOperand *init = op.getDpsInitOperand(0);
    Value result = combine(load(init), total());
    memref::StoreOp::create(rewriter, loc, result, init->get(), indices(init));
  }

private:
  SmallVector<Value> indices(OpOperand *operand) {
    SmallVector<Value> result;
    for (AffineExpr expr : op.getMatchingIndexingMap(operand).getResults())
      result.push_back(affine::AffineApplyOp::create(
          rewriter, loc, AffineMap::get(ivs.size(), 0, expr), ivs));
    return result;
  }

  Value load(OpOperand *operand) {
    Value source = operand->get();
    if (!isa<MemRefType>(source.getType()))
      return source;
    if (registers)
      if (Value held = registers->lookup(source))
        return held;
    return memref::LoadOp::create(rewriter, loc, source, indices(operand));
  }

  /// `width` consecutive elements of `operand` along its innermost
  /// dimension from the current indices, aligned to their bytes (at most
  /// 16).
  Value loadVector(OpOperand *operand, int64_t width) {
    Type element = getElementTypeOrSelf(operand->get().getType());
    return vector::LoadOp::create(
        rewriter, loc, VectorType::get({width}, element), operand->get(),
        indices(operand), /*nontemporal=*/false,
        vectorAlignment(element, width));
  }

public:
  /// A row chain's values of its row's element of the buffers it wrote
  /// (mapRowChain): read there instead of loaded.
  const llvm::DenseMap<Value, Value> *registers = nullptr;
  /// A row chain's value of an input at the indices (a vector along the
  /// innermost loop if asked), or null where it is loaded (mapRowChain's
  /// recomputed elementwise ops).
  std::function<Value(OpOperand *, ArrayRef<Value>, bool)> source;

private:
  IRRewriter &rewriter;
  linalg::LinalgOp op;
  const Combiner &combiner;
  Location loc;
  SmallVector<unsigned> parallelDims, reductionDims;
  SmallVector<int64_t> parallelRanges, reductionRanges;
  SmallVector<Value> ivs;
};

/// Warps of a block, and the partial values of a column reduction's block.
constexpr int64_t kWarps = tessera::kBlockSize / tessera::kWarpSize;

/// A kernel of a warp per row: its loop over blocks, a lane's index in its
/// warp, its warp's row and that row clamped to the last one (what the last
/// block's surplus warps compute again).
struct WarpRows {
  scf::ForallOp grid;
  Value lane, row, clamped;
};

/// Creates an empty kernel with a warp per row of `rows`, eight to a block,
/// at `rewriter`'s insertion point and moves the insertion point into its
/// thread loop.
WarpRows createWarpRowKernel(IRRewriter &rewriter, Location loc, int64_t rows) {
  int64_t warps = std::min(rows, kWarps);
  scf::ForallOp block = tessera::createKernel(
      rewriter, loc, llvm::divideCeil(rows, warps), warps * tessera::kWarpSize);
  Value blockId = cast<scf::ForallOp>(block->getParentOp()).getInductionVar(0);
  auto lanes = affine::AffineDelinearizeIndexOp::create(
      rewriter, loc, block.getInductionVar(0),
      ArrayRef<int64_t>{warps, tessera::kWarpSize}, /*hasOuterBound=*/true);
  Value row = linearIndex(rewriter, loc, blockId, warps, lanes.getResult(0));
  Value last = arith::ConstantIndexOp::create(rewriter, loc, rows - 1);
  return {cast<scf::ForallOp>(block->getParentOp()), lanes.getResult(1), row,
          arith::MinUIOp::create(rewriter, loc, row, last)};
}

/// Replaces the row reduction `op` by a kernel with a warp per output
/// element, eight to a block: lane `l` folds iterations l, l + 32, ... of
/// the linearized reduction space (with 16-byte loads where the layout
/// allows, planVectorAccess: iterations w·l to w·l + w - 1, then w·(l +
/// 32) on, each run of w in order), gpu.subgroup_reduce combines the
/// lanes' values (butterfly shuffles on the GPU), and lane 0 combines the
/// result into the output. The last block's surplus warps compute the last
/// output again (the subgroup reduction stays outside any branch, as every lane
/// must reach it) and store nothing.
void mapRowReduction(IRRewriter &rewriter, linalg::LinalgOp op,
                     const Combiner &combiner) {
  ReductionEmitter emit(rewriter, op, combiner);
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  int64_t rows = emit.outputs;
  auto [grid, lane, row, clamped] = createWarpRowKernel(rewriter, loc, rows);
  emit.setOutput(clamped);
  // 16 bytes of each row per lane and iteration where the layout allows:
  // lane l folds elements [w·l, w·l + w), [w·(l + 32), ...), in order.
  std::optional<VectorPlan> plan =
      planVectorAccess(op, emit.innermostReduction(), /*reduction=*/true);
  int64_t width = plan ? plan->width : 1;
  Value start = affine::AffineApplyOp::create(
      rewriter, loc, AffineMap::get(1, 0, rewriter.getAffineDimExpr(0) * width),
      ValueRange{lane});
  Value partial =
      emit.fold(start, tessera::kWarpSize * width, plan ? &*plan : nullptr);
  Value total = gpu::SubgroupReduceOp::create(rewriter, loc, partial,
                                              combiner.kind, /*uniform=*/true);
  Value inside = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                       row, emit.index(rows));
  Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                      lane, emit.index(0));
  emit.accumulate(arith::AndIOp::create(rewriter, loc, inside, first),
                  [&] { return total; });
  rewriter.eraseOp(op);
}

/// A column reduction and the value of the fill before it that its kernel
/// replaces (or null).
struct ColumnReduction {
  linalg::LinalgOp op;
  Combiner combiner;
  Value filled;
};

/// Replaces the column reductions of `group` (consecutive, over the same
/// parallel and reduction extents, none writing what another reads) by one
/// kernel at the last one's place, with a block per 32 consecutive output
/// elements: for each reduction in turn, thread (w, c) of the block's
/// 8 x 32 folds iterations w, w + 8, ... of output element c (the 32 lanes
/// of a warp read 32 consecutive elements of a row) into workgroup memory
/// of its own; after a barrier, the first warp combines the 8 values of its
/// column in order and combines the result into the output (into `filled`,
/// where a fill that the kernel replaces wrote the output). The
/// deallocations between the reductions move after the kernel.
void mapColumnReductions(IRRewriter &rewriter,
                         ArrayRef<ColumnReduction> group) {
  linalg::LinalgOp last = group.back().op;
  Location loc = last.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(last);
  int64_t columns =
      ReductionEmitter(rewriter, last, group.back().combiner).outputs;
  scf::ForallOp block = tessera::createKernel(
      rewriter, loc, llvm::divideCeil(columns, tessera::kWarpSize),
      tessera::kBlockSize);
  Value blockId = cast<scf::ForallOp>(block->getParentOp()).getInductionVar(0);
  auto part = affine::AffineDelinearizeIndexOp::create(
      rewriter, loc, block.getInductionVar(0),
      ArrayRef<int64_t>{kWarps, tessera::kWarpSize}, /*hasOuterBound=*/true);
  Value warp = part.getResult(0), lane = part.getResult(1);
  Value column = linearIndex(rewriter, loc, blockId, tessera::kWarpSize, lane);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value clamped =
      arith::MinUIOp::create(rewriter, loc, column, index(columns - 1));
  Value inside = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                       column, index(columns));
  Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                      warp, index(0));
  Value firstInside = arith::AndIOp::create(rewriter, loc, inside, first);
  for (ColumnReduction member : group) {
    ReductionEmitter emit(rewriter, member.op, member.combiner);
    llvm::DenseMap<Value, Value> held;
    if (member.filled) {
      held[member.op.getDpsInits()[0]] = member.filled;
      emit.registers = &held;
    }
    Value partials;
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPoint(block);
      partials = memref::AllocaOp::create(
          rewriter, loc,
          MemRefType::get(
              {kWarps, tessera::kWarpSize}, member.combiner.element.getType(),
              MemRefLayoutAttrInterface(),
              gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup)));
    }
    emit.setOutput(clamped);
    Value partial = emit.fold(warp, kWarps);
    memref::StoreOp::create(rewriter, loc, partial, partials,
                            ValueRange{warp, lane});
    gpu::BarrierOp::create(rewriter, loc);
    emit.accumulate(firstInside, [&] {
      Value total;
      for (int64_t w = 0; w < kWarps; ++w) {
        Value value = memref::LoadOp::create(rewriter, loc, partials,
                                             ValueRange{emit.index(w), lane});
        total = w == 0 ? value : emit.combine(total, value);
      }
      return total;
    });
  }
  Operation *grid = block->getParentOp();
  SmallVector<Operation *> deallocs;
  for (Operation *it = group.front().op; it != last; it = it->getNextNode())
    if (isa<memref::DeallocOp>(it))
      deallocs.push_back(it);
  for (Operation *dealloc : llvm::reverse(deallocs))
    rewriter.moveOpAfter(dealloc, grid);
  for (const ColumnReduction &member : group)
    rewriter.eraseOp(member.op);
}

/// Replaces the elementwise `op` by a kernel in which each thread runs
/// `plan.width` consecutive elements of the innermost dimension: an operand
/// read along it is one aligned vector.load, another one scalar load; the
/// body's ops on values that differ between the elements take vectors (the
/// others stay scalar, broadcast where a vector op uses them), and each
/// output is one aligned vector.store. Each element gets the ops of the
/// scalar kernel, so the results are the same bits.
void mapVectorized(IRRewriter &rewriter, linalg::LinalgOp op,
                   const VectorPlan &plan) {
  Location loc = op.getLoc();
  SmallVector<int64_t> groups = op.getStaticLoopRanges();
  groups.back() /= plan.width;
  int64_t total = 1;
  for (int64_t g : groups)
    total *= g;
  rewriter.setInsertionPoint(op);
  Value linear = createLinearKernel(rewriter, loc, total);
  SmallVector<Value> ivs = splitIndex(rewriter, loc, linear, groups);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  ivs.back() = affine::AffineApplyOp::create(
      rewriter, loc,
      AffineMap::get(1, 0, rewriter.getAffineDimExpr(0) * plan.width),
      ValueRange{ivs.back()});

  auto vectorOf = [&](Type element) {
    return VectorType::get({plan.width}, element);
  };
  auto indicesOf = [&](OpOperand &operand) {
    SmallVector<Value> indices;
    for (AffineExpr result : op.getMatchingIndexingMap(&operand).getResults()) {
      if (auto dim = dyn_cast<AffineDimExpr>(result))
        indices.push_back(ivs[dim.getPosition()]);
      else
        indices.push_back(index(cast<AffineConstantExpr>(result).getValue()));
    }
    return indices;
  };
  IRMapping map;
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(&operand);
    if (arg.use_empty())
      continue;
    Value source = operand.get();
    if (!isa<MemRefType>(source.getType())) {
      map.map(arg, source);
    } else if (plan.alongInner.test(operand.getOperandNumber())) {
      map.map(arg, vector::LoadOp::create(
                       rewriter, loc, vectorOf(arg.getType()), source,
                       indicesOf(operand), /*nontemporal=*/false,
                       vectorAlignment(arg.getType(), plan.width)));
    } else {
      map.map(arg, memref::LoadOp::create(rewriter, loc, source,
                                          indicesOf(operand)));
    }
  }
  Block *body = op.getBlock();
  cloneVectorBody(rewriter, loc, body, plan, ivs, map);
  for (auto [yielded, init] :
       llvm::zip(body->getTerminator()->getOperands(), op.getDpsInitsMutable()))
    vector::StoreOp::create(rewriter, loc,
                            widen(rewriter, loc, map, yielded, plan.width),
                            init.get(), indicesOf(init), /*nontemporal=*/false,
                            vectorAlignment(yielded.getType(), plan.width));
  rewriter.eraseOp(op);
}

//===----------------------------------------------------------------------===//
// Row chains: a row reduction and the ops around it on the same rows, one
// kernel with a warp per row.
//===----------------------------------------------------------------------===//

/// What an op of a row chain computes for its row: one value (an op over
/// the row dimensions only, a fill of a reduction's output), every element
/// (an elementwise op over the row and its elements) or the reduction of
/// the elements.
enum class RowRole { Uniform, Elementwise, Reduction };

/// How a chain op's operand is indexed: at its row's one element (the
/// identity over the row dimensions), at the iteration's element (the
/// identity over all loops), or otherwise.
enum class RowAccess { Uniform, Element, Other };

struct RowOp {
  linalg::LinalgOp op;
  RowRole role;
  std::optional<Combiner> combiner;
  /// The most elements a lane can read and write at a time (Elementwise
  /// and Reduction ops: their vector plan's width, 1 without one).
  int64_t width = 1;
};

/// A run of ops that one warp per row runs in turn: the ops share the
/// leading dimensions `rows` (parallel) and, but Uniform ones, the
/// element dimensions `row` after them.
struct RowChain {
  SmallVector<int64_t> rows, row;
  SmallVector<RowOp> ops;
  /// Every Elementwise and Reduction op runs `width` elements at a time,
  /// lane l the elements [w·l, w·l + w), [w·(l + 32), ...) of the
  /// linearized row: a lane reads only the elements that it wrote itself.
  int64_t width = 1;
  /// The ops between the first and the last that free a buffer: they move
  /// after the kernel.
  SmallVector<Operation *> deallocs;
};

bool isStaticStrided(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         !ShapedType::isDynamic(offset) && !ShapedType::isDynamicShape(strides);
}

RowAccess rowAccess(AffineMap map, unsigned rows, unsigned loops) {
  auto identityOver = [&](unsigned n) {
    if (map.getNumResults() != n)
      return false;
    for (auto [i, result] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(result);
      if (!dim || dim.getPosition() != i)
        return false;
    }
    return true;
  };
  if (identityOver(rows))
    return RowAccess::Uniform;
  if (loops > rows && identityOver(loops))
    return RowAccess::Element;
  return RowAccess::Other;
}

/// `op` as an op of a chain over `rows` x `row`: its loops are `rows`
/// (parallel) and then nothing (Uniform), `row` parallel (Elementwise) or
/// `row` reduced (Reduction, a row reduction of matchReduction); a pure
/// body without regions; Uniform and Reduction ops write their outputs at
/// the row's element, Elementwise ones at the iteration's.
std::optional<RowOp> matchRowOp(linalg::LinalgOp op, ArrayRef<int64_t> rows,
                                ArrayRef<int64_t> row) {
  if (!op.hasPureBufferSemantics() || op->getNumRegions() != 1 ||
      op.getNumDpsInits() == 0)
    return std::nullopt;
  for (Operation &nested : op.getBlock()->without_terminator())
    if (nested.getNumRegions() != 0 || !isPure(&nested))
      return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned p = rows.size();
  if (ranges.size() < p || !llvm::equal(ArrayRef(ranges).take_front(p), rows))
    return std::nullopt;
  auto all = [&](utils::IteratorType type, unsigned from, unsigned to) {
    return llvm::all_of(llvm::seq(from, to),
                        [&](unsigned d) { return iterators[d] == type; });
  };
  if (!all(utils::IteratorType::parallel, 0, p))
    return std::nullopt;
  RowOp result{op, RowRole::Uniform, std::nullopt, 1};
  if (ranges.size() != p) {
    if (!llvm::equal(ArrayRef(ranges).drop_front(p), row))
      return std::nullopt;
    unsigned loops = ranges.size();
    if (all(utils::IteratorType::parallel, p, loops)) {
      result.role = RowRole::Elementwise;
    } else if (all(utils::IteratorType::reduction, p, loops)) {
      result.combiner = matchReduction(op);
      if (!result.combiner || result.combiner->shape != ReductionShape::Row)
        return std::nullopt;
      result.role = RowRole::Reduction;
    } else {
      return std::nullopt;
    }
    if (std::optional<VectorPlan> plan =
            planVectorAccess(op, loops - 1, result.role == RowRole::Reduction))
      result.width = plan->width;
  }
  RowAccess written = result.role == RowRole::Elementwise ? RowAccess::Element
                                                          : RowAccess::Uniform;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (!isa<MemRefType>(init.get().getType()) ||
        rowAccess(op.getMatchingIndexingMap(&init), p, op.getNumLoops()) !=
            written)
      return std::nullopt;
  return result;
}

/// Whether the warps of a chain running `ops` in turn compute what the ops
/// compute one after another. A lane reads only elements that it wrote
/// itself or that nothing in the chain writes: a buffer the chain writes is
/// indexed the same way (at the row's element or at the iteration's) by
/// every op that touches it, through one view; a value at the row's
/// element that a Uniform op wrote is then passed on in registers (every
/// lane holds it); one that only a Reduction's lane 0 wrote must not be
/// read again, and one read from memory by every lane must not then be
/// written. With `argumentsAlias` (a private function: its callers may
/// pass one buffer twice), the function's arguments are one buffer.
bool isSafeRowChain(ArrayRef<RowOp> ops, unsigned rows, bool argumentsAlias) {
  // Where the current value of a row's element is: not touched yet, read
  // from memory by every lane, in every lane's registers, or in memory
  // written by lane 0.
  enum class Held { Unseen, Memory, Registers, LaneZero };
  struct Root {
    Value view;
    RowAccess access;
    bool written = false, mixed = false;
    Held held = Held::Unseen;
  };
  llvm::DenseMap<Value, Root> roots;
  for (const RowOp &row : ops) {
    linalg::LinalgOp op = row.op;
    // An op reads its operands before it writes.
    for (bool writes : {false, true})
      for (OpOperand &operand : op->getOpOperands()) {
        bool init = op.isDpsInit(&operand);
        if (!isa<MemRefType>(operand.get().getType()) ||
            (writes ? !init
                    : init && !op.payloadUsesValueFromOperand(&operand)))
          continue;
        RowAccess access = rowAccess(op.getMatchingIndexingMap(&operand), rows,
                                     op.getNumLoops());
        auto [it, inserted] = roots.try_emplace(
            tessera::bufferRoot(operand.get(), argumentsAlias),
            Root{operand.get(), access});
        Root &root = it->second;
        // Two views of a buffer of the same static layout index the same
        // elements at the iteration's element.
        auto type = cast<MemRefType>(operand.get().getType());
        root.mixed |= root.access != access ||
                      (root.view != operand.get() &&
                       (access != RowAccess::Element ||
                        root.view.getType() != type || !isStaticStrided(type)));
        root.written |= writes;
        if (root.written && (root.mixed || root.access == RowAccess::Other))
          return false;
        if (access != RowAccess::Uniform)
          continue;
        // A Reduction's lane 0 reads and writes its output, unless every
        // lane holds it.
        bool laneZero = init && row.role == RowRole::Reduction &&
                        root.held != Held::Registers;
        if (!writes) {
          if (root.held == Held::Unseen)
            root.held = laneZero ? Held::LaneZero : Held::Memory;
          else if (root.held == Held::LaneZero && !laneZero)
            return false;
          else if (root.held == Held::Memory && laneZero)
            return false;
        } else if (!laneZero) {
          if (root.held == Held::Memory)
            return false;
          root.held = Held::Registers;
        }
      }
  }
  return true;
}

/// Ops the chain may step over: buffers made or freed, and ops without
/// memory effects (constants, views, index arithmetic).
bool isChainNeutral(Operation *op) {
  if (isa<memref::AllocOp, memref::DeallocOp>(op))
    return true;
  return op->getNumRegions() == 0 && isMemoryEffectFree(op);
}

/// The row chains of `function`'s body: around each row reduction, the
/// longest run of consecutive ops (but neutral ones) that matchRowOp
/// accepts for its rows, that isSafeRowChain finds safe and that keeps the
/// reduction's vector width, less the fills at its end; a chain has at
/// least two ops.
SmallVector<RowChain, 4> findRowChains(IRRewriter &rewriter,
                                       func::FuncOp function) {
  Block &body = function.getBody().front();
  bool argumentsAlias = !function.isPublic();
  for (Operation &op : llvm::make_early_inc_range(body))
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
        linalgOp && linalgOp.getNumReductionLoops() != 0 &&
        linalgOp.hasPureBufferSemantics())
      parallelFirst(rewriter, linalgOp);
  SmallVector<Operation *> order;
  for (Operation &op : body)
    order.push_back(&op);
  llvm::SmallPtrSet<Operation *, 32> taken;
  SmallVector<RowChain, 4> chains;
  for (auto [at, start] : llvm::enumerate(order)) {
    auto seed = dyn_cast<linalg::LinalgOp>(start);
    if (!seed || taken.contains(start))
      continue;
    std::optional<Combiner> combiner = matchReduction(seed);
    if (!combiner || combiner->shape != ReductionShape::Row)
      continue;
    RowChain chain;
    SmallVector<int64_t> ranges = seed.getStaticLoopRanges();
    unsigned p = seed.getNumParallelLoops();
    chain.rows.assign(ranges.begin(), ranges.begin() + p);
    chain.row.assign(ranges.begin() + p, ranges.end());
    std::optional<RowOp> first = matchRowOp(seed, chain.rows, chain.row);
    if (!first)
      continue;
    chain.ops.push_back(*first);
    chain.width = first->width;
    size_t begin = at, end = at;
    // Grows the chain by the op at `index`, in front or at the back.
    auto grow = [&](size_t index, bool front) {
      auto op = dyn_cast<linalg::LinalgOp>(order[index]);
      if (!op || taken.contains(op))
        return false;
      std::optional<RowOp> next = matchRowOp(op, chain.rows, chain.row);
      if (!next ||
          (next->role != RowRole::Uniform && next->width < chain.width))
        return false;
      SmallVector<RowOp> trial = chain.ops;
      trial.insert(front ? trial.begin() : trial.end(), *next);
      if (!isSafeRowChain(trial, p, argumentsAlias))
        return false;
      chain.ops = std::move(trial);
      (front ? begin : end) = index;
      return true;
    };
    for (size_t i = at; i-- > 0;)
      if (!isChainNeutral(order[i]) && !grow(i, /*front=*/true))
        break;
    for (size_t i = at + 1; i < order.size(); ++i)
      if (!isChainNeutral(order[i]) && !grow(i, /*front=*/false))
        break;
    // Fills at the end start the next reduction rather than ending this one
    // (which would then write the next kernel's output).
    while (isa<linalg::FillOp>(chain.ops.back().op.getOperation())) {
      chain.ops.pop_back();
      end =
          llvm::find(order, chain.ops.back().op.getOperation()) - order.begin();
    }
    if (chain.ops.size() < 2)
      continue;
    for (size_t i = begin; i < end; ++i)
      if (isa<memref::DeallocOp>(order[i]))
        chain.deallocs.push_back(order[i]);
    for (const RowOp &row : chain.ops)
      taken.insert(row.op);
    chains.push_back(std::move(chain));
  }
  return chains;
}

/// Replaces the ops of `chain` by one kernel with a warp per row, eight to
/// a block, at the chain's last op. Each op runs in turn for the warp's
/// row: a Uniform op on every lane, its outputs held in registers for the
/// ops after it and stored by lane 0 (but into a buffer that nothing else
/// uses); an Elementwise op's lane l on
/// elements [w·l, w·l + w), [w·(l + 32), ...) of the linearized row (a
/// vector of w where w > 1); a Reduction as mapRowReduction runs it, its
/// total combined into the output by every lane where the output's value
/// is held (lane 0 stores it), else by lane 0 alone. The last block's
/// surplus warps recompute the last row and store nothing.
void mapRowChain(IRRewriter &rewriter, const RowChain &chain) {
  linalg::LinalgOp last = chain.ops.back().op;
  Location loc = last.getLoc();
  rewriter.setInsertionPoint(last);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  int64_t rows = 1, elements = 1;
  for (int64_t r : chain.rows)
    rows *= r;
  for (int64_t r : chain.row)
    elements *= r;
  auto [grid, lane, row, clamped] = createWarpRowKernel(rewriter, loc, rows);
  SmallVector<Value> rowIvs = splitIndex(rewriter, loc, clamped, chain.rows);
  Value inside = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                       row, index(rows));
  Value laneZero = arith::AndIOp::create(
      rewriter, loc, inside,
      arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, lane,
                            index(0)));
  int64_t width = chain.width;
  Value start = affine::AffineApplyOp::create(
      rewriter, loc, AffineMap::get(1, 0, rewriter.getAffineDimExpr(0) * width),
      ValueRange{lane});
  llvm::DenseMap<Value, Value> registers;

  auto indicesOf = [&](linalg::LinalgOp op, OpOperand &operand,
                       ArrayRef<Value> ivs) {
    SmallVector<Value> indices;
    for (AffineExpr expr : op.getMatchingIndexingMap(&operand).getResults())
      indices.push_back(affine::AffineApplyOp::create(
          rewriter, loc, AffineMap::get(ivs.size(), 0, expr), ivs));
    return indices;
  };
  // Where `cond` holds, stores each of `values` into its output.
  // A buffer that only the chain uses (and frees), whose row values the
  // chain holds in registers: never stored.
  llvm::SmallPtrSet<Operation *, 8> members;
  for (const RowOp &step : chain.ops)
    members.insert(step.op);
  auto isScratch = [&](Value buffer) {
    return buffer.getDefiningOp<memref::AllocOp>() &&
           llvm::all_of(buffer.getUsers(), [&](Operation *user) {
             return isa<memref::DeallocOp>(user) || members.contains(user);
           });
  };
  // Where `cond` holds, stores each of `values` into its output (but a
  // scratch one with `held`).
  auto storeWhere = [&](Value cond, linalg::LinalgOp op, ValueRange values,
                        ArrayRef<Value> ivs, const VectorPlan *plan,
                        bool held) {
    SmallVector<std::pair<Value, OpOperand *>> stores;
    for (auto [value, init] : llvm::zip(values, op.getDpsInitsMutable()))
      if (!held || !isScratch(init.get()))
        stores.push_back({value, &init});
    if (stores.empty())
      return;
    OpBuilder::InsertionGuard guard(rewriter);
    auto store = scf::IfOp::create(rewriter, loc, cond);
    rewriter.setInsertionPoint(store.thenBlock()->getTerminator());
    for (auto [value, operand] : stores) {
      OpOperand &init = *operand;
      if (plan)
        vector::StoreOp::create(
            rewriter, loc, value, init.get(), indicesOf(op, init, ivs),
            /*nontemporal=*/false,
            vectorAlignment(getElementTypeOrSelf(value), width));
      else
        memref::StoreOp::create(rewriter, loc, value, init.get(),
                                indicesOf(op, init, ivs));
    }
  };
  // Elementwise ops whose outputs only the chain reads, and which read
  // nothing that the chain writes after them: they do not run at their
  // place; each op that reads their output computes the element there
  // (with the registers as they were at the op's place).
  struct Recomputed {
    linalg::LinalgOp op;
    std::optional<VectorPlan> plan;
    llvm::DenseMap<Value, Value> registers;
  };
  SmallVector<Recomputed, 4> recomputed;
  llvm::DenseMap<Value, std::pair<unsigned, unsigned>> recomputedOutputs;
  auto isRecomputable = [&](size_t at) {
    linalg::LinalgOp op = chain.ops[at].op;
    for (OpOperand &init : op.getDpsInitsMutable())
      if (!isScratch(init.get()) || op.payloadUsesValueFromOperand(&init))
        return false;
    llvm::SmallPtrSet<Value, 8> writtenLater;
    for (RowOp later : ArrayRef(chain.ops).drop_front(at + 1))
      for (Value init : later.op.getDpsInits())
        writtenLater.insert(tessera::viewRoot(init));
    return llvm::none_of(op.getDpsInputs(), [&](Value input) {
      return isa<MemRefType>(input.getType()) && !registers.count(input) &&
             writtenLater.contains(tessera::viewRoot(input));
    });
  };

  // The body of `op` at `ivs`: its inputs from `held` registers, computed
  // again (recomputed ops) or loaded (vectors along the innermost loop with
  // `plan`); returns the yielded values.
  std::function<SmallVector<Value>(linalg::LinalgOp, ArrayRef<Value>,
                                   const VectorPlan *,
                                   const llvm::DenseMap<Value, Value> &)>
      emitBody;
  // The value of the recomputed output `buffer` at `ivs` (a vector with
  // `vector`), or null if `buffer` is not one.
  auto recompute = [&](Value buffer, ArrayRef<Value> ivs,
                       bool vector) -> Value {
    auto it = recomputedOutputs.find(buffer);
    if (it == recomputedOutputs.end())
      return {};
    const Recomputed &producer = recomputed[it->second.first];
    return emitBody(producer.op, ivs, vector ? &*producer.plan : nullptr,
                    producer.registers)[it->second.second];
  };
  emitBody = [&](linalg::LinalgOp op, ArrayRef<Value> ivs,
                 const VectorPlan *plan,
                 const llvm::DenseMap<Value, Value> &held) {
    IRMapping map;
    for (OpOperand &operand : op->getOpOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(&operand);
      if (arg.use_empty())
        continue;
      Value source = operand.get();
      bool vector = plan && plan->alongInner.test(operand.getOperandNumber());
      if (!isa<MemRefType>(source.getType()))
        map.map(arg, source);
      else if (Value value = held.lookup(source))
        map.map(arg, value);
      else if (Value value = recompute(source, ivs, vector))
        map.map(arg, value);
      else if (vector)
        map.map(arg,
                vector::LoadOp::create(
                    rewriter, loc, VectorType::get({width}, arg.getType()),
                    source, indicesOf(op, operand, ivs), /*nontemporal=*/false,
                    vectorAlignment(arg.getType(), width)));
      else
        map.map(arg, memref::LoadOp::create(rewriter, loc, source,
                                            indicesOf(op, operand, ivs)));
    }
    Block *body = op.getBlock();
    if (plan) {
      cloneVectorBody(rewriter, loc, body, *plan, ivs, map);
    } else {
      for (Operation &nested : body->without_terminator()) {
        if (auto position = dyn_cast<linalg::IndexOp>(nested))
          map.map(position.getResult(), ivs[position.getDim()]);
        else
          rewriter.clone(nested, map);
      }
    }
    SmallVector<Value> yielded;
    for (Value value : body->getTerminator()->getOperands())
      yielded.push_back(plan ? widen(rewriter, loc, map, value, width)
                             : map.lookupOrDefault(value));
    return yielded;
  };

  for (auto [at, step] : llvm::enumerate(chain.ops)) {
    linalg::LinalgOp op = step.op;
    std::optional<VectorPlan> plan;
    if (step.role != RowRole::Uniform && width > 1) {
      plan = planVectorAccess(op, op.getNumLoops() - 1,
                              step.role == RowRole::Reduction);
      plan->width = width;
    }
    switch (step.role) {
    case RowRole::Uniform: {
      SmallVector<Value> values = emitBody(op, rowIvs, nullptr, registers);
      storeWhere(laneZero, op, values, rowIvs, nullptr, /*held=*/true);
      for (auto [value, init] : llvm::zip(values, op.getDpsInits()))
        registers[init] = value;
      break;
    }
    case RowRole::Elementwise: {
      if (isRecomputable(at)) {
        for (unsigned i = 0; i < op.getNumDpsInits(); ++i)
          recomputedOutputs[op.getDpsInits()[i]] = {recomputed.size(), i};
        recomputed.push_back({op, plan, registers});
        break;
      }
      auto loop = scf::ForOp::create(rewriter, loc, start, index(elements),
                                     index(tessera::kWarpSize * width));
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPoint(loop.getBody()->getTerminator());
      SmallVector<Value> ivs = rowIvs;
      llvm::append_range(
          ivs, splitIndex(rewriter, loc, loop.getInductionVar(), chain.row));
      SmallVector<Value> values =
          emitBody(op, ivs, plan ? &*plan : nullptr, registers);
      storeWhere(inside, op, values, ivs, plan ? &*plan : nullptr,
                 /*held=*/false);
      break;
    }
    case RowRole::Reduction: {
      ReductionEmitter emit(rewriter, op, *step.combiner);
      emit.registers = &registers;
      emit.source = [&](OpOperand *in, ArrayRef<Value> ivs, bool vector) {
        return recompute(in->get(), ivs, vector);
      };
      emit.setOutput(clamped);
      Value partial =
          emit.fold(start, tessera::kWarpSize * width, plan ? &*plan : nullptr);
      Value total = gpu::SubgroupReduceOp::create(
          rewriter, loc, partial, step.combiner->kind, /*uniform=*/true);
      Value out = op.getDpsInits()[0];
      if (Value held = registers.lookup(out)) {
        Value result = emit.combine(held, total);
        storeWhere(laneZero, op, result, rowIvs, nullptr, /*held=*/true);
        registers[out] = result;
      } else {
        emit.accumulate(laneZero, [&] { return total; });
      }
      break;
    }
    }
  }
  for (Operation *dealloc : llvm::reverse(chain.deallocs))
    rewriter.moveOpAfter(dealloc, grid);
  for (const RowOp &step : chain.ops)
    rewriter.eraseOp(step.op);
}

/// The buffers that `op` reads or writes: its operands and what its body
/// loads.
SmallVector<std::pair<Value, bool>> touchedBuffers(linalg::LinalgOp op) {
  SmallVector<std::pair<Value, bool>> result;
  for (OpOperand &operand : op->getOpOperands())
    if (isa<MemRefType>(operand.get().getType()))
      result.push_back({operand.get(), op.isDpsInit(&operand)});
  op.getBlock()->walk([&](memref::LoadOp read) {
    result.push_back({read.getMemRef(), false});
  });
  return result;
}

/// The runs of consecutive column reductions of `function`'s body (but ops
/// that isChainNeutral accepts between them) over the same parallel and
/// reduction extents, none touching a buffer another one writes: each run
/// of two or more is one kernel (mapColumnReductions; a LayerNorm's weight
/// and bias gradients). `filled`: the fills folded into them.
SmallVector<SmallVector<ColumnReduction>>
findColumnGroups(func::FuncOp function,
                 const llvm::DenseMap<Operation *, Value> &filled) {
  auto extents = [](linalg::LinalgOp op) {
    SmallVector<int64_t> parallel, reduced;
    for (auto [range, iterator] :
         llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray()))
      (iterator == utils::IteratorType::parallel ? parallel : reduced)
          .push_back(range);
    return std::make_pair(parallel, reduced);
  };
  auto matchColumn = [](Operation *op) -> std::optional<Combiner> {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    std::optional<Combiner> combiner =
        linalgOp ? matchReduction(linalgOp) : std::nullopt;
    if (!combiner || combiner->shape != ReductionShape::Column)
      return std::nullopt;
    return combiner;
  };
  SmallVector<SmallVector<ColumnReduction>> groups;
  Block &body = function.getBody().front();
  for (Operation *it = &body.front(); it;) {
    std::optional<Combiner> combiner = matchColumn(it);
    if (!combiner) {
      it = it->getNextNode();
      continue;
    }
    auto op = cast<linalg::LinalgOp>(it);
    SmallVector<ColumnReduction> group{{op, *combiner, filled.lookup(op)}};
    auto shape = extents(op);
    llvm::SmallPtrSet<Value, 8> touched, written;
    auto independent = [&](linalg::LinalgOp member, bool record) {
      for (auto [operand, writes] : touchedBuffers(member)) {
        Value buffer = bufferOf(operand, function);
        if (!record &&
            (written.contains(buffer) || (writes && touched.contains(buffer))))
          return false;
        if (record) {
          touched.insert(buffer);
          if (writes)
            written.insert(buffer);
        }
      }
      return true;
    };
    independent(op, /*record=*/true);
    for (Operation *next = op->getNextNode(); next;
         next = next->getNextNode()) {
      if (isChainNeutral(next))
        continue;
      std::optional<Combiner> more = matchColumn(next);
      auto candidate = dyn_cast<linalg::LinalgOp>(next);
      if (!more || extents(candidate) != shape ||
          !independent(candidate, /*record=*/false))
        break;
      group.push_back({candidate, *more, filled.lookup(candidate)});
      independent(candidate, /*record=*/true);
    }
    it = group.back().op->getNextNode();
    if (group.size() > 1)
      groups.push_back(std::move(group));
  }
  return groups;
}

/// The fill that writes the output of the column reduction `op` before it,
/// if nothing between them reads or writes that output (only linalg ops on
/// other buffers, allocations, deallocations and ops without memory
/// effects; in a private function, whose callers may pass one buffer
/// twice, the arguments count as one buffer) and `op` writes each element
/// of it once (its output map is a permutation of its parallel loops) and
/// reads it nowhere else: the reduction's kernel can combine the fill's
/// value into each element instead.
linalg::FillOp fillBeforeColumnReduction(linalg::LinalgOp op) {
  std::optional<Combiner> combiner = matchReduction(op);
  if (!combiner || combiner->shape != ReductionShape::Column)
    return {};
  OpOperand *init = op.getDpsInitOperand(0);
  if (op.getMatchingIndexingMap(init).getNumResults() !=
          op.getNumParallelLoops() ||
      llvm::any_of(op.getDpsInputs(), [&](Value input) {
        return tessera::viewRoot(input) == tessera::viewRoot(init->get());
      }))
    return {};
  auto function = op->getParentOfType<func::FuncOp>();
  Value output = bufferOf(init->get(), function);
  for (Operation *it = op->getPrevNode(); it; it = it->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(it);
        fill && fill.getDpsInits()[0] == init->get())
      return fill;
    if (isChainNeutral(it))
      continue;
    auto between = dyn_cast<linalg::LinalgOp>(it);
    if (!between || llvm::any_of(touchedBuffers(between), [&](auto touched) {
          return bufferOf(touched.first, function) == output;
        }))
      return {};
  }
  return {};
}

/// Lowers `op` to its loop nest and maps the nest to blocks and threads.
LogicalResult mapLinalgOp(IRRewriter &rewriter, linalg::LinalgOp op,
                          Value filled) {
  if (std::optional<Combiner> combiner = matchReduction(op)) {
    if (combiner->shape == ReductionShape::Row)
      mapRowReduction(rewriter, op, *combiner);
    else
      mapColumnReductions(rewriter, {{op, *combiner, filled}});
    return success();
  }
  if (std::optional<VectorPlan> plan = planVectorized(op)) {
    mapVectorized(rewriter, op, *plan);
    return success();
  }
  op = parallelFirst(rewriter, op);
  Location loc = op.getLoc();
  Block *block = op->getBlock();
  Operation *before = op->getPrevNode();
  rewriter.setInsertionPoint(op);
  if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
    return op->emitError("tsr-gpu-map: cannot lower ")
           << op->getName() << " to loops";
  // What the loop nest computes on the host first (bounds: constants,
  // memref.dim) stays there; the rest goes into the kernel.
  SmallVector<Operation *> created;
  for (Operation *it = before ? before->getNextNode() : &block->front();
       it != op.getOperation(); it = it->getNextNode())
    if (!created.empty() || touchesBufferWithin(it))
      created.push_back(it);
  rewriter.eraseOp(op);
  if (created.empty())
    return success();
  if (created.size() == 1)
    if (auto parallel = dyn_cast<scf::ParallelOp>(created.front()))
      return linearize(rewriter, parallel);
  // No parallel dimension: the whole nest on one thread.
  rewriter.setInsertionPoint(created.front());
  Operation *terminator =
      tessera::createKernel(rewriter, loc, 1, 1).getBody()->getTerminator();
  for (Operation *moved : created)
    rewriter.moveOpBefore(moved, terminator);
  return success();
}

struct TsrGpuMapPass : tessera::impl::TsrGpuMapBase<TsrGpuMapPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    IRRewriter rewriter(&getContext());

    // Copies are kernels like any other linalg op.
    function.walk([&](memref::CopyOp copy) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    });
    if (fuseRows && !function.isExternal())
      for (const RowChain &chain : findRowChains(rewriter, function))
        mapRowChain(rewriter, chain);
    // A column reduction combines the value of the fill before it into its
    // outputs itself: one kernel fewer.
    llvm::DenseMap<Operation *, Value> filled;
    SmallVector<linalg::FillOp> fills;
    if (!function.isExternal())
      for (auto op : function.getBody().front().getOps<linalg::LinalgOp>())
        if (linalg::FillOp fill = fillBeforeColumnReduction(op)) {
          filled[op] = fill.value();
          fills.push_back(fill);
        }
    for (linalg::FillOp fill : fills)
      rewriter.eraseOp(fill);
    if (!function.isExternal())
      for (ArrayRef<ColumnReduction> group : findColumnGroups(function, filled))
        mapColumnReductions(rewriter, group);
    SmallVector<linalg::LinalgOp> ops;
    function.walk([&](linalg::LinalgOp op) {
      if (!op->getParentOfType<scf::ForallOp>())
        ops.push_back(op);
    });
    for (linalg::LinalgOp op : ops)
      if (failed(mapLinalgOp(rewriter, op, filled.lookup(op))))
        return signalPassFailure();
    SmallVector<scf::ForOp> scatters;
    for (auto loop : function.getBody().getOps<scf::ForOp>())
      if (loop->hasAttr(tsr::attr::kScatterShape))
        scatters.push_back(loop);
    for (scf::ForOp loop : scatters)
      if (scf::ParallelOp parallel = parallelizeScatter(rewriter, loop))
        if (failed(linearize(rewriter, parallel)))
          return signalPassFailure();
    if (failed(mapHostCode(rewriter, function)))
      return signalPassFailure();

    // The loop generator's identity index maps and the loads of outputs
    // that elementwise bodies ignore go; constants fold; a buffer that no
    // kernel reads any more (a row chain's recomputed intermediate) is not
    // allocated.
    RewritePatternSet patterns(&getContext());
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, &getContext());
    memref::AllocOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(function, std::move(patterns))))
      return signalPassFailure();
  }

  /// Puts the function body's loops and other ops that read or write a
  /// buffer (what tsr-to-linalg lowers to `scf` directly, e.g. a scatter
  /// with accumulation) on one thread, each run of consecutive ones in one
  /// kernel: buffers are in device memory on the GPU. A value they compute
  /// that the host uses is an error.
  LogicalResult mapHostCode(IRRewriter &rewriter, func::FuncOp function) {
    auto needsDevice = [](Operation *op) {
      // Library calls (tsrt.gpu_gemm) queue their own device work.
      if (isa<scf::ForallOp, memref::AllocOp, memref::DeallocOp,
              gpu::AsyncOpInterface>(op))
        return false;
      return touchesBufferWithin(op);
    };
    SmallVector<SmallVector<Operation *>> runs;
    bool open = false;
    for (Operation &op : function.getBody().getOps()) {
      if (!needsDevice(&op)) {
        open = false;
        continue;
      }
      if (!open)
        runs.emplace_back();
      runs.back().push_back(&op);
      open = true;
    }
    for (ArrayRef<Operation *> run : runs) {
      llvm::SmallPtrSet<Operation *, 8> members(run.begin(), run.end());
      for (Operation *op : run)
        for (Operation *user : op->getUsers())
          if (isa<func::ReturnOp>(user) ||
              !members.contains(
                  function.getBody().front().findAncestorOpInBlock(*user)))
            return op->emitError("tsr-gpu-map: the GPU mapping cannot run ")
                   << op->getName()
                   << " on the host (it reads or writes a buffer, in device "
                      "memory on the GPU) nor in a kernel (the host uses its "
                      "result)";
      rewriter.setInsertionPoint(run.front());
      Operation *terminator =
          tessera::createKernel(rewriter, run.front()->getLoc(), 1, 1)
              .getBody()
              ->getTerminator();
      for (Operation *op : run)
        rewriter.moveOpBefore(op, terminator);
    }
    return success();
  }
};

} // namespace
