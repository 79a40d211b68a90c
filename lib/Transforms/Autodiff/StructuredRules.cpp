//===- StructuredRules.cpp - Gradients of contractions, reductions, ... --===//
//
// Rules for matmul, the reductions, softmax and log_softmax, layer_norm, the
// shape ops (reshape, transpose, broadcast, concat), gather, dropout and the
// two ONNX losses. Normalizations and losses recompute their statistics from
// the forward operands rather than saving them: the forward ops are fused
// kernels with one result.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Autodiff/GradientRules.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// The permutation swapping the last two of `rank` dimensions.
SmallVector<int64_t> swapLastTwo(int64_t rank) {
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 1], perm[rank - 2]);
  return perm;
}

/// `shape` with the reduced `axes` set to 1 (the keepdims shape).
SmallVector<int64_t> keptShape(ArrayRef<int64_t> shape,
                               ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(shape);
  for (int64_t a : axes)
    kept[a] = 1;
  return kept;
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

LogicalResult matmulRule(tsr::MatMulOp op, GradientBuilder &g,
                         ArrayRef<Value> resultGrads,
                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  Value a = op.getLhs(), b = op.getRhs();
  RankedTensorType aType = getTensorType(a), bType = getTensorType(b);
  // Promote 1-D operands to matrices as numpy.matmul does, and dy with them.
  Value a2 = aType.getRank() == 1 ? g.reshape(a, {1, aType.getDimSize(0)}) : a;
  Value b2 = bType.getRank() == 1 ? g.reshape(b, {bType.getDimSize(0), 1}) : b;
  RankedTensorType a2Type = getTensorType(a2), b2Type = getTensorType(b2);
  SmallVector<int64_t> dyShape(getTensorType(dy).getShape());
  if (aType.getRank() == 1)
    dyShape.insert(dyShape.end() - (bType.getRank() == 1 ? 0 : 1), 1);
  if (bType.getRank() == 1)
    dyShape.push_back(1);
  Value dy2 = g.reshape(dy, dyShape);
  int64_t k = a2Type.getDimSize(a2Type.getRank() - 1);
  int64_t n = b2Type.getDimSize(b2Type.getRank() - 1);

  // da = dy · bᵀ, summed over the batch dimensions a was broadcast along.
  Value da = g.matmul(dy2, g.transpose(b2, swapLastTwo(b2Type.getRank())));
  operandGrads[0] = g.reshape(g.unbroadcast(da, a2Type), aType.getShape());

  Value db;
  if (b2Type.getRank() == 2 && a2Type.getRank() > 2) {
    // A shared weight: one GEMM over all batch rows, aᵀ[k, B·m] · dy[B·m, n].
    int64_t rows = computeProduct(a2Type.getShape().drop_back(1));
    Value aFlat = g.reshape(a2, {rows, k});
    Value dyFlat = g.reshape(dy2, {rows, n});
    db = g.matmul(g.transpose(aFlat, {1, 0}), dyFlat);
  } else {
    db = g.unbroadcast(
        g.matmul(g.transpose(a2, swapLastTwo(a2Type.getRank())), dy2), b2Type);
  }
  operandGrads[1] = g.reshape(db, bType.getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// dy broadcast back to the operand's shape.
template <typename OpTy>
Value expandToInput(OpTy op, GradientBuilder &g, Value dy) {
  ArrayRef<int64_t> shape = getTensorType(op.getX()).getShape();
  return g.broadcastTo(g.reshape(dy, keptShape(shape, op.getAxes())), shape);
}

template <typename OpTy> Value keptResult(OpTy op, GradientBuilder &g) {
  ArrayRef<int64_t> shape = getTensorType(op.getX()).getShape();
  return g.reshape(op.getResult(), keptShape(shape, op.getAxes()));
}

LogicalResult reduceSumRule(tsr::ReduceSumOp op, GradientBuilder &g,
                            ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  if (resultGrads[0] && hasFloatElements(resultGrads[0]))
    operandGrads[0] = expandToInput(op, g, resultGrads[0]);
  return success();
}

LogicalResult reduceMeanRule(tsr::ReduceMeanOp op, GradientBuilder &g,
                             ArrayRef<Value> resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  ArrayRef<int64_t> shape = getTensorType(op.getX()).getShape();
  int64_t count = 1;
  for (int64_t a : op.getAxes())
    count *= shape[a];
  operandGrads[0] =
      g.div(expandToInput(op, g, dy), g.scalarLike(dy, double(count)));
  return success();
}

/// Max and min: the gradient goes to the extremal elements, split evenly
/// among ties.
template <typename OpTy>
LogicalResult reduceExtremumRule(OpTy op, GradientBuilder &g,
                                 ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  Value x = op.getX();
  Value hit = g.equal(x, keptResult(op, g));
  Value ones = g.select(hit, g.scalarLike(x, 1.0), g.scalarLike(x, 0.0));
  Value count = g.reduceSum(ones, op.getAxes(), /*keepdims=*/true);
  Value share = g.div(g.reshape(dy, getTensorType(count).getShape()), count);
  operandGrads[0] = g.mul(ones, share);
  return success();
}

LogicalResult reduceProdRule(tsr::ReduceProdOp op, GradientBuilder &g,
                             ArrayRef<Value> resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  // ∂(∏x)/∂xᵢ = ∏x / xᵢ (nonzero elements).
  Value y = keptResult(op, g);
  Value dyKept = g.reshape(dy, getTensorType(y).getShape());
  operandGrads[0] = g.div(g.mul(dyKept, y), op.getX());
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax family and layer_norm
//===----------------------------------------------------------------------===//

LogicalResult softmaxRule(tsr::SoftmaxOp op, GradientBuilder &g,
                          ArrayRef<Value> resultGrads,
                          SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  // dx = y·(dy − Σ dy·y)
  Value y = op.getResult();
  Value dot =
      g.reduceSum(g.mul(dy, y), {(int64_t)op.getAxis()}, /*keepdims=*/true);
  operandGrads[0] = g.mul(y, g.sub(dy, dot));
  return success();
}

LogicalResult logSoftmaxRule(tsr::LogSoftmaxOp op, GradientBuilder &g,
                             ArrayRef<Value> resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  // dx = dy − softmax(x)·Σ dy
  Value sum = g.reduceSum(dy, {(int64_t)op.getAxis()}, /*keepdims=*/true);
  operandGrads[0] = g.sub(dy, g.mul(g.exp(op.getResult()), sum));
  return success();
}

LogicalResult layerNormRule(tsr::LayerNormOp op, GradientBuilder &g,
                            ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  Value x = op.getX(), scale = op.getScale();
  int64_t rank = getTensorType(x).getRank();
  SmallVector<int64_t> axes =
      llvm::to_vector(llvm::seq<int64_t>(op.getAxis(), rank));
  int64_t count =
      computeProduct(getTensorType(x).getShape().drop_front(op.getAxis()));
  Value invCount = g.scalarLike(x, 1.0 / double(count));
  auto mean = [&](Value v) {
    return g.mul(g.reduceSum(v, axes, /*keepdims=*/true), invCount);
  };
  Value xc = g.sub(x, mean(x));
  Value var = mean(g.mul(xc, xc));
  Value rstd = tsr::ReciprocalOp::create(
      g.builder(), g.getLoc(),
      g.sqrt(g.add(var, g.scalarLike(x, op.getEpsilon().convertToDouble()))));
  Value xhat = g.mul(xc, rstd);
  // dx = rstd·(dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂)), dx̂ = dy·scale.
  Value dxhat = g.mul(dy, scale);
  operandGrads[0] = g.mul(rstd, g.sub(g.sub(dxhat, mean(dxhat)),
                                      g.mul(xhat, mean(g.mul(dxhat, xhat)))));
  operandGrads[1] = g.unbroadcast(g.mul(dy, xhat), scale.getType());
  if (Value bias = op.getBias())
    operandGrads[2] = g.unbroadcast(dy, bias.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops, gather, dropout
//===----------------------------------------------------------------------===//

LogicalResult reshapeRule(tsr::ReshapeOp op, GradientBuilder &g,
                          ArrayRef<Value> resultGrads,
                          SmallVectorImpl<Value> &operandGrads) {
  if (resultGrads[0] && hasFloatElements(resultGrads[0]))
    operandGrads[0] =
        g.reshape(resultGrads[0], getTensorType(op.getX()).getShape());
  return success();
}

LogicalResult transposeRule(tsr::TransposeOp op, GradientBuilder &g,
                            ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0] || !hasFloatElements(resultGrads[0]))
    return success();
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  operandGrads[0] = g.transpose(resultGrads[0], inverse);
  return success();
}

LogicalResult broadcastRule(tsr::BroadcastOp op, GradientBuilder &g,
                            ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  if (resultGrads[0] && hasFloatElements(resultGrads[0]))
    operandGrads[0] = g.unbroadcast(resultGrads[0], op.getX().getType());
  return success();
}

LogicalResult concatRule(tsr::ConcatOp op, GradientBuilder &g,
                         ArrayRef<Value> resultGrads,
                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  ArrayRef<int64_t> shape = getTensorType(dy).getShape();
  int64_t axis = op.getAxis(), offset = 0;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    SmallVector<int64_t> starts(shape.size(), 0), limits(shape),
        steps(shape.size(), 1);
    int64_t size = getTensorType(input).getDimSize(axis);
    starts[axis] = offset;
    limits[axis] = offset + size;
    offset += size;
    operandGrads[i] = g.slice(dy, starts, limits, steps);
  }
  return success();
}

/// gather along `axis`: the adjoint of data is a scatter-add of dy into
/// zeros, done as scatter_elements on the [outer, indices, inner] view. A
/// 16-bit table's sum runs in f32 (a frequent token's row sums thousands of
/// terms), rounded once to the table's type, which the gradient of the
/// parameter's cast takes back before the rounding.
LogicalResult gatherRule(tsr::GatherOp op, GradientBuilder &g,
                         ArrayRef<Value> resultGrads,
                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  RankedTensorType dataType = getTensorType(op.getData());
  int64_t axis = op.getAxis();
  ArrayRef<int64_t> shape = dataType.getShape();
  int64_t outer = computeProduct(shape.take_front(axis));
  int64_t inner = computeProduct(shape.drop_front(axis + 1));
  int64_t count = getTensorType(op.getIndices()).getNumElements();
  OpBuilder &b = g.builder();
  Type elem = dataType.getElementType();
  Type sum = elem.isBF16() || elem.isF16() ? b.getF32Type() : elem;
  Value dy3 = g.castTo(g.reshape(dy, {outer, count, inner}), sum);
  Value idx = g.broadcastTo(g.reshape(op.getIndices(), {1, count, 1}),
                            {outer, count, inner});
  Value zeros =
      g.splat(RankedTensorType::get({outer, shape[axis], inner}, sum), 0.0);
  Value scattered = tsr::ScatterElementsOp::create(
      b, g.getLoc(), zeros.getType(), zeros, idx, dy3, b.getI64IntegerAttr(1),
      tsr::ScatterReductionAttr::get(b.getContext(),
                                     tsr::ScatterReduction::add));
  operandGrads[0] = g.castTo(g.reshape(scattered, shape), elem);
  return success();
}

LogicalResult dropoutRule(tsr::DropoutOp op, GradientBuilder &g,
                          ArrayRef<Value> resultGrads,
                          SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  double ratio = op.getRatio().convertToDouble();
  Value keep = g.select(op.getMask(), g.scalarLike(dy, 1.0 / (1.0 - ratio)),
                        g.scalarLike(dy, 0.0));
  operandGrads[0] = g.mul(dy, keep);
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// The per-position coefficient of a loss with classes on dimension 1:
/// dloss·w[t]·(t ≠ ignore_index), divided by Σ w[t]·(t ≠ ignore_index) for
/// "mean". Shaped like the target.
template <typename OpTy>
Value lossCoefficient(OpTy op, GradientBuilder &g, Value dy, Value input) {
  Value target = op.getTarget();
  RankedTensorType targetType = getTensorType(target);
  Type elem = getElementTypeOrSelf(input.getType());
  RankedTensorType coefType = targetType.clone(elem);
  Value weight = g.splat(coefType, 1.0);
  if (Value w = op.getWeights())
    weight = tsr::GatherOp::create(g.builder(), g.getLoc(), w, target,
                                   g.builder().getI64IntegerAttr(0));
  if (auto ignore = op.getIgnoreIndex()) {
    Value ignored = g.equal(
        target, g.splat(RankedTensorType::get({}, targetType.getElementType()),
                        double(*ignore)));
    weight = g.select(ignored, g.scalar(elem, 0.0), weight);
  }
  tsr::LossReduction reduction = op.getReduction();
  if (reduction == tsr::LossReduction::none)
    return g.mul(weight, dy);
  Value coef = g.mul(weight, dy);
  if (reduction == tsr::LossReduction::mean) {
    SmallVector<int64_t> all =
        llvm::to_vector(llvm::seq<int64_t>(0, targetType.getRank()));
    coef = g.div(coef, g.reduceSum(weight, all, /*keepdims=*/false));
  }
  return coef;
}

/// The coefficient (shaped like the target) as [N, 1, D...].
Value coefficientOverClasses(GradientBuilder &g, Value coef) {
  SmallVector<int64_t> shape(getTensorType(coef).getShape());
  shape.insert(shape.begin() + 1, 1);
  return g.reshape(coef, shape);
}

/// The adjoint of the class weights [C]: Σ over positions with target c of
/// their share of the loss. Per position i with target t and loss term
/// ℓᵢ = −x[t] (x the log-probabilities), the loss is Σ w[tᵢ]ℓᵢ ("sum"),
/// w[tᵢ]ℓᵢ ("none"), or Σ w[tᵢ]ℓᵢ / Σ w[tᵢ] ("mean", whose denominator
/// depends on the weights too). Ignored positions contribute nothing.
template <typename OpTy>
Value weightsGrad(OpTy op, GradientBuilder &g, Value dy, Value logProbs,
                  Value oneHot) {
  RankedTensorType inType = getTensorType(logProbs);
  int64_t rank = inType.getRank();
  SmallVector<int64_t> nonClass{0};
  for (int64_t d = 2; d < rank; ++d)
    nonClass.push_back(d);
  // ℓᵢ, shaped like the target.
  Value loss = g.neg(g.reduceSum(g.mul(oneHot, logProbs), {1},
                                 /*keepdims=*/false));
  Value target = op.getTarget();
  RankedTensorType targetType = getTensorType(target);
  Value valid = g.splat(targetType.clone(inType.getElementType()), 1.0);
  if (auto ignore = op.getIgnoreIndex()) {
    Value ignored = g.equal(
        target, g.splat(RankedTensorType::get({}, targetType.getElementType()),
                        double(*ignore)));
    valid = g.select(ignored, g.scalarLike(loss, 0.0), valid);
  }
  Value share;
  tsr::LossReduction reduction = op.getReduction();
  if (reduction == tsr::LossReduction::mean) {
    SmallVector<int64_t> all =
        llvm::to_vector(llvm::seq<int64_t>(0, targetType.getRank()));
    Value w = tsr::GatherOp::create(g.builder(), g.getLoc(), op.getWeights(),
                                    target, g.builder().getI64IntegerAttr(0));
    Value total = g.reduceSum(g.mul(w, valid), all, /*keepdims=*/false);
    share = g.div(g.mul(g.sub(loss, op.getResult()), dy), total);
  } else {
    share = g.mul(loss, dy);
  }
  share = coefficientOverClasses(g, g.mul(share, valid));
  return g.reduceSum(g.mul(oneHot, share), nonClass, /*keepdims=*/false);
}

/// one_hot(target) over the classes on dimension 1 of `input`'s type.
Value oneHotClasses(GradientBuilder &g, Value target, Value input) {
  RankedTensorType inType = getTensorType(input);
  OpBuilder &b = g.builder();
  return tsr::OneHotOp::create(
      b, g.getLoc(), inType, target, b.getI64IntegerAttr(inType.getDimSize(1)),
      b.getI64IntegerAttr(1), b.getF64FloatAttr(1.0), b.getF64FloatAttr(0.0));
}

LogicalResult softmaxCrossEntropyRule(tsr::SoftmaxCrossEntropyLossOp op,
                                      GradientBuilder &g,
                                      ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  Value scores = op.getScores();
  // d/ds (−w·log softmax(s)[t]) = w·(softmax(s) − onehot(t))
  Value coef = coefficientOverClasses(g, lossCoefficient(op, g, dy, scores));
  Value probs = tsr::SoftmaxOp::create(g.builder(), g.getLoc(), scores,
                                       g.builder().getI64IntegerAttr(1));
  Value oneHot = oneHotClasses(g, op.getTarget(), scores);
  operandGrads[0] = g.mul(g.sub(probs, oneHot), coef);
  if (op.getWeights()) {
    Value logProbs = tsr::LogSoftmaxOp::create(
        g.builder(), g.getLoc(), scores, g.builder().getI64IntegerAttr(1));
    operandGrads[2] = weightsGrad(op, g, dy, logProbs, oneHot);
  }
  return success();
}

LogicalResult nllRule(tsr::NegativeLogLikelihoodLossOp op, GradientBuilder &g,
                      ArrayRef<Value> resultGrads,
                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  Value input = op.getInput();
  Value coef = coefficientOverClasses(g, lossCoefficient(op, g, dy, input));
  Value oneHot = oneHotClasses(g, op.getTarget(), input);
  operandGrads[0] = g.neg(g.mul(oneHot, coef));
  if (op.getWeights())
    operandGrads[2] = weightsGrad(op, g, dy, input, oneHot);
  return success();
}

} // namespace

void mlir::tessera::registerStructuredGradientRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tsr::TsrDialect *) {
    using namespace tsr;
    attachGradientRule<MatMulOp, matmulRule>(ctx);
    attachGradientRule<ReduceSumOp, reduceSumRule>(ctx);
    attachGradientRule<ReduceMeanOp, reduceMeanRule>(ctx);
    attachGradientRule<ReduceMaxOp, reduceExtremumRule<ReduceMaxOp>>(ctx);
    attachGradientRule<ReduceMinOp, reduceExtremumRule<ReduceMinOp>>(ctx);
    attachGradientRule<ReduceProdOp, reduceProdRule>(ctx);
    attachGradientRule<SoftmaxOp, softmaxRule>(ctx);
    attachGradientRule<LogSoftmaxOp, logSoftmaxRule>(ctx);
    attachGradientRule<LayerNormOp, layerNormRule>(ctx);
    attachGradientRule<ReshapeOp, reshapeRule>(ctx);
    attachGradientRule<TransposeOp, transposeRule>(ctx);
    attachGradientRule<BroadcastOp, broadcastRule>(ctx);
    attachGradientRule<ConcatOp, concatRule>(ctx);
    attachGradientRule<GatherOp, gatherRule>(ctx);
    attachGradientRule<DropoutOp, dropoutRule>(ctx);
    attachGradientRule<SoftmaxCrossEntropyLossOp, softmaxCrossEntropyRule>(ctx);
    attachGradientRule<NegativeLogLikelihoodLossOp, nllRule>(ctx);
  });
}
