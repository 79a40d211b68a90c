//===- HandlerRegistry.cpp - What ONNX handlers share ---------------------===//
//
// The registry of legalization handlers and NodeContext, the view of one
// `onnx.node` that every handler works through.
//
//===----------------------------------------------------------------------===//
#include "tessera/Import/ONNX/Legalize.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

using namespace mlir;
using namespace mlir::tessera::onnx_import;

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

void HandlerRegistry::add(StringRef opType, Handler fn, int64_t minSince,
                          int64_t maxSince) {
  handlers[opType].push_back({minSince, maxSince, fn});
}

Handler HandlerRegistry::lookup(StringRef opType, int64_t sinceVersion) const {
  auto it = handlers.find(opType);
  if (it == handlers.end())
    return nullptr;
  for (const Entry &e : it->second)
    if (sinceVersion >= e.minSince && sinceVersion <= e.maxSince)
      return e.fn;
  return nullptr;
}

const HandlerRegistry &HandlerRegistry::get() {
  static const HandlerRegistry registry = [] {
    HandlerRegistry r;
    populateElementwiseHandlers(r);
    populateMathNNHandlers(r);
    populateReductionHandlers(r);
    populateDataMovementHandlers(r);
    populateTrainingHandlers(r);
    populateShapeHandlers(r);
    populateContribHandlers(r);
    return r;
  }();
  return registry;
}

FailureOr<int64_t> mlir::tessera::onnx_import::normalizeAxis(int64_t axis,
                                                             int64_t rank) {
  if (axis < -rank || axis >= rank)
    return failure();
  return axis < 0 ? axis + rank : axis;
}

Type mlir::tessera::onnx_import::getOnnxElementType(MLIRContext *ctx,
                                                    int64_t dataType) {
  // TensorProto::DataType numbers; stable across ONNX versions.
  switch (dataType) {
  case 1:
    return Float32Type::get(ctx);
  case 2:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case 3:
    return IntegerType::get(ctx, 8);
  case 4:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case 5:
    return IntegerType::get(ctx, 16);
  case 6:
    return IntegerType::get(ctx, 32);
  case 7:
    return IntegerType::get(ctx, 64);
  case 9:
    return IntegerType::get(ctx, 1);
  case 10:
    return Float16Type::get(ctx);
  case 11:
    return Float64Type::get(ctx);
  case 12:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case 13:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  case 16:
    return BFloat16Type::get(ctx);
  default:
    return {};
  }
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

Value NodeContext::input(unsigned i) {
  if (i >= numInputs())
    return {};
  Value v = node.getInputs()[i];
  if (isa<NoneType>(v.getType()))
    return {};
  return v;
}

RankedTensorType NodeContext::inputType(unsigned i) {
  Value v = input(i);
  return v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

FailureOr<Value> NodeContext::requireInput(unsigned i) {
  Value v = input(i);
  if (!v)
    return error("input " + Twine(i) + " is required");
  return v;
}

Type NodeContext::outputElementType(unsigned i) {
  if (i >= numOutputs())
    return {};
  if (auto shaped = dyn_cast<ShapedType>(node.getOutputs()[i].getType()))
    return shaped.getElementType();
  return {};
}

RankedTensorType NodeContext::staticOutputType(unsigned i) {
  if (i >= numOutputs())
    return {};
  auto t = dyn_cast<RankedTensorType>(node.getOutputs()[i].getType());
  return t && t.hasStaticShape() ? t : RankedTensorType();
}

DenseElementsAttr NodeContext::constantInput(unsigned i) {
  Value v = input(i);
  DenseElementsAttr value;
  if (v && matchPattern(v, m_Constant(&value)))
    return value;
  return {};
}

FailureOr<DenseElementsAttr> NodeContext::requireConstant(unsigned i,
                                                          StringRef what) {
  if (!input(i))
    return error("input " + Twine(i) + " ('" + what + "') is required");
  DenseElementsAttr value = constantInput(i);
  if (!value)
    return unsupported("input " + Twine(i) + " ('" + what +
                       "') must be a constant (it does not fold to one)");
  return value;
}

FailureOr<SmallVector<int64_t>> NodeContext::requireInts(unsigned i,
                                                         StringRef what) {
  auto value = requireConstant(i, what);
  if (failed(value))
    return failure();
  auto intType = dyn_cast<IntegerType>(value->getElementType());
  if (!intType)
    return error("input " + Twine(i) + " ('" + what + "') must hold integers");
  SmallVector<int64_t> out;
  for (const APInt &v : value->getValues<APInt>())
    out.push_back(intType.isUnsigned() ? static_cast<int64_t>(v.getZExtValue())
                                       : v.getSExtValue());
  return out;
}

FailureOr<double> NodeContext::requireScalar(unsigned i, StringRef what) {
  auto value = requireConstant(i, what);
  if (failed(value))
    return failure();
  if (value->getNumElements() != 1)
    return error("input " + Twine(i) + " ('" + what +
                 "') must hold one element");
  Type elem = value->getElementType();
  if (isa<FloatType>(elem))
    return (*value->value_begin<APFloat>()).convertToDouble();
  APInt v = *value->value_begin<APInt>();
  if (elem.isUnsignedInteger() || elem.isInteger(1))
    return static_cast<double>(v.getZExtValue());
  return static_cast<double>(v.getSExtValue());
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

int64_t NodeContext::getInt(StringRef name, int64_t dflt) {
  if (auto a = dyn_cast_if_present<IntegerAttr>(attr(name)))
    return a.getInt();
  return dflt;
}

double NodeContext::getFloat(StringRef name, double dflt) {
  if (auto a = dyn_cast_if_present<FloatAttr>(attr(name)))
    return a.getValueAsDouble();
  if (auto a = dyn_cast_if_present<IntegerAttr>(attr(name)))
    return static_cast<double>(a.getInt());
  return dflt;
}

StringRef NodeContext::getString(StringRef name, StringRef dflt) {
  if (auto a = dyn_cast_if_present<StringAttr>(attr(name)))
    return a.getValue();
  return dflt;
}

std::optional<SmallVector<int64_t>> NodeContext::getInts(StringRef name) {
  auto a = dyn_cast_if_present<ArrayAttr>(attr(name));
  if (!a)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (Attribute e : a)
    if (auto i = dyn_cast<IntegerAttr>(e))
      out.push_back(i.getInt());
  return out;
}

std::optional<SmallVector<double>> NodeContext::getFloats(StringRef name) {
  auto a = dyn_cast_if_present<ArrayAttr>(attr(name));
  if (!a)
    return std::nullopt;
  SmallVector<double> out;
  for (Attribute e : a)
    if (auto f = dyn_cast<FloatAttr>(e))
      out.push_back(f.getValueAsDouble());
  return out;
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

LogicalResult NodeContext::unsupported(const Twine &why) {
  InFlightDiagnostic diag = emitError(loc)
                            << "unsupported ONNX op '" << node.getOpType()
                            << "' (domain '" << node.getDomain() << "', opset "
                            << node.getOpset() << ", since_version "
                            << node.getSinceVersion() << ") at node '"
                            << node.getName() << "'";
  if (!why.isTriviallyEmpty())
    diag << ": " << why;
  return failure();
}

LogicalResult NodeContext::error(const Twine &message) {
  return emitError(loc) << "ONNX op '" << node.getOpType() << "' at node '"
                        << node.getName() << "': " << message;
}

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>> NodeContext::build(StringRef opName,
                                                 ValueRange operands,
                                                 ArrayRef<NamedAttribute> attrs,
                                                 unsigned numResults,
                                                 TypeRange types) {
  MLIRContext *ctx = b.getContext();
  for (auto [i, v] : llvm::enumerate(operands)) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !t.hasStaticShape())
      return error("operand " + Twine(i) + " of " + opName +
                   " is not a statically shaped tensor");
  }
  auto name = RegisteredOperationName::lookup(opName, ctx);
  assert(name && "handlers only build registered ops");
  SmallVector<Type> resultTypes(types);
  if (resultTypes.empty())
    resultTypes.assign(numResults, NoneType::get(ctx));
  OperationState state(loc, *name);
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addTypes(resultTypes);
  Operation *op = b.create(state);
  if (types.empty()) {
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer) {
      op->erase();
      return error(opName + " needs explicit result types");
    }
    SmallVector<Type> inferred;
    if (failed(infer.inferReturnTypes(
            ctx, loc, op->getOperands(), op->getRawDictionaryAttrs(),
            op->getPropertiesStorage(), op->getRegions(), inferred))) {
      op->erase();
      return failure();
    }
    for (auto [result, type] : llvm::zip(op->getResults(), inferred))
      result.setType(type);
  }
  if (failed(verify(op, /*verifyRecursively=*/false))) {
    op->erase();
    return failure();
  }
  SmallVector<Value> folded;
  if (succeeded(b.tryFold(op, folded)) && !folded.empty()) {
    op->erase();
    return folded;
  }
  return SmallVector<Value>(op->getResults());
}

Value NodeContext::constant(DenseElementsAttr value) {
  return tsr::ConstantOp::create(b, loc, value);
}

Value NodeContext::splat(Type elem, ArrayRef<int64_t> shape, double v) {
  auto type = RankedTensorType::get(shape, elem);
  Attribute element;
  if (auto f = dyn_cast<FloatType>(elem)) {
    APFloat value(v);
    bool lost;
    value.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    element = FloatAttr::get(elem, value);
  } else {
    auto it = llvm::cast<IntegerType>(elem);
    element = IntegerAttr::get(
        elem,
        APInt(it.getWidth(), static_cast<uint64_t>(static_cast<int64_t>(v)),
              /*isSigned=*/!it.isUnsigned(), /*implicitTrunc=*/true));
  }
  return constant(DenseElementsAttr::get(type, element));
}

Value NodeContext::i64Constant(ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    b.getI64Type());
  return constant(DenseElementsAttr::get(type, values));
}

FailureOr<Value> NodeContext::reshape(Value x, ArrayRef<int64_t> shape) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  if (t.getShape() == shape)
    return x;
  return create<tsr::ReshapeOp>({x}, {}, t.clone(shape));
}

FailureOr<Value> NodeContext::castTo(Value x, Type elem) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  if (t.getElementType() == elem)
    return x;
  return create<tsr::CastOp>({x}, {}, t.clone(elem));
}

FailureOr<Value> NodeContext::broadcastTo(Value x, ArrayRef<int64_t> shape) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  if (t.getShape() == shape)
    return x;
  return create<tsr::BroadcastOp>({x}, {}, t.clone(shape));
}

FailureOr<Value> NodeContext::transpose(Value x, ArrayRef<int64_t> perm) {
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return x;
  return create<tsr::TransposeOp>({x}, {i64s("perm", perm)});
}
