//===- CollectiveRules.cpp - Gradient rules of the collectives ------------===//
//
// A per-rank (SPMD) program's gradients are the derivatives of the sum over
// the ranks of their losses, G = Σ_s L_s, with respect to this rank's
// values. Every path from one rank's value to another rank's loss goes
// through a collective, so each collective's rule is its transpose, which
// is again a collective over the same group (N ranks, this one r):
//
//   all_reduce(sum)        dx_r = Σ_s dy_s              all_reduce(sum)
//   all_reduce(mean)       dx_r = (1/N)·Σ_s dy_s        all_reduce(mean)
//   all_gather(dim)        dx_r = Σ_s block_r(dy_s)     reduce_scatter(sum)
//   reduce_scatter(sum)    dx_r = concat_s(dy_s)        all_gather
//   reduce_scatter(mean)   dx_r = concat_s(dy_s) / N    all_gather, scaled
//   all_to_all(dim)        a permutation that is its own transpose
//   broadcast_from(root)   dx_r = [r = root]·Σ_s dy_s   all_reduce, masked
//   local_shard(dim)       dx_r = dy_r in block r, zeros elsewhere (local)
//
// Backward communication thus follows from the forward program: an
// all-gather forward is a reduce-scatter backward and the other way round.
// all_reduce and reduce_scatter with max or min have no rule (the adjoint
// of an extremum across ranks needs to know which rank held it). Which rank
// this is enters only through tsr.local_shard of a constant, so the rules
// stay rank-independent IR.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Autodiff/GradientRules.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

using namespace mlir;
using namespace mlir::tessera;
using tsr::CollectiveReduction;

namespace {

/// Records on `backward`, a collective a rule built, which forward
/// collective it is the gradient of (for tessera-compile --explain).
Value transposeOf(Operation *forward, Value backward) {
  std::string node = tsr::getNodeName(forward->getLoc());
  backward.getDefiningOp()->setAttr(
      tsr::attr::kReason,
      StringAttr::get(forward->getContext(),
                      "the gradient of the " +
                          forward->getName().stripDialect() +
                          (node.empty() ? "" : " at '" + node + "'")));
  return backward;
}

LogicalResult noExtremumRule(Operation *op, CollectiveReduction reduction) {
  return op->emitOpError("has no gradient rule for reduction '")
         << tsr::stringifyCollectiveReduction(reduction)
         << "' (only sum and mean are differentiable across ranks)";
}

/// A [N] tensor of `elem` on rank r of the group: 1 at position p where
/// `select(p, r)` holds, 0 elsewhere. Built as this rank's row of a
/// constant [N, N] matrix, so the IR stays the same on every rank.
Value rankMask(GradientBuilder &g, Type elem, ArrayAttr axes, int64_t n,
               function_ref<bool(int64_t, int64_t)> select) {
  OpBuilder &b = g.builder();
  auto matrixType = RankedTensorType::get({n, n}, elem);
  SmallVector<Attribute> values;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t p = 0; p < n; ++p)
      values.push_back(FloatAttr::get(elem, select(p, r) ? 1.0 : 0.0));
  Value matrix = tsr::ConstantOp::create(
      b, g.getLoc(), DenseElementsAttr::get(matrixType, values));
  Value row = tsr::LocalShardOp::create(b, g.getLoc(),
                                        RankedTensorType::get({1, n}, elem),
                                        matrix, axes, b.getI64IntegerAttr(0));
  return g.reshape(row, {n});
}

LogicalResult allReduceRule(tsr::AllReduceOp op, GradientBuilder &g,
                            ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(op.getX()))
    return success();
  CollectiveReduction reduction = op.getReduction();
  if (reduction != CollectiveReduction::sum &&
      reduction != CollectiveReduction::mean)
    return noExtremumRule(op, reduction);
  OpBuilder &b = g.builder();
  operandGrads[0] = transposeOf(
      op, tsr::AllReduceOp::create(b, g.getLoc(), dy, reduction,
                                   op.getMeshAxes(), op.getServes()));
  return success();
}

LogicalResult reduceScatterRule(tsr::ReduceScatterOp op, GradientBuilder &g,
                                ArrayRef<Value> resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(op.getX()))
    return success();
  CollectiveReduction reduction = op.getReduction();
  if (reduction != CollectiveReduction::sum &&
      reduction != CollectiveReduction::mean)
    return noExtremumRule(op, reduction);
  OpBuilder &b = g.builder();
  Value dx = transposeOf(
      op,
      tsr::AllGatherOp::create(b, g.getLoc(), op.getX().getType(), dy,
                               op.getDim(), op.getMeshAxes(), op.getServes()));
  if (reduction == CollectiveReduction::mean) {
    FailureOr<int64_t> n = tsr::getMeshGroupSize(op, op.getMeshAxes());
    if (failed(n))
      return failure();
    dx = g.mul(dx, g.scalarLike(dx, 1.0 / double(*n)));
  }
  operandGrads[0] = dx;
  return success();
}

LogicalResult allGatherRule(tsr::AllGatherOp op, GradientBuilder &g,
                            ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(op.getX()))
    return success();
  OpBuilder &b = g.builder();
  operandGrads[0] = transposeOf(
      op, tsr::ReduceScatterOp::create(b, g.getLoc(), op.getX().getType(), dy,
                                       CollectiveReduction::sum, op.getDim(),
                                       op.getMeshAxes(), op.getServes()));
  return success();
}

LogicalResult allToAllRule(tsr::AllToAllOp op, GradientBuilder &g,
                           ArrayRef<Value> resultGrads,
                           SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(op.getX()))
    return success();
  OpBuilder &b = g.builder();
  operandGrads[0] = transposeOf(
      op,
      tsr::AllToAllOp::create(b, g.getLoc(), op.getX().getType(), dy,
                              op.getDim(), op.getMeshAxes(), op.getServes()));
  return success();
}

LogicalResult broadcastFromRule(tsr::BroadcastFromOp op, GradientBuilder &g,
                                ArrayRef<Value> resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(op.getX()))
    return success();
  FailureOr<int64_t> n = tsr::getMeshGroupSize(op, op.getMeshAxes());
  if (failed(n))
    return failure();
  OpBuilder &b = g.builder();
  Value total = transposeOf(
      op, tsr::AllReduceOp::create(b, g.getLoc(), dy, CollectiveReduction::sum,
                                   op.getMeshAxes(), op.getServes()));
  int64_t root = op.getRoot();
  Value isRoot =
      rankMask(g, getTensorType(dy).getElementType(), op.getMeshAxes(), *n,
               [&](int64_t p, int64_t r) { return p == 0 && r == root; });
  // isRoot is [1, 0, ..., 0] on the root and zeros elsewhere: its sum is the
  // rank-0 factor.
  Value factor = g.reduceSum(isRoot, {0}, /*keepdims=*/false);
  operandGrads[0] = g.mul(total, factor);
  return success();
}

LogicalResult localShardRule(tsr::LocalShardOp op, GradientBuilder &g,
                             ArrayRef<Value> resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(op.getX()))
    return success();
  FailureOr<int64_t> n = tsr::getMeshGroupSize(op, op.getMeshAxes());
  if (failed(n))
    return failure();
  RankedTensorType type = getTensorType(dy);
  int64_t dim = op.getDim();
  ArrayRef<int64_t> shape = type.getShape();
  // dy as [..., 1, b, ...], broadcast to [..., N, b, ...], masked to its
  // block r, then [..., N·b, ...].
  auto withBlocks = [&](int64_t blocks) {
    SmallVector<int64_t> s(shape.take_front(dim));
    s.push_back(blocks);
    llvm::append_range(s, shape.drop_front(dim));
    return s;
  };
  SmallVector<int64_t> maskShape(type.getRank() + 1, 1);
  maskShape[dim] = *n;
  Value mask =
      g.reshape(rankMask(g, type.getElementType(), op.getMeshAxes(), *n,
                         [](int64_t p, int64_t r) { return p == r; }),
                maskShape);
  Value blocks = g.broadcastTo(g.reshape(dy, withBlocks(1)), withBlocks(*n));
  operandGrads[0] =
      g.reshape(g.mul(blocks, mask), getTensorType(op.getX()).getShape());
  return success();
}

} // namespace

void mlir::tessera::registerCollectiveGradientRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tsr::TsrDialect *) {
    using namespace tsr;
    attachGradientRule<AllReduceOp, allReduceRule>(ctx);
    attachGradientRule<ReduceScatterOp, reduceScatterRule>(ctx);
    attachGradientRule<AllGatherOp, allGatherRule>(ctx);
    attachGradientRule<AllToAllOp, allToAllRule>(ctx);
    attachGradientRule<BroadcastFromOp, broadcastFromRule>(ctx);
    attachGradientRule<LocalShardOp, localShardRule>(ctx);
  });
}
