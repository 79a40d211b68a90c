//===- DataMovement.cpp - ONNX data movement ops to tsr -------------------===//
//
// Reshape (0 / -1 / allowzero), Flatten, Squeeze and Unsqueeze (all to
// tsr.reshape), Transpose, Concat, Split and Slice (to normalized
// tsr.slice), Gather, GatherElements, ScatterElements, Expand, Tile, Pad,
// Trilu, OneHot, DepthToSpace and SpaceToDepth. Shape-like operands must be
// constants.
//
//===----------------------------------------------------------------------===//
#include "HandlerUtils.h"

using namespace mlir;
using namespace mlir::tessera::onnx_import;

static LogicalResult reshape(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  auto xt = tensorType(x);
  SmallVector<int64_t> shape;
  if (n.sinceVersion() < 5) {
    shape = n.getInts("shape").value_or(SmallVector<int64_t>());
  } else if (auto out = n.staticOutputType(0); out && !n.constantInput(1)) {
    // A computed shape: the model's static output type says what it is.
    TRY(y, n.reshape(x, out.getShape()));
    results.push_back(y);
    return success();
  } else {
    TRY(s, n.requireInts(1, "shape"));
    shape = s;
  }
  bool allowZero = n.getInt("allowzero", 0) != 0;
  int64_t known = 1, inferred = -1;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d == 0 && !allowZero) {
      if (i >= static_cast<size_t>(xt.getRank()))
        return n.error("shape copies dimension " + Twine(i) +
                       " that the input does not have");
      d = xt.getDimSize(i);
    }
    if (d == -1) {
      if (inferred >= 0)
        return n.error("shape has more than one -1");
      inferred = i;
      continue;
    }
    if (d < 0)
      return n.error("shape has negative dimension " + Twine(d));
    known *= d;
  }
  if (inferred >= 0) {
    if (known == 0 || xt.getNumElements() % known != 0)
      return n.error("cannot infer the -1 dimension of the shape");
    shape[inferred] = xt.getNumElements() / known;
  }
  TRY(y, n.reshape(x, shape));
  results.push_back(y);
  return success();
}

static LogicalResult flatten(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  auto xt = tensorType(x);
  int64_t rank = xt.getRank(), axis = n.getInt("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return n.error("axis out of range");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : inner) *= xt.getDimSize(d);
  TRY(y, n.reshape(x, {outer, inner}));
  results.push_back(y);
  return success();
}

/// Axes from the attribute (before opset 13) or a constant input (after);
/// empty optional when absent.
static FailureOr<std::optional<SmallVector<int64_t>>>
readAxesAttrOrInput(NodeContext &n, unsigned inputIndex, int64_t inputSince) {
  if (n.sinceVersion() < inputSince)
    return n.getInts("axes");
  if (!n.input(inputIndex))
    return std::optional<SmallVector<int64_t>>();
  auto v = n.requireInts(inputIndex, "axes");
  if (failed(v))
    return failure();
  return std::optional<SmallVector<int64_t>>(*v);
}

/// Squeeze or Unsqueeze whose axes are computed at run time: the static
/// output type of the node gives the shape.
static bool reshapeToStaticOutput(NodeContext &n, Value x,
                                  SmallVectorImpl<Value> &results,
                                  LogicalResult &status) {
  auto out = n.staticOutputType(0);
  if (n.sinceVersion() < 13 || !n.input(1) || n.constantInput(1) || !out)
    return false;
  auto y = n.reshape(x, out.getShape());
  status = failure(failed(y));
  if (succeeded(y))
    results.push_back(*y);
  return true;
}

static LogicalResult squeeze(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  if (LogicalResult status = success();
      reshapeToStaticOutput(n, x, results, status))
    return status;
  auto xt = tensorType(x);
  TRY(axes, readAxesAttrOrInput(n, 1, 13));
  SmallVector<bool> drop(xt.getRank(), false);
  if (!axes) {
    for (int64_t d = 0; d < xt.getRank(); ++d)
      drop[d] = xt.getDimSize(d) == 1;
  } else {
    for (int64_t a : *axes) {
      auto axis = normalizeAxis(a, xt.getRank());
      if (failed(axis))
        return n.error("axis " + Twine(a) + " out of range");
      if (xt.getDimSize(*axis) != 1)
        return n.error("cannot squeeze dimension " + Twine(*axis) +
                       " of size " + Twine(xt.getDimSize(*axis)));
      drop[*axis] = true;
    }
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < xt.getRank(); ++d)
    if (!drop[d])
      shape.push_back(xt.getDimSize(d));
  TRY(y, n.reshape(x, shape));
  results.push_back(y);
  return success();
}

static LogicalResult unsqueeze(NodeContext &n,
                               SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  if (LogicalResult status = success();
      reshapeToStaticOutput(n, x, results, status))
    return status;
  auto xt = tensorType(x);
  TRY(axes, readAxesAttrOrInput(n, 1, 13));
  if (!axes)
    return n.error("axes are required");
  int64_t outRank = xt.getRank() + axes->size();
  SmallVector<bool> inserted(outRank, false);
  for (int64_t a : *axes) {
    auto axis = normalizeAxis(a, outRank);
    if (failed(axis) || inserted[*axis])
      return n.error("axes out of range or repeated");
    inserted[*axis] = true;
  }
  SmallVector<int64_t> shape;
  int64_t src = 0;
  for (int64_t d = 0; d < outRank; ++d)
    shape.push_back(inserted[d] ? 1 : xt.getDimSize(src++));
  TRY(y, n.reshape(x, shape));
  results.push_back(y);
  return success();
}

static LogicalResult transpose(NodeContext &n,
                               SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  int64_t rank = tensorType(x).getRank();
  SmallVector<int64_t> perm = n.getInts("perm").value_or(
      llvm::to_vector(llvm::reverse(llvm::seq<int64_t>(0, rank))));
  for (int64_t &p : perm)
    if (p < 0)
      p += rank;
  TRY(y, n.create<tsr::TransposeOp>({x}, {n.i64s("perm", perm)}));
  results.push_back(y);
  return success();
}

static LogicalResult concat(NodeContext &n, SmallVectorImpl<Value> &results) {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < n.numInputs(); ++i)
    if (Value v = n.input(i))
      inputs.push_back(v);
  if (inputs.empty())
    return n.error("needs at least one input");
  auto axis =
      normalizeAxis(n.getInt("axis", 0), tensorType(inputs[0]).getRank());
  if (failed(axis))
    return n.error("axis out of range");
  TRY(y, n.create<tsr::ConcatOp>(inputs, {n.i64("axis", *axis)}));
  results.push_back(y);
  return success();
}

/// A tsr.slice of `x` taking [start, start + size) along `axis`.
static FailureOr<Value> sliceAlong(NodeContext &n, Value x, int64_t axis,
                                   int64_t start, int64_t size) {
  auto xt = tensorType(x);
  SmallVector<int64_t> starts(xt.getRank(), 0), limits(xt.getShape()),
      steps(xt.getRank(), 1);
  starts[axis] = start;
  limits[axis] = start + size;
  return n.create<tsr::SliceOp>({x}, {n.i64s("starts", starts),
                                      n.i64s("limits", limits),
                                      n.i64s("steps", steps)});
}

static LogicalResult split(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  auto xt = tensorType(x);
  auto axis = normalizeAxis(n.getInt("axis", 0), xt.getRank());
  if (failed(axis))
    return n.error("axis out of range");
  int64_t dim = xt.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  if (n.sinceVersion() < 13) {
    sizes = n.getInts("split").value_or(SmallVector<int64_t>());
  } else if (n.input(1) && !n.constantInput(1) && n.staticOutputType(0)) {
    for (unsigned i = 0; i < n.numOutputs(); ++i) {
      auto out = n.staticOutputType(i);
      if (!out || out.getRank() != xt.getRank())
        return n.unsupported("input 1 ('split') must be a constant");
      sizes.push_back(out.getDimSize(*axis));
    }
  } else if (n.input(1)) {
    TRY(s, n.requireInts(1, "split"));
    sizes = s;
  }
  if (sizes.empty()) {
    int64_t parts =
        n.hasAttr("num_outputs") ? n.getInt("num_outputs", 1) : n.numOutputs();
    if (parts < 1)
      return n.error("num_outputs must be positive");
    // Equal parts; with num_outputs (opset 18) the last may be smaller.
    int64_t chunk = (dim + parts - 1) / parts;
    if (!n.hasAttr("num_outputs") && dim % parts != 0)
      return n.error("dimension of size " + Twine(dim) +
                     " does not split evenly into " + Twine(parts));
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= chunk)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, left)));
  }
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  if (total != dim || sizes.size() != n.numOutputs())
    return n.error("split sizes do not match the dimension or the outputs");
  int64_t start = 0;
  for (int64_t s : sizes) {
    TRY(part, sliceAlong(n, x, *axis, start, s));
    results.push_back(part);
    start += s;
  }
  return success();
}

static LogicalResult slice(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  auto xt = tensorType(x);
  int64_t rank = xt.getRank();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (n.sinceVersion() < 10) {
    starts = n.getInts("starts").value_or(SmallVector<int64_t>());
    ends = n.getInts("ends").value_or(SmallVector<int64_t>());
    axes = n.getInts("axes").value_or(SmallVector<int64_t>());
  } else {
    TRY(s, n.requireInts(1, "starts"));
    TRY(e, n.requireInts(2, "ends"));
    starts = s;
    ends = e;
    if (n.input(3)) {
      TRY(a, n.requireInts(3, "axes"));
      axes = a;
    }
    if (n.input(4)) {
      TRY(st, n.requireInts(4, "steps"));
      steps = st;
    }
  }
  if (axes.empty())
    axes = llvm::to_vector(llvm::seq<int64_t>(0, starts.size()));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return n.error("starts, ends, axes and steps differ in length");
  SmallVector<int64_t> outStarts(rank, 0), limits(xt.getShape()),
      outSteps(rank, 1);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    auto axis = normalizeAxis(axes[i], rank);
    if (failed(axis) || seen[*axis])
      return n.error("axes out of range or repeated");
    seen[*axis] = true;
    int64_t dim = xt.getDimSize(*axis), step = steps[i];
    if (step == 0)
      return n.error("step is zero");
    int64_t s = starts[i], e = ends[i];
    if (s < 0)
      s = s < -dim ? -dim - 1 : s + dim;
    if (e < 0)
      e = e < -dim ? -dim - 1 : e + dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      if (e < s)
        e = s;
    } else {
      s = std::clamp<int64_t>(s, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      if (e > s)
        e = s;
    }
    outStarts[*axis] = s;
    limits[*axis] = e;
    outSteps[*axis] = step;
  }
  TRY(y, n.create<tsr::SliceOp>({x}, {n.i64s("starts", outStarts),
                                      n.i64s("limits", limits),
                                      n.i64s("steps", outSteps)}));
  results.push_back(y);
  return success();
}

static LogicalResult gather(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(data, n.requireInput(0));
  TRY(indices, n.requireInput(1));
  auto axis = normalizeAxis(n.getInt("axis", 0), tensorType(data).getRank());
  if (failed(axis))
    return n.error("axis out of range");
  TRY(y, n.create<tsr::GatherOp>({data, indices}, {n.i64("axis", *axis)}));
  results.push_back(y);
  return success();
}

static LogicalResult gatherElements(NodeContext &n,
                                    SmallVectorImpl<Value> &results) {
  TRY(data, n.requireInput(0));
  TRY(indices, n.requireInput(1));
  auto dt = tensorType(data);
  auto axis = normalizeAxis(n.getInt("axis", 0), dt.getRank());
  if (failed(axis))
    return n.error("axis out of range");
  TRY(y, n.create<tsr::GatherElementsOp>(
             {data, indices}, {n.i64("axis", *axis)},
             tensorType(indices).clone(dt.getElementType())));
  results.push_back(y);
  return success();
}

static LogicalResult scatterElements(NodeContext &n,
                                     SmallVectorImpl<Value> &results) {
  TRY(data, n.requireInput(0));
  TRY(indices, n.requireInput(1));
  TRY(updates, n.requireInput(2));
  auto axis = normalizeAxis(n.getInt("axis", 0), tensorType(data).getRank());
  if (failed(axis))
    return n.error("axis out of range");
  StringRef reductionName = n.getString("reduction", "none");
  auto reduction = n.enumAttr<tsr::ScatterReductionAttr, tsr::ScatterReduction>(
      "reduction", reductionName);
  if (!reduction)
    return n.unsupported("reduction = '" + reductionName + "'");
  TRY(y, n.create<tsr::ScatterElementsOp>({data, indices, updates},
                                          {n.i64("axis", *axis), *reduction},
                                          tensorType(data)));
  results.push_back(y);
  return success();
}

static LogicalResult expand(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  if (auto out = n.staticOutputType(0); out && !n.constantInput(1)) {
    TRY(y, n.broadcastTo(x, out.getShape()));
    results.push_back(y);
    return success();
  }
  TRY(shape, n.requireInts(1, "shape"));
  auto out = tsr::broadcastShapes(tensorType(x).getShape(), shape);
  if (failed(out))
    return n.error("shape does not broadcast with the input");
  TRY(y, n.broadcastTo(x, *out));
  results.push_back(y);
  return success();
}

static LogicalResult tile(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  auto xt = tensorType(x);
  if (auto out = n.staticOutputType(0);
      out && !n.constantInput(1) && out.getRank() == xt.getRank()) {
    SmallVector<int64_t> repeats;
    for (auto [in, o] : llvm::zip(xt.getShape(), out.getShape()))
      repeats.push_back(in == 0 ? 1 : o / in);
    TRY(y, n.create<tsr::TileOp>({x}, {n.i64s("repeats", repeats)}));
    results.push_back(y);
    return success();
  }
  TRY(repeats, n.requireInts(1, "repeats"));
  TRY(y, n.create<tsr::TileOp>({x}, {n.i64s("repeats", repeats)}));
  results.push_back(y);
  return success();
}

static LogicalResult pad(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  int64_t rank = tensorType(x).getRank();
  StringRef modeName = n.getString("mode", "constant");
  auto mode = n.enumAttr<tsr::PadModeAttr, tsr::PadMode>("mode", modeName);
  if (!mode)
    return n.unsupported("mode = '" + modeName + "'");
  SmallVector<int64_t> pads;
  double value = 0.0;
  if (n.sinceVersion() < 11) {
    pads = n.getInts("pads").value_or(SmallVector<int64_t>());
    value = n.getFloat("value", 0.0);
  } else {
    TRY(p, n.requireInts(1, "pads"));
    pads = p;
    if (n.input(2)) {
      TRY(v, n.requireScalar(2, "constant_value"));
      value = v;
    }
  }
  if (n.input(3)) {
    TRY(axes, n.requireInts(3, "axes"));
    if (pads.size() != 2 * axes.size())
      return n.error("pads must have two entries per axis");
    SmallVector<int64_t> full(2 * rank, 0);
    for (auto [i, a] : llvm::enumerate(axes)) {
      auto axis = normalizeAxis(a, rank);
      if (failed(axis))
        return n.error("axes out of range");
      full[*axis] = pads[i];
      full[rank + *axis] = pads[axes.size() + i];
    }
    pads = full;
  }
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return n.error("pads must have " + Twine(2 * rank) + " entries");
  TRY(y, n.create<tsr::PadOp>(
             {x}, {n.i64s("pads", pads), *mode, n.f64("value", value)}));
  results.push_back(y);
  return success();
}

static LogicalResult trilu(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  int64_t k = 0;
  if (n.input(1)) {
    TRY(kv, n.requireScalar(1, "k"));
    k = static_cast<int64_t>(kv);
  }
  TRY(y,
      n.create<tsr::TriluOp>(
          {x}, {n.boolean("upper", n.getInt("upper", 1) != 0), n.i64("k", k)}));
  results.push_back(y);
  return success();
}

static LogicalResult oneHot(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(indices, n.requireInput(0));
  TRY(depthValue, n.requireScalar(1, "depth"));
  TRY(values, n.requireConstant(2, "values"));
  if (values.getNumElements() != 2)
    return n.error("values must hold [off_value, on_value]");
  auto asDouble = [&](int64_t i) -> double {
    Type elem = values.getElementType();
    if (isa<FloatType>(elem))
      return values.getValues<APFloat>()[i].convertToDouble();
    APInt v = values.getValues<APInt>()[i];
    return elem.isUnsignedInteger() || elem.isInteger(1)
               ? static_cast<double>(v.getZExtValue())
               : static_cast<double>(v.getSExtValue());
  };
  auto it = tensorType(indices);
  int64_t depth = static_cast<int64_t>(depthValue);
  int64_t rank = it.getRank() + 1;
  auto axis = normalizeAxis(n.getInt("axis", -1), rank);
  if (failed(axis))
    return n.error("axis out of range");
  if (depth < 1)
    return n.error("depth must be positive");
  SmallVector<int64_t> shape(it.getShape());
  shape.insert(shape.begin() + *axis, depth);
  TRY(y, n.create<tsr::OneHotOp>(
             {indices},
             {n.i64("depth", depth), n.i64("axis", *axis),
              n.f64("on_value", asDouble(1)), n.f64("off_value", asDouble(0))},
             RankedTensorType::get(shape, values.getElementType())));
  results.push_back(y);
  return success();
}

/// DepthToSpace (DCR or CRD) and SpaceToDepth as reshape-transpose-reshape.
static LogicalResult depthSpace(NodeContext &n,
                                SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  auto xt = tensorType(x);
  if (xt.getRank() != 4)
    return n.error("input must have rank 4");
  int64_t b = n.getInt("blocksize", 0);
  int64_t N = xt.getDimSize(0), C = xt.getDimSize(1), H = xt.getDimSize(2),
          W = xt.getDimSize(3);
  if (b < 1)
    return n.error("blocksize must be positive");
  SmallVector<int64_t> first, perm, last;
  if (n.opType() == "DepthToSpace") {
    if (C % (b * b))
      return n.error("channels must be divisible by blocksize²");
    if (n.getString("mode", "DCR") == "DCR") {
      first = {N, b, b, C / (b * b), H, W};
      perm = {0, 3, 4, 1, 5, 2};
    } else {
      first = {N, C / (b * b), b, b, H, W};
      perm = {0, 1, 4, 2, 5, 3};
    }
    last = {N, C / (b * b), H * b, W * b};
  } else {
    if (H % b || W % b)
      return n.error("spatial dimensions must be divisible by blocksize");
    first = {N, C, H / b, b, W / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    last = {N, C * b * b, H / b, W / b};
  }
  TRY(r, n.reshape(x, first));
  TRY(t, n.transpose(r, perm));
  TRY(y, n.reshape(t, last));
  results.push_back(y);
  return success();
}

void mlir::tessera::onnx_import::populateDataMovementHandlers(
    HandlerRegistry &r) {
  r.add("Reshape", reshape);
  r.add("Flatten", flatten);
  r.add("Squeeze", squeeze);
  r.add("Unsqueeze", unsqueeze);
  r.add("Transpose", transpose);
  r.add("Concat", concat);
  r.add("Split", split, 2);
  r.add("Slice", slice);
  r.add("Gather", gather);
  r.add("GatherElements", gatherElements);
  r.add("ScatterElements", scatterElements);
  r.add("Scatter", scatterElements);
  r.add("Expand", expand);
  r.add("Tile", tile, 6);
  r.add("Pad", pad, 2);
  r.add("Trilu", trilu);
  r.add("OneHot", oneHot);
  r.add("DepthToSpace", depthSpace);
  r.add("SpaceToDepth", depthSpace);
}
