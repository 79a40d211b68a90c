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
      // A ZeRO shard of the gradient: the step's result (now an output of
      // the artifact) says of which whole tensor, as its state does.
      if (f.getResultAttr(g.result, tsr::attr::kShards) &&
          !f.getResultAttr(g.result, tsr::attr::kGlobalShape)) {
        auto whole = f.getArgAttrOfType<DenseI64ArrayAttr>(
            g.param.getArgNumber(), tsr::attr::kGlobalShape);
        f.setResultAttr(
            g.result, tsr::attr::kGlobalShape,
            whole ? whole
                  : b.getDenseI64ArrayAttr(
                        cast<RankedTensorType>(g.param.getType()).getShape()));
      }
      // Named as the step's result, in its layout.
      NamedAttrList gradAttrs(f.getResultAttrDict(g.result));
      gradAttrs.erase(tsr::attr::kGradOf);
      gradAttrs.set(tsr::attr::kRole, tsr::RoleAttr::get(ctx, tsr::Role::grad));
      inputAttrs.push_back(gradAttrs.getDictionary(ctx));
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
    // With ZeRO, the update works on this rank's shards as the step's
    // would, and gathers what the stage keeps whole.
    if (Attribute zero = f->getAttr(tsr::attr::kZero))
      host->setAttr(tsr::attr::kZero, zero);
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
