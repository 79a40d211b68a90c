//===- ElementwiseRules.cpp - Gradients of elementwise tsr ops ------------===//
//
// Unary rules map (x, y, dy) to dx; binary rules map (a, b, y, dy) to the
// adjoints at the broadcast shape, which the model then sums back to each
// operand's shape. Functions that are piecewise constant (sign, floor, ceil,
// round) have no rule: their derivative is zero wherever it exists, so they
// pass no gradient, like comparisons and casts to integers.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Autodiff/GradientRules.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrInterfaces.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessera;

namespace {

using UnaryRule = Value (*)(Operation *, GradientBuilder &, Value x, Value y,
                            Value dy);

template <typename OpTy, UnaryRule Rule>
struct UnaryGradient
    : tsr::DifferentiableOpInterface::ExternalModel<UnaryGradient<OpTy, Rule>,
                                                    OpTy> {
  LogicalResult buildGradients(Operation *op, OpBuilder &b,
                               ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) const {
    operandGrads.assign(op->getNumOperands(), Value());
    if (!resultGrads[0] ||
        !isa<FloatType>(getElementTypeOrSelf(op->getOperand(0).getType())))
      return success();
    GradientBuilder g(b, op->getLoc());
    operandGrads[0] =
        Rule(op, g, op->getOperand(0), op->getResult(0), resultGrads[0]);
    return success();
  }
};

struct BinaryGrads {
  Value lhs, rhs;
};
using BinaryRule = BinaryGrads (*)(Operation *, GradientBuilder &, Value a,
                                   Value b, Value y, Value dy);

template <typename OpTy, BinaryRule Rule>
struct BinaryGradient
    : tsr::DifferentiableOpInterface::ExternalModel<BinaryGradient<OpTy, Rule>,
                                                    OpTy> {
  LogicalResult buildGradients(Operation *op, OpBuilder &b,
                               ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) const {
    operandGrads.assign(2, Value());
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    if (!resultGrads[0] ||
        !isa<FloatType>(getElementTypeOrSelf(op->getResult(0).getType())))
      return success();
    GradientBuilder g(b, op->getLoc());
    BinaryGrads grads = Rule(op, g, lhs, rhs, op->getResult(0), resultGrads[0]);
    if (grads.lhs)
      operandGrads[0] = g.unbroadcast(grads.lhs, lhs.getType());
    if (grads.rhs)
      operandGrads[1] = g.unbroadcast(grads.rhs, rhs.getType());
    return success();
  }
};

Value zeroLike(GradientBuilder &g, Value v) { return g.scalarLike(v, 0.0); }

//===----------------------------------------------------------------------===//
// Unary rules
//===----------------------------------------------------------------------===//

Value negGrad(Operation *, GradientBuilder &g, Value, Value, Value dy) {
  return g.neg(dy);
}
Value identityGrad(Operation *, GradientBuilder &, Value, Value, Value dy) {
  return dy;
}
Value absGrad(Operation *, GradientBuilder &g, Value x, Value, Value dy) {
  return g.mul(dy, tsr::SignOp::create(g.builder(), g.getLoc(), x));
}
Value reluGrad(Operation *, GradientBuilder &g, Value x, Value, Value dy) {
  return g.select(g.greater(x, zeroLike(g, x)), dy, zeroLike(g, dy));
}
Value expGrad(Operation *, GradientBuilder &g, Value, Value y, Value dy) {
  return g.mul(dy, y);
}
Value logGrad(Operation *, GradientBuilder &g, Value x, Value, Value dy) {
  return g.div(dy, x);
}
Value sqrtGrad(Operation *, GradientBuilder &g, Value, Value y, Value dy) {
  return g.div(g.mul(dy, g.scalarLike(dy, 0.5)), y);
}
Value reciprocalGrad(Operation *, GradientBuilder &g, Value, Value y,
                     Value dy) {
  return g.neg(g.mul(dy, g.mul(y, y)));
}
Value tanhGrad(Operation *, GradientBuilder &g, Value, Value y, Value dy) {
  return g.mul(dy, g.sub(g.scalarLike(y, 1.0), g.mul(y, y)));
}
Value sigmoidGrad(Operation *, GradientBuilder &g, Value, Value y, Value dy) {
  return g.mul(dy, g.mul(y, g.sub(g.scalarLike(y, 1.0), y)));
}
Value erfGrad(Operation *, GradientBuilder &g, Value x, Value, Value dy) {
  // d/dx erf(x) = 2/√π · e^(−x²)
  Value e = g.exp(g.neg(g.mul(x, x)));
  return g.mul(dy, g.mul(e, g.scalarLike(x, 2.0 / std::sqrt(M_PI))));
}
Value sinGrad(Operation *, GradientBuilder &g, Value x, Value, Value dy) {
  return g.mul(dy, tsr::CosOp::create(g.builder(), g.getLoc(), x));
}
Value cosGrad(Operation *, GradientBuilder &g, Value x, Value, Value dy) {
  return g.neg(g.mul(dy, tsr::SinOp::create(g.builder(), g.getLoc(), x)));
}
Value tanGrad(Operation *, GradientBuilder &g, Value, Value y, Value dy) {
  return g.mul(dy, g.add(g.scalarLike(y, 1.0), g.mul(y, y)));
}
Value atanGrad(Operation *, GradientBuilder &g, Value x, Value, Value dy) {
  return g.div(dy, g.add(g.scalarLike(x, 1.0), g.mul(x, x)));
}
Value softplusGrad(Operation *, GradientBuilder &g, Value x, Value, Value dy) {
  return g.mul(dy, g.sigmoid(x));
}
Value softsignGrad(Operation *, GradientBuilder &g, Value x, Value, Value dy) {
  Value d = g.add(g.scalarLike(x, 1.0),
                  tsr::AbsOp::create(g.builder(), g.getLoc(), x));
  return g.div(dy, g.mul(d, d));
}
Value geluGrad(Operation *op, GradientBuilder &g, Value x, Value, Value dy) {
  auto gelu = cast<tsr::GeluOp>(op);
  if (gelu.getApproximate() == tsr::GeluApproximation::tanh) {
    // y = x/2·(1 + t), t = tanh(c·(x + k·x³)):
    // dy/dx = (1 + t)/2 + x/2·(1 − t²)·c·(1 + 3k·x²).
    const double c = std::sqrt(2.0 / M_PI), k = 0.044715;
    Value x2 = g.mul(x, x);
    Value u = g.mul(g.scalarLike(x, c),
                    g.add(x, g.mul(g.scalarLike(x, k), g.mul(x2, x))));
    Value t = g.tanh(u);
    Value one = g.scalarLike(x, 1.0), half = g.scalarLike(x, 0.5);
    Value du = g.mul(g.scalarLike(x, c),
                     g.add(one, g.mul(g.scalarLike(x, 3 * k), x2)));
    Value d = g.add(g.mul(half, g.add(one, t)),
                    g.mul(g.mul(half, x), g.mul(g.sub(one, g.mul(t, t)), du)));
    return g.mul(dy, d);
  }
  // y = x·Φ(x): dy/dx = Φ(x) + x·φ(x).
  Value cdf =
      g.mul(g.scalarLike(x, 0.5),
            g.add(g.scalarLike(x, 1.0),
                  tsr::ErfOp::create(g.builder(), g.getLoc(),
                                     g.mul(x, g.scalarLike(x, M_SQRT1_2)))));
  Value pdf = g.mul(g.exp(g.mul(g.mul(x, x), g.scalarLike(x, -0.5))),
                    g.scalarLike(x, 1.0 / std::sqrt(2.0 * M_PI)));
  return g.mul(dy, g.add(cdf, g.mul(x, pdf)));
}
Value leakyReluGrad(Operation *op, GradientBuilder &g, Value x, Value,
                    Value dy) {
  double alpha = cast<tsr::LeakyReluOp>(op).getAlpha().convertToDouble();
  return g.select(g.less(x, zeroLike(g, x)), g.mul(dy, g.scalarLike(dy, alpha)),
                  dy);
}
Value eluGrad(Operation *op, GradientBuilder &g, Value x, Value y, Value dy) {
  // For x ≤ 0, y = α(eˣ − 1), so dy/dx = αeˣ = y + α.
  double alpha = cast<tsr::EluOp>(op).getAlpha().convertToDouble();
  return g.select(g.greater(x, zeroLike(g, x)), dy,
                  g.mul(dy, g.add(y, g.scalarLike(y, alpha))));
}
Value seluGrad(Operation *op, GradientBuilder &g, Value x, Value, Value dy) {
  auto selu = cast<tsr::SeluOp>(op);
  double alpha = selu.getAlpha().convertToDouble();
  double gamma = selu.getGamma().convertToDouble();
  Value neg = g.mul(g.exp(x), g.scalarLike(x, gamma * alpha));
  return g.mul(
      dy, g.select(g.greater(x, zeroLike(g, x)), g.scalarLike(x, gamma), neg));
}
Value hardSigmoidGrad(Operation *op, GradientBuilder &g, Value x, Value,
                      Value dy) {
  auto hs = cast<tsr::HardSigmoidOp>(op);
  double alpha = hs.getAlpha().convertToDouble();
  double beta = hs.getBeta().convertToDouble();
  Value z = g.add(g.mul(x, g.scalarLike(x, alpha)), g.scalarLike(x, beta));
  Value inside = g.select(g.less(z, zeroLike(g, z)), zeroLike(g, dy),
                          g.mul(dy, g.scalarLike(dy, alpha)));
  return g.select(g.greater(z, g.scalarLike(z, 1.0)), zeroLike(g, dy), inside);
}
Value clipGrad(Operation *op, GradientBuilder &g, Value x, Value, Value dy) {
  auto clip = cast<tsr::ClipOp>(op);
  Value grad = dy;
  if (auto min = clip.getMin())
    grad = g.select(g.less(x, g.scalarLike(x, min->convertToDouble())),
                    zeroLike(g, dy), grad);
  if (auto max = clip.getMax())
    grad = g.select(g.greater(x, g.scalarLike(x, max->convertToDouble())),
                    zeroLike(g, dy), grad);
  return grad;
}

/// `dy` before its rounding from `wide` (its shape in a wider type): the
/// value it was cast from, or, for a sum of gradients one of whose terms
/// was rounded so, the terms added in the wider type. Null if no term was.
Value unrounded(GradientBuilder &g, Value dy, Type wide) {
  if (auto rounded = dy.getDefiningOp<tsr::CastOp>())
    return rounded.getX().getType() == wide ? rounded.getX() : Value();
  auto sum = dy.getDefiningOp<tsr::AddOp>();
  if (!sum || sum.getLhs().getType() != dy.getType() ||
      sum.getRhs().getType() != dy.getType())
    return Value();
  Value lhs = unrounded(g, sum.getLhs(), wide);
  Value rhs = unrounded(g, sum.getRhs(), wide);
  if (!lhs && !rhs)
    return Value();
  Type elem = getElementTypeOrSelf(wide);
  return g.add(lhs ? lhs : g.castTo(sum.getLhs(), elem),
               rhs ? rhs : g.castTo(sum.getRhs(), elem));
}

/// A gradient that arrives rounded from x's type (a 16-bit working copy's
/// embedding gradient, summed in f32), or summed with one that does (a
/// tied embedding's, with the head's), is taken before that rounding.
Value castGrad(Operation *, GradientBuilder &g, Value x, Value y, Value dy) {
  if (!isa<FloatType>(getElementTypeOrSelf(y.getType())))
    return Value();
  Type from = getElementTypeOrSelf(x.getType()),
       to = getElementTypeOrSelf(y.getType());
  if (isa<FloatType>(from) &&
      from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
    if (Value wide = unrounded(g, dy, x.getType()))
      return wide;
  return g.castTo(dy, getElementTypeOrSelf(x.getType()));
}

//===----------------------------------------------------------------------===//
// Binary rules
//===----------------------------------------------------------------------===//

BinaryGrads addGrad(Operation *, GradientBuilder &, Value, Value, Value,
                    Value dy) {
  return {dy, dy};
}
BinaryGrads subGrad(Operation *, GradientBuilder &g, Value, Value, Value,
                    Value dy) {
  return {dy, g.neg(dy)};
}
BinaryGrads mulGrad(Operation *, GradientBuilder &g, Value a, Value b, Value,
                    Value dy) {
  return {g.mul(dy, b), g.mul(dy, a)};
}
BinaryGrads divGrad(Operation *, GradientBuilder &g, Value, Value b, Value y,
                    Value dy) {
  Value da = g.div(dy, b);
  return {da, g.neg(g.mul(da, y))};
}
BinaryGrads powGrad(Operation *, GradientBuilder &g, Value a, Value b, Value y,
                    Value dy) {
  // d/da aᵇ = b·aᵇ⁻¹;  d/db aᵇ = aᵇ·ln a (a > 0).
  Value am1 = tsr::PowOp::create(g.builder(), g.getLoc(), a,
                                 g.sub(b, g.scalarLike(b, 1.0)));
  return {g.mul(dy, g.mul(b, am1)), g.mul(dy, g.mul(y, g.log(a)))};
}
BinaryGrads maxGrad(Operation *, GradientBuilder &g, Value a, Value b, Value,
                    Value dy) {
  // Ties send the gradient to the left operand.
  Value takeB = g.less(a, b);
  return {g.select(takeB, zeroLike(g, dy), dy),
          g.select(takeB, dy, zeroLike(g, dy))};
}
BinaryGrads minGrad(Operation *, GradientBuilder &g, Value a, Value b, Value,
                    Value dy) {
  Value takeB = g.greater(a, b);
  return {g.select(takeB, zeroLike(g, dy), dy),
          g.select(takeB, dy, zeroLike(g, dy))};
}
BinaryGrads modGrad(Operation *op, GradientBuilder &g, Value a, Value b, Value,
                    Value dy) {
  // a mod b = a − b·q with q = trunc(a/b) (fmod) or floor(a/b), piecewise
  // constant: d/da = 1, d/db = −q.
  OpBuilder &builder = g.builder();
  Value ratio = g.div(a, b);
  Value q = tsr::FloorOp::create(builder, g.getLoc(), ratio);
  if (cast<tsr::ModOp>(op).getFmod())
    q = g.select(g.less(ratio, zeroLike(g, ratio)),
                 tsr::CeilOp::create(builder, g.getLoc(), ratio), q);
  return {dy, g.neg(g.mul(dy, q))};
}
BinaryGrads preluGrad(Operation *, GradientBuilder &g, Value x, Value slope,
                      Value, Value dy) {
  Value neg = g.less(x, zeroLike(g, x));
  return {g.select(neg, g.mul(dy, slope), dy),
          g.select(neg, g.mul(dy, x), zeroLike(g, dy))};
}

/// where(cond, t, f): the selected side gets dy; cond gets nothing.
struct WhereGradient
    : tsr::DifferentiableOpInterface::ExternalModel<WhereGradient,
                                                    tsr::WhereOp> {
  LogicalResult buildGradients(Operation *op, OpBuilder &b,
                               ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) const {
    auto where = cast<tsr::WhereOp>(op);
    operandGrads.assign(3, Value());
    Value dy = resultGrads[0];
    if (!dy || !isa<FloatType>(getElementTypeOrSelf(dy.getType())))
      return success();
    GradientBuilder g(b, op->getLoc());
    Value zero = zeroLike(g, dy);
    operandGrads[1] = g.unbroadcast(g.select(where.getCond(), dy, zero),
                                    where.getOnTrue().getType());
    operandGrads[2] = g.unbroadcast(g.select(where.getCond(), zero, dy),
                                    where.getOnFalse().getType());
    return success();
  }
};

/// stop_gradient passes nothing back.
struct StopGradient
    : tsr::DifferentiableOpInterface::ExternalModel<StopGradient,
                                                    tsr::StopGradientOp> {
  bool isDifferentiableOperand(Operation *, unsigned) const { return false; }
  LogicalResult buildGradients(Operation *op, OpBuilder &,
                               ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) const {
    operandGrads.assign(op->getNumOperands(), Value());
    return success();
  }
};

/// Piecewise-constant functions and comparisons: zero derivative.
template <typename OpTy>
struct ZeroGradient
    : tsr::DifferentiableOpInterface::ExternalModel<ZeroGradient<OpTy>, OpTy> {
  bool isDifferentiableOperand(Operation *, unsigned) const { return false; }
  LogicalResult buildGradients(Operation *op, OpBuilder &,
                               ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) const {
    operandGrads.assign(op->getNumOperands(), Value());
    return success();
  }
};

template <typename... OpTys> void attachZero(MLIRContext *ctx) {
  (OpTys::template attachInterface<ZeroGradient<OpTys>>(*ctx), ...);
}

} // namespace

void mlir::tessera::registerElementwiseGradientRules(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tsr::TsrDialect *) {
    using namespace tsr;
#define UNARY(OP, RULE) OP::attachInterface<UnaryGradient<OP, RULE>>(*ctx)
#define BINARY(OP, RULE) OP::attachInterface<BinaryGradient<OP, RULE>>(*ctx)
    UNARY(NegOp, negGrad);
    UNARY(IdentityOp, identityGrad);
    UNARY(AbsOp, absGrad);
    UNARY(ReluOp, reluGrad);
    UNARY(ExpOp, expGrad);
    UNARY(LogOp, logGrad);
    UNARY(SqrtOp, sqrtGrad);
    UNARY(ReciprocalOp, reciprocalGrad);
    UNARY(TanhOp, tanhGrad);
    UNARY(SigmoidOp, sigmoidGrad);
    UNARY(ErfOp, erfGrad);
    UNARY(SinOp, sinGrad);
    UNARY(CosOp, cosGrad);
    UNARY(TanOp, tanGrad);
    UNARY(AtanOp, atanGrad);
    UNARY(SoftplusOp, softplusGrad);
    UNARY(SoftsignOp, softsignGrad);
    UNARY(GeluOp, geluGrad);
    UNARY(LeakyReluOp, leakyReluGrad);
    UNARY(EluOp, eluGrad);
    UNARY(SeluOp, seluGrad);
    UNARY(HardSigmoidOp, hardSigmoidGrad);
    UNARY(ClipOp, clipGrad);
    UNARY(CastOp, castGrad);
    BINARY(AddOp, addGrad);
    BINARY(SubOp, subGrad);
    BINARY(MulOp, mulGrad);
    BINARY(DivOp, divGrad);
    BINARY(PowOp, powGrad);
    BINARY(MaxOp, maxGrad);
    BINARY(MinOp, minGrad);
    BINARY(PReluOp, preluGrad);
    BINARY(ModOp, modGrad);
#undef UNARY
#undef BINARY
    WhereOp::attachInterface<WhereGradient>(*ctx);
    StopGradientOp::attachInterface<StopGradient>(*ctx);
    attachZero<SignOp, FloorOp, CeilOp, RoundOp, IsNaNOp, NotOp, AndOp, OrOp,
               XorOp, EqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp,
               ArgMaxOp, ArgMinOp, OneHotOp>(ctx);
  });
}
