//===- BatchNormStatistics.cpp - Batch-statistics batch normalization -----===//
#include "tessera/Transforms/Autodiff/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/GradientRules.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRBATCHNORMSTATISTICS
#include "tessera/Transforms/Autodiff/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// The argument `v` is, if it holds running statistics.
BlockArgument statisticsArgument(func::FuncOp f, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &f.getBody().front() ||
      !f.getArgAttr(arg.getArgNumber(), tsr::attr::kStatistics))
    return BlockArgument();
  return arg;
}

struct TsrBatchNormStatisticsPass
    : tessera::impl::TsrBatchNormStatisticsBase<TsrBatchNormStatisticsPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f) || failed(run(*f)))
      signalPassFailure();
  }

  LogicalResult run(func::FuncOp f) {
    if (!(momentum >= 0.0 && momentum <= 1.0))
      return f.emitError("batch-norm momentum must lie in [0, 1], got ")
             << momentum.getValue();
    SmallVector<tsr::BatchNormOp> ops;
    f.walk([&](tsr::BatchNormOp op) {
      if (statisticsArgument(f, op.getMean()) &&
          statisticsArgument(f, op.getVar()))
        ops.push_back(op);
    });
    if (ops.empty())
      return success();
    auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
    // The updated statistics, returned after the function's results.
    SmallVector<Value> extra;
    SmallVector<DictionaryAttr> extraAttrs;
    llvm::DenseSet<BlockArgument> updated;
    for (tsr::BatchNormOp op : ops) {
      OpBuilder b(op);
      GradientBuilder g(b, op.getLoc());
      Value x = op.getX();
      auto type = getTensorType(x);
      SmallVector<int64_t> axes{0}, channelShape(type.getRank(), 1);
      for (int64_t d = 2; d < type.getRank(); ++d)
        axes.push_back(d);
      channelShape[1] = type.getDimSize(1);
      int64_t count = type.getNumElements() / type.getDimSize(1);
      Value invCount = g.scalarLike(x, 1.0 / double(count));
      Value mean = g.mul(g.reduceSum(x, axes, /*keepdims=*/false), invCount);
      Value xc = g.sub(x, g.reshape(mean, channelShape));
      Value var =
          g.mul(g.reduceSum(g.mul(xc, xc), axes, /*keepdims=*/false), invCount);
      auto normalized = tsr::BatchNormOp::create(
          b, op.getLoc(), x, op.getScale(), op.getBias(), mean, var,
          op.getEpsilonAttr());
      op.getResult().replaceAllUsesWith(normalized.getResult());

      b.setInsertionPoint(ret);
      for (auto [running, batch] :
           {std::pair<Value, Value>{op.getMean(), mean}, {op.getVar(), var}}) {
        BlockArgument arg = statisticsArgument(f, running);
        if (!updated.insert(arg).second)
          return op.emitOpError("shares running statistics '")
                 << getArgString(f, arg.getArgNumber(), tsr::attr::kName)
                 << "' with another batch_norm; each needs its own";
        Value next = g.add(g.mul(g.scalarLike(running, momentum), running),
                           g.mul(g.scalarLike(running, 1.0 - momentum), batch));
        extra.push_back(next);
        extraAttrs.push_back(b.getDictionaryAttr(
            {b.getNamedAttr(tsr::attr::kName,
                            b.getStringAttr(getArgString(f, arg.getArgNumber(),
                                                         tsr::attr::kName))),
             b.getNamedAttr(
                 tsr::attr::kRole,
                 tsr::RoleAttr::get(b.getContext(), tsr::Role::param)),
             b.getNamedAttr(tsr::attr::kUpdates,
                            b.getI64IntegerAttr(arg.getArgNumber()))}));
      }
      op.erase();
    }
    SmallVector<Value> results(ret.getOperands());
    results.append(extra);
    SmallVector<DictionaryAttr> attrs;
    for (unsigned i = 0, e = f.getNumResults(); i < e; ++i)
      attrs.push_back(f.getResultAttrDict(i));
    attrs.append(extraAttrs);
    OpBuilder b(ret);
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    f.setType(b.getFunctionType(f.getArgumentTypes(),
                                ValueRange(results).getTypes()));
    for (DictionaryAttr &a : attrs)
      if (!a)
        a = b.getDictionaryAttr({});
    f.setAllResultAttrs(attrs);
    return success();
  }
};

} // namespace
