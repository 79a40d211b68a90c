//===- GradientBuilder.cpp - tsr op construction for gradient rules -------===//
#include "tessera/Transforms/Autodiff/GradientRules.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

using namespace mlir;
using namespace mlir::tessera;

void mlir::tessera::registerGradientRules(DialectRegistry &registry) {
  registerElementwiseGradientRules(registry);
  registerStructuredGradientRules(registry);
  registerNNGradientRules(registry);
  registerCollectiveGradientRules(registry);
}

static Attribute splatValue(Type elementType, double value) {
  if (auto f = dyn_cast<FloatType>(elementType))
    return FloatAttr::get(f, value);
  return IntegerAttr::get(elementType, static_cast<int64_t>(value));
}

Value GradientBuilder::splat(RankedTensorType type, double value) {
  auto attr =
      DenseElementsAttr::get(type, splatValue(type.getElementType(), value));
  return tsr::ConstantOp::create(b, loc, attr);
}

Value GradientBuilder::scalar(Type elementType, double value) {
  return splat(RankedTensorType::get({}, elementType), value);
}

Value GradientBuilder::add(Value x, Value y) {
  return tsr::AddOp::create(b, loc, x, y);
}
Value GradientBuilder::sub(Value x, Value y) {
  return tsr::SubOp::create(b, loc, x, y);
}
Value GradientBuilder::mul(Value x, Value y) {
  return tsr::MulOp::create(b, loc, x, y);
}
Value GradientBuilder::div(Value x, Value y) {
  return tsr::DivOp::create(b, loc, x, y);
}
Value GradientBuilder::neg(Value x) { return tsr::NegOp::create(b, loc, x); }
Value GradientBuilder::exp(Value x) { return tsr::ExpOp::create(b, loc, x); }
Value GradientBuilder::log(Value x) { return tsr::LogOp::create(b, loc, x); }
Value GradientBuilder::sqrt(Value x) { return tsr::SqrtOp::create(b, loc, x); }
Value GradientBuilder::tanh(Value x) { return tsr::TanhOp::create(b, loc, x); }
Value GradientBuilder::sigmoid(Value x) {
  return tsr::SigmoidOp::create(b, loc, x);
}
Value GradientBuilder::select(Value cond, Value onTrue, Value onFalse) {
  return tsr::WhereOp::create(b, loc, cond, onTrue, onFalse);
}
Value GradientBuilder::greater(Value x, Value y) {
  return tsr::GreaterOp::create(b, loc, x, y);
}
Value GradientBuilder::less(Value x, Value y) {
  return tsr::LessOp::create(b, loc, x, y);
}
Value GradientBuilder::equal(Value x, Value y) {
  return tsr::EqualOp::create(b, loc, x, y);
}

Value GradientBuilder::castTo(Value x, Type elementType) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getElementType() == elementType)
    return x;
  return tsr::CastOp::create(b, loc, type.clone(elementType), x);
}

Value GradientBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getShape() == shape)
    return x;
  return tsr::ReshapeOp::create(b, loc, type.clone(shape), x);
}

Value GradientBuilder::slice(Value x, ArrayRef<int64_t> starts,
                             ArrayRef<int64_t> limits,
                             ArrayRef<int64_t> steps) {
  return tsr::SliceOp::create(b, loc, x, b.getDenseI64ArrayAttr(starts),
                              b.getDenseI64ArrayAttr(limits),
                              b.getDenseI64ArrayAttr(steps));
}

Value GradientBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return x;
  return tsr::TransposeOp::create(b, loc, x, b.getDenseI64ArrayAttr(perm));
}

Value GradientBuilder::broadcastTo(Value x, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getShape() == shape)
    return x;
  return tsr::BroadcastOp::create(b, loc, type.clone(shape), x);
}

Value GradientBuilder::reduceSum(Value x, ArrayRef<int64_t> axes,
                                 bool keepdims) {
  if (axes.empty())
    return x;
  return tsr::ReduceSumOp::create(b, loc, x, b.getDenseI64ArrayAttr(axes),
                                  b.getBoolAttr(keepdims));
}

Value GradientBuilder::reduceMax(Value x, ArrayRef<int64_t> axes,
                                 bool keepdims) {
  return tsr::ReduceMaxOp::create(b, loc, x, b.getDenseI64ArrayAttr(axes),
                                  b.getBoolAttr(keepdims));
}

Value GradientBuilder::matmul(Value x, Value y) {
  return tsr::MatMulOp::create(b, loc, x, y);
}

Value GradientBuilder::unbroadcast(Value grad, Type type) {
  auto from = cast<RankedTensorType>(grad.getType());
  auto to = cast<RankedTensorType>(type);
  if (from.getShape() == to.getShape())
    return grad;
  int64_t lead = from.getRank() - to.getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < from.getRank(); ++d)
    if (d < lead || (to.getDimSize(d - lead) == 1 && from.getDimSize(d) != 1))
      axes.push_back(d);
  return reshape(reduceSum(grad, axes, /*keepdims=*/false), to.getShape());
}
