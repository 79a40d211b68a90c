//===- OffloadOptimizer.cpp - Move the update into a host program ---------===//
//
// ZeRO-Offload's split of a step (Ren et al., 2021): the loss-and-gradient
// function stays the device program, and a new public function, marked
// tsr.on_host, takes the parameters and the gradients for tsr-optimizer to
// turn into the update. The runtime keeps what the host program reads
// between steps (parameters, optimizer state) in host memory and copies
// the gradients down and the parameters up.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Optimizer/Passes.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "tessera/Transforms/Parallel/Sharding.h"
#include "tessera/Transforms/Precision/LossScale.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSROFFLOADOPTIMIZER
#include "tessera/Transforms/Optimizer/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

struct TsrOffloadOptimizerPass
    : tessera::impl::TsrOffloadOptimizerBase<TsrOffloadOptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f) || failed(run(*f)))
      signalPassFailure();
  }

  /// Why the update of `f` cannot run apart from it, or "".
  std::string refusal(func::FuncOp f, ArrayRef<unsigned> carried) {
    if (getOperation()->hasAttr(tsr::attr::kSchedule))
      return "the module already has a schedule of several programs "
             "(a pipeline or parameter servers)";
    if (auto zero = f->getAttrOfType<tsr::ZeroAttr>(tsr::attr::kZero))
      if (zero.getStage() > 0)
        return "ZeRO stage " + std::to_string(zero.getStage()) +
               " shards the update and all-gathers its parameters on the "
               "device (use ZeRO stage 0)";
    for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i)
      if (getArgString(f, i, tsr::attr::kName) == kLossScaleState)
        return "loss scaling unscales the loss in the update (use "
               "--loss-scale=none)";
    if (!carried.empty())
      return "result " + std::to_string(carried.front()) +
             " updates running statistics in the step";
    return "";
  }

  LogicalResult run(func::FuncOp f) {
    SmallVector<unsigned> carried;
    SmallVector<GradientResult> grads = getGradientResults(f, carried);
    if (grads.empty())
      return f.emitError("no gradient to update: the step returns none");
    if (std::string why = refusal(f, carried); !why.empty())
      return f.emitError("cannot offload the optimizer to the host: ") << why;
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    if (symbols.lookup(update))
      return f.emitError("the module already has a function @") << update;

    // Inputs: the parameters, then a gradient input named as the step's
    // gradient result, which the runtime binds it to.
    MLIRContext *ctx = f.getContext();
    OpBuilder b(ctx);
    SmallVector<Type> inputs, results;
    SmallVector<DictionaryAttr> inputAttrs, resultAttrs;
    for (const GradientResult &g : grads) {
      inputs.push_back(g.param.getType());
      inputAttrs.push_back(f.getArgAttrDict(g.param.getArgNumber()));
    }
    for (auto [i, g] : llvm::enumerate(grads)) {
      inputs.push_back(g.value.getType());
      StringRef name = getResultString(f, g.result, tsr::attr::kName);
      inputAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(tsr::attr::kName, b.getStringAttr(name)),
           b.getNamedAttr(tsr::attr::kRole,
                          tsr::RoleAttr::get(ctx, tsr::Role::grad))}));
      results.push_back(g.value.getType());
      NamedAttrList attrs(f.getResultAttrDict(g.result));
      attrs.set(tsr::attr::kGradOf, b.getI64IntegerAttr(i));
      resultAttrs.push_back(attrs.getDictionary(ctx));
    }
    b.setInsertionPointAfter(f);
    auto host = func::FuncOp::create(b, f.getLoc(), update,
                                     b.getFunctionType(inputs, results));
    host.setAllArgAttrs(inputAttrs);
    host.setAllResultAttrs(resultAttrs);
    host->setAttr(tsr::attr::kOnHost, UnitAttr::get(ctx));
    Block *body = host.addEntryBlock();
    b.setInsertionPointToEnd(body);
    func::ReturnOp::create(b, f.getLoc(),
                           body->getArguments().drop_front(grads.size()));
    module->setAttr(tsr::attr::kSchedule,
                    b.getArrayAttr({FlatSymbolRefAttr::get(f.getSymNameAttr()),
                                    FlatSymbolRefAttr::get(host)}));
    return success();
  }
};

} // namespace
