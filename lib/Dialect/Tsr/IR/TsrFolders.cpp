//===- TsrFolders.cpp - Constant folding of tsr ops -----------------------===//
//
// Folders for the ops that ONNX shape arithmetic is made of (Shape -> Gather
// -> Unsqueeze -> Concat -> Reshape chains and friends): elementwise
// arithmetic and comparisons with broadcasting, where, data movement
// (broadcast, transpose, slice, gather, concat) and sum/product reductions.
// Data movement works on raw element bytes; arithmetic on APInt/APFloat and
// only for small tensors, which is all that shape computations produce.
//
//===----------------------------------------------------------------------===//
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::tsr;

/// Largest result that data movement folds, in elements.
static constexpr int64_t kMaxMoveElements = 1 << 22;
/// Largest result that arithmetic folds, in elements.
static constexpr int64_t kMaxArithElements = 1 << 16;

/// Calls fn(linearIndex, multiIndex) for every element of `shape` in
/// row-major order.
template <typename Fn>
static void forEachIndex(ArrayRef<int64_t> shape, Fn fn) {
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t linear = 0; linear < total; ++linear) {
    fn(linear, ArrayRef<int64_t>(idx));
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

static SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// For every element of `out`, the linear index of the element of `in` it
/// broadcasts from (numpy rules).
static SmallVector<int64_t> broadcastIndices(ArrayRef<int64_t> in,
                                             ArrayRef<int64_t> out) {
  SmallVector<int64_t> inStrides = stridesOf(in);
  size_t offset = out.size() - in.size();
  SmallVector<int64_t> result;
  forEachIndex(out, [&](int64_t, ArrayRef<int64_t> idx) {
    int64_t linear = 0;
    for (size_t d = 0; d < in.size(); ++d)
      if (in[d] != 1)
        linear += idx[offset + d] * inStrides[d];
    result.push_back(linear);
  });
  return result;
}

/// A tensor of `type` whose element i is element index[i] of `src`.
static DenseElementsAttr remap(DenseElementsAttr src, RankedTensorType type,
                               ArrayRef<int64_t> index) {
  if (src.isSplat())
    return DenseElementsAttr::get(type, src.getSplatValue<Attribute>());
  if (src.getElementType().isInteger(1)) {
    auto values = llvm::to_vector(src.getValues<bool>());
    SmallVector<bool> out;
    for (int64_t i : index)
      out.push_back(values[i]);
    return DenseElementsAttr::get(type, ArrayRef<bool>(out));
  }
  size_t bytes = src.getElementType().getIntOrFloatBitWidth() / 8;
  ArrayRef<char> raw = src.getRawData();
  std::vector<char> out(index.size() * bytes);
  for (auto [i, j] : llvm::enumerate(index))
    std::memcpy(out.data() + i * bytes, raw.data() + j * bytes, bytes);
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(out.data(), out.size()));
}

static bool isMovable(Type elem) {
  return elem.isIntOrFloat() &&
         (elem.isInteger(1) || elem.getIntOrFloatBitWidth() % 8 == 0);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Folds a binary elementwise op over constant operands. `intFn` and
/// `floatFn` return the result element as an Attribute of `resultElem`, or
/// null to give up (division by zero).
template <typename IntFn, typename FloatFn>
static OpFoldResult foldBinary(Attribute lhsAttr, Attribute rhsAttr,
                               RankedTensorType resultType, IntFn intFn,
                               FloatFn floatFn) {
  auto lhs = dyn_cast_if_present<DenseElementsAttr>(lhsAttr);
  auto rhs = dyn_cast_if_present<DenseElementsAttr>(rhsAttr);
  if (!lhs || !rhs || resultType.getNumElements() > kMaxArithElements)
    return {};
  ArrayRef<int64_t> shape = resultType.getShape();
  auto lIdx = broadcastIndices(lhs.getType().getShape(), shape);
  auto rIdx = broadcastIndices(rhs.getType().getShape(), shape);
  Type elem = lhs.getElementType();
  SmallVector<Attribute> out;
  if (auto intType = dyn_cast<IntegerType>(elem)) {
    bool isUnsigned = intType.isUnsigned() || intType.getWidth() == 1;
    auto l = llvm::to_vector(lhs.getValues<APInt>());
    auto r = llvm::to_vector(rhs.getValues<APInt>());
    for (size_t i = 0; i < lIdx.size(); ++i) {
      Attribute v = intFn(l[lIdx[i]], r[rIdx[i]], isUnsigned);
      if (!v)
        return {};
      out.push_back(v);
    }
  } else if (isa<FloatType>(elem)) {
    auto l = llvm::to_vector(lhs.getValues<APFloat>());
    auto r = llvm::to_vector(rhs.getValues<APFloat>());
    for (size_t i = 0; i < lIdx.size(); ++i) {
      Attribute v = floatFn(l[lIdx[i]], r[rIdx[i]]);
      if (!v)
        return {};
      out.push_back(v);
    }
  } else {
    return {};
  }
  return DenseElementsAttr::get(resultType, out);
}

template <typename IntOp, typename FloatOp>
static OpFoldResult foldArith(Attribute lhs, Attribute rhs,
                              RankedTensorType type, IntOp intOp,
                              FloatOp floatOp) {
  Type elem = type.getElementType();
  return foldBinary(
      lhs, rhs, type,
      [&](const APInt &a, const APInt &b, bool isUnsigned) -> Attribute {
        std::optional<APInt> r = intOp(a, b, isUnsigned);
        return r ? IntegerAttr::get(elem, *r) : Attribute();
      },
      [&](const APFloat &a, const APFloat &b) -> Attribute {
        return FloatAttr::get(elem, floatOp(a, b));
      });
}

template <typename Pred>
static OpFoldResult foldCompare(Attribute lhs, Attribute rhs,
                                RankedTensorType type, Pred pred) {
  Builder b(type.getContext());
  return foldBinary(
      lhs, rhs, type,
      [&](const APInt &x, const APInt &y, bool isUnsigned) -> Attribute {
        int cmp = isUnsigned ? (x.ult(y)   ? -1
                                : x.ugt(y) ? 1
                                           : 0)
                             : (x.slt(y)   ? -1
                                : x.sgt(y) ? 1
                                           : 0);
        return b.getBoolAttr(pred(cmp));
      },
      [&](const APFloat &x, const APFloat &y) -> Attribute {
        APFloat::cmpResult c = x.compare(y);
        if (c == APFloat::cmpUnordered)
          return b.getBoolAttr(false);
        return b.getBoolAttr(pred(c == APFloat::cmpLessThan      ? -1
                                  : c == APFloat::cmpGreaterThan ? 1
                                                                 : 0));
      });
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a + b;
      },
      [](APFloat a, const APFloat &b) {
        a.add(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a - b;
      },
      [](APFloat a, const APFloat &b) {
        a.subtract(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a * b;
      },
      [](APFloat a, const APFloat &b) {
        a.multiply(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b,
         bool isUnsigned) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        return isUnsigned ? a.udiv(b) : a.sdiv(b);
      },
      [](APFloat a, const APFloat &b) {
        a.divide(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b,
         bool isUnsigned) -> std::optional<APInt> {
        return (isUnsigned ? a.uge(b) : a.sge(b)) ? a : b;
      },
      [](const APFloat &a, const APFloat &b) { return llvm::maximum(a, b); });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b,
         bool isUnsigned) -> std::optional<APInt> {
        return (isUnsigned ? a.ule(b) : a.sle(b)) ? a : b;
      },
      [](const APFloat &a, const APFloat &b) { return llvm::minimum(a, b); });
}

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a & b;
      },
      [](const APFloat &a, const APFloat &) { return a; });
}

OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a | b;
      },
      [](const APFloat &a, const APFloat &) { return a; });
}

OpFoldResult EqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(adaptor.getLhs(), adaptor.getRhs(), getType(),
                     [](int c) { return c == 0; });
}
OpFoldResult LessOp::fold(FoldAdaptor adaptor) {
  return foldCompare(adaptor.getLhs(), adaptor.getRhs(), getType(),
                     [](int c) { return c < 0; });
}
OpFoldResult LessEqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(adaptor.getLhs(), adaptor.getRhs(), getType(),
                     [](int c) { return c <= 0; });
}
OpFoldResult GreaterOp::fold(FoldAdaptor adaptor) {
  return foldCompare(adaptor.getLhs(), adaptor.getRhs(), getType(),
                     [](int c) { return c > 0; });
}
OpFoldResult GreaterEqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(adaptor.getLhs(), adaptor.getRhs(), getType(),
                     [](int c) { return c >= 0; });
}

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  auto x = dyn_cast_if_present<DenseElementsAttr>(adaptor.getX());
  if (!x || x.getNumElements() > kMaxArithElements)
    return {};
  if (isa<IntegerType>(x.getElementType()))
    return x.mapValues(x.getElementType(), [](const APInt &v) { return -v; });
  if (isa<FloatType>(x.getElementType()))
    return x.mapValues(x.getElementType(),
                       [](const APFloat &v) { return (-v).bitcastToAPInt(); });
  return {};
}

OpFoldResult IdentityOp::fold(FoldAdaptor adaptor) {
  // A constant operand: the constant (an attribute, so nothing is copied).
  return dyn_cast_if_present<ElementsAttr>(adaptor.getX());
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  auto cond = dyn_cast_if_present<DenseElementsAttr>(adaptor.getCond());
  if (!cond)
    return {};
  RankedTensorType type = getType();
  // A uniform condition picks one operand whole when it has the result type.
  if (cond.isSplat()) {
    Value picked = cond.getSplatValue<bool>() ? getOnTrue() : getOnFalse();
    if (picked.getType() == type)
      return picked;
  }
  auto onTrue = dyn_cast_if_present<DenseElementsAttr>(adaptor.getOnTrue());
  auto onFalse = dyn_cast_if_present<DenseElementsAttr>(adaptor.getOnFalse());
  if (!onTrue || !onFalse || type.getNumElements() > kMaxArithElements)
    return {};
  ArrayRef<int64_t> shape = type.getShape();
  auto cIdx = broadcastIndices(cond.getType().getShape(), shape);
  auto tIdx = broadcastIndices(onTrue.getType().getShape(), shape);
  auto fIdx = broadcastIndices(onFalse.getType().getShape(), shape);
  auto c = llvm::to_vector(cond.getValues<bool>());
  auto t = llvm::to_vector(onTrue.getValues<Attribute>());
  auto f = llvm::to_vector(onFalse.getValues<Attribute>());
  SmallVector<Attribute> out;
  for (size_t i = 0; i < cIdx.size(); ++i)
    out.push_back(c[cIdx[i]] ? t[tIdx[i]] : f[fIdx[i]]);
  return DenseElementsAttr::get(type, out);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getX().getType() == getType())
    return getX();
  auto x = dyn_cast_if_present<DenseElementsAttr>(adaptor.getX());
  if (!x || getType().getNumElements() > kMaxMoveElements ||
      !isMovable(x.getElementType()))
    return {};
  return remap(x, getType(),
               broadcastIndices(x.getType().getShape(), getType().getShape()));
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getX();
  auto x = dyn_cast_if_present<DenseElementsAttr>(adaptor.getX());
  if (!x || getType().getNumElements() > kMaxMoveElements ||
      !isMovable(x.getElementType()))
    return {};
  SmallVector<int64_t> inStrides = stridesOf(x.getType().getShape());
  SmallVector<int64_t> index;
  forEachIndex(getType().getShape(), [&](int64_t, ArrayRef<int64_t> idx) {
    int64_t linear = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      linear += idx[d] * inStrides[perm[d]];
    index.push_back(linear);
  });
  return remap(x, getType(), index);
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getX().getType() == getType() &&
      llvm::all_of(getStarts(), [](int64_t s) { return s == 0; }) &&
      llvm::all_of(getSteps(), [](int64_t s) { return s == 1; }))
    return getX();
  auto x = dyn_cast_if_present<DenseElementsAttr>(adaptor.getX());
  if (!x || getType().getNumElements() > kMaxMoveElements ||
      !isMovable(x.getElementType()))
    return {};
  SmallVector<int64_t> inStrides = stridesOf(x.getType().getShape());
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  SmallVector<int64_t> index;
  forEachIndex(getType().getShape(), [&](int64_t, ArrayRef<int64_t> idx) {
    int64_t linear = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      linear += (starts[d] + idx[d] * steps[d]) * inStrides[d];
    index.push_back(linear);
  });
  return remap(x, getType(), index);
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  auto data = dyn_cast_if_present<DenseElementsAttr>(adaptor.getData());
  auto indices = dyn_cast_if_present<DenseElementsAttr>(adaptor.getIndices());
  if (!data || !indices || getType().getNumElements() > kMaxMoveElements ||
      !isMovable(data.getElementType()))
    return {};
  ArrayRef<int64_t> dataShape = data.getType().getShape();
  int64_t axis = getAxis(), dim = dataShape[axis];
  if (dim == 0)
    return {};
  auto idxValues = llvm::to_vector(indices.getValues<APInt>());
  SmallVector<int64_t> inStrides = stridesOf(dataShape);
  int64_t idxRank = indices.getType().getRank();
  SmallVector<int64_t> idxStrides = stridesOf(indices.getType().getShape());
  SmallVector<int64_t> index;
  forEachIndex(getType().getShape(), [&](int64_t, ArrayRef<int64_t> idx) {
    int64_t linear = 0;
    for (int64_t d = 0; d < axis; ++d)
      linear += idx[d] * inStrides[d];
    int64_t pos = 0;
    for (int64_t d = 0; d < idxRank; ++d)
      pos += idx[axis + d] * idxStrides[d];
    int64_t i = idxValues[pos].getSExtValue();
    if (i < 0)
      i += dim;
    i = std::clamp<int64_t>(i, 0, dim - 1);
    linear += i * inStrides[axis];
    for (int64_t d = axis + 1; d < static_cast<int64_t>(dataShape.size()); ++d)
      linear += idx[idxRank + d - 1] * inStrides[d];
    index.push_back(linear);
  });
  return remap(data, getType(), index);
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  if (getType().getNumElements() > kMaxMoveElements)
    return {};
  SmallVector<DenseElementsAttr> inputs;
  for (Attribute a : adaptor.getInputs()) {
    auto d = dyn_cast_if_present<DenseElementsAttr>(a);
    if (!d)
      return {};
    inputs.push_back(d);
  }
  int64_t axis = getAxis();
  ArrayRef<int64_t> shape = getType().getShape();
  // Concatenate element attributes block by block along `axis`.
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  SmallVector<SmallVector<Attribute>> values;
  SmallVector<int64_t> blocks;
  for (DenseElementsAttr in : inputs) {
    values.push_back(llvm::to_vector(in.getValues<Attribute>()));
    int64_t block = 1;
    for (int64_t d = axis; d < in.getType().getRank(); ++d)
      block *= in.getType().getDimSize(d);
    blocks.push_back(block);
  }
  SmallVector<Attribute> out;
  for (int64_t o = 0; o < outer; ++o)
    for (auto [v, block] : llvm::zip(values, blocks))
      out.append(v.begin() + o * block, v.begin() + (o + 1) * block);
  return DenseElementsAttr::get(getType(), out);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Folds a sum or product reduction over a constant operand.
template <typename OpT>
static OpFoldResult foldReduce(OpT op, Attribute operand, bool product) {
  auto x = dyn_cast_if_present<DenseElementsAttr>(operand);
  if (!x || x.getNumElements() > kMaxArithElements)
    return {};
  RankedTensorType type = op.getType();
  ArrayRef<int64_t> inShape = x.getType().getShape();
  ArrayRef<int64_t> axes = op.getAxes();
  // Output linear index of every input element.
  SmallVector<int64_t> keptShape;
  for (int64_t d = 0; d < static_cast<int64_t>(inShape.size()); ++d)
    keptShape.push_back(llvm::is_contained(axes, d) ? 1 : inShape[d]);
  SmallVector<int64_t> outStrides = stridesOf(keptShape);
  SmallVector<int64_t> target;
  forEachIndex(inShape, [&](int64_t, ArrayRef<int64_t> idx) {
    int64_t linear = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      if (!llvm::is_contained(axes, static_cast<int64_t>(d)))
        linear += idx[d] * outStrides[d];
    target.push_back(linear);
  });
  int64_t n = type.getNumElements();
  Type elem = type.getElementType();
  if (auto intType = dyn_cast<IntegerType>(elem)) {
    SmallVector<APInt> acc(n, APInt(intType.getWidth(), product ? 1 : 0));
    for (auto [i, v] : llvm::enumerate(x.getValues<APInt>()))
      acc[target[i]] = product ? acc[target[i]] * v : acc[target[i]] + v;
    return DenseElementsAttr::get(type, acc);
  }
  if (auto floatType = dyn_cast<FloatType>(elem)) {
    const auto &sem = floatType.getFloatSemantics();
    SmallVector<APFloat> acc(n, APFloat(sem, product ? 1 : 0));
    for (auto [i, v] : llvm::enumerate(x.getValues<APFloat>())) {
      if (product)
        acc[target[i]].multiply(v, APFloat::rmNearestTiesToEven);
      else
        acc[target[i]].add(v, APFloat::rmNearestTiesToEven);
    }
    return DenseElementsAttr::get(type, acc);
  }
  return {};
}

OpFoldResult ReduceSumOp::fold(FoldAdaptor adaptor) {
  return foldReduce(*this, adaptor.getX(), /*product=*/false);
}

OpFoldResult ReduceProdOp::fold(FoldAdaptor adaptor) {
  return foldReduce(*this, adaptor.getX(), /*product=*/true);
}
