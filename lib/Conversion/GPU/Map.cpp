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

/// Creates a kernel of one thread per index of [0, total), 256 to a block,
/// at `rewriter`'s insertion point; moves the insertion point into the
/// guard that the surplus threads of the last block skip and returns the
/// thread's index.
Value createLinearKernel(IRRewriter &rewriter, Location loc, int64_t total) {
  int64_t threads = std::min(total, tessera::kBlockSize);
  scf::ForallOp block = tessera::createKernel(
      rewriter, loc, llvm::divideCeil(total, threads), threads);
  Value blockId = cast<scf::ForallOp>(block->getParentOp()).getInductionVar(0);
  Value linear = affine::AffineApplyOp::create(
      rewriter, loc,
      AffineMap::get(2, 0,
                     rewriter.getAffineDimExpr(0) * threads +
                         rewriter.getAffineDimExpr(1)),
      ValueRange{blockId, block.getInductionVar(0)});
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
  for (Operation &nested : body->without_terminator())
    if (nested.getNumRegions() != 0 || !isPure(&nested))
      return std::nullopt;
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
      if (index.getDim() == inner)
        return std::nullopt;
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
/// others as they are; `linalg.index` of dimension d is `ivs[d]`.
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
    for (OpOperand *in : op.getDpsInputOperands())
      map.map(op.getMatchingBlockArgument(in),
              plan && plan->alongInner.test(in->getOperandNumber())
                  ? loadVector(in, plan->width)
                  : load(in));
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
        llvm::MaybeAlign(std::min<int64_t>(
            kVectorBytes, width * *vectorElementBytes(element))));
  }

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
  int64_t warps = std::min(rows, kWarps);
  scf::ForallOp block = tessera::createKernel(
      rewriter, loc, llvm::divideCeil(rows, warps), warps * tessera::kWarpSize);
  Value blockId = cast<scf::ForallOp>(block->getParentOp()).getInductionVar(0);
  auto lanes = affine::AffineDelinearizeIndexOp::create(
      rewriter, loc, block.getInductionVar(0),
      ArrayRef<int64_t>{warps, tessera::kWarpSize}, /*hasOuterBound=*/true);
  Value warp = lanes.getResult(0), lane = lanes.getResult(1);
  Value row = affine::AffineApplyOp::create(
      rewriter, loc,
      AffineMap::get(2, 0,
                     rewriter.getAffineDimExpr(0) * warps +
                         rewriter.getAffineDimExpr(1)),
      ValueRange{blockId, warp});
  emit.setOutput(
      arith::MinUIOp::create(rewriter, loc, row, emit.index(rows - 1)));
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

/// Replaces the column reduction `op` by a kernel with a block per 32
/// consecutive output elements: thread (w, c) of the block's 8 x 32 folds
/// iterations w, w + 8, ... of output element c (the 32 lanes of a warp
/// read 32 consecutive elements of a row) into workgroup memory; after a
/// barrier, the first warp combines the 8 values of its column in order and
/// combines the result into the output.
void mapColumnReduction(IRRewriter &rewriter, linalg::LinalgOp op,
                        const Combiner &combiner) {
  ReductionEmitter emit(rewriter, op, combiner);
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(op);
  int64_t columns = emit.outputs;
  scf::ForallOp block = tessera::createKernel(
      rewriter, loc, llvm::divideCeil(columns, tessera::kWarpSize),
      tessera::kBlockSize);
  Value blockId = cast<scf::ForallOp>(block->getParentOp()).getInductionVar(0);
  Value partials;
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(block);
    partials = memref::AllocaOp::create(
        rewriter, loc,
        MemRefType::get(
            {kWarps, tessera::kWarpSize}, combiner.element.getType(),
            MemRefLayoutAttrInterface(),
            gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup)));
  }
  auto part = affine::AffineDelinearizeIndexOp::create(
      rewriter, loc, block.getInductionVar(0),
      ArrayRef<int64_t>{kWarps, tessera::kWarpSize}, /*hasOuterBound=*/true);
  Value warp = part.getResult(0), lane = part.getResult(1);
  Value column = affine::AffineApplyOp::create(
      rewriter, loc,
      AffineMap::get(2, 0,
                     rewriter.getAffineDimExpr(0) * tessera::kWarpSize +
                         rewriter.getAffineDimExpr(1)),
      ValueRange{blockId, lane});
  emit.setOutput(
      arith::MinUIOp::create(rewriter, loc, column, emit.index(columns - 1)));
  Value partial = emit.fold(warp, kWarps);
  memref::StoreOp::create(rewriter, loc, partial, partials,
                          ValueRange{warp, lane});
  gpu::BarrierOp::create(rewriter, loc);
  Value inside = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                       column, emit.index(columns));
  Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                      warp, emit.index(0));
  emit.accumulate(arith::AndIOp::create(rewriter, loc, inside, first), [&] {
    Value total;
    for (int64_t w = 0; w < kWarps; ++w) {
      Value value = memref::LoadOp::create(rewriter, loc, partials,
                                           ValueRange{emit.index(w), lane});
      total = w == 0 ? value : emit.combine(total, value);
    }
    return total;
  });
  rewriter.eraseOp(op);
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
  auto alignment = [&](Type element) {
    return llvm::MaybeAlign(std::min<int64_t>(
        kVectorBytes, plan.width * *vectorElementBytes(element)));
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
                       alignment(arg.getType())));
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
                            alignment(yielded.getType()));
  rewriter.eraseOp(op);
}

/// Lowers `op` to its loop nest and maps the nest to blocks and threads.
LogicalResult mapLinalgOp(IRRewriter &rewriter, linalg::LinalgOp op) {
  if (std::optional<Combiner> combiner = matchReduction(op)) {
    if (combiner->shape == ReductionShape::Row)
      mapRowReduction(rewriter, op, *combiner);
    else
      mapColumnReduction(rewriter, op, *combiner);
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
    SmallVector<linalg::LinalgOp> ops;
    function.walk([&](linalg::LinalgOp op) {
      if (!op->getParentOfType<scf::ForallOp>())
        ops.push_back(op);
    });
    for (linalg::LinalgOp op : ops)
      if (failed(mapLinalgOp(rewriter, op)))
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
    // that elementwise bodies ignore go; constants fold.
    RewritePatternSet patterns(&getContext());
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, &getContext());
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
