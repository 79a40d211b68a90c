//===- ShapeOps.cpp - ONNX shape and constant ops to tsr ------------------===//
//
// Shape, Size, ConstantOfShape, Range, EyeLike and Constant all produce
// constants (shapes are static); Identity stays a tsr.identity so named
// graph values survive import.
//
//===----------------------------------------------------------------------===//
#include "HandlerUtils.h"

using namespace mlir;
using namespace mlir::tessera::onnx_import;

static LogicalResult shape(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  ArrayRef<int64_t> dims = tensorType(x).getShape();
  int64_t rank = dims.size();
  int64_t start = n.getInt("start", 0), end = n.getInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  results.push_back(n.i64Constant(dims.slice(start, end - start)));
  return success();
}

static LogicalResult size(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  results.push_back(n.scalar(
      n.b.getI64Type(), static_cast<double>(tensorType(x).getNumElements())));
  return success();
}

static LogicalResult constantOfShape(NodeContext &n,
                                     SmallVectorImpl<Value> &results) {
  SmallVector<int64_t> dims;
  if (auto out = n.staticOutputType(0); out && !n.constantInput(0)) {
    dims.assign(out.getShape().begin(), out.getShape().end());
  } else {
    TRY(d, n.requireInts(0, "input"));
    dims = d;
  }
  for (int64_t d : dims)
    if (d < 0)
      return n.error("shape has a negative dimension");
  auto type = RankedTensorType::get(dims, n.b.getF32Type());
  if (auto value = dyn_cast_if_present<DenseElementsAttr>(n.attr("value"))) {
    if (value.getNumElements() != 1)
      return n.error("value must hold one element");
    type = type.clone(value.getElementType());
    results.push_back(n.constant(
        DenseElementsAttr::get(type, value.getValues<Attribute>()[0])));
    return success();
  }
  results.push_back(
      n.constant(DenseElementsAttr::get(type, n.b.getF32FloatAttr(0.0f))));
  return success();
}

static LogicalResult range(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(start, n.requireConstant(0, "start"));
  TRY(limit, n.requireConstant(1, "limit"));
  TRY(delta, n.requireConstant(2, "delta"));
  Type elem = start.getElementType();
  if (isa<FloatType>(elem)) {
    double s = start.getSplatValue<APFloat>().convertToDouble(),
           l = limit.getSplatValue<APFloat>().convertToDouble(),
           d = delta.getSplatValue<APFloat>().convertToDouble();
    if (d == 0)
      return n.error("delta is zero");
    int64_t count = std::max<int64_t>(0, std::ceil((l - s) / d));
    SmallVector<Attribute> values;
    // ONNX accumulates in the element type: start + i·delta.
    for (int64_t i = 0; i < count; ++i) {
      APFloat v(s + i * d);
      bool lost;
      v.convert(cast<FloatType>(elem).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      values.push_back(FloatAttr::get(elem, v));
    }
    results.push_back(n.constant(
        DenseElementsAttr::get(RankedTensorType::get({count}, elem), values)));
    return success();
  }
  auto intType = dyn_cast<IntegerType>(elem);
  if (!intType)
    return n.error("unsupported element type");
  int64_t s = start.getSplatValue<APInt>().getSExtValue(),
          l = limit.getSplatValue<APInt>().getSExtValue(),
          d = delta.getSplatValue<APInt>().getSExtValue();
  if (d == 0)
    return n.error("delta is zero");
  int64_t count = std::max<int64_t>(0, (l - s + d + (d > 0 ? -1 : 1)) / d);
  SmallVector<APInt> values;
  for (int64_t i = 0; i < count; ++i)
    values.push_back(APInt(intType.getWidth(), s + i * d, /*isSigned=*/true,
                           /*implicitTrunc=*/true));
  results.push_back(n.constant(
      DenseElementsAttr::get(RankedTensorType::get({count}, elem), values)));
  return success();
}

static LogicalResult eyeLike(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  auto xt = tensorType(x);
  if (xt.getRank() != 2)
    return n.error("input must be 2-D");
  Type elem = xt.getElementType();
  if (n.hasAttr("dtype")) {
    elem = getOnnxElementType(n.b.getContext(), n.getInt("dtype", 1));
    if (!elem)
      return n.unsupported("dtype " + Twine(n.getInt("dtype", 1)));
  }
  int64_t k = n.getInt("k", 0), rows = xt.getDimSize(0),
          cols = xt.getDimSize(1);
  auto type = RankedTensorType::get({rows, cols}, elem);
  SmallVector<Attribute> values;
  Builder b(n.b.getContext());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      bool one = j - i == k;
      if (auto f = dyn_cast<FloatType>(elem))
        values.push_back(FloatAttr::get(elem, one ? 1.0 : 0.0));
      else
        values.push_back(IntegerAttr::get(elem, one ? 1 : 0));
    }
  results.push_back(n.constant(DenseElementsAttr::get(type, values)));
  return success();
}

static LogicalResult constant(NodeContext &n, SmallVectorImpl<Value> &results) {
  Builder &b = n.b;
  if (auto value = dyn_cast_if_present<DenseElementsAttr>(n.attr("value"))) {
    results.push_back(n.constant(value));
    return success();
  }
  if (n.hasAttr("value_float")) {
    results.push_back(n.scalar(b.getF32Type(), n.getFloat("value_float", 0)));
    return success();
  }
  if (n.hasAttr("value_int")) {
    results.push_back(n.constant(
        DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                               b.getI64IntegerAttr(n.getInt("value_int", 0)))));
    return success();
  }
  if (auto floats = n.getFloats("value_floats")) {
    SmallVector<float> values(floats->begin(), floats->end());
    results.push_back(n.constant(DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(values.size())},
                              b.getF32Type()),
        ArrayRef<float>(values))));
    return success();
  }
  if (auto ints = n.getInts("value_ints")) {
    results.push_back(n.i64Constant(*ints));
    return success();
  }
  return n.unsupported("only tensor, float(s) and int(s) values are "
                       "supported");
}

static LogicalResult identity(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(y, n.create<tsr::IdentityOp>({x}));
  results.push_back(y);
  return success();
}

void mlir::tessera::onnx_import::populateShapeHandlers(HandlerRegistry &r) {
  r.add("Shape", shape);
  r.add("Size", size);
  r.add("ConstantOfShape", constantOfShape);
  r.add("Range", range);
  r.add("EyeLike", eyeLike);
  r.add("Constant", constant);
  r.add("Identity", identity);
}
