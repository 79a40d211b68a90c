//===- Elementwise.cpp - Lowering of elementwise tsr ops ------------------===//
//
// Every elementwise op becomes one parallel linalg.generic whose indexing
// maps broadcast the operands numpy-style (size-1 dimensions read index 0);
// the scalar body is chosen per op and per element type (unsigned integers
// get unsigned arithmetic; f16/bf16 transcendentals compute in f32).
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;
using namespace mlir::tessera::tsr_to_linalg;
using arith::CmpFPredicate;
using arith::CmpIPredicate;

namespace {

/// What a scalar body needs to know: the builder, the tsr element type of the
/// first data operand and whether it is a float.
struct Scalar {
  OpBuilder &b;
  Location loc;
  Type elem;

  bool isFloat() const { return isa<FloatType>(elem); }
  bool isUns() const { return isUnsigned(elem); }
  Type type() const { return toSignless(elem); }
  Value cst(double v) const { return scalarConstant(b, loc, elem, v); }
  Value cmp(CmpFPredicate f, CmpIPredicate s, CmpIPredicate u, Value x,
            Value y) const {
    if (isFloat())
      return arith::CmpFOp::create(b, loc, f, x, y);
    return arith::CmpIOp::create(b, loc, isUns() ? u : s, x, y);
  }
  Value select(Value c, Value x, Value y) const {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value add(Value x, Value y) const {
    return isFloat() ? (Value)arith::AddFOp::create(b, loc, x, y)
                     : (Value)arith::AddIOp::create(b, loc, x, y);
  }
  Value sub(Value x, Value y) const {
    return isFloat() ? (Value)arith::SubFOp::create(b, loc, x, y)
                     : (Value)arith::SubIOp::create(b, loc, x, y);
  }
  Value mul(Value x, Value y) const {
    return isFloat() ? (Value)arith::MulFOp::create(b, loc, x, y)
                     : (Value)arith::MulIOp::create(b, loc, x, y);
  }
  Value div(Value x, Value y) const {
    if (isFloat())
      return arith::DivFOp::create(b, loc, x, y);
    if (isUns())
      return arith::DivUIOp::create(b, loc, x, y);
    return arith::DivSIOp::create(b, loc, x, y);
  }
  Value max(Value x, Value y) const {
    if (isFloat())
      return arith::MaximumFOp::create(b, loc, x, y);
    if (isUns())
      return arith::MaxUIOp::create(b, loc, x, y);
    return arith::MaxSIOp::create(b, loc, x, y);
  }
  Value min(Value x, Value y) const {
    if (isFloat())
      return arith::MinimumFOp::create(b, loc, x, y);
    if (isUns())
      return arith::MinUIOp::create(b, loc, x, y);
    return arith::MinSIOp::create(b, loc, x, y);
  }
  template <typename MathOp> Value math(Value x) const {
    return applyMath<MathOp>(b, loc, x);
  }
  /// e^x − 1 (for Elu and Selu).
  Value expm1(Value x) const { return sub(math<math::ExpOp>(x), cst(1.0)); }
};

//===----------------------------------------------------------------------===//
// Scalar bodies, one per op
//===----------------------------------------------------------------------===//

Value body(tsr::NegOp, const Scalar &s, ValueRange a) {
  if (s.isFloat())
    return arith::NegFOp::create(s.b, s.loc, a[0]);
  return s.sub(s.cst(0), a[0]);
}
Value body(tsr::AbsOp, const Scalar &s, ValueRange a) {
  if (s.isFloat())
    return math::AbsFOp::create(s.b, s.loc, a[0]);
  if (s.isUns())
    return a[0];
  return math::AbsIOp::create(s.b, s.loc, a[0]);
}
Value body(tsr::SignOp, const Scalar &s, ValueRange a) {
  Value x = a[0], zero = s.cst(0);
  if (s.isUns())
    return s.select(s.cmp(CmpFPredicate::UNE, CmpIPredicate::ne,
                          CmpIPredicate::ne, x, zero),
                    s.cst(1), zero);
  // x > 0 → 1, x < 0 → −1, otherwise x itself (keeps ±0 and NaN).
  Value pos = s.cmp(CmpFPredicate::OGT, CmpIPredicate::sgt, CmpIPredicate::ugt,
                    x, zero);
  Value neg = s.cmp(CmpFPredicate::OLT, CmpIPredicate::slt, CmpIPredicate::ult,
                    x, zero);
  return s.select(pos, s.cst(1), s.select(neg, s.cst(-1), x));
}
Value body(tsr::ReluOp, const Scalar &s, ValueRange a) {
  if (s.isUns())
    return a[0];
  return s.max(a[0], s.cst(0));
}
Value body(tsr::NotOp, const Scalar &s, ValueRange a) {
  return arith::XOrIOp::create(s.b, s.loc, a[0], s.cst(1));
}
Value body(tsr::ExpOp, const Scalar &s, ValueRange a) {
  return s.math<math::ExpOp>(a[0]);
}
Value body(tsr::LogOp, const Scalar &s, ValueRange a) {
  return s.math<math::LogOp>(a[0]);
}
Value body(tsr::SqrtOp, const Scalar &s, ValueRange a) {
  return s.math<math::SqrtOp>(a[0]);
}
Value body(tsr::ReciprocalOp, const Scalar &s, ValueRange a) {
  return s.div(s.cst(1), a[0]);
}
Value body(tsr::TanhOp, const Scalar &s, ValueRange a) {
  return s.math<math::TanhOp>(a[0]);
}
Value body(tsr::SigmoidOp, const Scalar &s, ValueRange a) {
  Value e = s.math<math::ExpOp>(arith::NegFOp::create(s.b, s.loc, a[0]));
  return s.div(s.cst(1), s.add(s.cst(1), e));
}
Value body(tsr::ErfOp, const Scalar &s, ValueRange a) {
  return s.math<math::ErfOp>(a[0]);
}
Value body(tsr::SinOp, const Scalar &s, ValueRange a) {
  return s.math<math::SinOp>(a[0]);
}
Value body(tsr::CosOp, const Scalar &s, ValueRange a) {
  return s.math<math::CosOp>(a[0]);
}
Value body(tsr::TanOp, const Scalar &s, ValueRange a) {
  return s.math<math::TanOp>(a[0]);
}
Value body(tsr::AtanOp, const Scalar &s, ValueRange a) {
  return s.math<math::AtanOp>(a[0]);
}
Value body(tsr::FloorOp, const Scalar &s, ValueRange a) {
  return s.math<math::FloorOp>(a[0]);
}
Value body(tsr::CeilOp, const Scalar &s, ValueRange a) {
  return s.math<math::CeilOp>(a[0]);
}
Value body(tsr::RoundOp, const Scalar &s, ValueRange a) {
  return s.math<math::RoundEvenOp>(a[0]);
}
Value body(tsr::SoftplusOp, const Scalar &s, ValueRange a) {
  // max(x, 0) + log(1 + e^−|x|): never overflows.
  Value x = a[0];
  Value absX = math::AbsFOp::create(s.b, s.loc, x);
  Value e = s.math<math::ExpOp>(arith::NegFOp::create(s.b, s.loc, absX));
  Value l = s.math<math::Log1pOp>(e);
  return s.add(arith::MaxNumFOp::create(s.b, s.loc, x, s.cst(0)), l);
}
Value body(tsr::SoftsignOp, const Scalar &s, ValueRange a) {
  Value absX = math::AbsFOp::create(s.b, s.loc, a[0]);
  return s.div(a[0], s.add(s.cst(1), absX));
}
Value body(tsr::IsNaNOp, const Scalar &s, ValueRange a) {
  return arith::CmpFOp::create(s.b, s.loc, CmpFPredicate::UNO, a[0], a[0]);
}
Value body(tsr::GeluOp op, const Scalar &s, ValueRange a) {
  Value x = a[0], half = s.cst(0.5), one = s.cst(1);
  if (op.getApproximate() == tsr::GeluApproximation::tanh) {
    // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
    Value x3 = s.mul(x, s.mul(x, x));
    Value inner =
        s.mul(s.cst(0.7978845608028654), s.add(x, s.mul(s.cst(0.044715), x3)));
    return s.mul(s.mul(half, x), s.add(one, s.math<math::TanhOp>(inner)));
  }
  Value e = s.math<math::ErfOp>(s.mul(x, s.cst(0.7071067811865476)));
  return s.mul(s.mul(half, x), s.add(one, e));
}
Value body(tsr::LeakyReluOp op, const Scalar &s, ValueRange a) {
  Value x = a[0];
  Value neg = s.cmp(CmpFPredicate::OLT, CmpIPredicate::slt, CmpIPredicate::ult,
                    x, s.cst(0));
  return s.select(neg, s.mul(s.cst(op.getAlpha().convertToDouble()), x), x);
}
Value body(tsr::EluOp op, const Scalar &s, ValueRange a) {
  Value x = a[0];
  Value neg = s.cmp(CmpFPredicate::OLE, CmpIPredicate::sle, CmpIPredicate::ule,
                    x, s.cst(0));
  return s.select(neg,
                  s.mul(s.cst(op.getAlpha().convertToDouble()), s.expm1(x)), x);
}
Value body(tsr::SeluOp op, const Scalar &s, ValueRange a) {
  Value x = a[0];
  Value neg = s.cmp(CmpFPredicate::OLE, CmpIPredicate::sle, CmpIPredicate::ule,
                    x, s.cst(0));
  Value y = s.select(
      neg, s.mul(s.cst(op.getAlpha().convertToDouble()), s.expm1(x)), x);
  return s.mul(s.cst(op.getGamma().convertToDouble()), y);
}
Value body(tsr::HardSigmoidOp op, const Scalar &s, ValueRange a) {
  Value y = s.add(s.mul(s.cst(op.getAlpha().convertToDouble()), a[0]),
                  s.cst(op.getBeta().convertToDouble()));
  return s.max(s.cst(0), s.min(s.cst(1), y));
}
Value body(tsr::ClipOp op, const Scalar &s, ValueRange a) {
  Value x = a[0];
  if (auto lo = op.getMin())
    x = s.max(x, s.cst(lo->convertToDouble()));
  if (auto hi = op.getMax())
    x = s.min(x, s.cst(hi->convertToDouble()));
  return x;
}
Value body(tsr::CastOp op, const Scalar &s, ValueRange a) {
  return convertScalar(s.b, s.loc, a[0], s.elem,
                       getElementType(op.getResult()));
}

Value body(tsr::AddOp, const Scalar &s, ValueRange a) {
  return s.add(a[0], a[1]);
}
Value body(tsr::SubOp, const Scalar &s, ValueRange a) {
  return s.sub(a[0], a[1]);
}
Value body(tsr::MulOp, const Scalar &s, ValueRange a) {
  return s.mul(a[0], a[1]);
}
Value body(tsr::DivOp, const Scalar &s, ValueRange a) {
  return s.div(a[0], a[1]);
}
Value body(tsr::MaxOp, const Scalar &s, ValueRange a) {
  return s.max(a[0], a[1]);
}
Value body(tsr::MinOp, const Scalar &s, ValueRange a) {
  return s.min(a[0], a[1]);
}
Value body(tsr::PowOp, const Scalar &s, ValueRange a) {
  Value base = a[0], exp = a[1];
  if (s.isFloat()) {
    Type t = base.getType();
    if (t.getIntOrFloatBitWidth() >= 32)
      return math::PowFOp::create(s.b, s.loc, base, exp);
    Type f32 = s.b.getF32Type();
    Value r = math::PowFOp::create(s.b, s.loc,
                                   arith::ExtFOp::create(s.b, s.loc, f32, base),
                                   arith::ExtFOp::create(s.b, s.loc, f32, exp));
    return arith::TruncFOp::create(s.b, s.loc, t, r);
  }
  // Square-and-multiply unrolled over the exponent's bits: no loops.
  unsigned width = s.type().getIntOrFloatBitWidth();
  Value result = s.cst(1), power = base, zero = s.cst(0);
  for (unsigned bit = 0; bit < width; ++bit) {
    Value mask = arith::ConstantOp::create(
        s.b, s.loc,
        s.b.getIntegerAttr(s.type(), APInt::getOneBitSet(width, bit)));
    Value set = arith::CmpIOp::create(
        s.b, s.loc, CmpIPredicate::ne,
        arith::AndIOp::create(s.b, s.loc, exp, mask), zero);
    result = s.select(set, s.mul(result, power), result);
    power = s.mul(power, power);
  }
  if (s.isUns())
    return result;
  // Negative exponents: 1 for base 1, ±1 for base −1, 0 otherwise.
  Value negExp =
      arith::CmpIOp::create(s.b, s.loc, CmpIPredicate::slt, exp, zero);
  Value isOne =
      arith::CmpIOp::create(s.b, s.loc, CmpIPredicate::eq, base, s.cst(1));
  Value isMinusOne =
      arith::CmpIOp::create(s.b, s.loc, CmpIPredicate::eq, base, s.cst(-1));
  Value odd = arith::CmpIOp::create(
      s.b, s.loc, CmpIPredicate::ne,
      arith::AndIOp::create(s.b, s.loc, exp, s.cst(1)), zero);
  Value negative =
      s.select(isOne, s.cst(1),
               s.select(isMinusOne, s.select(odd, s.cst(-1), s.cst(1)), zero));
  return s.select(negExp, negative, result);
}
Value body(tsr::ModOp op, const Scalar &s, ValueRange a) {
  Value x = a[0], y = a[1];
  if (s.isUns())
    return arith::RemUIOp::create(s.b, s.loc, x, y);
  Value r = s.isFloat() ? (Value)arith::RemFOp::create(s.b, s.loc, x, y)
                        : (Value)arith::RemSIOp::create(s.b, s.loc, x, y);
  if (op.getFmod())
    return r;
  // Python %: a non-zero remainder takes the sign of the divisor.
  Value zero = s.cst(0);
  Value rNonZero =
      s.cmp(CmpFPredicate::ONE, CmpIPredicate::ne, CmpIPredicate::ne, r, zero);
  Value rNeg = s.cmp(CmpFPredicate::OLT, CmpIPredicate::slt, CmpIPredicate::ult,
                     r, zero);
  Value yNeg = s.cmp(CmpFPredicate::OLT, CmpIPredicate::slt, CmpIPredicate::ult,
                     y, zero);
  Value differ = arith::XOrIOp::create(s.b, s.loc, rNeg, yNeg);
  Value fix = arith::AndIOp::create(s.b, s.loc, rNonZero, differ);
  return s.select(fix, s.add(r, y), r);
}
Value body(tsr::AndOp, const Scalar &s, ValueRange a) {
  return arith::AndIOp::create(s.b, s.loc, a[0], a[1]);
}
Value body(tsr::OrOp, const Scalar &s, ValueRange a) {
  return arith::OrIOp::create(s.b, s.loc, a[0], a[1]);
}
Value body(tsr::XorOp, const Scalar &s, ValueRange a) {
  return arith::XOrIOp::create(s.b, s.loc, a[0], a[1]);
}
Value body(tsr::EqualOp, const Scalar &s, ValueRange a) {
  return s.cmp(CmpFPredicate::OEQ, CmpIPredicate::eq, CmpIPredicate::eq, a[0],
               a[1]);
}
Value body(tsr::LessOp, const Scalar &s, ValueRange a) {
  return s.cmp(CmpFPredicate::OLT, CmpIPredicate::slt, CmpIPredicate::ult, a[0],
               a[1]);
}
Value body(tsr::LessEqualOp, const Scalar &s, ValueRange a) {
  return s.cmp(CmpFPredicate::OLE, CmpIPredicate::sle, CmpIPredicate::ule, a[0],
               a[1]);
}
Value body(tsr::GreaterOp, const Scalar &s, ValueRange a) {
  return s.cmp(CmpFPredicate::OGT, CmpIPredicate::sgt, CmpIPredicate::ugt, a[0],
               a[1]);
}
Value body(tsr::GreaterEqualOp, const Scalar &s, ValueRange a) {
  return s.cmp(CmpFPredicate::OGE, CmpIPredicate::sge, CmpIPredicate::uge, a[0],
               a[1]);
}
Value body(tsr::PReluOp, const Scalar &s, ValueRange a) {
  Value neg = s.cmp(CmpFPredicate::OLT, CmpIPredicate::slt, CmpIPredicate::ult,
                    a[0], s.cst(0));
  return s.select(neg, s.mul(a[1], a[0]), a[0]);
}
Value body(tsr::WhereOp, const Scalar &s, ValueRange a) {
  return s.select(a[0], a[1], a[2]);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

template <typename OpT> struct ElementwisePattern : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = convertTensorType(*this->getTypeConverter(),
                                        op->getResult(0).getType());
    // Where's first operand is the condition: its data starts at operand 1.
    unsigned data = std::is_same_v<OpT, tsr::WhereOp> ? 1 : 0;
    Type elem = getElementType(op->getOperand(data));
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, adaptor.getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return body(op, Scalar{b, loc, elem}, args);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Identity and stop_gradient forward their operand.
template <typename OpTy> struct IdentityPattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getX());
    return success();
  }
};

struct ConstantPattern : OpConversionPattern<tsr::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    Attribute value = op.getValue();
    if (type != op.getType()) {
      if (auto dense = dyn_cast<DenseElementsAttr>(value))
        value = dense.bitcast(type.getElementType());
      else if (auto res = dyn_cast<DenseResourceElementsAttr>(value))
        value = DenseResourceElementsAttr::get(type, res.getRawHandle());
      else
        return rewriter.notifyMatchFailure(op, "unsupported unsigned constant");
    }
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, type,
                                                   cast<TypedAttr>(value));
    return success();
  }
};

} // namespace

void mlir::tessera::tsr_to_linalg::populateElementwisePatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<
      ElementwisePattern<tsr::NegOp>, ElementwisePattern<tsr::AbsOp>,
      ElementwisePattern<tsr::SignOp>, ElementwisePattern<tsr::ReluOp>,
      ElementwisePattern<tsr::NotOp>, ElementwisePattern<tsr::ExpOp>,
      ElementwisePattern<tsr::LogOp>, ElementwisePattern<tsr::SqrtOp>,
      ElementwisePattern<tsr::ReciprocalOp>, ElementwisePattern<tsr::TanhOp>,
      ElementwisePattern<tsr::SigmoidOp>, ElementwisePattern<tsr::ErfOp>,
      ElementwisePattern<tsr::SinOp>, ElementwisePattern<tsr::CosOp>,
      ElementwisePattern<tsr::TanOp>, ElementwisePattern<tsr::AtanOp>,
      ElementwisePattern<tsr::FloorOp>, ElementwisePattern<tsr::CeilOp>,
      ElementwisePattern<tsr::RoundOp>, ElementwisePattern<tsr::SoftplusOp>,
      ElementwisePattern<tsr::SoftsignOp>, ElementwisePattern<tsr::IsNaNOp>,
      ElementwisePattern<tsr::GeluOp>, ElementwisePattern<tsr::LeakyReluOp>,
      ElementwisePattern<tsr::EluOp>, ElementwisePattern<tsr::SeluOp>,
      ElementwisePattern<tsr::HardSigmoidOp>, ElementwisePattern<tsr::ClipOp>,
      ElementwisePattern<tsr::CastOp>, ElementwisePattern<tsr::AddOp>,
      ElementwisePattern<tsr::SubOp>, ElementwisePattern<tsr::MulOp>,
      ElementwisePattern<tsr::DivOp>, ElementwisePattern<tsr::PowOp>,
      ElementwisePattern<tsr::MaxOp>, ElementwisePattern<tsr::MinOp>,
      ElementwisePattern<tsr::ModOp>, ElementwisePattern<tsr::AndOp>,
      ElementwisePattern<tsr::OrOp>, ElementwisePattern<tsr::XorOp>,
      ElementwisePattern<tsr::EqualOp>, ElementwisePattern<tsr::LessOp>,
      ElementwisePattern<tsr::LessEqualOp>, ElementwisePattern<tsr::GreaterOp>,
      ElementwisePattern<tsr::GreaterEqualOp>, ElementwisePattern<tsr::PReluOp>,
      ElementwisePattern<tsr::WhereOp>, IdentityPattern<tsr::IdentityOp>,
      IdentityPattern<tsr::StopGradientOp>, ConstantPattern>(
      converter, patterns.getContext());
}
