//===- Reductions.cpp - ONNX reductions to tsr ----------------------------===//
//
// ReduceSum/Mean/Max/Min/Prod directly; ReduceL1, L2, LogSum, LogSumExp and
// SumSquare decomposed. Axes come from the attribute (before ReduceSum-13
// and the others' 18) or from a constant input (after), with
// noop_with_empty_axes. Also ArgMax/ArgMin, CumSum and TopK.
//
//===----------------------------------------------------------------------===//
#include "HandlerUtils.h"

using namespace mlir;
using namespace mlir::tessera::onnx_import;

/// The sorted, normalized reduction axes of the node, or empty optional
/// when the reduction is a no-op (empty axes with noop_with_empty_axes).
static FailureOr<std::optional<SmallVector<int64_t>>>
readAxes(NodeContext &n, int64_t rank, bool axesIsInput) {
  std::optional<SmallVector<int64_t>> axes;
  if (axesIsInput && n.input(1) && !n.constantInput(1)) {
    // Axes computed at run time: recover them from the static output type
    // when keepdims makes that unambiguous.
    auto out = n.staticOutputType(0);
    auto in = n.inputType(0);
    if (!out || !n.getInt("keepdims", 1) || out.getRank() != rank)
      return n.unsupported("input 1 ('axes') must be a constant");
    SmallVector<int64_t> derived;
    for (int64_t d = 0; d < rank; ++d)
      if (out.getDimSize(d) == 1 && in.getDimSize(d) != 1)
        derived.push_back(d);
    if (derived.empty())
      return std::optional<SmallVector<int64_t>>();
    return std::optional<SmallVector<int64_t>>(derived);
  }
  if (axesIsInput) {
    if (n.input(1)) {
      auto v = n.requireInts(1, "axes");
      if (failed(v))
        return failure();
      axes = *v;
    }
  } else {
    axes = n.getInts("axes");
  }
  if (!axes || axes->empty()) {
    if (n.getInt("noop_with_empty_axes", 0))
      return std::optional<SmallVector<int64_t>>();
    return std::optional<SmallVector<int64_t>>(
        llvm::to_vector(llvm::seq<int64_t>(0, rank)));
  }
  for (int64_t &a : *axes) {
    auto norm = normalizeAxis(a, rank);
    if (failed(norm))
      return n.error("reduction axis " + Twine(a) + " out of range for rank " +
                     Twine(rank));
    a = *norm;
  }
  llvm::sort(*axes);
  axes->erase(std::unique(axes->begin(), axes->end()), axes->end());
  return axes;
}

namespace {
enum class Pre { None, Abs, Square, Exp };
enum class Post { None, Sqrt, Log };
} // namespace

template <typename OpT, Pre pre = Pre::None, Post post = Post::None,
          bool axesIsInput = false>
static LogicalResult reduce(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  auto xt = tensorType(x);
  TRY(axes, readAxes(n, xt.getRank(), axesIsInput));
  bool keepdims = n.getInt("keepdims", 1) != 0;
  if (!axes) {
    // noop_with_empty_axes: the op is the identity (after its pre-map).
    Value y = x;
    if constexpr (pre == Pre::Abs) {
      TRY(a, n.create<tsr::AbsOp>({x}));
      y = a;
    } else if constexpr (pre == Pre::Square) {
      TRY(s, n.create<tsr::MulOp>({x, x}));
      y = s;
    }
    results.push_back(y);
    return success();
  }
  auto attrs = [&](bool keep) {
    return SmallVector<NamedAttribute>{n.i64s("axes", *axes),
                                       n.boolean("keepdims", keep)};
  };
  Value in = x, shift;
  if constexpr (pre == Pre::Abs) {
    TRY(a, n.create<tsr::AbsOp>({x}));
    in = a;
  } else if constexpr (pre == Pre::Square) {
    TRY(s, n.create<tsr::MulOp>({x, x}));
    in = s;
  } else if constexpr (pre == Pre::Exp) {
    // log Σ e^x = m + log Σ e^(x − m), m the maximum, for stability.
    TRY(m, n.create<tsr::ReduceMaxOp>({x}, attrs(true)));
    TRY(centered, n.create<tsr::SubOp>({x, m}));
    TRY(e, n.create<tsr::ExpOp>({centered}));
    in = e;
    shift = m;
  }
  TRY(r, n.create<OpT>({in}, attrs(pre == Pre::Exp ? true : keepdims)));
  Value y = r;
  if constexpr (post == Post::Sqrt) {
    TRY(s, n.create<tsr::SqrtOp>({y}));
    y = s;
  } else if constexpr (post == Post::Log) {
    TRY(l, n.create<tsr::LogOp>({y}));
    y = l;
  }
  if (shift) {
    TRY(sum, n.create<tsr::AddOp>({y, shift}));
    y = sum;
    if (!keepdims) {
      SmallVector<int64_t> shape;
      for (int64_t d = 0; d < xt.getRank(); ++d)
        if (!llvm::is_contained(*axes, d))
          shape.push_back(xt.getDimSize(d));
      TRY(reshaped, n.reshape(y, shape));
      y = reshaped;
    }
  }
  results.push_back(y);
  return success();
}

template <typename OpT>
static LogicalResult argReduce(NodeContext &n,
                               SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  auto axis = normalizeAxis(n.getInt("axis", 0), tensorType(x).getRank());
  if (failed(axis))
    return n.error("axis out of range");
  TRY(y,
      n.create<OpT>({x}, {n.i64("axis", *axis),
                          n.boolean("keepdims", n.getInt("keepdims", 1) != 0),
                          n.boolean("select_last_index",
                                    n.getInt("select_last_index", 0) != 0)}));
  results.push_back(y);
  return success();
}

static LogicalResult cumsum(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(axisValue, n.requireScalar(1, "axis"));
  auto axis =
      normalizeAxis(static_cast<int64_t>(axisValue), tensorType(x).getRank());
  if (failed(axis))
    return n.error("axis out of range");
  TRY(y, n.create<tsr::CumSumOp>(
             {x}, {n.i64("axis", *axis),
                   n.boolean("exclusive", n.getInt("exclusive", 0) != 0),
                   n.boolean("reverse", n.getInt("reverse", 0) != 0)}));
  results.push_back(y);
  return success();
}

static LogicalResult topk(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  int64_t k;
  if (n.sinceVersion() < 10) {
    k = n.getInt("k", 0);
  }
  auto axis = normalizeAxis(n.getInt("axis", -1), tensorType(x).getRank());
  if (failed(axis))
    return n.error("axis out of range");
  if (n.sinceVersion() >= 10) {
    auto out = n.staticOutputType(0);
    if (!n.constantInput(1) && out &&
        out.getRank() == tensorType(x).getRank()) {
      k = out.getDimSize(*axis);
    } else {
      TRY(kv, n.requireScalar(1, "K"));
      k = static_cast<int64_t>(kv);
    }
  }
  auto ys = n.build(tsr::TopKOp::getOperationName(), {x},
                    {n.i64("k", k), n.i64("axis", *axis),
                     n.boolean("largest", n.getInt("largest", 1) != 0),
                     n.boolean("sorted", n.getInt("sorted", 1) != 0)},
                    2);
  if (failed(ys))
    return failure();
  results.append(ys->begin(), ys->end());
  return success();
}

void mlir::tessera::onnx_import::populateReductionHandlers(HandlerRegistry &r) {
  r.add("ReduceSum", reduce<tsr::ReduceSumOp>, 1, 12);
  r.add("ReduceSum", reduce<tsr::ReduceSumOp, Pre::None, Post::None, true>, 13);
#define TSR_REDUCE(NAME, OP, PRE, POST)                                        \
  r.add(NAME, reduce<OP, PRE, POST>, 1, 17);                                   \
  r.add(NAME, reduce<OP, PRE, POST, true>, 18);
  TSR_REDUCE("ReduceMean", tsr::ReduceMeanOp, Pre::None, Post::None)
  TSR_REDUCE("ReduceMax", tsr::ReduceMaxOp, Pre::None, Post::None)
  TSR_REDUCE("ReduceMin", tsr::ReduceMinOp, Pre::None, Post::None)
  TSR_REDUCE("ReduceProd", tsr::ReduceProdOp, Pre::None, Post::None)
  TSR_REDUCE("ReduceL1", tsr::ReduceSumOp, Pre::Abs, Post::None)
  TSR_REDUCE("ReduceL2", tsr::ReduceSumOp, Pre::Square, Post::Sqrt)
  TSR_REDUCE("ReduceSumSquare", tsr::ReduceSumOp, Pre::Square, Post::None)
  TSR_REDUCE("ReduceLogSum", tsr::ReduceSumOp, Pre::None, Post::Log)
  TSR_REDUCE("ReduceLogSumExp", tsr::ReduceSumOp, Pre::Exp, Post::Log)
#undef TSR_REDUCE
  r.add("ArgMax", argReduce<tsr::ArgMaxOp>);
  r.add("ArgMin", argReduce<tsr::ArgMinOp>);
  r.add("CumSum", cumsum);
  r.add("TopK", topk);
}
