//===- TsrToLinalg.cpp - Type converter and shared lowering helpers -------===//
#include "tessera/Conversion/TsrToLinalg/TsrToLinalg.h"
#include "Patterns.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::tsr_to_linalg;

TsrToLinalgTypeConverter::TsrToLinalgTypeConverter() {
  addConversion([](Type t) { return t; });
  addConversion([](RankedTensorType t) -> Type {
    return t.clone(toSignless(t.getElementType()));
  });
  auto cast = [](OpBuilder &b, Type type, ValueRange inputs,
                 Location loc) -> Value {
    return UnrealizedConversionCastOp::create(b, loc, type, inputs)
        .getResult(0);
  };
  addSourceMaterialization(cast);
  addTargetMaterialization(cast);
}

void mlir::tessera::populateTsrToLinalgConversionPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  populateElementwisePatterns(converter, patterns);
  populateContractionPatterns(converter, patterns);
  populateNormPoolPatterns(converter, patterns);
  populateReductionPatterns(converter, patterns);
  populateDataMovementPatterns(converter, patterns);
  populateTrainingPatterns(converter, patterns);
  populateGradientPatterns(converter, patterns);
  populateCollectivePatterns(converter, patterns);
}

//===----------------------------------------------------------------------===//
// Types and constants
//===----------------------------------------------------------------------===//

Type tsr_to_linalg::getElementType(Value v) {
  return getElementTypeOrSelf(v.getType());
}

bool tsr_to_linalg::isUnsigned(Type t) {
  auto i = dyn_cast<IntegerType>(t);
  return i && (i.isUnsigned() || i.getWidth() == 1);
}

Type tsr_to_linalg::toSignless(Type t) {
  if (auto i = dyn_cast<IntegerType>(t); i && !i.isSignless())
    return IntegerType::get(t.getContext(), i.getWidth());
  return t;
}

RankedTensorType tsr_to_linalg::convertTensorType(const TypeConverter &c,
                                                  Type type) {
  return cast<RankedTensorType>(c.convertType(type));
}

Value tsr_to_linalg::scalarConstant(OpBuilder &b, Location loc, Type type,
                                    double value) {
  type = toSignless(type);
  if (auto f = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(f, value));
  if (isa<IndexType>(type))
    return arith::ConstantIndexOp::create(b, loc, (int64_t)value);
  auto i = cast<IntegerType>(type);
  APInt bits(i.getWidth(), (uint64_t)(int64_t)value, /*isSigned=*/true,
             /*implicitTrunc=*/true);
  if (i.getWidth() == 1)
    bits = APInt(1, value != 0.0);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i, bits));
}

Value tsr_to_linalg::extremeConstant(OpBuilder &b, Location loc, Type t,
                                     bool lowest) {
  if (auto f = dyn_cast<FloatType>(t))
    return arith::ConstantOp::create(
        b, loc,
        b.getFloatAttr(f, APFloat::getInf(f.getFloatSemantics(), lowest)));
  auto i = cast<IntegerType>(t);
  unsigned w = i.getWidth();
  APInt v = isUnsigned(t)
                ? (lowest ? APInt::getMinValue(w) : APInt::getMaxValue(w))
                : (lowest ? APInt::getSignedMinValue(w)
                          : APInt::getSignedMaxValue(w));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(IntegerType::get(t.getContext(), w), v));
}

Value tsr_to_linalg::indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

//===----------------------------------------------------------------------===//
// Structured-op builders
//===----------------------------------------------------------------------===//

Value tsr_to_linalg::transpose(OpBuilder &b, Location loc, Value v,
                               ArrayRef<int64_t> perm) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  Value init =
      emptyTensor(b, loc, RankedTensorType::get(shape, type.getElementType()));
  return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
}

Value tsr_to_linalg::emptyTensor(OpBuilder &b, Location loc,
                                 RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

Value tsr_to_linalg::filledTensor(OpBuilder &b, Location loc,
                                  RankedTensorType type, Value value) {
  Value empty = emptyTensor(b, loc, type);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

bool tsr_to_linalg::windowsLeaveInput(ArrayRef<int64_t> in,
                                      ArrayRef<int64_t> pads,
                                      ArrayRef<int64_t> kernel,
                                      ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> dilations,
                                      ArrayRef<int64_t> out) {
  for (size_t i = 0; i < kernel.size(); ++i) {
    int64_t last = (out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i];
    if (pads[i] != 0 || last - pads[i] >= in[i])
      return true;
  }
  return false;
}

Value tsr_to_linalg::extractOrPad(OpBuilder &b, Location loc, Value x,
                                  AffineMap position, Value outside) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<Value> loops;
  for (unsigned d = 0; d < position.getNumDims(); ++d)
    loops.push_back(linalg::IndexOp::create(b, loc, d));
  Value zero = indexConstant(b, loc, 0);
  Value inside;
  SmallVector<Value> at;
  for (auto [d, expr] : llvm::enumerate(position.getResults())) {
    if (auto loop = dyn_cast<AffineDimExpr>(expr)) {
      at.push_back(loops[loop.getPosition()]);
      continue;
    }
    Value i = affine::AffineApplyOp::create(
        b, loc, AffineMap::get(position.getNumDims(), 0, expr), loops);
    // Batch and channel positions are always inside x.
    if (d >= 2) {
      Value ok = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, i, zero),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i,
                                indexConstant(b, loc, type.getDimSize(d))));
      i = arith::SelectOp::create(b, loc, ok, i, zero);
      inside = inside ? arith::AndIOp::create(b, loc, inside, ok) : ok;
    }
    at.push_back(i);
  }
  Value v = tensor::ExtractOp::create(b, loc, x, at);
  return inside ? arith::SelectOp::create(b, loc, inside, v, outside) : v;
}

Value tsr_to_linalg::windowShape(OpBuilder &b, Location loc,
                                 ArrayRef<int64_t> kernel) {
  auto type = RankedTensorType::get(kernel, b.getI1Type());
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getBoolAttr(false)));
}

AffineMap tsr_to_linalg::broadcastMap(ArrayRef<int64_t> operand,
                                      ArrayRef<int64_t> result,
                                      MLIRContext *ctx) {
  unsigned offset = result.size() - operand.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, d] : llvm::enumerate(operand)) {
    if (d == 1 && result[offset + i] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(offset + i, ctx));
  }
  return AffineMap::get(result.size(), 0, exprs, ctx);
}

Value tsr_to_linalg::buildElementwise(OpBuilder &b, Location loc,
                                      RankedTensorType resultType,
                                      ValueRange inputs, BodyFn body) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(cast<RankedTensorType>(in.getType()).getShape(),
                                shape, ctx));
  maps.push_back(AffineMap::getMultiDimIdentityMap(shape.size(), ctx));
  SmallVector<utils::IteratorType> iterators(shape.size(),
                                             utils::IteratorType::parallel);
  unsigned numInputs = inputs.size();
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, inputs, emptyTensor(b, loc, resultType), maps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = body(nb, nloc, args.take_front(numInputs));
        linalg::YieldOp::create(nb, nloc, r);
      });
  return generic.getResult(0);
}

Type tsr_to_linalg::accumulatorType(Type elem) {
  if (isa<BFloat16Type, Float16Type>(elem))
    return Float32Type::get(elem.getContext());
  return elem;
}

Value tsr_to_linalg::widenToF32(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  Type f32 = b.getF32Type();
  if (type.getElementType() == f32)
    return v;
  return buildElementwise(b, loc, type.clone(f32), v,
                          [&](OpBuilder &nb, Location l, ValueRange args) {
                            return arith::ExtFOp::create(nb, l, f32, args[0]);
                          });
}

Value tsr_to_linalg::narrowTo(OpBuilder &b, Location loc, Value v, Type elem) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getElementType() == elem)
    return v;
  return buildElementwise(b, loc, type.clone(elem), v,
                          [&](OpBuilder &nb, Location l, ValueRange args) {
                            return arith::TruncFOp::create(nb, l, elem,
                                                           args[0]);
                          });
}

Value tsr_to_linalg::buildReduction(OpBuilder &b, Location loc, Value input,
                                    ArrayRef<int64_t> axes, Value init,
                                    BodyFn combine) {
  MLIRContext *ctx = b.getContext();
  auto inType = cast<RankedTensorType>(input.getType());
  int64_t rank = inType.getRank();
  SmallVector<int64_t> outShape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t d = 0; d < rank; ++d) {
    if (llvm::is_contained(axes, d)) {
      iterators.push_back(utils::IteratorType::reduction);
      continue;
    }
    iterators.push_back(utils::IteratorType::parallel);
    outShape.push_back(inType.getDimSize(d));
    outExprs.push_back(getAffineDimExpr(d, ctx));
  }
  // 16-bit floats accumulate in f32 and round once at the end.
  Type elem = init.getType(), f32 = accumulatorType(elem);
  bool widen = f32 != elem;
  if (widen)
    init = arith::ExtFOp::create(b, loc, f32, init);
  auto outType = RankedTensorType::get(outShape, init.getType());
  Value acc = filledTensor(b, loc, outType, init);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 AffineMap::get(rank, 0, outExprs, ctx)};
  auto generic = linalg::GenericOp::create(
      b, loc, outType, input, acc, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value x = args[0];
        if (widen)
          x = arith::ExtFOp::create(nb, nloc, f32, x);
        linalg::YieldOp::create(nb, nloc, combine(nb, nloc, {x, args[1]}));
      });
  return narrowTo(b, loc, generic.getResult(0), elem);
}

Value tsr_to_linalg::reshapeTo(OpBuilder &b, Location loc, Value v,
                               RankedTensorType type) {
  auto src = cast<RankedTensorType>(v.getType());
  if (src == type)
    return v;
  if (src.getRank() > type.getRank()) {
    if (auto re = getReassociationIndicesForReshape(src, type))
      return tensor::CollapseShapeOp::create(b, loc, type, v, *re);
  } else if (src.getRank() < type.getRank()) {
    if (auto re = getReassociationIndicesForReshape(src, type))
      return tensor::ExpandShapeOp::create(b, loc, type, v, *re);
  }
  // General case: through the flat 1-D tensor.
  auto flat =
      RankedTensorType::get({src.getNumElements()}, src.getElementType());
  Value f = v;
  if (src.getRank() != 1) {
    SmallVector<ReassociationIndices> all(1);
    for (int64_t i = 0; i < src.getRank(); ++i)
      all[0].push_back(i);
    if (src.getRank() == 0)
      all.clear();
    f = tensor::CollapseShapeOp::create(b, loc, flat, v, all);
  }
  if (type.getRank() == 1)
    return f;
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < type.getRank(); ++i)
    all[0].push_back(i);
  if (type.getRank() == 0)
    all.clear();
  return tensor::ExpandShapeOp::create(b, loc, type, f, all);
}

//===----------------------------------------------------------------------===//
// Scalar conversion
//===----------------------------------------------------------------------===//

Value tsr_to_linalg::convertScalar(OpBuilder &b, Location loc, Value v,
                                   Type from, Type to) {
  Type target = toSignless(to);
  if (toSignless(from) == target)
    return v;
  auto fromInt = dyn_cast<IntegerType>(from);
  auto toInt = dyn_cast<IntegerType>(to);
  if (toInt && toInt.getWidth() == 1) {
    Value zero = scalarConstant(b, loc, v.getType(), 0.0);
    if (fromInt)
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero);
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, zero);
  }
  if (fromInt && toInt) {
    if (toInt.getWidth() < fromInt.getWidth())
      return arith::TruncIOp::create(b, loc, target, v);
    if (isUnsigned(from))
      return arith::ExtUIOp::create(b, loc, target, v);
    return arith::ExtSIOp::create(b, loc, target, v);
  }
  if (fromInt) {
    if (isUnsigned(from))
      return arith::UIToFPOp::create(b, loc, target, v);
    return arith::SIToFPOp::create(b, loc, target, v);
  }
  if (toInt) {
    if (isUnsigned(to))
      return arith::FPToUIOp::create(b, loc, target, v);
    return arith::FPToSIOp::create(b, loc, target, v);
  }
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, target, v);
  if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
    return arith::TruncFOp::create(b, loc, target, v);
  // f16 <-> bf16: through f32.
  Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return arith::TruncFOp::create(b, loc, target, wide);
}
