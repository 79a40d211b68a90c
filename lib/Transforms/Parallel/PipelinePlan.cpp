//===- PipelinePlan.cpp - Choose the pipeline stage of every forward op ---===//
#include "tessera/Transforms/Parallel/Passes.h"

#include "tessera/Analysis/CostModel.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "tessera/Transforms/Parallel/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRPIPELINEPLAN
#include "tessera/Transforms/Parallel/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

bool mlir::tessera::isCopiedIntoStages(Operation *op) {
  return op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
         op->getNumResults() > 0 && isMemoryEffectFree(op);
}

namespace {

struct TsrPipelinePlanPass
    : tessera::impl::TsrPipelinePlanBase<TsrPipelinePlanPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f) || failed(plan(*f)))
      signalPassFailure();
  }

  LogicalResult plan(func::FuncOp f) {
    int64_t p = stages;
    if (p == 0) {
      FailureOr<int64_t> size =
          tsr::getMeshGroupSize(f, ArrayRef<StringRef>{axis});
      if (failed(size))
        return failure();
      p = *size;
    }
    if (p < 1)
      return f.emitError("a pipeline needs at least one stage, got ") << p;
    if (virtualStages < 1)
      return f.emitError("a pipeline stage runs at least one model chunk, "
                         "got virtual-stages=")
             << virtualStages.getValue();
    // The model's chunks: `virtualStages` per rank.
    int64_t ranks = p;
    p *= virtualStages;
    if (!f.getBody().hasOneBlock())
      return f.emitError("tsr-pipeline-plan expects a single-block function");
    Block &body = f.getBody().front();

    // The ops that get a stage, in program order, with their cost.
    SmallVector<Operation *> ops;
    SmallVector<double> seconds;
    CostModel costs({peakFlops, bandwidth}, {});
    for (Operation &op : body.without_terminator()) {
      if (isCopiedIntoStages(&op))
        continue;
      ops.push_back(&op);
      seconds.push_back(costs.getComputeCost(&op).seconds);
    }
    auto n = static_cast<int64_t>(ops.size());
    if (n < p)
      return f.emitError("cannot cut ")
             << n << " ops into " << p << " pipeline "
             << (p == ranks ? "stages" : "chunks");

    // crossing[j]: bytes of the values live across the cut before ops[j]
    // (defined before it, used at or after it). Batch inputs are on every
    // rank and constants are copied, so neither crosses; a parameter
    // crosses between its first and last use.
    llvm::DenseMap<Operation *, int64_t> index;
    for (auto [i, op] : llvm::enumerate(ops))
      index[op] = static_cast<int64_t>(i);
    SmallVector<double> delta(n + 1, 0);
    auto addLive = [&](Value v, int64_t from) {
      int64_t last = -1;
      for (Operation *user : v.getUsers()) {
        Operation *top = body.findAncestorOpInBlock(*user);
        if (auto it = index.find(top); it != index.end())
          last = std::max(last, it->second);
      }
      if (last <= from)
        return;
      double bytes = double(tsr::getStaticTensorBytes(v.getType()));
      delta[from + 1] += bytes;
      delta[last + 1] -= bytes;
    };
    for (auto [i, op] : llvm::enumerate(ops))
      for (Value r : op->getResults())
        addLive(r, static_cast<int64_t>(i));
    for (BlockArgument arg : f.getArguments()) {
      if (getArgRole(f, arg.getArgNumber()) != tsr::Role::param)
        continue;
      int64_t first = n;
      for (Operation *user : arg.getUsers())
        if (auto it = index.find(body.findAncestorOpInBlock(*user));
            it != index.end())
          first = std::min(first, it->second);
      if (first < n)
        addLive(arg, first);
    }
    SmallVector<double> crossing(n + 1, 0), prefix(n + 1, 0);
    for (int64_t j = 1; j <= n; ++j) {
      crossing[j] = crossing[j - 1] + delta[j];
      prefix[j] = prefix[j - 1] + seconds[j - 1];
    }

    // starts[k]: the index of stage k's first op.
    SmallVector<int64_t> starts{0};
    if (!split.empty()) {
      if (static_cast<int64_t>(split.size()) != p - 1)
        return f.emitError("pipeline split names ")
               << split.size() << " node(s), but " << p
               << (p == ranks ? " stages" : " chunks") << " need " << p - 1;
      for (const std::string &node : split) {
        int64_t at = -1;
        for (int64_t j = 0; j < n && at < 0; ++j)
          if (tsr::getNodeName(ops[j]->getLoc()) == node)
            at = j;
        if (at < 0)
          return f.emitError("pipeline split: no op comes from an ONNX node "
                             "named '")
                 << node << "'";
        if (at <= starts.back())
          return f.emitError("pipeline split: node '")
                 << node
                 << "' does not come after the start of the previous stage "
                    "(name the nodes in program order)";
        starts.push_back(at);
      }
    } else {
      double total = prefix[n];
      for (int64_t k = 1; k < p; ++k) {
        double target = total * double(k) / double(p);
        int64_t best = -1;
        double bestScore = 0;
        // Leave at least one op for each later stage.
        for (int64_t j = starts.back() + 1; j <= n - (p - k); ++j) {
          double score =
              std::abs(prefix[j] - target) + crossing[j] * linkSecondsPerByte;
          if (best < 0 || score < bestScore) {
            best = j;
            bestScore = score;
          }
        }
        starts.push_back(best);
      }
    }
    starts.push_back(n);

    Builder b(f.getContext());
    SmallVector<Attribute> stageSeconds, cutBytes;
    for (int64_t k = 0; k < p; ++k) {
      for (int64_t j = starts[k]; j < starts[k + 1]; ++j)
        ops[j]->setAttr(tsr::attr::kStage, b.getI64IntegerAttr(k));
      stageSeconds.push_back(
          b.getF64FloatAttr(prefix[starts[k + 1]] - prefix[starts[k]]));
      if (k > 0)
        cutBytes.push_back(
            b.getI64IntegerAttr(static_cast<int64_t>(crossing[starts[k]])));
    }
    f->setAttr(tsr::attr::kPipeline,
               b.getDictionaryAttr(
                   {b.getNamedAttr("axis", b.getStringAttr(axis)),
                    b.getNamedAttr("stages", b.getI64IntegerAttr(ranks)),
                    b.getNamedAttr("virtual_stages",
                                   b.getI64IntegerAttr(virtualStages)),
                    b.getNamedAttr("seconds", b.getArrayAttr(stageSeconds)),
                    b.getNamedAttr("cut_bytes", b.getArrayAttr(cutBytes))}));
    return success();
  }
};

} // namespace
