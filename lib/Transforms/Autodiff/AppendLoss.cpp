//===- AppendLoss.cpp - Turn a model into a scalar loss function ----------===//
#include "tessera/Transforms/Autodiff/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/GradientRules.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRAPPENDLOSS
#include "tessera/Transforms/Autodiff/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

StringRef resultName(func::FuncOp f, unsigned i) {
  return getResultString(f, i, tsr::attr::kName);
}

std::string resultList(func::FuncOp f) {
  SmallVector<std::string> names;
  for (unsigned i = 0, e = f.getNumResults(); i < e; ++i)
    names.push_back(
        llvm::formatv("'{0}' {1}", resultName(f, i), f.getResultTypes()[i])
            .str());
  return llvm::join(names, ", ");
}

/// A result the model adds to its training loss (a MoE layer's
/// load-balancing loss, from import).
bool isAuxLoss(func::FuncOp f, unsigned i) {
  return static_cast<bool>(f.getResultAttr(i, tsr::attr::kAuxLoss));
}

bool isScalarFloat(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && tensor.getRank() == 0 &&
         isa<FloatType>(tensor.getElementType());
}

struct TsrAppendLossPass : tessera::impl::TsrAppendLossBase<TsrAppendLossPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f) || failed(run(*f)))
      signalPassFailure();
  }

  FailureOr<unsigned> findResult(func::FuncOp f, StringRef name,
                                 StringRef what) {
    for (unsigned i = 0, e = f.getNumResults(); i < e; ++i)
      if (resultName(f, i) == name)
        return i;
    return f.emitError("the model has no output named '")
           << name << "' (" << what << "); its outputs are " << resultList(f);
  }

  /// The existing result that is the loss.
  FailureOr<Value> existingLoss(func::FuncOp f, func::ReturnOp ret) {
    if (!output.empty()) {
      FailureOr<unsigned> i = findResult(f, output, "the loss output");
      if (failed(i))
        return failure();
      if (!isScalarFloat(f.getResultTypes()[*i]))
        return f.emitError("loss output '")
               << output << "' is not a floating-point scalar: "
               << f.getResultTypes()[*i];
      return ret.getOperand(*i);
    }
    SmallVector<unsigned> scalars;
    for (unsigned i = 0, e = f.getNumResults(); i < e; ++i)
      if (isScalarFloat(f.getResultTypes()[i]) && !isAuxLoss(f, i) &&
          !isMetricResult(f, i))
        scalars.push_back(i);
    if (scalars.size() != 1)
      return f.emitError("cannot tell which output is the loss: ")
             << scalars.size() << " outputs are floating-point scalars among "
             << resultList(f)
             << "; name one (--loss-output) or append a loss "
                "(--loss=cross_entropy|mse --logits=NAME)";
    return ret.getOperand(scalars.front());
  }

  FailureOr<Value> appendLoss(func::FuncOp f, func::ReturnOp ret) {
    if (loss != "cross_entropy" && loss != "mse")
      return f.emitError("unknown loss '")
             << loss << "' (supported: cross_entropy, mse)";
    if (loss != "cross_entropy" &&
        ignoreIndex != std::numeric_limits<int64_t>::min())
      return f.emitError("ignore-index applies to the cross_entropy loss "
                         "only");
    unsigned index = 0;
    if (!logits.empty()) {
      FailureOr<unsigned> i = findResult(f, logits, "--logits");
      if (failed(i))
        return failure();
      index = *i;
    } else {
      SmallVector<unsigned> outputs;
      for (unsigned i = 0, e = f.getNumResults(); i < e; ++i)
        if (!f.getResultAttr(i, tsr::attr::kUpdates) && !isAuxLoss(f, i) &&
            !isMetricResult(f, i))
          outputs.push_back(i);
      if (outputs.size() != 1)
        return f.emitError("the model has ")
               << outputs.size() << " outputs (" << resultList(f)
               << "); name the one the loss reads with --logits";
      index = outputs.front();
    }
    Value y = ret.getOperand(index);
    auto yType = cast<RankedTensorType>(y.getType());
    if (!isa<FloatType>(yType.getElementType()) || yType.getRank() == 0)
      return f.emitError("--logits output '")
             << resultName(f, index)
             << "' must be a floating-point tensor of rank >= 1, got " << yType;
    for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i)
      if (auto n = f.getArgAttrOfType<StringAttr>(i, tsr::attr::kName))
        if (n.getValue() == labels)
          return f.emitError("labels name '")
                 << labels << "' is already an input or parameter of the "
                 << "model; choose another with --labels";

    OpBuilder b(ret);
    Location loc = NameLoc::get(b.getStringAttr("loss"), ret.getLoc());
    GradientBuilder g(b, loc);
    int64_t rank = yType.getRank();
    Type labelType;
    if (loss == "mse")
      labelType = yType;
    else
      labelType =
          RankedTensorType::get(yType.getShape().drop_back(), b.getI64Type());
    unsigned argIndex = f.getNumArguments();
    if (failed(f.insertArgument(
            argIndex, labelType,
            b.getDictionaryAttr(
                {b.getNamedAttr(tsr::attr::kName, b.getStringAttr(labels)),
                 b.getNamedAttr(
                     tsr::attr::kRole,
                     tsr::RoleAttr::get(b.getContext(), tsr::Role::label))}),
            loc)))
      return failure();
    Value t = f.getArgument(argIndex);

    if (loss == "mse") {
      Value d = g.sub(y, t);
      Value sq = g.mul(d, d);
      SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, rank));
      Value sum = g.reduceSum(sq, all, /*keepdims=*/false);
      return g.div(sum, g.scalarLike(sum, double(yType.getNumElements())));
    }
    // Classes on the last axis, where the ONNX loss wants them on axis 1:
    // every sample becomes a row of [samples, classes]. A mean over all
    // samples does not depend on their order, and a row per sample keeps
    // the log-softmax a reduction over contiguous classes; transposing to
    // [N, C, d...] instead would copy the logits and their gradient.
    Value scores = y;
    if (rank != 2) {
      int64_t samples =
          ShapedType::getNumElements(yType.getShape().drop_back());
      scores = g.reshape(y, {samples, yType.getShape().back()});
      t = g.reshape(t, {samples});
    }
    IntegerAttr ignore;
    if (ignoreIndex != std::numeric_limits<int64_t>::min())
      ignore = b.getI64IntegerAttr(ignoreIndex);
    return tsr::SoftmaxCrossEntropyLossOp::create(
               b, loc, RankedTensorType::get({}, yType.getElementType()),
               scores, t, Value(),
               tsr::LossReductionAttr::get(b.getContext(),
                                           tsr::LossReduction::mean),
               ignore)
        .getResult();
  }

  LogicalResult run(func::FuncOp f) {
    auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
    FailureOr<Value> lossValue =
        loss.empty() ? existingLoss(f, ret) : appendLoss(f, ret);
    if (failed(lossValue))
      return failure();
    OpBuilder b(ret);
    // Auxiliary losses add to the loss and are results no more.
    Value total = *lossValue;
    for (unsigned i = 0, e = f.getNumResults(); i < e; ++i) {
      if (!isAuxLoss(f, i))
        continue;
      Value aux = ret.getOperand(i);
      if (aux.getType() != total.getType())
        return f.emitError("auxiliary loss '")
               << resultName(f, i) << "' has type " << aux.getType()
               << ", the loss " << total.getType();
      GradientBuilder g(b, aux.getLoc());
      total = g.add(total, aux);
    }
    lossValue = total;
    // State updates (results with tsr.updates) and metrics stay, after the
    // loss.
    SmallVector<Value> results{*lossValue};
    SmallVector<DictionaryAttr> attrs{b.getDictionaryAttr(
        {b.getNamedAttr(tsr::attr::kName, b.getStringAttr("loss")),
         b.getNamedAttr(tsr::attr::kRole,
                        tsr::RoleAttr::get(b.getContext(), tsr::Role::loss))})};
    for (unsigned i = 0, e = f.getNumResults(); i < e; ++i) {
      if (!f.getResultAttr(i, tsr::attr::kUpdates) && !isMetricResult(f, i))
        continue;
      results.push_back(ret.getOperand(i));
      attrs.push_back(f.getResultAttrDict(i));
    }
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    f.setType(b.getFunctionType(f.getArgumentTypes(),
                                ValueRange(results).getTypes()));
    f.setAllResultAttrs(attrs);
    return success();
  }
};

} // namespace
