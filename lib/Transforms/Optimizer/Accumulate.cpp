//===- Accumulate.cpp - Gradient accumulation over micro-batches ----------===//
#include "tessera/Transforms/Optimizer/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/GradientRules.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRACCUMULATEGRADIENTS
#include "tessera/Transforms/Optimizer/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// Data and label arguments are split; parameters are shared.
bool isBatched(func::FuncOp f, unsigned i) {
  tsr::Role role = getArgRole(f, i);
  return role == tsr::Role::data || role == tsr::Role::label;
}

struct TsrAccumulateGradientsPass
    : tessera::impl::TsrAccumulateGradientsBase<TsrAccumulateGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (microBatches == 1)
      return;
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> f =
        getTrainingFunction(module, getArgument(), function);
    if (failed(f))
      return signalPassFailure();
    if (microBatches < 1) {
      module.emitError("micro-batches must be at least 1, got ")
          << microBatches.getValue();
      return signalPassFailure();
    }
    if (failed(run(module, *f)))
      signalPassFailure();
  }

  LogicalResult run(ModuleOp module, func::FuncOp micro) {
    FunctionType microType = micro.getFunctionType();
    int64_t k = microBatches;
    SmallVector<Type> argTypes;
    bool anyBatched = false;
    for (auto [i, t] : llvm::enumerate(microType.getInputs())) {
      auto tensor = cast<RankedTensorType>(t);
      if (!isBatched(micro, i) || tensor.getRank() == 0) {
        argTypes.push_back(t);
        continue;
      }
      anyBatched = true;
      SmallVector<int64_t> shape(tensor.getShape());
      shape[0] *= k;
      argTypes.push_back(tensor.clone(shape));
    }
    if (!anyBatched)
      return micro.emitError("gradient accumulation needs a data or label "
                             "input with a batch dimension");
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointAfter(micro);
    auto step = func::FuncOp::create(
        b, micro.getLoc(), micro.getName(),
        b.getFunctionType(argTypes, microType.getResults()));
    step.setAllArgAttrs(micro.getAllArgAttrs());
    step.setAllResultAttrs(micro.getAllResultAttrs());
    // Its arguments are the same blocks of split values.
    if (Attribute axes = micro->getAttr(tsr::attr::kPartitioned))
      step->setAttr(tsr::attr::kPartitioned, axes);
    // The micro-step keeps no attributes the manifest would read.
    micro.removeArgAttrsAttr();
    micro.removeResAttrsAttr();
    SymbolTable symbols(module);
    micro.setPrivate();
    if (failed(symbols.rename(micro, "tessera_micro_step")))
      return micro.emitError("cannot rename the micro-step");

    Block *body = step.addEntryBlock();
    b.setInsertionPointToStart(body);
    Location loc = NameLoc::get(b.getStringAttr("accumulate"), micro.getLoc());
    GradientBuilder g(b, loc);
    SmallVector<Value> sums;
    for (int64_t j = 0; j < k; ++j) {
      SmallVector<Value> operands;
      for (auto [i, arg] : llvm::enumerate(body->getArguments())) {
        auto microArg = cast<RankedTensorType>(microType.getInput(i));
        if (getArgRole(step, i) == tsr::Role::rng) {
          // Micro-batch j of step s draws the masks of stream s·k + j.
          Value stream = g.mul(arg, g.splat(microArg, double(k)));
          operands.push_back(g.add(stream, g.splat(microArg, double(j))));
          continue;
        }
        if (arg.getType() == microArg) {
          operands.push_back(arg);
          continue;
        }
        int64_t rows = microArg.getDimSize(0);
        SmallVector<int64_t> starts(microArg.getRank(), 0),
            limits(microArg.getShape()), steps(microArg.getRank(), 1);
        starts[0] = j * rows;
        limits[0] = (j + 1) * rows;
        operands.push_back(g.slice(arg, starts, limits, steps));
      }
      auto call = func::CallOp::create(b, loc, micro, operands);
      for (auto [i, r] : llvm::enumerate(call.getResults())) {
        if (j == 0)
          sums.push_back(r);
        else
          sums[i] = g.add(sums[i], r);
      }
    }
    // The loss, gradients and statistics are means over the micro-batches;
    // a metric is a sum.
    SmallVector<Value> results;
    for (auto [i, s] : llvm::enumerate(sums))
      results.push_back(
          isMetricResult(step, i) ? s : g.div(s, g.scalarLike(s, double(k))));
    func::ReturnOp::create(b, loc, results);
    return success();
  }
};

} // namespace
