//===- GradientRules.h - Gradient rules of tsr ops --------------*- C++ -*-===//
//
// The gradient rule of every differentiable tsr op is an external model of
// DifferentiableOpInterface, attached by registerGradientRules. The rules are
// written with GradientBuilder, which creates tsr ops whose result types are
// inferred and undoes numpy broadcasting.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_TRANSFORMS_AUTODIFF_GRADIENTRULES_H
#define TESSERA_TRANSFORMS_AUTODIFF_GRADIENTRULES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/TypeUtilities.h"
#include "tessera/Dialect/Tsr/IR/TsrInterfaces.h"

namespace mlir::tessera {

/// The ranked tensor type of `v` (every tsr value has one).
inline RankedTensorType getTensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Whether `v` has floating-point elements, the only ones with adjoints.
inline bool hasFloatElements(Value v) {
  return isa<FloatType>(getElementTypeOrSelf(v.getType()));
}

/// Attaches DifferentiableOpInterface to every tsr op that has a rule.
void registerGradientRules(DialectRegistry &registry);

/// The families, one per source file (called by registerGradientRules).
void registerElementwiseGradientRules(DialectRegistry &registry);
void registerStructuredGradientRules(DialectRegistry &registry);
void registerNNGradientRules(DialectRegistry &registry);
void registerCollectiveGradientRules(DialectRegistry &registry);

/// Creates the tsr ops gradient rules are made of at a fixed location.
class GradientBuilder {
public:
  GradientBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpBuilder &builder() { return b; }
  Location getLoc() const { return loc; }

  /// A rank-0 constant of `elementType` (a float type) holding `value`.
  Value scalar(Type elementType, double value);
  /// A constant of `type` filled with `value` (float or integer elements).
  Value splat(RankedTensorType type, double value);
  /// Scalar constant with the element type of `like`.
  Value scalarLike(Value like, double value) {
    return scalar(getElementTypeOrSelf(like.getType()), value);
  }

  // Elementwise ops with numpy broadcasting; result types are inferred.
  Value add(Value a, Value b);
  Value sub(Value a, Value b);
  Value mul(Value a, Value b);
  Value div(Value a, Value b);
  Value neg(Value a);
  Value exp(Value a);
  Value log(Value a);
  Value sqrt(Value a);
  Value tanh(Value a);
  Value sigmoid(Value a);
  Value select(Value cond, Value onTrue, Value onFalse);
  /// Elementwise comparisons producing i1 tensors.
  Value greater(Value a, Value b);
  Value less(Value a, Value b);
  Value equal(Value a, Value b);
  /// Converts the elements of `a` to `elementType`.
  Value castTo(Value a, Type elementType);

  Value reshape(Value a, ArrayRef<int64_t> shape);
  /// a[starts:limits:steps] (one entry per dimension).
  Value slice(Value a, ArrayRef<int64_t> starts, ArrayRef<int64_t> limits,
              ArrayRef<int64_t> steps);
  Value transpose(Value a, ArrayRef<int64_t> perm);
  Value broadcastTo(Value a, ArrayRef<int64_t> shape);
  Value reduceSum(Value a, ArrayRef<int64_t> axes, bool keepdims);
  Value reduceMax(Value a, ArrayRef<int64_t> axes, bool keepdims);
  Value matmul(Value a, Value b);

  /// Sums `grad` (of a broadcast result) back to `type`'s shape: over the
  /// extra leading dimensions and over every dimension where `type` has
  /// size 1 and `grad` does not. Returns `grad` itself when shapes agree.
  Value unbroadcast(Value grad, Type type);

private:
  OpBuilder &b;
  Location loc;
};

/// A gradient rule: fills `operandGrads` (already sized to the operands,
/// all null) from `resultGrads` (null where a result does not reach the
/// loss). Adjoints must have their operand's exact type.
template <typename OpTy>
using GradientRuleFn = LogicalResult (*)(OpTy op, GradientBuilder &g,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads);

/// The external model that runs a GradientRuleFn.
template <typename OpTy, GradientRuleFn<OpTy> Rule>
struct GradientRuleModel : tsr::DifferentiableOpInterface::ExternalModel<
                               GradientRuleModel<OpTy, Rule>, OpTy> {
  LogicalResult buildGradients(Operation *op, OpBuilder &b,
                               ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) const {
    operandGrads.assign(op->getNumOperands(), Value());
    GradientBuilder g(b, op->getLoc());
    return Rule(cast<OpTy>(op), g, resultGrads, operandGrads);
  }
};

template <typename OpTy, GradientRuleFn<OpTy> Rule>
void attachGradientRule(MLIRContext *ctx) {
  OpTy::template attachInterface<GradientRuleModel<OpTy, Rule>>(*ctx);
}

} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_AUTODIFF_GRADIENTRULES_H
