//===- Training.cpp - Lowering of dropout and the losses ------------------===//
#include "Patterns.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessera::tsr_to_linalg;
using arith::CmpIPredicate;

namespace {

SmallVector<utils::IteratorType> iterators(int64_t n, utils::IteratorType t) {
  return SmallVector<utils::IteratorType>(n, t);
}

/// splitmix64 of (seed, linear index): the top `bits` bits of the hash
/// times 2^-bits, a uniform double in [0, 1) (exact in any float type with
/// `bits` significand bits).
Value uniformAt(OpBuilder &b, Location loc, Value linear, Value seed,
                unsigned bits = 53) {
  Type i64 = b.getI64Type();
  auto c = [&](uint64_t v) {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i64, (int64_t)v));
  };
  Value z = arith::AddIOp::create(
      b, loc, seed,
      arith::MulIOp::create(b, loc, arith::AddIOp::create(b, loc, linear, c(1)),
                            c(0x9E3779B97F4A7C15ull)));
  auto mix = [&](Value v, uint64_t shift, uint64_t mul) {
    Value x = arith::XOrIOp::create(
        b, loc, v, arith::ShRUIOp::create(b, loc, v, c(shift)));
    return mul ? (Value)arith::MulIOp::create(b, loc, x, c(mul)) : x;
  };
  z = mix(z, 30, 0xBF58476D1CE4E5B9ull);
  z = mix(z, 27, 0x94D049BB133111EBull);
  z = mix(z, 31, 0);
  Value top = arith::ShRUIOp::create(b, loc, z, c(64 - bits));
  Value f = arith::UIToFPOp::create(b, loc, b.getF64Type(), top);
  return arith::MulFOp::create(
      b, loc, f,
      arith::ConstantOp::create(
          b, loc, b.getF64FloatAttr(std::ldexp(1.0, -int(bits)))));
}

/// The generator's seed: `seed0`, xor-ed with a splitmix64 mix of
/// offset + 1 when there is an offset (a training step). A hashed offset
/// gives an unrelated stream; adding it unhashed would only shift the
/// element index, and consecutive steps would reuse most of each other's
/// draws.
Value mixSeed(OpBuilder &b, Location loc, int64_t seed0, Value offset) {
  Type i64 = b.getI64Type();
  auto c = [&](uint64_t v) {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i64, (int64_t)v));
  };
  Value seed = c((uint64_t)seed0);
  if (!offset)
    return seed;
  Value z = arith::AddIOp::create(
      b, loc, tensor::ExtractOp::create(b, loc, offset), c(1));
  for (auto [shift, mul] :
       {std::pair<uint64_t, uint64_t>{30, 0xBF58476D1CE4E5B9ull},
        {27, 0x94D049BB133111EBull}}) {
    z = arith::MulIOp::create(b, loc, z, c(mul));
    z = arith::XOrIOp::create(b, loc, z,
                              arith::ShRUIOp::create(b, loc, z, c(shift)));
  }
  return arith::XOrIOp::create(b, loc, seed, z);
}

/// The row-major linear index of the current element of a linalg.generic
/// over `type`, as an i64.
Value linearIndex(OpBuilder &b, Location l, RankedTensorType type) {
  Type i64 = b.getI64Type();
  int64_t rank = type.getRank();
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * type.getDimSize(d + 1);
  Value linear = scalarConstant(b, l, i64, 0);
  for (int64_t d = 0; d < rank; ++d) {
    Value i =
        arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, d));
    linear = arith::AddIOp::create(
        b, l, linear,
        arith::MulIOp::create(b, l, i, scalarConstant(b, l, i64, strides[d])));
  }
  return linear;
}

/// Keeps x·1/(1−ratio) where uniform(seed, i) ≥ ratio.
struct DropoutPattern : OpConversionPattern<tsr::DropoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value x = adaptor.getX();
    auto type = cast<RankedTensorType>(x.getType());
    auto maskType = cast<RankedTensorType>(op.getMask().getType());
    double ratio = op.getRatio().convertToDouble();
    int64_t seed0 = op.getSeed(), rank = type.getRank();
    if (ratio == 0.0) {
      Value mask =
          filledTensor(rewriter, loc, maskType,
                       scalarConstant(rewriter, loc, rewriter.getI1Type(), 1));
      rewriter.replaceOp(op, {x, mask});
      return success();
    }
    Value seed = mixSeed(rewriter, loc, seed0, adaptor.getSeedOffset());
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type, maskType}, x,
        ValueRange{emptyTensor(rewriter, loc, type),
                   emptyTensor(rewriter, loc, maskType)},
        {id, id, id}, iterators(rank, utils::IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value u = uniformAt(b, l, linearIndex(b, l, type), seed);
          Value keep = arith::CmpFOp::create(
              b, l, arith::CmpFPredicate::OGE, u,
              scalarConstant(b, l, b.getF64Type(), ratio));
          Type elem = a[0].getType();
          Value scaled = arith::MulFOp::create(
              b, l, a[0], scalarConstant(b, l, elem, 1.0 / (1.0 - ratio)));
          Value y = arith::SelectOp::create(b, l, keep, scaled,
                                            scalarConstant(b, l, elem, 0.0));
          linalg::YieldOp::create(b, l, ValueRange{y, keep});
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// Every element uniformAt(seed, its index), with as many bits as the
/// result type's significand holds.
struct RandomUniformPattern : OpConversionPattern<tsr::RandomUniformOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::RandomUniformOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    auto elem = cast<FloatType>(type.getElementType());
    unsigned bits = std::min(53u, elem.getFPMantissaWidth());
    Value seed = mixSeed(rewriter, loc, op.getSeed(), adaptor.getSeedOffset());
    AffineMap id =
        AffineMap::getMultiDimIdentityMap(type.getRank(), op.getContext());
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{}, emptyTensor(rewriter, loc, type),
        {id}, iterators(type.getRank(), utils::IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange) {
          Value u = uniformAt(b, l, linearIndex(b, l, type), seed, bits);
          if (elem.getWidth() < 64)
            u = arith::TruncFOp::create(b, l, elem, u);
          linalg::YieldOp::create(b, l, u);
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// −logp[n, t, d..]·w[t] per sample, `logProbAt` giving logp at an index
/// of the [N, C, D..] log-probabilities; ignored targets give 0 with
/// weight 0. `mean` divides the weighted sum by the sum of the weights of
/// the samples that count: a second reduction over the targets when there
/// are class weights or an ignored label, otherwise the number of samples.
/// Each reduction has one output, the form that tsr-gpu-map runs on a warp.
template <typename OpT>
Value buildLoss(
    OpBuilder &b, Location loc, OpT op, int64_t classes,
    function_ref<Value(OpBuilder &, Location, ValueRange)> logProbAt,
    Value target, Value weights, RankedTensorType lossType) {
  MLIRContext *ctx = b.getContext();
  auto targetType = cast<RankedTensorType>(target.getType());
  Type elem = lossType.getElementType();
  int64_t rank = targetType.getRank();
  std::optional<int64_t> ignore;
  if (auto attr = op.getIgnoreIndexAttr())
    ignore = attr.getInt();
  tsr::LossReduction reduction = op.getReduction();
  bool none = reduction == tsr::LossReduction::none;
  auto perSample = RankedTensorType::get(targetType.getShape(), elem);
  auto outType = none ? perSample : RankedTensorType::get({}, elem);
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap out = none ? id : AffineMap::get(rank, 0, {}, ctx);
  Value zero = scalarConstant(b, loc, elem, 0.0);
  SmallVector<utils::IteratorType> loops =
      iterators(rank, none ? utils::IteratorType::parallel
                           : utils::IteratorType::reduction);
  // The class of target `t`, clamped into range, and the weight of its
  // sample.
  auto classOf = [&](OpBuilder &nb, Location l, Value t) -> Value {
    Value c = arith::IndexCastOp::create(nb, l, nb.getIndexType(), t);
    c = arith::MaxSIOp::create(nb, l, c, indexConstant(nb, l, 0));
    return arith::MinSIOp::create(nb, l, c, indexConstant(nb, l, classes - 1));
  };
  auto weightOf = [&](OpBuilder &nb, Location l, Value t, Value c) {
    Value w = weights ? (Value)tensor::ExtractOp::create(nb, l, weights,
                                                         ValueRange{c})
                      : scalarConstant(nb, l, elem, 1.0);
    if (!ignore)
      return w;
    Value skip = arith::CmpIOp::create(
        nb, l, CmpIPredicate::eq, t,
        scalarConstant(nb, l, t.getType(), (double)*ignore));
    return (Value)arith::SelectOp::create(nb, l, skip,
                                          scalarConstant(nb, l, elem, 0.0), w);
  };
  Value loss =
      linalg::GenericOp::create(
          b, loc, outType, target, filledTensor(b, loc, outType, zero),
          {id, out}, loops,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value c = classOf(nb, l, a[0]);
            SmallVector<Value> at = {linalg::IndexOp::create(nb, l, 0), c};
            for (int64_t d = 1; d < rank; ++d)
              at.push_back(linalg::IndexOp::create(nb, l, d));
            Value v = arith::NegFOp::create(nb, l, logProbAt(nb, l, at));
            if (weights || ignore)
              v = arith::MulFOp::create(nb, l, v, weightOf(nb, l, a[0], c));
            if (!none)
              v = arith::AddFOp::create(nb, l, v, a[1]);
            linalg::YieldOp::create(nb, l, v);
          })
          .getResult(0);
  if (reduction != tsr::LossReduction::mean)
    return loss;
  Value count;
  if (weights || ignore)
    count = linalg::GenericOp::create(
                b, loc, outType, target, filledTensor(b, loc, outType, zero),
                {id, out}, loops,
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  Value w = weightOf(nb, l, a[0], classOf(nb, l, a[0]));
                  linalg::YieldOp::create(
                      nb, l, (Value)arith::AddFOp::create(nb, l, w, a[1]));
                })
                .getResult(0);
  else
    count = filledTensor(
        b, loc, outType,
        scalarConstant(b, loc, elem, double(targetType.getNumElements())));
  return buildElementwise(b, loc, outType, ValueRange{loss, count},
                          [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            return arith::DivFOp::create(nb, l, a[0], a[1]);
                          });
}

struct SoftmaxCrossEntropyLossPattern
    : OpConversionPattern<tsr::SoftmaxCrossEntropyLossOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::SoftmaxCrossEntropyLossOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value scores = adaptor.getScores();
    auto type = cast<RankedTensorType>(scores.getType());
    Type stored = type.getElementType();
    // 16-bit scores: f32 arithmetic inside, each log-probability rounded
    // once, as buildSoftmax does.
    if (accumulatorType(stored) != stored)
      scores = widenToF32(rewriter, loc, scores);
    // log p = (x − max) − log(sum) at the one class each sample's loss
    // reads: the log-probabilities of the other classes are never stored.
    SoftmaxParts parts = buildSoftmaxParts(rewriter, loc, scores, /*axis=*/1);
    auto logProbAt = [&](OpBuilder &nb, Location l, ValueRange at) -> Value {
      SmallVector<Value> sample{at.front()};
      llvm::append_range(sample, at.drop_front(2));
      Value x = tensor::ExtractOp::create(nb, l, scores, at);
      Value max = tensor::ExtractOp::create(nb, l, parts.max, sample);
      Value sum = tensor::ExtractOp::create(nb, l, parts.sums, sample);
      Value lp =
          arith::SubFOp::create(nb, l, arith::SubFOp::create(nb, l, x, max),
                                math::LogOp::create(nb, l, sum));
      if (lp.getType() != stored)
        lp = arith::TruncFOp::create(nb, l, stored, lp);
      return lp;
    };
    rewriter.replaceOp(op, buildLoss(rewriter, loc, op, type.getDimSize(1),
                                     logProbAt, adaptor.getTarget(),
                                     adaptor.getWeights(), op.getType()));
    return success();
  }
};

struct NegativeLogLikelihoodLossPattern
    : OpConversionPattern<tsr::NegativeLogLikelihoodLossOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::NegativeLogLikelihoodLossOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value logp = adaptor.getInput();
    auto logProbAt = [&](OpBuilder &nb, Location l, ValueRange at) -> Value {
      return tensor::ExtractOp::create(nb, l, logp, at);
    };
    rewriter.replaceOp(
        op, buildLoss(rewriter, op.getLoc(), op,
                      cast<RankedTensorType>(logp.getType()).getDimSize(1),
                      logProbAt, adaptor.getTarget(), adaptor.getWeights(),
                      op.getType()));
    return success();
  }
};

} // namespace

void mlir::tessera::tsr_to_linalg::populateTrainingPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns
      .add<DropoutPattern, RandomUniformPattern, SoftmaxCrossEntropyLossPattern,
           NegativeLogLikelihoodLossPattern>(converter, patterns.getContext());
}
