//===- TsrOps.cpp - Verifiers and type inference of tsr ops ---------------===//
//
// Every op with a computable result type infers it (and so is verified
// against it); the others check their operands against their result here.
// Diagnostics name the offending attribute or operand.
//
//===----------------------------------------------------------------------===//
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::tsr;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
mlir::tsr::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return failure();
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t mlir::tsr::windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                                    int64_t padBegin, int64_t padEnd,
                                    int64_t dilation, bool ceilMode) {
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t avail = in + padBegin + padEnd - span;
  if (avail < 0)
    return 0;
  int64_t out = (ceilMode ? (avail + stride - 1) / stride : avail / stride) + 1;
  // With ceil_mode, a window may not start inside the end padding.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

FailureOr<EinsumSpec> mlir::tsr::parseEinsum(StringRef equation,
                                             unsigned numInputs) {
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq.push_back(c);
  EinsumSpec spec;
  StringRef lhs = eq, rhs;
  bool explicitOut = false;
  if (size_t arrow = StringRef(eq).find("->"); arrow != StringRef::npos) {
    lhs = StringRef(eq).take_front(arrow);
    rhs = StringRef(eq).drop_front(arrow + 2);
    explicitOut = true;
  }
  SmallVector<StringRef> parts;
  lhs.split(parts, ',');
  if (parts.size() != numInputs)
    return failure();
  std::map<char, int> counts;
  for (StringRef p : parts) {
    for (char c : p) {
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return failure();
      ++counts[c];
    }
    spec.inputs.push_back(p.str());
  }
  if (explicitOut) {
    for (char c : rhs)
      if (!std::isalpha(static_cast<unsigned char>(c)) || !counts.count(c))
        return failure();
    spec.output = rhs.str();
  } else {
    for (auto [c, n] : counts)
      if (n == 1)
        spec.output.push_back(c);
  }
  return spec;
}

static RankedTensorType getTensor(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static LogicalResult checkAxis(std::optional<Location> loc, int64_t axis,
                               int64_t rank, StringRef what = "axis") {
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, what, " ", axis, " is out of range for rank ",
                             rank);
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult inferBroadcast(std::optional<Location> loc,
                                    ArrayRef<Value> operands, Type elementType,
                                    SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> shape;
  for (Value v : operands) {
    auto t = getTensor(v);
    auto b = broadcastShapes(shape, t.getShape());
    if (failed(b))
      return emitOptionalError(loc, "operand shapes do not broadcast: ", t,
                               " against [", shape, "]");
    shape = *b;
  }
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

#define TSR_BINARY_INFER(OP, RESULT_ELEMENT)                                   \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,          \
      SmallVectorImpl<Type> &inferred) {                                       \
    Type lhsElem = getTensor(adaptor.getLhs()).getElementType();               \
    if (lhsElem != getTensor(adaptor.getRhs()).getElementType())               \
      return emitOptionalError(loc, "operands have different element types");  \
    Type elem = RESULT_ELEMENT;                                                \
    (void)ctx;                                                                 \
    return inferBroadcast(loc, {adaptor.getLhs(), adaptor.getRhs()}, elem,     \
                          inferred);                                           \
  }

TSR_BINARY_INFER(AddOp, lhsElem)
TSR_BINARY_INFER(SubOp, lhsElem)
TSR_BINARY_INFER(MulOp, lhsElem)
TSR_BINARY_INFER(DivOp, lhsElem)
TSR_BINARY_INFER(PowOp, lhsElem)
TSR_BINARY_INFER(MaxOp, lhsElem)
TSR_BINARY_INFER(MinOp, lhsElem)
TSR_BINARY_INFER(ModOp, lhsElem)
TSR_BINARY_INFER(AndOp, lhsElem)
TSR_BINARY_INFER(OrOp, lhsElem)
TSR_BINARY_INFER(XorOp, lhsElem)
TSR_BINARY_INFER(PReluOp, lhsElem)
TSR_BINARY_INFER(EqualOp, IntegerType::get(ctx, 1))
TSR_BINARY_INFER(LessOp, IntegerType::get(ctx, 1))
TSR_BINARY_INFER(LessEqualOp, IntegerType::get(ctx, 1))
TSR_BINARY_INFER(GreaterOp, IntegerType::get(ctx, 1))
TSR_BINARY_INFER(GreaterEqualOp, IntegerType::get(ctx, 1))
#undef TSR_BINARY_INFER

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  Type elem = getTensor(adaptor.getOnTrue()).getElementType();
  if (elem != getTensor(adaptor.getOnFalse()).getElementType())
    return emitOptionalError(loc, "on_true and on_false have different "
                                  "element types");
  return inferBroadcast(
      loc, {adaptor.getCond(), adaptor.getOnTrue(), adaptor.getOnFalse()}, elem,
      inferred);
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getX().getType() == getType())
    return getX();
  auto input = dyn_cast_if_present<DenseElementsAttr>(adaptor.getX());
  if (!input)
    return {};
  Type from = input.getElementType(), to = getType().getElementType();
  auto fromInt = dyn_cast<IntegerType>(from);
  auto toInt = dyn_cast<IntegerType>(to);
  if (fromInt && toInt) {
    bool isUnsigned = fromInt.isUnsigned() || fromInt.getWidth() == 1;
    unsigned width = toInt.getWidth();
    return input.mapValues(to, [&](const APInt &v) {
      if (width == 1)
        return APInt(1, !v.isZero());
      return isUnsigned ? v.zextOrTrunc(width) : v.sextOrTrunc(width);
    });
  }
  if (fromInt && isa<FloatType>(to)) {
    auto sem = &cast<FloatType>(to).getFloatSemantics();
    bool isSigned = !fromInt.isUnsigned() && fromInt.getWidth() != 1;
    SmallVector<APFloat> values;
    for (const APInt &v : input.getValues<APInt>()) {
      APFloat f(*sem);
      (void)f.convertFromAPInt(v, isSigned, APFloat::rmNearestTiesToEven);
      values.push_back(f);
    }
    return DenseElementsAttr::get(getType(), values);
  }
  return {};
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type || !type.hasStaticShape())
    return emitOptionalError(loc, "value must be a statically shaped tensor");
  inferred.push_back(type);
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto lhs = getTensor(adaptor.getLhs()), rhs = getTensor(adaptor.getRhs());
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "operands have different element types");
  if (lhs.getRank() == 0 || rhs.getRank() == 0)
    return emitOptionalError(loc, "operands must have rank at least 1");
  SmallVector<int64_t> a(lhs.getShape()), b(rhs.getShape());
  bool lhsVec = a.size() == 1, rhsVec = b.size() == 1;
  if (lhsVec)
    a.insert(a.begin(), 1);
  if (rhsVec)
    b.push_back(1);
  if (a.back() != b[b.size() - 2])
    return emitOptionalError(loc, "contracting dimensions differ: ", a.back(),
                             " vs ", b[b.size() - 2]);
  auto batch =
      broadcastShapes(ArrayRef(a).drop_back(2), ArrayRef(b).drop_back(2));
  if (failed(batch))
    return emitOptionalError(loc, "batch dimensions do not broadcast");
  SmallVector<int64_t> shape = *batch;
  if (!lhsVec)
    shape.push_back(a[a.size() - 2]);
  if (!rhsVec)
    shape.push_back(b.back());
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

// A barrier moves nothing: bufferization gives it its operand's buffer.
int64_t RematBarrierOp::getFlops() { return 0; }
int64_t RematBarrierOp::getBytesAccessed() { return 0; }

int64_t MatMulOp::getFlops() {
  auto lhs = getTensor(getLhs());
  int64_t k = lhs.getShape().back();
  return 2 * k * getType().getNumElements();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto x = getTensor(adaptor.getX()), w = getTensor(adaptor.getW());
  int64_t rank = x.getRank(), k = rank - 2;
  if (k < 1 || k > 3)
    return emitOptionalError(loc, "input must have rank 3, 4 or 5, got ", rank);
  if (w.getRank() != rank)
    return emitOptionalError(loc, "weight rank ", w.getRank(),
                             " differs from input rank ", rank);
  if (x.getElementType() != w.getElementType())
    return emitOptionalError(loc, "input and weight element types differ");
  auto strides = adaptor.getStrides(), pads = adaptor.getPads(),
       dilations = adaptor.getDilations();
  if ((int64_t)strides.size() != k || (int64_t)dilations.size() != k ||
      (int64_t)pads.size() != 2 * k)
    return emitOptionalError(loc, "strides and dilations need ", k,
                             " entries and pads ", 2 * k);
  int64_t group = adaptor.getGroup();
  int64_t c = x.getDimSize(1), m = w.getDimSize(0);
  if (group < 1 || c % group != 0 || m % group != 0)
    return emitOptionalError(loc, "group ", group,
                             " must divide input channels ", c,
                             " and output channels ", m);
  if (w.getDimSize(1) * group != c)
    return emitOptionalError(loc, "weight has ", w.getDimSize(1),
                             " channels per group, input needs ", c / group);
  if (Value bias = adaptor.getBias()) {
    auto bt = getTensor(bias);
    if (bt.getRank() != 1 || bt.getDimSize(0) != m)
      return emitOptionalError(loc, "bias must have shape [", m, "]");
  }
  SmallVector<int64_t> shape = {x.getDimSize(0), m};
  for (int64_t i = 0; i < k; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 || pads[k + i] < 0)
      return emitOptionalError(loc, "strides and dilations must be positive "
                                    "and pads non-negative");
    int64_t out =
        windowOutputSize(x.getDimSize(2 + i), w.getDimSize(2 + i), strides[i],
                         pads[i], pads[k + i], dilations[i], false);
    if (out < 1)
      return emitOptionalError(loc,
                               "kernel larger than padded input along "
                               "spatial dimension ",
                               i);
    shape.push_back(out);
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

int64_t ConvOp::getFlops() {
  auto w = getTensor(getW());
  int64_t perOutput = 1;
  for (int64_t d : w.getShape().drop_front())
    perOutput *= d;
  return 2 * perOutput * getType().getNumElements();
}

LogicalResult EinsumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "needs at least one operand");
  auto spec = parseEinsum(adaptor.getEquation(), inputs.size());
  if (failed(spec))
    return emitOptionalError(loc, "malformed equation '", adaptor.getEquation(),
                             "' for ", inputs.size(), " operands");
  std::map<char, int64_t> sizes;
  Type elem = getTensor(inputs[0]).getElementType();
  for (auto [value, labels] : llvm::zip(inputs, spec->inputs)) {
    auto t = getTensor(value);
    if (t.getElementType() != elem)
      return emitOptionalError(loc, "operands have different element types");
    if ((int64_t)labels.size() != t.getRank())
      return emitOptionalError(loc, "labels '", labels, "' do not match rank ",
                               t.getRank());
    for (auto [c, d] : llvm::zip(labels, t.getShape())) {
      auto [it, inserted] = sizes.insert({c, d});
      if (!inserted && it->second != d)
        return emitOptionalError(loc, "label '", std::string(1, c),
                                 "' has sizes ", it->second, " and ", d);
    }
  }
  SmallVector<int64_t> shape;
  for (char c : spec->output)
    shape.push_back(sizes[c]);
  inferred.push_back(RankedTensorType::get(shape, elem));
  return success();
}

int64_t EinsumOp::getFlops() {
  auto spec = parseEinsum(getEquation(), getInputs().size());
  std::map<char, int64_t> sizes;
  for (auto [value, labels] : llvm::zip(getInputs(), spec->inputs))
    for (auto [c, d] : llvm::zip(labels, getTensor(value).getShape()))
      sizes[c] = d;
  int64_t iterations = 1;
  for (auto [c, d] : sizes)
    iterations *= d;
  return iterations * std::max<int64_t>(1, getInputs().size());
}

//===----------------------------------------------------------------------===//
// Pooling and normalization
//===----------------------------------------------------------------------===//

template <typename Adaptor>
static LogicalResult inferPool(std::optional<Location> loc, Adaptor adaptor,
                               SmallVectorImpl<Type> &inferred) {
  auto x = getTensor(adaptor.getX());
  int64_t k = x.getRank() - 2;
  if (k < 1)
    return emitOptionalError(loc, "input must have rank at least 3");
  auto kernel = adaptor.getKernelShape(), strides = adaptor.getStrides(),
       pads = adaptor.getPads(), dilations = adaptor.getDilations();
  if ((int64_t)kernel.size() != k || (int64_t)strides.size() != k ||
      (int64_t)dilations.size() != k || (int64_t)pads.size() != 2 * k)
    return emitOptionalError(loc, "kernel_shape, strides and dilations need ",
                             k, " entries and pads ", 2 * k);
  SmallVector<int64_t> shape(x.getShape().take_front(2));
  for (int64_t i = 0; i < k; ++i) {
    if (kernel[i] < 1 || strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 ||
        pads[k + i] < 0)
      return emitOptionalError(loc, "kernel_shape, strides and dilations "
                                    "must be positive and pads non-negative");
    if (pads[i] >= kernel[i] * dilations[i] ||
        pads[k + i] >= kernel[i] * dilations[i])
      return emitOptionalError(loc, "pads must be smaller than the window");
    int64_t out =
        windowOutputSize(x.getDimSize(2 + i), kernel[i], strides[i], pads[i],
                         pads[k + i], dilations[i], adaptor.getCeilMode());
    if (out < 1)
      return emitOptionalError(loc,
                               "window larger than padded input along "
                               "spatial dimension ",
                               i);
    shape.push_back(out);
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

static int64_t poolFlops(Operation *op, ArrayRef<int64_t> kernel) {
  int64_t window = 1;
  for (int64_t d : kernel)
    window *= d;
  return window *
         cast<RankedTensorType>(op->getResult(0).getType()).getNumElements();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPool(loc, adaptor, inferred);
}
int64_t MaxPoolOp::getFlops() { return poolFlops(*this, getKernelShape()); }

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPool(loc, adaptor, inferred);
}
int64_t AvgPoolOp::getFlops() { return poolFlops(*this, getKernelShape()); }

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto x = getTensor(adaptor.getX());
  if (x.getRank() < 2)
    return emitOptionalError(loc, "input must have rank at least 2");
  int64_t c = x.getDimSize(1);
  for (Value v : {adaptor.getScale(), adaptor.getBias(), adaptor.getMean(),
                  adaptor.getVar()}) {
    auto t = getTensor(v);
    if (t.getRank() != 1 || t.getDimSize(0) != c)
      return emitOptionalError(loc,
                               "scale, bias, mean and var must have "
                               "shape [",
                               c, "], got ", t);
    if (t.getElementType() != x.getElementType())
      return emitOptionalError(loc, "statistics element type differs from "
                                    "input");
  }
  inferred.push_back(x);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto x = getTensor(adaptor.getX());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, x.getRank())))
    return failure();
  ArrayRef<int64_t> normalized = x.getShape().drop_front(axis);
  SmallVector<Value> params = {adaptor.getScale()};
  if (adaptor.getBias())
    params.push_back(adaptor.getBias());
  for (Value v : params) {
    auto t = getTensor(v);
    auto b = broadcastShapes(normalized, t.getShape());
    if (failed(b) || ArrayRef<int64_t>(*b) != normalized)
      return emitOptionalError(loc,
                               "scale and bias must broadcast to the "
                               "normalized shape [",
                               normalized, "]");
  }
  inferred.push_back(x);
  return success();
}

template <typename OpT> static LogicalResult verifyAxisOp(OpT op) {
  return checkAxis(op.getLoc(), op.getAxis(), getTensor(op.getX()).getRank());
}
LogicalResult SoftmaxOp::verify() { return verifyAxisOp(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifyAxisOp(*this); }
LogicalResult CumSumOp::verify() { return verifyAxisOp(*this); }

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

template <typename Adaptor>
static LogicalResult inferReduce(std::optional<Location> loc, Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  auto x = getTensor(adaptor.getX());
  ArrayRef<int64_t> axes = adaptor.getAxes();
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (failed(checkAxis(loc, a, x.getRank())))
      return failure();
    if (i > 0 && axes[i - 1] >= a)
      return emitOptionalError(loc, "axes must be sorted and distinct");
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < x.getRank(); ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(x.getDimSize(d));
    else if (adaptor.getKeepdims())
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

#define TSR_REDUCE_INFER(OP)                                                   \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferReduce(loc, adaptor, inferred);                                \
  }
TSR_REDUCE_INFER(ReduceSumOp)
TSR_REDUCE_INFER(ReduceMeanOp)
TSR_REDUCE_INFER(ReduceMaxOp)
TSR_REDUCE_INFER(ReduceMinOp)
TSR_REDUCE_INFER(ReduceProdOp)
#undef TSR_REDUCE_INFER

template <typename Adaptor>
static LogicalResult
inferArgReduce(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
               SmallVectorImpl<Type> &inferred) {
  auto x = getTensor(adaptor.getX());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, x.getRank())))
    return failure();
  SmallVector<int64_t> shape(x.getShape());
  if (adaptor.getKeepdims())
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}
LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferArgReduce(ctx, loc, adaptor, inferred);
}
LogicalResult ArgMinOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferArgReduce(ctx, loc, adaptor, inferred);
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto x = getTensor(adaptor.getX());
  int64_t axis = adaptor.getAxis(), k = adaptor.getK();
  if (failed(checkAxis(loc, axis, x.getRank())))
    return failure();
  if (k < 0 || k > x.getDimSize(axis))
    return emitOptionalError(loc, "k = ", k, " is out of range for dimension ",
                             "of size ", x.getDimSize(axis));
  SmallVector<int64_t> shape(x.getShape());
  shape[axis] = k;
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  if (getTensor(getX()).getNumElements() != getType().getNumElements())
    return emitOpError("cannot reshape ")
           << getX().getType() << " to " << getType()
           << ": element counts differ";
  if (getTensor(getX()).getElementType() != getType().getElementType())
    return emitOpError("element type must not change");
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getX().getType() == getType())
    return getX();
  if (auto input = dyn_cast_if_present<DenseElementsAttr>(adaptor.getX()))
    return input.reshape(getType());
  return {};
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto x = getTensor(adaptor.getX());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if ((int64_t)perm.size() != x.getRank())
    return emitOptionalError(loc, "perm has ", perm.size(),
                             " entries for rank ", x.getRank());
  SmallVector<int64_t> shape;
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.getRank() || !seen.insert(p).second)
      return emitOptionalError(loc, "perm is not a permutation");
    shape.push_back(x.getDimSize(p));
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult BroadcastOp::verify() {
  auto x = getTensor(getX());
  auto b = broadcastShapes(x.getShape(), getType().getShape());
  if (failed(b) || ArrayRef<int64_t>(*b) != getType().getShape())
    return emitOpError("cannot broadcast ") << x << " to " << getType();
  if (x.getElementType() != getType().getElementType())
    return emitOpError("element type must not change");
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "needs at least one operand");
  auto first = getTensor(inputs[0]);
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, first.getRank())))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value v : inputs) {
    auto t = getTensor(v);
    if (t.getRank() != first.getRank() ||
        t.getElementType() != first.getElementType())
      return emitOptionalError(loc, "operands differ in rank or element type");
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(loc, "operands differ in dimension ", d);
    shape[axis] += t.getDimSize(axis);
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto x = getTensor(adaptor.getX());
  auto starts = adaptor.getStarts(), limits = adaptor.getLimits(),
       steps = adaptor.getSteps();
  int64_t rank = x.getRank();
  if ((int64_t)starts.size() != rank || (int64_t)limits.size() != rank ||
      (int64_t)steps.size() != rank)
    return emitOptionalError(loc, "starts, limits and steps need ", rank,
                             " entries");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = x.getDimSize(d), s = starts[d], l = limits[d], st = steps[d];
    if (st == 0)
      return emitOptionalError(loc, "step of dimension ", d, " is zero");
    if (st > 0 ? (s < 0 || s > size || l < 0 || l > size)
               : (s < -1 || s >= size || l < -1 || l >= size))
      return emitOptionalError(loc, "bounds of dimension ", d,
                               " are out of range");
    int64_t n = st > 0 ? (l - s + st - 1) / st : (s - l - st - 1) / (-st);
    shape.push_back(std::max<int64_t>(0, n));
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto data = getTensor(adaptor.getData());
  auto indices = getTensor(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, data.getRank())))
    return failure();
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  inferred.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::verify() {
  auto data = getTensor(getData()), indices = getTensor(getIndices());
  if (failed(checkAxis(getLoc(), getAxis(), data.getRank())))
    return failure();
  if (indices.getRank() != data.getRank())
    return emitOpError("indices must have the rank of data");
  if (getType().getShape() != indices.getShape() ||
      getType().getElementType() != data.getElementType())
    return emitOpError("result must have the shape of indices and the "
                       "element type of data");
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  auto data = getTensor(getData()), indices = getTensor(getIndices()),
       updates = getTensor(getUpdates());
  if (failed(checkAxis(getLoc(), getAxis(), data.getRank())))
    return failure();
  if (indices.getShape() != updates.getShape() ||
      indices.getRank() != data.getRank())
    return emitOpError("indices and updates must have the same shape and the "
                       "rank of data");
  if (updates.getElementType() != data.getElementType() || getType() != data)
    return emitOpError("updates and result must match data's type");
  return success();
}

LogicalResult TileOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto x = getTensor(adaptor.getX());
  auto repeats = adaptor.getRepeats();
  if ((int64_t)repeats.size() != x.getRank())
    return emitOptionalError(loc, "repeats has ", repeats.size(),
                             " entries for rank ", x.getRank());
  SmallVector<int64_t> shape;
  for (auto [d, r] : llvm::zip(x.getShape(), repeats)) {
    if (r < 0)
      return emitOptionalError(loc, "repeats must be non-negative");
    shape.push_back(d * r);
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  auto x = getTensor(adaptor.getX());
  auto pads = adaptor.getPads();
  int64_t rank = x.getRank();
  if ((int64_t)pads.size() != 2 * rank)
    return emitOptionalError(loc, "pads needs ", 2 * rank, " entries");
  PadMode mode = adaptor.getMode();
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = x.getDimSize(d) + pads[d] + pads[rank + d];
    if (size < 0)
      return emitOptionalError(loc, "pads of dimension ", d,
                               " remove more than it has");
    if (mode == PadMode::reflect &&
        (pads[d] >= x.getDimSize(d) || pads[rank + d] >= x.getDimSize(d)) &&
        (pads[d] > 0 || pads[rank + d] > 0))
      return emitOptionalError(loc, "reflect pads of dimension ", d,
                               " must be smaller than its size");
    if (mode == PadMode::edge && x.getDimSize(d) == 0 &&
        (pads[d] > 0 || pads[rank + d] > 0))
      return emitOptionalError(loc, "edge padding of an empty dimension");
    shape.push_back(size);
  }
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult TriluOp::verify() {
  if (getTensor(getX()).getRank() < 2)
    return emitOpError("operand must have rank at least 2");
  return success();
}

LogicalResult OneHotOp::verify() {
  auto indices = getTensor(getIndices());
  int64_t rank = indices.getRank() + 1;
  // I64Attr getters return uint64_t: convert before comparing.
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0)
    axis += rank;
  if (failed(checkAxis(getLoc(), axis, rank)))
    return failure();
  if (getDepth() < 1)
    return emitOpError("depth must be positive");
  SmallVector<int64_t> shape(indices.getShape());
  shape.insert(shape.begin() + axis, getDepth());
  if (getType().getShape() != ArrayRef<int64_t>(shape))
    return emitOpError("result shape must be [") << shape << "]";
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult MoeAssignOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto experts = getTensor(adaptor.getExperts());
  int64_t numExperts = adaptor.getNumExperts(),
          capacity = adaptor.getCapacity();
  if (experts.getRank() != 3)
    return emitOptionalError(loc, "experts must be [groups, tokens, k], not ",
                             experts);
  if (numExperts < 1 || capacity < 1)
    return emitOptionalError(loc, "num_experts (", numExperts,
                             ") and capacity (", capacity,
                             ") must be positive");
  if (experts.getDimSize(2) > numExperts)
    return emitOptionalError(
        loc, "k = ", experts.getDimSize(2),
        " choices per token exceed num_experts = ", numExperts);
  Type i64 = IntegerType::get(ctx, 64);
  inferred.push_back(experts);
  inferred.push_back(RankedTensorType::get(
      {numExperts, experts.getDimSize(0), capacity}, i64));
  return success();
}

/// Checks the routing operands of a MoE op against the token-side shape
/// [groups, tokens] and, when given, the buffer [experts, groups, capacity].
static LogicalResult verifyMoeRouting(Operation *op, Value experts, Value slots,
                                      Value sources, ArrayRef<int64_t> tokens,
                                      ArrayRef<int64_t> buffer) {
  auto e = getTensor(experts), s = getTensor(slots);
  if (e.getRank() != 3 || e.getShape().take_front(2) != tokens)
    return op->emitOpError("experts must be [") << tokens << ", k], not " << e;
  if (s != e)
    return op->emitOpError("slots must have the type of experts");
  if (!sources)
    return success();
  auto src = getTensor(sources);
  if (src.getRank() != 3 || src.getShape() != buffer.take_front(3))
    return op->emitOpError("sources must be [")
           << buffer.take_front(3) << "] (experts, groups, capacity), not "
           << src;
  return success();
}

/// The shared checks of moe_dispatch and moe_combine, given which side
/// (tokens [G, S, H] or buffer [E, G, C, H]) is the operand.
template <typename OpT>
static LogicalResult verifyMoeMove(OpT op, RankedTensorType tokens,
                                   RankedTensorType buffer) {
  if (tokens.getRank() != 3)
    return op.emitOpError("tokens must be [groups, tokens, hidden], not ")
           << tokens;
  if (buffer.getRank() != 4)
    return op.emitOpError(
               "the buffer must be [experts, groups, capacity, hidden], not ")
           << buffer;
  if (tokens.getElementType() != buffer.getElementType() ||
      tokens.getDimSize(2) != buffer.getDimSize(3) ||
      tokens.getDimSize(0) != buffer.getDimSize(1))
    return op.emitOpError("tokens ")
           << tokens << " and buffer " << buffer
           << " must agree on groups, hidden size and element type";
  if (failed(verifyMoeRouting(op, op.getExperts(), op.getSlots(),
                              op.getSources(), tokens.getShape().take_front(2),
                              buffer.getShape())))
    return failure();
  if (Value w = op.getWeights()) {
    auto wt = getTensor(w);
    if (wt != getTensor(op.getExperts()).clone(tokens.getElementType()))
      return op.emitOpError("weights must be ")
             << getTensor(op.getExperts()).clone(tokens.getElementType())
             << ", not " << wt;
  }
  return success();
}

LogicalResult MoeDispatchOp::verify() {
  return verifyMoeMove(*this, getTensor(getX()), getType());
}

LogicalResult MoeCombineOp::verify() {
  return verifyMoeMove(*this, getType(), getTensor(getX()));
}

LogicalResult MoeGatherDotOp::verify() {
  auto buffer = getTensor(getBuffer()), u = getTensor(getU());
  if (buffer.getRank() != 4 || u.getRank() != 3 ||
      buffer.getElementType() != u.getElementType() ||
      buffer.getDimSize(3) != u.getDimSize(2) ||
      buffer.getDimSize(1) != u.getDimSize(0))
    return emitOpError("buffer ")
           << buffer << " and u " << u
           << " must be [experts, groups, capacity, hidden] and [groups, "
              "tokens, hidden] of one element type";
  if (failed(verifyMoeRouting(*this, getExperts(), getSlots(), Value(),
                              u.getShape().take_front(2), {})))
    return failure();
  if (getType() != getTensor(getExperts()).clone(u.getElementType()))
    return emitOpError("result must be [groups, tokens, k] of u's type");
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  double ratio = adaptor.getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOptionalError(loc, "ratio must be in [0, 1), got ", ratio);
  if (Value offset = adaptor.getSeedOffset())
    if (getTensor(offset).getRank() != 0)
      return emitOptionalError(loc, "seed_offset must be a scalar, got ",
                               offset.getType());
  auto x = getTensor(adaptor.getX());
  inferred.push_back(x);
  inferred.push_back(x.clone(IntegerType::get(ctx, 1)));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

template <typename OpT> static LogicalResult verifyLoss(OpT op, Value input) {
  auto x = getTensor(input), target = getTensor(op.getTarget());
  if (x.getRank() < 2)
    return op.emitOpError("input must have rank at least 2 ([N, C, ...])");
  SmallVector<int64_t> expected = {x.getDimSize(0)};
  llvm::append_range(expected, x.getShape().drop_front(2));
  if (target.getShape() != ArrayRef<int64_t>(expected))
    return op.emitOpError("target must have shape [")
           << expected << "], got " << target;
  if (Value w = op.getWeights()) {
    auto wt = getTensor(w);
    if (wt.getRank() != 1 || wt.getDimSize(0) != x.getDimSize(1))
      return op.emitOpError("weights must have shape [")
             << x.getDimSize(1) << "]";
  }
  ArrayRef<int64_t> lossShape = op.getReduction() == LossReduction::none
                                    ? ArrayRef<int64_t>(expected)
                                    : ArrayRef<int64_t>();
  if (op.getType().getShape() != lossShape ||
      op.getType().getElementType() != x.getElementType())
    return op.emitOpError("loss must be ")
           << RankedTensorType::get(lossShape, x.getElementType());
  return success();
}

LogicalResult SoftmaxCrossEntropyLossOp::verify() {
  return verifyLoss(*this, getScores());
}
LogicalResult NegativeLogLikelihoodLossOp::verify() {
  return verifyLoss(*this, getInput());
}

#define GET_OP_CLASSES
#include "tessera/Dialect/Tsr/IR/TsrOps.cpp.inc"
