//===- Elementwise.cpp - ONNX elementwise ops to tsr ----------------------===//
//
// Unary math and activations (decomposed where tsr has no op), binary
// arithmetic, logic and comparisons with broadcasting, the variadic
// Sum/Mean/Max/Min, Where, Clip, Cast and CastLike.
//
//===----------------------------------------------------------------------===//
#include "HandlerUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessera::onnx_import;

namespace {
/// Small builder vocabulary for decompositions within one node.
struct Emitter {
  NodeContext &n;
  template <typename OpT>
  FailureOr<Value> op(ValueRange operands,
                      ArrayRef<NamedAttribute> attrs = {}) {
    return n.create<OpT>(operands, attrs);
  }
  /// A scalar constant of x's element type.
  Value c(Value like, double v) {
    return n.scalar(cast<RankedTensorType>(like.getType()).getElementType(), v);
  }
};
} // namespace

template <typename OpT>
static LogicalResult unary(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(y, n.create<OpT>({x}));
  results.push_back(y);
  return success();
}

template <typename OpT>
static LogicalResult binary(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(a, n.requireInput(0));
  TRY(b, n.requireInput(1));
  TRY(y, n.create<OpT>({a, b}));
  results.push_back(y);
  return success();
}

/// Variadic Sum, Max, Min (and Mean): a left-to-right chain.
template <typename OpT>
static LogicalResult variadic(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(acc, n.requireInput(0));
  for (unsigned i = 1; i < n.numInputs(); ++i) {
    TRY(v, n.requireInput(i));
    TRY(next, n.create<OpT>({acc, v}));
    acc = next;
  }
  if (n.opType() == "Mean" && n.numInputs() > 1) {
    TRY(mean,
        n.create<tsr::DivOp>(
            {acc, Emitter{n}.c(acc, static_cast<double>(n.numInputs()))}));
    acc = mean;
  }
  results.push_back(acc);
  return success();
}

static LogicalResult isNaN(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(y, n.create<tsr::IsNaNOp>({x}, {}, tensorType(x).clone(n.b.getI1Type())));
  results.push_back(y);
  return success();
}

/// IsInf: x == +inf (detect_positive) or x == -inf (detect_negative).
static LogicalResult isInf(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  bool pos = n.getInt("detect_positive", 1) != 0,
       neg = n.getInt("detect_negative", 1) != 0;
  auto boolType = tensorType(x).clone(n.b.getI1Type());
  if (!pos && !neg) {
    results.push_back(n.constant(DenseElementsAttr::get(boolType, false)));
    return success();
  }
  Value y;
  for (auto [enabled, inf] : {std::pair{pos, INFINITY}, {neg, -INFINITY}}) {
    if (!enabled)
      continue;
    TRY(eq, n.create<tsr::EqualOp>({x, scalarLike(n, x, inf)}));
    if (y) {
      TRY(both, n.create<tsr::OrOp>({y, eq}));
      eq = both;
    }
    y = eq;
  }
  results.push_back(y);
  return success();
}

//===----------------------------------------------------------------------===//
// Decomposed unary math
//===----------------------------------------------------------------------===//

/// sinh, cosh from exponentials: (e^x ∓ e^-x) / 2.
static LogicalResult hyperbolic(NodeContext &n,
                                SmallVectorImpl<Value> &results) {
  Emitter e{n};
  TRY(x, n.requireInput(0));
  TRY(ex, e.op<tsr::ExpOp>({x}));
  TRY(negx, e.op<tsr::NegOp>({x}));
  TRY(emx, e.op<tsr::ExpOp>({negx}));
  FailureOr<Value> num = n.opType() == "Sinh" ? e.op<tsr::SubOp>({ex, emx})
                                              : e.op<tsr::AddOp>({ex, emx});
  if (failed(num))
    return failure();
  TRY(y, e.op<tsr::MulOp>({*num, e.c(x, 0.5)}));
  results.push_back(y);
  return success();
}

/// asinh = log(x + sqrt(x² + 1)), acosh = log(x + sqrt(x² − 1)).
static LogicalResult inverseHyperbolic(NodeContext &n,
                                       SmallVectorImpl<Value> &results) {
  Emitter e{n};
  TRY(x, n.requireInput(0));
  TRY(x2, e.op<tsr::MulOp>({x, x}));
  FailureOr<Value> inner = n.opType() == "Asinh"
                               ? e.op<tsr::AddOp>({x2, e.c(x, 1.0)})
                               : e.op<tsr::SubOp>({x2, e.c(x, 1.0)});
  if (failed(inner))
    return failure();
  TRY(root, e.op<tsr::SqrtOp>({*inner}));
  TRY(sum, e.op<tsr::AddOp>({x, root}));
  TRY(y, e.op<tsr::LogOp>({sum}));
  results.push_back(y);
  return success();
}

/// atanh = log((1 + x) / (1 − x)) / 2.
static LogicalResult atanh(NodeContext &n, SmallVectorImpl<Value> &results) {
  Emitter e{n};
  TRY(x, n.requireInput(0));
  TRY(num, e.op<tsr::AddOp>({e.c(x, 1.0), x}));
  TRY(den, e.op<tsr::SubOp>({e.c(x, 1.0), x}));
  TRY(q, e.op<tsr::DivOp>({num, den}));
  TRY(l, e.op<tsr::LogOp>({q}));
  TRY(y, e.op<tsr::MulOp>({l, e.c(x, 0.5)}));
  results.push_back(y);
  return success();
}

/// asin = atan(x / sqrt(1 − x²)); acos = π/2 − asin.
static LogicalResult arcSinCos(NodeContext &n,
                               SmallVectorImpl<Value> &results) {
  Emitter e{n};
  TRY(x, n.requireInput(0));
  TRY(x2, e.op<tsr::MulOp>({x, x}));
  TRY(d, e.op<tsr::SubOp>({e.c(x, 1.0), x2}));
  TRY(root, e.op<tsr::SqrtOp>({d}));
  TRY(q, e.op<tsr::DivOp>({x, root}));
  TRY(asin, e.op<tsr::AtanOp>({q}));
  if (n.opType() == "Asin") {
    results.push_back(asin);
    return success();
  }
  TRY(acos, e.op<tsr::SubOp>({e.c(x, M_PI / 2), asin}));
  results.push_back(acos);
  return success();
}

//===----------------------------------------------------------------------===//
// Activations with attributes
//===----------------------------------------------------------------------===//

static LogicalResult leakyRelu(NodeContext &n,
                               SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(y, n.create<tsr::LeakyReluOp>(
             {x}, {n.f64("alpha", n.getFloat("alpha", 0.01))}));
  results.push_back(y);
  return success();
}

static LogicalResult elu(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(y, n.create<tsr::EluOp>({x}, {n.f64("alpha", n.getFloat("alpha", 1.0))}));
  results.push_back(y);
  return success();
}

static LogicalResult selu(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(y, n.create<tsr::SeluOp>(
             {x},
             {n.f64("alpha", n.getFloat("alpha", 1.67326319217681884765625)),
              n.f64("gamma", n.getFloat("gamma", 1.05070102214813232421875))}));
  results.push_back(y);
  return success();
}

static LogicalResult hardSigmoid(NodeContext &n,
                                 SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(y, n.create<tsr::HardSigmoidOp>(
             {x}, {n.f64("alpha", n.getFloat("alpha", 0.2)),
                   n.f64("beta", n.getFloat("beta", 0.5))}));
  results.push_back(y);
  return success();
}

/// HardSwish = x · hard_sigmoid(x; 1/6, 1/2).
static LogicalResult hardSwish(NodeContext &n,
                               SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(h, n.create<tsr::HardSigmoidOp>(
             {x}, {n.f64("alpha", 1.0 / 6.0), n.f64("beta", 0.5)}));
  TRY(y, n.create<tsr::MulOp>({x, h}));
  results.push_back(y);
  return success();
}

static LogicalResult gelu(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  StringRef name = n.getString("approximate", "none");
  auto approximate =
      n.enumAttr<tsr::GeluApproximationAttr, tsr::GeluApproximation>(
          "approximate", name);
  if (!approximate)
    return n.unsupported("approximate = '" + name + "'");
  TRY(y, n.create<tsr::GeluOp>({x}, {*approximate}));
  results.push_back(y);
  return success();
}

/// Celu = max(0, x) + min(0, alpha · (e^(x/alpha) − 1)).
static LogicalResult celu(NodeContext &n, SmallVectorImpl<Value> &results) {
  Emitter e{n};
  TRY(x, n.requireInput(0));
  double alpha = n.getFloat("alpha", 1.0);
  TRY(xa, e.op<tsr::DivOp>({x, e.c(x, alpha)}));
  TRY(ex, e.op<tsr::ExpOp>({xa}));
  TRY(em1, e.op<tsr::SubOp>({ex, e.c(x, 1.0)}));
  TRY(neg, e.op<tsr::MulOp>({em1, e.c(x, alpha)}));
  TRY(lo, e.op<tsr::MinOp>({neg, e.c(x, 0.0)}));
  TRY(hi, e.op<tsr::MaxOp>({x, e.c(x, 0.0)}));
  TRY(y, e.op<tsr::AddOp>({hi, lo}));
  results.push_back(y);
  return success();
}

/// ThresholdedRelu = x where x > alpha, else 0.
static LogicalResult thresholdedRelu(NodeContext &n,
                                     SmallVectorImpl<Value> &results) {
  Emitter e{n};
  TRY(x, n.requireInput(0));
  TRY(cond, e.op<tsr::GreaterOp>({x, e.c(x, n.getFloat("alpha", 1.0))}));
  TRY(y, e.op<tsr::WhereOp>({cond, x, e.c(x, 0.0)}));
  results.push_back(y);
  return success();
}

/// Shrink = x + bias where x < −lambd, x − bias where x > lambd, else 0.
static LogicalResult shrink(NodeContext &n, SmallVectorImpl<Value> &results) {
  Emitter e{n};
  TRY(x, n.requireInput(0));
  double lambd = n.getFloat("lambd", 0.5), bias = n.getFloat("bias", 0.0);
  TRY(lo, e.op<tsr::LessOp>({x, e.c(x, -lambd)}));
  TRY(hi, e.op<tsr::GreaterOp>({x, e.c(x, lambd)}));
  TRY(plus, e.op<tsr::AddOp>({x, e.c(x, bias)}));
  TRY(minus, e.op<tsr::SubOp>({x, e.c(x, bias)}));
  TRY(inner, e.op<tsr::WhereOp>({hi, minus, e.c(x, 0.0)}));
  TRY(y, e.op<tsr::WhereOp>({lo, plus, inner}));
  results.push_back(y);
  return success();
}

/// Mish = x · tanh(softplus(x)).
static LogicalResult mish(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(sp, n.create<tsr::SoftplusOp>({x}));
  TRY(t, n.create<tsr::TanhOp>({sp}));
  TRY(y, n.create<tsr::MulOp>({x, t}));
  results.push_back(y);
  return success();
}

//===----------------------------------------------------------------------===//
// Binary specials
//===----------------------------------------------------------------------===//

/// Pow: the exponent is cast to the base's element type.
static LogicalResult pow(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(a, n.requireInput(0));
  TRY(b, n.requireInput(1));
  TRY(bc, n.castTo(b, n.inputType(0).getElementType()));
  TRY(y, n.create<tsr::PowOp>({a, bc}));
  results.push_back(y);
  return success();
}

static LogicalResult mod(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(a, n.requireInput(0));
  TRY(b, n.requireInput(1));
  bool fmod = n.getInt("fmod", 0) != 0;
  if (!fmod && isa<FloatType>(n.inputType(0).getElementType()))
    return n.error("fmod must be 1 for floating-point inputs");
  TRY(y, n.create<tsr::ModOp>({a, b}, {n.boolean("fmod", fmod)}));
  results.push_back(y);
  return success();
}

static LogicalResult where(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(c, n.requireInput(0));
  TRY(a, n.requireInput(1));
  TRY(b, n.requireInput(2));
  TRY(y, n.create<tsr::WhereOp>({c, a, b}));
  results.push_back(y);
  return success();
}

/// Clip: bounds from attributes (< 11) or constant inputs (>= 11).
static LogicalResult clip(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  SmallVector<NamedAttribute> attrs;
  if (n.sinceVersion() < 11) {
    if (n.hasAttr("min"))
      attrs.push_back(n.f64("min", n.getFloat("min", 0)));
    if (n.hasAttr("max"))
      attrs.push_back(n.f64("max", n.getFloat("max", 0)));
  } else {
    bool constantBounds = true;
    for (unsigned i : {1u, 2u})
      constantBounds &= !n.input(i) || n.constantInput(i);
    if (!constantBounds) {
      // Bounds computed at run time: max(min(x, hi), lo).
      Value y = x;
      if (Value hi = n.input(2)) {
        TRY(m, n.create<tsr::MinOp>({y, hi}));
        y = m;
      }
      if (Value lo = n.input(1)) {
        TRY(m, n.create<tsr::MaxOp>({y, lo}));
        y = m;
      }
      results.push_back(y);
      return success();
    }
    static constexpr StringLiteral kBounds[] = {"min", "max"};
    for (auto [i, name] : llvm::enumerate(kBounds)) {
      if (!n.input(i + 1))
        continue;
      TRY(v, n.requireScalar(i + 1, name));
      attrs.push_back(n.f64(name, v));
    }
  }
  TRY(y, n.create<tsr::ClipOp>({x}, attrs));
  results.push_back(y);
  return success();
}

static LogicalResult castOp(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  int64_t to = n.getInt("to", 0);
  Type elem = getOnnxElementType(n.b.getContext(), to);
  if (!elem)
    return n.unsupported("cast to ONNX data type " + Twine(to));
  TRY(y, n.castTo(x, elem));
  results.push_back(y);
  return success();
}

static LogicalResult castLike(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(like, n.requireInput(1));
  TRY(y, n.castTo(x, cast<RankedTensorType>(like.getType()).getElementType()));
  results.push_back(y);
  return success();
}

void mlir::tessera::onnx_import::populateElementwiseHandlers(
    HandlerRegistry &r) {
  r.add("Neg", unary<tsr::NegOp>);
  r.add("Abs", unary<tsr::AbsOp>);
  r.add("Sign", unary<tsr::SignOp>);
  r.add("Relu", unary<tsr::ReluOp>);
  r.add("Not", unary<tsr::NotOp>);
  r.add("Exp", unary<tsr::ExpOp>);
  r.add("Log", unary<tsr::LogOp>);
  r.add("Sqrt", unary<tsr::SqrtOp>);
  r.add("Reciprocal", unary<tsr::ReciprocalOp>);
  r.add("Tanh", unary<tsr::TanhOp>);
  r.add("Sigmoid", unary<tsr::SigmoidOp>);
  r.add("Erf", unary<tsr::ErfOp>);
  r.add("Sin", unary<tsr::SinOp>);
  r.add("Cos", unary<tsr::CosOp>);
  r.add("Tan", unary<tsr::TanOp>);
  r.add("Atan", unary<tsr::AtanOp>);
  r.add("Floor", unary<tsr::FloorOp>);
  r.add("Ceil", unary<tsr::CeilOp>);
  r.add("Round", unary<tsr::RoundOp>);
  r.add("Softplus", unary<tsr::SoftplusOp>);
  r.add("Softsign", unary<tsr::SoftsignOp>);
  r.add("IsNaN", isNaN);
  r.add("IsInf", isInf);
  r.add("Sinh", hyperbolic);
  r.add("Cosh", hyperbolic);
  r.add("Asinh", inverseHyperbolic);
  r.add("Acosh", inverseHyperbolic);
  r.add("Atanh", atanh);
  r.add("Asin", arcSinCos);
  r.add("Acos", arcSinCos);

  r.add("LeakyRelu", leakyRelu);
  r.add("Elu", elu);
  r.add("Selu", selu);
  r.add("HardSigmoid", hardSigmoid);
  r.add("HardSwish", hardSwish);
  r.add("Gelu", gelu);
  r.add("Celu", celu);
  r.add("ThresholdedRelu", thresholdedRelu);
  r.add("Shrink", shrink);
  r.add("Mish", mish);

  r.add("Add", binary<tsr::AddOp>, 7);
  r.add("Sub", binary<tsr::SubOp>, 7);
  r.add("Mul", binary<tsr::MulOp>, 7);
  r.add("Div", binary<tsr::DivOp>, 7);
  r.add("Pow", pow, 7);
  r.add("Mod", mod);
  r.add("And", binary<tsr::AndOp>, 7);
  r.add("Or", binary<tsr::OrOp>, 7);
  r.add("Xor", binary<tsr::XorOp>, 7);
  r.add("Equal", binary<tsr::EqualOp>, 7);
  r.add("Less", binary<tsr::LessOp>, 7);
  r.add("LessOrEqual", binary<tsr::LessEqualOp>);
  r.add("Greater", binary<tsr::GreaterOp>, 7);
  r.add("GreaterOrEqual", binary<tsr::GreaterEqualOp>);
  r.add("PRelu", binary<tsr::PReluOp>, 7);
  r.add("Sum", variadic<tsr::AddOp>, 8);
  r.add("Mean", variadic<tsr::AddOp>, 8);
  r.add("Max", variadic<tsr::MaxOp>, 8);
  r.add("Min", variadic<tsr::MinOp>, 8);
  r.add("Where", where);
  r.add("Clip", clip, 6);
  r.add("Cast", castOp, 6);
  r.add("CastLike", castLike);
}
