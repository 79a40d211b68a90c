//===- MathNN.cpp - ONNX contractions, conv, pooling, norms, softmax ------===//
//
// MatMul, Gemm (decomposed: transpose, matmul, scale, add), Conv, pooling
// (including the Global* forms as reductions), BatchNormalization,
// LayerNormalization, InstanceNormalization (decomposed), the Softmax
// family (with the 2-D coercion of opsets before 13) and Einsum.
//
//===----------------------------------------------------------------------===//
#include "HandlerUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"

using namespace mlir;
using namespace mlir::tessera::onnx_import;

static LogicalResult matmul(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(a, n.requireInput(0));
  TRY(b, n.requireInput(1));
  TRY(y, n.create<tsr::MatMulOp>({a, b}));
  results.push_back(y);
  return success();
}

/// Y = alpha · A' · B' + beta · C.
static LogicalResult gemm(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(a, n.requireInput(0));
  TRY(b, n.requireInput(1));
  if (tensorType(a).getRank() != 2 || tensorType(b).getRank() != 2)
    return n.error("A and B must be matrices");
  if (n.getInt("transA", 0)) {
    TRY(t, n.transpose(a, {1, 0}));
    a = t;
  }
  if (n.getInt("transB", 0)) {
    TRY(t, n.transpose(b, {1, 0}));
    b = t;
  }
  TRY(y, n.create<tsr::MatMulOp>({a, b}));
  double alpha = n.getFloat("alpha", 1.0), beta = n.getFloat("beta", 1.0);
  if (alpha != 1.0) {
    TRY(scaled, n.create<tsr::MulOp>({y, scalarLike(n, y, alpha)}));
    y = scaled;
  }
  if (Value c = n.input(2)) {
    if (beta != 1.0) {
      TRY(scaled, n.create<tsr::MulOp>({c, scalarLike(n, c, beta)}));
      c = scaled;
    }
    TRY(sum, n.create<tsr::AddOp>({y, c}));
    y = sum;
  }
  results.push_back(y);
  return success();
}

namespace {
/// The window attributes shared by Conv and the pooling ops.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};
} // namespace

/// Reads kernel_shape/strides/pads/dilations/auto_pad for `k` spatial dims
/// of input `x`, resolving SAME_* and VALID to explicit pads.
static FailureOr<Window> readWindow(NodeContext &n, RankedTensorType x,
                                    ArrayRef<int64_t> kernel, bool ceilMode) {
  int64_t k = x.getRank() - 2;
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = n.getInts("strides").value_or(SmallVector<int64_t>(k, 1));
  w.dilations = n.getInts("dilations").value_or(SmallVector<int64_t>(k, 1));
  w.pads = n.getInts("pads").value_or(SmallVector<int64_t>(2 * k, 0));
  if ((int64_t)w.kernel.size() != k || (int64_t)w.strides.size() != k ||
      (int64_t)w.dilations.size() != k || (int64_t)w.pads.size() != 2 * k)
    return n.error("kernel_shape, strides, dilations and pads do not match "
                   "the input rank");
  StringRef autoPad = n.getString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    w.pads.assign(2 * k, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < k; ++i) {
      int64_t in = x.getDimSize(2 + i), s = w.strides[i];
      int64_t out = (in + s - 1) / s;
      int64_t span = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[k + i] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return n.unsupported("auto_pad = '" + autoPad + "'");
  }
  (void)ceilMode;
  return w;
}

static LogicalResult conv(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(w, n.requireInput(1));
  auto xt = tensorType(x), wt = tensorType(w);
  if (xt.getRank() < 3 || wt.getRank() != xt.getRank())
    return n.error("input and weight must have the same rank, at least 3");
  SmallVector<int64_t> kernel =
      n.getInts("kernel_shape")
          .value_or(SmallVector<int64_t>(wt.getShape().drop_front(2)));
  TRY(win, readWindow(n, xt, kernel, false));
  SmallVector<Value> operands = {x, w};
  if (Value bias = n.input(2))
    operands.push_back(bias);
  TRY(y,
      n.create<tsr::ConvOp>(operands, {n.i64s("strides", win.strides),
                                       n.i64s("pads", win.pads),
                                       n.i64s("dilations", win.dilations),
                                       n.i64("group", n.getInt("group", 1))}));
  results.push_back(y);
  return success();
}

template <typename OpT>
static LogicalResult pool(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  auto xt = tensorType(x);
  if (xt.getRank() < 3)
    return n.error("input must have rank at least 3");
  auto kernel = n.getInts("kernel_shape");
  if (!kernel)
    return n.error("kernel_shape is required");
  if (n.getInt("storage_order", 0) != 0 && n.outputUsed(1))
    return n.unsupported("storage_order = 1");
  if (n.outputUsed(1))
    return n.unsupported("the Indices output is not supported");
  bool ceilMode = n.getInt("ceil_mode", 0) != 0;
  TRY(win, readWindow(n, xt, *kernel, ceilMode));
  SmallVector<NamedAttribute> attrs = {
      n.i64s("kernel_shape", win.kernel), n.i64s("strides", win.strides),
      n.i64s("pads", win.pads), n.i64s("dilations", win.dilations),
      n.boolean("ceil_mode", ceilMode)};
  if constexpr (std::is_same_v<OpT, tsr::AvgPoolOp>)
    attrs.push_back(
        n.boolean("count_include_pad", n.getInt("count_include_pad", 0) != 0));
  TRY(y, n.create<OpT>({x}, attrs));
  results.push_back(y);
  return success();
}

template <typename OpT>
static LogicalResult globalPool(NodeContext &n,
                                SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  auto xt = tensorType(x);
  if (xt.getRank() < 3)
    return n.error("input must have rank at least 3");
  auto axes = llvm::to_vector(llvm::seq<int64_t>(2, xt.getRank()));
  TRY(y,
      n.create<OpT>({x}, {n.i64s("axes", axes), n.boolean("keepdims", true)}));
  results.push_back(y);
  return success();
}

/// Inference mode normalizes with the running statistics (inputs 3 and 4).
/// training_mode = 1 normalizes with the batch's mean and population variance
/// over every dimension but 1, so gradients flow through them, and outputs 1
/// and 2 are the updated running statistics, momentum·running + (1 −
/// momentum)·batch. When no node reads them (PyTorch's training export),
/// running statistics that are training state (`tsr.statistics` arguments)
/// get the same update as a state update under updateStatistics, or the node
/// normalizes with them as in inference under runningBatchNorm.
static LogicalResult batchNorm(NodeContext &n,
                               SmallVectorImpl<Value> &results) {
  bool training = n.getInt("training_mode", 0) != 0;
  if (!training)
    for (unsigned i = 1; i < n.numOutputs(); ++i)
      if (n.outputUsed(i))
        return n.unsupported(
            "running statistics outputs need training_mode = 1");
  if (n.runningBatchNorm && !n.outputUsed(1) && !n.outputUsed(2))
    training = false;
  TRY(x, n.requireInput(0));
  auto xt = tensorType(x);
  if (xt.getRank() < 2)
    return n.error("input must have rank at least 2");
  Type elem = xt.getElementType();
  SmallVector<Value> operands = {x};
  for (unsigned i = 1; i <= 4; ++i) {
    TRY(v, n.requireInput(i));
    TRY(c, n.castTo(v, elem));
    operands.push_back(c);
  }
  double epsilon = n.getFloat("epsilon", 1e-5);
  if (!training) {
    TRY(y, n.create<tsr::BatchNormOp>(operands, {n.f64("epsilon", epsilon)}));
    results.push_back(y);
    return success();
  }
  auto axes = llvm::to_vector(llvm::seq<int64_t>(2, xt.getRank()));
  axes.insert(axes.begin(), 0);
  auto reduceAttrs = [&] {
    return SmallVector<NamedAttribute>{n.i64s("axes", axes),
                                       n.boolean("keepdims", false)};
  };
  SmallVector<int64_t> channelShape(xt.getRank(), 1);
  channelShape[1] = xt.getDimSize(1);
  TRY(mean, n.create<tsr::ReduceMeanOp>({x}, reduceAttrs()));
  TRY(meanC, n.reshape(mean, channelShape));
  TRY(centered, n.create<tsr::SubOp>({x, meanC}));
  TRY(sq, n.create<tsr::MulOp>({centered, centered}));
  TRY(var, n.create<tsr::ReduceMeanOp>({sq}, reduceAttrs()));
  TRY(y, n.create<tsr::BatchNormOp>({x, operands[1], operands[2], mean, var},
                                    {n.f64("epsilon", epsilon)}));
  results.push_back(y);
  double momentum = n.getFloat("momentum", 0.9);
  auto update = [&](Value running, Value batch) -> FailureOr<Value> {
    TRY(old, n.create<tsr::MulOp>({running, scalarLike(n, running, momentum)}));
    TRY(now,
        n.create<tsr::MulOp>({batch, scalarLike(n, batch, 1.0 - momentum)}));
    return n.create<tsr::AddOp>({old, now});
  };
  if (!n.outputUsed(1) && !n.outputUsed(2)) {
    if (!n.updateStatistics)
      return success();
    for (auto [i, batch] : {std::pair<unsigned, Value>{3, mean}, {4, var}}) {
      auto arg = dyn_cast<BlockArgument>(n.input(i));
      auto f = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                   : func::FuncOp();
      if (!f || !f.getArgAttr(arg.getArgNumber(), tsr::attr::kStatistics))
        continue;
      TRY(cast, n.castTo(batch, tensorType(arg).getElementType()));
      TRY(next, update(arg, cast));
      n.statisticsUpdates.push_back({next, arg});
    }
    return success();
  }
  for (auto [running, batch] :
       {std::pair<Value, Value>{operands[3], mean}, {operands[4], var}}) {
    TRY(next, update(running, batch));
    results.push_back(next);
  }
  return success();
}

static LogicalResult layerNorm(NodeContext &n,
                               SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(scale, n.requireInput(1));
  auto axis = normalizeAxis(n.getInt("axis", -1), tensorType(x).getRank());
  if (failed(axis))
    return n.error("axis out of range");
  SmallVector<Value> operands = {x, scale};
  if (Value bias = n.input(2))
    operands.push_back(bias);
  double epsilon = n.getFloat("epsilon", 1e-5);
  TRY(y, n.create<tsr::LayerNormOp>(
             operands, {n.i64("axis", *axis), n.f64("epsilon", epsilon)}));
  results.push_back(y);
  if (!n.outputUsed(1) && !n.outputUsed(2))
    return success();
  // The saved statistics: mean and 1/sqrt(var + epsilon), kept as size-1
  // dimensions over [axis, rank).
  auto axes =
      llvm::to_vector(llvm::seq<int64_t>(*axis, tensorType(x).getRank()));
  auto attrs = [&] {
    return SmallVector<NamedAttribute>{n.i64s("axes", axes),
                                       n.boolean("keepdims", true)};
  };
  TRY(mean, n.create<tsr::ReduceMeanOp>({x}, attrs()));
  TRY(centered, n.create<tsr::SubOp>({x, mean}));
  TRY(sq, n.create<tsr::MulOp>({centered, centered}));
  TRY(var, n.create<tsr::ReduceMeanOp>({sq}, attrs()));
  TRY(veps, n.create<tsr::AddOp>({var, scalarLike(n, x, epsilon)}));
  TRY(std, n.create<tsr::SqrtOp>({veps}));
  TRY(inv, n.create<tsr::ReciprocalOp>({std}));
  results.push_back(mean);
  results.push_back(inv);
  return success();
}

/// (x − mean) / sqrt(var + epsilon) · scale + bias over the spatial dims of
/// each (sample, channel).
static LogicalResult instanceNorm(NodeContext &n,
                                  SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(scale, n.requireInput(1));
  TRY(bias, n.requireInput(2));
  auto xt = tensorType(x);
  int64_t rank = xt.getRank();
  if (rank < 3)
    return n.error("input must have rank at least 3");
  auto axes = llvm::to_vector(llvm::seq<int64_t>(2, rank));
  auto reduceAttrs = [&] {
    return SmallVector<NamedAttribute>{n.i64s("axes", axes),
                                       n.boolean("keepdims", true)};
  };
  TRY(mean, n.create<tsr::ReduceMeanOp>({x}, reduceAttrs()));
  TRY(centered, n.create<tsr::SubOp>({x, mean}));
  TRY(sq, n.create<tsr::MulOp>({centered, centered}));
  TRY(var, n.create<tsr::ReduceMeanOp>({sq}, reduceAttrs()));
  TRY(veps, n.create<tsr::AddOp>(
                {var, scalarLike(n, x, n.getFloat("epsilon", 1e-5))}));
  TRY(std, n.create<tsr::SqrtOp>({veps}));
  TRY(norm, n.create<tsr::DivOp>({centered, std}));
  SmallVector<int64_t> paramShape = {xt.getDimSize(1)};
  paramShape.append(rank - 2, 1);
  TRY(s, n.reshape(scale, paramShape));
  TRY(b, n.reshape(bias, paramShape));
  TRY(scaled, n.create<tsr::MulOp>({norm, s}));
  TRY(y, n.create<tsr::AddOp>({scaled, b}));
  results.push_back(y);
  return success();
}

/// Softmax, LogSoftmax and Hardmax. Before opset 13 the input is coerced to
/// 2-D [prod(dims[:axis]), prod(dims[axis:])] and the op runs on dim 1.
template <typename OpT>
static LogicalResult softmax(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  auto xt = tensorType(x);
  int64_t rank = xt.getRank();
  bool legacy = n.sinceVersion() < 13;
  auto axis = normalizeAxis(n.getInt("axis", legacy ? 1 : -1),
                            std::max<int64_t>(rank, 1));
  if (failed(axis) || rank == 0)
    return n.error("axis out of range");
  Value in = x;
  int64_t opAxis = *axis;
  if (legacy) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d < *axis ? outer : inner) *= xt.getDimSize(d);
    TRY(flat, n.reshape(x, {outer, inner}));
    in = flat;
    opAxis = 1;
  }
  Value y;
  if constexpr (std::is_same_v<OpT, tsr::ArgMaxOp>) {
    // Hardmax: one-hot of the first maximum.
    auto it = tensorType(in);
    TRY(idx, n.create<tsr::ArgMaxOp>(
                 {in}, {n.i64("axis", opAxis), n.boolean("keepdims", false),
                        n.boolean("select_last_index", false)}));
    TRY(hot, n.create<tsr::OneHotOp>(
                 {idx},
                 {n.i64("depth", it.getDimSize(opAxis)), n.i64("axis", opAxis),
                  n.f64("on_value", 1.0), n.f64("off_value", 0.0)},
                 it));
    y = hot;
  } else {
    TRY(s, n.create<OpT>({in}, {n.i64("axis", opAxis)}));
    y = s;
  }
  TRY(out, n.reshape(y, xt.getShape()));
  results.push_back(out);
  return success();
}

static LogicalResult einsum(NodeContext &n, SmallVectorImpl<Value> &results) {
  StringRef equation = n.getString("equation", "");
  if (equation.contains("..."))
    return n.unsupported("ellipsis in equation '" + equation + "'");
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < n.numInputs(); ++i) {
    TRY(v, n.requireInput(i));
    inputs.push_back(v);
  }
  TRY(y, n.create<tsr::EinsumOp>(inputs, {n.str("equation", equation)}));
  results.push_back(y);
  return success();
}

/// MeanVarianceNormalization: (x − mean) / sqrt(mean((x − mean)²)) over
/// `axes` (default [0, 2, 3]).
static LogicalResult meanVarianceNorm(NodeContext &n,
                                      SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  int64_t rank = tensorType(x).getRank();
  SmallVector<int64_t> axes =
      n.getInts("axes").value_or(SmallVector<int64_t>{0, 2, 3});
  for (int64_t &a : axes) {
    auto norm = normalizeAxis(a, rank);
    if (failed(norm))
      return n.error("axes out of range");
    a = *norm;
  }
  llvm::sort(axes);
  auto attrs = [&] {
    return SmallVector<NamedAttribute>{n.i64s("axes", axes),
                                       n.boolean("keepdims", true)};
  };
  TRY(mean, n.create<tsr::ReduceMeanOp>({x}, attrs()));
  TRY(centered, n.create<tsr::SubOp>({x, mean}));
  TRY(sq, n.create<tsr::MulOp>({centered, centered}));
  TRY(var, n.create<tsr::ReduceMeanOp>({sq}, attrs()));
  TRY(veps, n.create<tsr::AddOp>({var, scalarLike(n, x, 1e-9)}));
  TRY(std, n.create<tsr::SqrtOp>({veps}));
  TRY(y, n.create<tsr::DivOp>({centered, std}));
  results.push_back(y);
  return success();
}

void mlir::tessera::onnx_import::populateMathNNHandlers(HandlerRegistry &r) {
  r.add("MatMul", matmul);
  r.add("Gemm", gemm, 7);
  r.add("Conv", conv);
  r.add("MaxPool", pool<tsr::MaxPoolOp>, 8);
  r.add("AveragePool", pool<tsr::AvgPoolOp>, 7);
  r.add("GlobalAveragePool", globalPool<tsr::ReduceMeanOp>);
  r.add("GlobalMaxPool", globalPool<tsr::ReduceMaxOp>);
  r.add("BatchNormalization", batchNorm, 9);
  r.add("LayerNormalization", layerNorm);
  r.add("InstanceNormalization", instanceNorm, 6);
  r.add("MeanVarianceNormalization", meanVarianceNorm, 9);
  r.add("Softmax", softmax<tsr::SoftmaxOp>);
  r.add("LogSoftmax", softmax<tsr::LogSoftmaxOp>);
  r.add("Hardmax", softmax<tsr::ArgMaxOp>);
  r.add("Einsum", einsum);
}
