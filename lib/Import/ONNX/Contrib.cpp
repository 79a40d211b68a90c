//===- Contrib.cpp - onnxruntime contrib ops to tsr -----------------------===//
//
// com.microsoft MoE (onnxruntime 1.23's definition) becomes the tsr
// mixture-of-experts family: softmax over the router logits, tsr.topk, the
// optional renormalization of the gates, moe_assign (dropless: each expert's
// buffer holds every token of a group, unless --moe-capacity-factor sets a
// capacity), moe_dispatch into [experts, groups, capacity, hidden], the two
// (or, for SwiGLU, three) expert layers as batched matmuls over the expert
// dimension, and moe_combine weighted by the gates. A 3-D input routes each
// sequence as its own group. With --moe-aux-loss the layer's Switch
// load-balancing loss is an extra result the training loss adds; a training
// import also reports each layer's tokens per expert and dropped choices as
// metric results.
//
//===----------------------------------------------------------------------===//
#include "HandlerUtils.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::tessera::onnx_import;

namespace {

/// x [E, N, in] times each expert's weight w [E, out, in] transposed, plus
/// the bias [E, out] when present: [E, N, out].
FailureOr<Value> expertLinear(NodeContext &n, Value x, Value w, Value bias) {
  TRY(wt, n.transpose(w, {0, 2, 1}));
  TRY(y, n.create<tsr::MatMulOp>({x, wt}));
  if (!bias)
    return y;
  auto bt = tensorType(bias), wType = tensorType(w);
  if (bt.getRank() != 2 || bt.getDimSize(0) != wType.getDimSize(0) ||
      bt.getDimSize(1) != wType.getDimSize(1))
    return n.error(llvm::formatv("an expert bias must be [{0}, {1}], not {2}",
                                 wType.getDimSize(0), wType.getDimSize(1), bt));
  TRY(b3, n.reshape(bias, {bt.getDimSize(0), 1, bt.getDimSize(1)}));
  return n.create<tsr::AddOp>({y, b3});
}

/// A slice of the last dimension: [start, limit) by `step`.
FailureOr<Value> sliceLast(NodeContext &n, Value x, int64_t start,
                           int64_t limit, int64_t step) {
  auto shape = tensorType(x).getShape();
  SmallVector<int64_t> starts(shape.size(), 0), limits(shape),
      steps(shape.size(), 1);
  starts.back() = start;
  limits.back() = limit;
  steps.back() = step;
  return n.create<tsr::SliceOp>({x}, {n.i64s("starts", starts),
                                      n.i64s("limits", limits),
                                      n.i64s("steps", steps)});
}

/// onnxruntime's SwiGLU: G = min(g, limit), L = clip(l, ±limit),
/// G·sigmoid(alpha·G)·(L + beta); no clamping without a limit.
FailureOr<Value> swiglu(NodeContext &n, Value g, Value l) {
  double alpha = n.getFloat("activation_alpha", 1.0),
         beta = n.getFloat("activation_beta", 0.0);
  if (n.hasAttr("swiglu_limit")) {
    double limit = n.getFloat("swiglu_limit", 0.0);
    TRY(gc, n.create<tsr::ClipOp>({g}, {n.f64("max", limit)}));
    TRY(lc, n.create<tsr::ClipOp>({l},
                                  {n.f64("min", -limit), n.f64("max", limit)}));
    g = gc;
    l = lc;
  }
  Value ga = g;
  if (alpha != 1.0) {
    TRY(scaled, n.create<tsr::MulOp>({g, scalarLike(n, g, alpha)}));
    ga = scaled;
  }
  TRY(gate, n.create<tsr::SigmoidOp>({ga}));
  TRY(act, n.create<tsr::MulOp>({g, gate}));
  if (beta != 0.0) {
    TRY(shifted, n.create<tsr::AddOp>({l, scalarLike(n, l, beta)}));
    l = shifted;
  }
  return n.create<tsr::MulOp>({act, l});
}

/// The Switch Transformer's load-balancing loss (Fedus et al., 2021, eq. 4)
/// per group, averaged over the groups, times the coefficient:
/// coef · E · mean_g Σ_e f[g, e] · P[g, e], where f is the fraction of the
/// group's routed choices that chose expert e (its top-1 fraction for
/// k = 1) and P the mean router probability of e over the group's tokens.
/// f counts, so the gradient reaches the router through P.
FailureOr<Value> switchLoss(NodeContext &n, Value probs, Value chosen,
                            int64_t experts) {
  auto pt = tensorType(probs), ct = tensorType(chosen);
  Type elem = pt.getElementType();
  int64_t groups = pt.getDimSize(0);
  TRY(hot,
      n.create<tsr::OneHotOp>(
          {chosen},
          {n.i64("depth", experts), n.i64("axis", -1), n.f64("on_value", 1.0),
           n.f64("off_value", 0.0)},
          RankedTensorType::get(
              {groups, ct.getDimSize(1), ct.getDimSize(2), experts}, elem)));
  TRY(fraction,
      n.create<tsr::ReduceMeanOp>(
          {hot}, {n.i64s("axes", {1, 2}), n.boolean("keepdims", false)}));
  TRY(mean, n.create<tsr::ReduceMeanOp>(
                {probs}, {n.i64s("axes", {1}), n.boolean("keepdims", false)}));
  TRY(product, n.create<tsr::MulOp>({fraction, mean}));
  TRY(total,
      n.create<tsr::ReduceSumOp>(
          {product}, {n.i64s("axes", {0, 1}), n.boolean("keepdims", false)}));
  return n.create<tsr::MulOp>(
      {total, n.scalar(elem, n.moeAuxLoss * double(experts) / double(groups))});
}

/// The layer's routing, summed over the batch: the choices each expert was
/// routed (int64 [experts]) and those that found no slot (int64 scalar).
LogicalResult routingStatistics(NodeContext &n, Value chosen, Value slots,
                                int64_t experts) {
  auto ct = tensorType(chosen);
  Type i64 = n.b.getI64Type();
  TRY(hot, n.create<tsr::OneHotOp>(
               {chosen},
               {n.i64("depth", experts), n.i64("axis", -1),
                n.f64("on_value", 1.0), n.f64("off_value", 0.0)},
               RankedTensorType::get({ct.getDimSize(0), ct.getDimSize(1),
                                      ct.getDimSize(2), experts},
                                     i64)));
  TRY(load, n.create<tsr::ReduceSumOp>({hot}, {n.i64s("axes", {0, 1, 2}),
                                               n.boolean("keepdims", false)}));
  TRY(missed, n.create<tsr::LessOp>({slots, n.scalar(i64, 0)}));
  TRY(counted, n.castTo(missed, i64));
  TRY(dropped,
      n.create<tsr::ReduceSumOp>({counted}, {n.i64s("axes", {0, 1, 2}),
                                             n.boolean("keepdims", false)}));
  n.metrics.emplace_back(load, "tokens_per_expert");
  n.metrics.emplace_back(dropped, "dropped");
  return success();
}

LogicalResult moe(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  TRY(logits, n.requireInput(1));
  TRY(w1, n.requireInput(2));
  TRY(w2, n.requireInput(4));
  Value b1 = n.input(3), b2 = n.input(5), w3 = n.input(6), b3 = n.input(7);
  if (n.getInt("use_sparse_mixer", 0) != 0)
    return n.unsupported("use_sparse_mixer = 1 (SparseMixer routing)");

  auto xt = tensorType(x), lt = tensorType(logits);
  if (xt.getRank() != 2 && xt.getRank() != 3)
    return n.error(llvm::formatv(
        "input must be [tokens, hidden] or [batch, seq, hidden], not {0}", xt));
  int64_t hidden = xt.getShape().back();
  int64_t groups = xt.getRank() == 3 ? xt.getDimSize(0) : 1;
  int64_t tokens = xt.getNumElements() / std::max<int64_t>(hidden, 1) / groups;
  if (lt.getRank() != 2 || lt.getDimSize(0) != groups * tokens)
    return n.error(llvm::formatv("router_probs must be [{0}, experts], not {1}",
                                 groups * tokens, lt));
  int64_t experts = lt.getDimSize(1);
  auto w1t = tensorType(w1), w2t = tensorType(w2);
  StringRef activation = n.getString("activation_type", "relu");
  bool gated = activation == "swiglu";
  int64_t fusion = gated ? n.getInt("swiglu_fusion", 0) : 0;
  if (fusion < 0 || fusion > 2)
    return n.error(
        llvm::formatv("swiglu_fusion = {0} is not 0, 1 or 2", fusion));
  if (w1t.getRank() != 3 || w1t.getDimSize(0) != experts ||
      w1t.getDimSize(2) != hidden)
    return n.error(
        llvm::formatv("fc1_experts_weights must be [{0}, inter, {1}], not {2}",
                      experts, hidden, w1t));
  int64_t inter = w1t.getDimSize(1) / (fusion ? 2 : 1);
  if (w2t.getRank() != 3 || w2t.getDimSize(0) != experts ||
      w2t.getDimSize(1) != hidden || w2t.getDimSize(2) != inter)
    return n.error(
        llvm::formatv("fc2_experts_weights must be [{0}, {1}, {2}], not {3}",
                      experts, hidden, inter, w2t));
  if (gated && fusion == 0 && !w3)
    return n.error("swiglu with swiglu_fusion = 0 needs fc3_experts_weights");
  if (!gated && w3)
    return n.unsupported("fc3_experts_weights with activation_type '" +
                         activation + "' (only swiglu uses FC3)");
  int64_t k = n.getInt("k", 1);
  if (k < 1 || k > experts)
    return n.error(llvm::formatv("k = {0} must be in [1, {1}]", k, experts));

  // Routing, per group: softmax, top-k, optional renormalization, slots.
  TRY(xg, n.reshape(x, {groups, tokens, hidden}));
  TRY(lg, n.reshape(logits, {groups, tokens, experts}));
  TRY(probs, n.create<tsr::SoftmaxOp>({lg}, {n.i64("axis", 2)}));
  auto topk =
      n.build(tsr::TopKOp::getOperationName(), {probs},
              {n.i64("k", k), n.i64("axis", 2), n.boolean("largest", true)}, 2);
  if (failed(topk))
    return failure();
  Value gates = (*topk)[0], chosen = (*topk)[1];
  if (n.getInt("normalize_routing_weights", 0) != 0) {
    TRY(sum, n.create<tsr::ReduceSumOp>(
                 {gates}, {n.i64s("axes", {2}), n.boolean("keepdims", true)}));
    TRY(normalized, n.create<tsr::DivOp>({gates, sum}));
    gates = normalized;
  }
  // Dropless unless a capacity factor is given (GShard's capacity:
  // factor · tokens · k / experts per expert and group).
  int64_t capacity = tokens;
  if (n.moeCapacityFactor > 0)
    capacity = std::clamp<int64_t>(
        static_cast<int64_t>(std::ceil(n.moeCapacityFactor * double(tokens) *
                                       double(k) / double(experts))),
        1, tokens);
  auto assigned =
      n.build(tsr::MoeAssignOp::getOperationName(), {chosen},
              {n.i64("num_experts", experts), n.i64("capacity", capacity)}, 2);
  if (failed(assigned))
    return failure();
  Value slots = (*assigned)[0], sources = (*assigned)[1];

  // The experts, as batched matmuls over [experts, groups·capacity, ·].
  Type elem = xt.getElementType();
  auto bufType =
      RankedTensorType::get({experts, groups, capacity, hidden}, elem);
  TRY(buffer,
      n.create<tsr::MoeDispatchOp>({xg, chosen, slots, sources}, {}, bufType));
  TRY(rows, n.reshape(buffer, {experts, groups * capacity, hidden}));
  TRY(h1, expertLinear(n, rows, w1, b1));
  Value h = h1;
  if (activation == "relu") {
    TRY(r, n.create<tsr::ReluOp>({h1}));
    h = r;
  } else if (activation == "gelu") {
    // onnxruntime's MoE uses the tanh approximation.
    auto approx =
        n.enumAttr<tsr::GeluApproximationAttr, tsr::GeluApproximation>(
            "approximate", "tanh");
    TRY(r, n.create<tsr::GeluOp>({h1}, {*approx}));
    h = r;
  } else if (activation == "silu") {
    TRY(sig, n.create<tsr::SigmoidOp>({h1}));
    TRY(r, n.create<tsr::MulOp>({h1, sig}));
    h = r;
  } else if (gated) {
    Value g = h1, l;
    if (fusion == 0) {
      TRY(h3, expertLinear(n, rows, w3, b3));
      l = h3;
    } else {
      int64_t step = fusion == 1 ? 2 : 1;
      TRY(gs, sliceLast(n, h1, 0, fusion == 1 ? 2 * inter : inter, step));
      TRY(ls, sliceLast(n, h1, fusion == 1 ? 1 : inter, 2 * inter, step));
      g = gs;
      l = ls;
    }
    TRY(r, swiglu(n, g, l));
    h = r;
  } else if (activation != "identity") {
    return n.unsupported("activation_type '" + activation + "'");
  }
  TRY(out, expertLinear(n, h, w2, b2));
  TRY(out4, n.reshape(out, {experts, groups, capacity, hidden}));
  TRY(y, n.create<tsr::MoeCombineOp>({out4, chosen, slots, sources, gates}, {},
                                     xg.getType()));
  TRY(result, n.reshape(y, xt.getShape()));
  results.push_back(result);
  if (n.moeAuxLoss > 0) {
    TRY(aux, switchLoss(n, probs, chosen, experts));
    n.auxLosses.push_back(aux);
  }
  if (n.moeStatistics)
    return routingStatistics(n, chosen, slots, experts);
  return success();
}

} // namespace

void mlir::tessera::onnx_import::populateContribHandlers(HandlerRegistry &r) {
  r.add("com.microsoft.MoE", moe);
}
