//===- NormPool.cpp - Lowering of normalization, softmax and pooling ------===//
#include "Patterns.h"

using namespace mlir;
using namespace mlir::tessera::tsr_to_linalg;

namespace {

SmallVector<utils::IteratorType> parallel(int64_t n) {
  return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
}

/// The map from the loops over a rank-`rank` tensor to a tensor that dropped
/// `dropped` of its dimensions (the result of buildReduction).
AffineMap reducedMap(int64_t rank, ArrayRef<int64_t> dropped,
                     MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(dropped, d))
      exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

Value addF(OpBuilder &b, Location l, ValueRange args) {
  return arith::AddFOp::create(b, l, args[0], args[1]);
}

} // namespace

mlir::tessera::tsr_to_linalg::SoftmaxParts
mlir::tessera::tsr_to_linalg::buildSoftmaxParts(OpBuilder &b, Location loc,
                                                Value x, int64_t axis) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(x.getType());
  Type elem = type.getElementType();
  int64_t rank = type.getRank();
  Value max = buildReduction(
      b, loc, x, axis, extremeConstant(b, loc, elem, /*lowest=*/true),
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::MaximumFOp::create(nb, l, args[0], args[1]);
      });
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap row = reducedMap(rank, axis, ctx);
  SmallVector<utils::IteratorType> iterators = parallel(rank);
  iterators[axis] = utils::IteratorType::reduction;
  // Σ exp(x − max), summed in the order buildReduction sums.
  Value sum =
      linalg::GenericOp::create(
          b, loc, max.getType(), ValueRange{x, max},
          filledTensor(b, loc, cast<RankedTensorType>(max.getType()),
                       scalarConstant(b, loc, elem, 0.0)),
          {id, row, row}, iterators,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value s = arith::SubFOp::create(nb, l, args[0], args[1]);
            Value e = applyMath<math::ExpOp>(nb, l, s);
            linalg::YieldOp::create(nb, l, addF(nb, l, ValueRange{e, args[2]}));
          })
          .getResult(0);
  return {max, sum};
}

Value mlir::tessera::tsr_to_linalg::buildSoftmax(OpBuilder &b, Location loc,
                                                 Value x, int64_t axis,
                                                 bool log) {
  // 16-bit floats: f32 arithmetic inside, the result rounded once.
  Type stored = cast<RankedTensorType>(x.getType()).getElementType();
  if (accumulatorType(stored) != stored)
    return narrowTo(
        b, loc, buildSoftmax(b, loc, widenToF32(b, loc, x), axis, log), stored);
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  SoftmaxParts parts = buildSoftmaxParts(b, loc, x, axis);
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap row = reducedMap(rank, axis, ctx);
  // (x − max) − log(sum), or exp(x − max) / sum.
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{x, parts.max, parts.sums},
             emptyTensor(b, loc, type), {id, row, row, id}, parallel(rank),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value s = arith::SubFOp::create(nb, l, args[0], args[1]);
               Value r =
                   log ? (Value)arith::SubFOp::create(
                             nb, l, s, applyMath<math::LogOp>(nb, l, args[2]))
                       : (Value)arith::DivFOp::create(
                             nb, l, applyMath<math::ExpOp>(nb, l, s), args[2]);
               linalg::YieldOp::create(nb, l, r);
             })
      .getResult(0);
}

namespace {

template <typename OpT, bool log>
struct SoftmaxPattern : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildSoftmax(rewriter, op.getLoc(), adaptor.getX(),
                                        op.getAxis(), log));
    return success();
  }
};

/// (x − mean[c]) / √(var[c] + ε) · scale[c] + bias[c], c = dimension 1.
struct BatchNormPattern : OpConversionPattern<tsr::BatchNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::BatchNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(adaptor.getX().getType());
    int64_t rank = type.getRank();
    double eps = op.getEpsilon().convertToDouble();
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap chan = AffineMap::get(rank, 0, getAffineDimExpr(1, ctx), ctx);
    Value y =
        linalg::GenericOp::create(
            rewriter, loc, type,
            ValueRange{adaptor.getX(), adaptor.getScale(), adaptor.getBias(),
                       adaptor.getMean(), adaptor.getVar()},
            emptyTensor(rewriter, loc, type), {id, chan, chan, chan, chan, id},
            parallel(rank),
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value e = scalarConstant(b, l, a[0].getType(), eps);
              Value denom = applyMath<math::SqrtOp>(
                  b, l, arith::AddFOp::create(b, l, a[4], e));
              Value n = arith::DivFOp::create(
                  b, l, arith::SubFOp::create(b, l, a[0], a[3]), denom);
              Value r = arith::AddFOp::create(
                  b, l, arith::MulFOp::create(b, l, n, a[1]), a[2]);
              linalg::YieldOp::create(b, l, r);
            })
            .getResult(0);
    rewriter.replaceOp(op, y);
    return success();
  }
};

/// Mean, then biased variance of the centred values (two reductions), then
/// one generic applying scale and bias.
struct LayerNormPattern : OpConversionPattern<tsr::LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value x = adaptor.getX(), scale = adaptor.getScale(),
          bias = adaptor.getBias();
    // 16-bit floats: f32 arithmetic inside, the result rounded once.
    Type stored = cast<RankedTensorType>(x.getType()).getElementType();
    bool widen = accumulatorType(stored) != stored;
    if (widen) {
      x = widenToF32(rewriter, loc, x);
      scale = widenToF32(rewriter, loc, scale);
      if (bias)
        bias = widenToF32(rewriter, loc, bias);
    }
    auto type = cast<RankedTensorType>(x.getType());
    Type elem = type.getElementType();
    int64_t rank = type.getRank(), axis = op.getAxis();
    SmallVector<int64_t> axes;
    int64_t count = 1;
    for (int64_t d = axis; d < rank; ++d) {
      axes.push_back(d);
      count *= type.getDimSize(d);
    }
    double eps = op.getEpsilon().convertToDouble();
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap row = reducedMap(rank, axes, ctx);
    Value zero = scalarConstant(rewriter, loc, elem, 0.0);
    auto scaleBy = [&](Value reduced) {
      auto rt = cast<RankedTensorType>(reduced.getType());
      return buildElementwise(
          rewriter, loc, rt, reduced,
          [&](OpBuilder &b, Location l, ValueRange a) -> Value {
            return arith::DivFOp::create(
                b, l, a[0], scalarConstant(b, l, elem, (double)count));
          });
    };
    Value mean = scaleBy(buildReduction(rewriter, loc, x, axes, zero, addF));
    Value centred =
        linalg::GenericOp::create(
            rewriter, loc, type, ValueRange{x, mean},
            emptyTensor(rewriter, loc, type), {id, row, id}, parallel(rank),
            [&](OpBuilder &b, Location l, ValueRange a) {
              linalg::YieldOp::create(
                  b, l, arith::SubFOp::create(b, l, a[0], a[1]).getResult());
            })
            .getResult(0);
    Value var = scaleBy(buildReduction(
        rewriter, loc, centred, axes, zero,
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          return arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, a[0], a[0]), a[1]);
        }));
    SmallVector<Value> inputs = {centred, var, scale};
    SmallVector<AffineMap> maps = {
        id, row,
        broadcastMap(cast<RankedTensorType>(scale.getType()).getShape(),
                     type.getShape(), ctx)};
    if (bias) {
      inputs.push_back(bias);
      maps.push_back(
          broadcastMap(cast<RankedTensorType>(bias.getType()).getShape(),
                       type.getShape(), ctx));
    }
    maps.push_back(id);
    bool hasBias = inputs.size() == 4;
    Value y = linalg::GenericOp::create(
                  rewriter, loc, type, inputs, emptyTensor(rewriter, loc, type),
                  maps, parallel(rank),
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    Value e = scalarConstant(b, l, elem, eps);
                    Value denom = applyMath<math::SqrtOp>(
                        b, l, arith::AddFOp::create(b, l, a[1], e));
                    Value r = arith::MulFOp::create(
                        b, l, arith::DivFOp::create(b, l, a[0], denom), a[2]);
                    if (hasBias)
                      r = arith::AddFOp::create(b, l, r, a[3]);
                    linalg::YieldOp::create(b, l, r);
                  })
                  .getResult(0);
    rewriter.replaceOp(op, widen ? narrowTo(rewriter, loc, y, stored) : y);
    return success();
  }
};

/// Loops (n, c, o1..ok, w1..wk); the window dims reduce; the input is read
/// at o_i·s_i + w_i·d_i.
template <typename OpT>
Value windowReduce(OpBuilder &b, Location loc, OpT op, Value padded,
                   RankedTensorType outType, Value init, BodyFn combine) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                    dilations = op.getDilations();
  int64_t k = kernel.size(), loops = 2 + 2 * k;
  SmallVector<AffineExpr> inExprs = {getAffineDimExpr(0, ctx),
                                     getAffineDimExpr(1, ctx)};
  SmallVector<AffineExpr> outExprs = inExprs;
  for (int64_t i = 0; i < k; ++i) {
    inExprs.push_back(getAffineDimExpr(2 + i, ctx) * strides[i] +
                      getAffineDimExpr(2 + k + i, ctx) * dilations[i]);
    outExprs.push_back(getAffineDimExpr(2 + i, ctx));
  }
  SmallVector<AffineExpr> winExprs;
  for (int64_t i = 0; i < k; ++i)
    winExprs.push_back(getAffineDimExpr(2 + k + i, ctx));
  SmallVector<utils::IteratorType> iters = parallel(2 + k);
  iters.append(k, utils::IteratorType::reduction);
  Value acc = filledTensor(b, loc, outType, init);
  return linalg::GenericOp::create(
             b, loc, outType, ValueRange{padded, windowShape(b, loc, kernel)},
             acc,
             {AffineMap::get(loops, 0, inExprs, ctx),
              AffineMap::get(loops, 0, winExprs, ctx),
              AffineMap::get(loops, 0, outExprs, ctx)},
             iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(nb, l,
                                       combine(nb, l, ValueRange{a[0], a[2]}));
             })
      .getResult(0);
}

struct MaxPoolPattern : OpConversionPattern<tsr::MaxPoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::MaxPoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type tsrElem = getElementType(op.getX());
    bool isFloat = isa<FloatType>(tsrElem), uns = isUnsigned(tsrElem);
    auto outType = convertTensorType(*getTypeConverter(), op.getType());
    Value lowest = extremeConstant(rewriter, loc, tsrElem, /*lowest=*/true);
    Value padded =
        padForPool(rewriter, loc, adaptor.getX(), op.getPads(),
                   op.getKernelShape(), op.getStrides(), op.getDilations(),
                   outType.getShape().drop_front(2), lowest);
    Value y = windowReduce(
        rewriter, loc, op, padded, outType, lowest,
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          if (isFloat)
            return arith::MaximumFOp::create(b, l, a[0], a[1]);
          return uns ? (Value)arith::MaxUIOp::create(b, l, a[0], a[1])
                     : (Value)arith::MaxSIOp::create(b, l, a[0], a[1]);
        });
    rewriter.replaceOp(op, y);
    return success();
  }
};

/// The sum over each zero-padded window divided by a per-position count,
/// which is separable: one constant vector per spatial dimension. A window
/// position counts if it lies in the input (or, with count_include_pad, in
/// the explicit padding; never in the extra ceil_mode padding), as
/// onnxruntime does.
struct AvgPoolPattern : OpConversionPattern<tsr::AvgPoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::AvgPoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type tsrElem = getElementType(op.getX());
    bool isFloat = isa<FloatType>(tsrElem), uns = isUnsigned(tsrElem);
    auto outType = convertTensorType(*getTypeConverter(), op.getType());
    Type elem = outType.getElementType();
    auto inType = cast<RankedTensorType>(adaptor.getX().getType());
    ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                      dilations = op.getDilations(), pads = op.getPads();
    ArrayRef<int64_t> out = outType.getShape().drop_front(2);
    int64_t k = kernel.size(), rank = outType.getRank();
    Value zero = scalarConstant(rewriter, loc, elem, 0.0);
    Value padded = padForPool(rewriter, loc, adaptor.getX(), pads, kernel,
                              strides, dilations, out, zero);
    Value sum =
        windowReduce(rewriter, loc, op, padded, outType, zero,
                     [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                       if (isFloat)
                         return arith::AddFOp::create(b, l, a[0], a[1]);
                       return arith::AddIOp::create(b, l, a[0], a[1]);
                     });

    SmallVector<Value> inputs = {sum};
    SmallVector<AffineMap> maps = {
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    for (int64_t i = 0; i < k; ++i) {
      int64_t in = inType.getDimSize(2 + i);
      int64_t first = op.getCountIncludePad() ? -pads[i] : 0;
      int64_t limit = op.getCountIncludePad() ? in + pads[k + i] : in;
      SmallVector<Attribute> counts;
      for (int64_t o = 0; o < out[i]; ++o) {
        int64_t c = 0;
        for (int64_t j = 0; j < kernel[i]; ++j) {
          int64_t h = o * strides[i] - pads[i] + j * dilations[i];
          c += h >= first && h < limit;
        }
        counts.push_back(isFloat ? (Attribute)rewriter.getFloatAttr(elem, c)
                                 : (Attribute)rewriter.getIntegerAttr(elem, c));
      }
      auto countType = RankedTensorType::get({out[i]}, elem);
      inputs.push_back(arith::ConstantOp::create(
          rewriter, loc, DenseElementsAttr::get(countType, counts)));
      maps.push_back(AffineMap::get(rank, 0, getAffineDimExpr(2 + i, ctx)));
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
    Value y = linalg::GenericOp::create(
                  rewriter, loc, outType, inputs,
                  emptyTensor(rewriter, loc, outType), maps, parallel(rank),
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    Value c = a[1];
                    for (int64_t i = 1; i < k; ++i)
                      c = isFloat
                              ? (Value)arith::MulFOp::create(b, l, c, a[1 + i])
                              : (Value)arith::MulIOp::create(b, l, c, a[1 + i]);
                    Value r;
                    if (isFloat)
                      r = arith::DivFOp::create(b, l, a[0], c);
                    else if (uns)
                      r = arith::DivUIOp::create(b, l, a[0], c);
                    else
                      r = arith::DivSIOp::create(b, l, a[0], c);
                    linalg::YieldOp::create(b, l, r);
                  })
                  .getResult(0);
    rewriter.replaceOp(op, y);
    return success();
  }
};

} // namespace

void mlir::tessera::tsr_to_linalg::populateNormPoolPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<SoftmaxPattern<tsr::SoftmaxOp, false>,
               SoftmaxPattern<tsr::LogSoftmaxOp, true>, BatchNormPattern,
               LayerNormPattern, MaxPoolPattern, AvgPoolPattern>(
      converter, patterns.getContext());
}

Value mlir::tessera::tsr_to_linalg::padForPool(
    OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> pads,
    ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
    ArrayRef<int64_t> dilations, ArrayRef<int64_t> out, Value value) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t k = kernel.size();
  SmallVector<OpFoldResult> lo(2, b.getIndexAttr(0)), hi(2, b.getIndexAttr(0));
  SmallVector<int64_t> shape(type.getShape());
  bool any = false;
  for (int64_t i = 0; i < k; ++i) {
    int64_t in = type.getDimSize(2 + i);
    int64_t needed =
        (out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1;
    int64_t end = std::max(pads[k + i], needed - in - pads[i]);
    lo.push_back(b.getIndexAttr(pads[i]));
    hi.push_back(b.getIndexAttr(end));
    shape[2 + i] += pads[i] + end;
    any |= pads[i] != 0 || end != 0;
  }
  if (!any)
    return x;
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), x, lo, hi,
      value);
}
