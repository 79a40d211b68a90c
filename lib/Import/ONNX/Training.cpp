//===- Training.cpp - ONNX Dropout and losses to tsr ----------------------===//
//
// Dropout in inference mode is its input plus an all-true mask; with a
// constant true training_mode it becomes tsr.dropout (seeded by the node's
// `seed`, or by a hash of its name). SoftmaxCrossEntropyLoss and
// NegativeLogLikelihoodLoss map to the tsr losses; the optional log_prob output
// is a tsr.log_softmax.
//
//===----------------------------------------------------------------------===//
#include "HandlerUtils.h"

#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::tessera::onnx_import;

static LogicalResult dropout(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(x, n.requireInput(0));
  double ratio = 0.5;
  bool training = false;
  if (n.sinceVersion() < 12) {
    ratio = n.getFloat("ratio", 0.5);
  } else {
    if (n.input(2)) {
      TRY(t, n.requireScalar(2, "training_mode"));
      training = t != 0.0;
    }
    // The ratio only matters in training mode.
    if (training && n.input(1)) {
      TRY(r, n.requireScalar(1, "ratio"));
      ratio = r;
    }
  }
  auto xt = tensorType(x);
  if (!training || ratio == 0.0) {
    TRY(y, n.create<tsr::IdentityOp>({x}));
    results.push_back(y);
    if (n.numOutputs() > 1)
      results.push_back(
          n.constant(DenseElementsAttr::get(xt.clone(n.b.getI1Type()), true)));
    return success();
  }
  // Without a `seed` ONNX lets the runtime choose one: derive it from the
  // node's name, so that two dropout layers never share their masks.
  int64_t seed = n.hasAttr("seed")
                     ? n.getInt("seed", 0)
                     : (int64_t)(llvm::xxh3_64bits(n.node.getName()) >> 1);
  auto ys = n.build(tsr::DropoutOp::getOperationName(), {x},
                    {n.f64("ratio", ratio), n.i64("seed", seed)}, 2);
  if (failed(ys))
    return failure();
  results.append(ys->begin(), ys->end());
  return success();
}

template <typename OpT>
static LogicalResult loss(NodeContext &n, SmallVectorImpl<Value> &results) {
  TRY(scores, n.requireInput(0));
  TRY(target, n.requireInput(1));
  SmallVector<Value> operands = {scores, target};
  if (Value w = n.input(2))
    operands.push_back(w);
  StringRef reduction = n.getString("reduction", "mean");
  auto reductionAttr = n.enumAttr<tsr::LossReductionAttr, tsr::LossReduction>(
      "reduction", reduction);
  if (!reductionAttr)
    return n.unsupported("reduction = '" + reduction + "'");
  SmallVector<NamedAttribute> attrs = {*reductionAttr};
  if (n.hasAttr("ignore_index"))
    attrs.push_back(n.i64("ignore_index", n.getInt("ignore_index", 0)));
  auto st = tensorType(scores);
  SmallVector<int64_t> lossShape;
  if (reduction == "none") {
    lossShape.push_back(st.getDimSize(0));
    llvm::append_range(lossShape, st.getShape().drop_front(2));
  }
  TRY(l, n.create<OpT>(operands, attrs, st.clone(lossShape)));
  results.push_back(l);
  if constexpr (std::is_same_v<OpT, tsr::SoftmaxCrossEntropyLossOp>) {
    if (n.numOutputs() > 1) {
      TRY(logProb, n.create<tsr::LogSoftmaxOp>({scores}, {n.i64("axis", 1)}));
      results.push_back(logProb);
    }
  }
  return success();
}

void mlir::tessera::onnx_import::populateTrainingHandlers(HandlerRegistry &r) {
  r.add("Dropout", dropout);
  r.add("SoftmaxCrossEntropyLoss", loss<tsr::SoftmaxCrossEntropyLossOp>);
  r.add("NegativeLogLikelihoodLoss", loss<tsr::NegativeLogLikelihoodLossOp>);
}
