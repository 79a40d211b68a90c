//===- ParameterServer.cpp - Split a step into a worker and its servers ---===//
//
// The apply half of `tsr-data-parallel-plan servers=S`: the step stays the
// workers' program (the loss and every gradient, reduced nowhere), and each
// server gets a function of its own that takes its parameters, their
// gradients and the loss, and returns them as a loss-and-gradient function
// does, for tsr-optimizer to turn into the server's update.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Parallel/Passes.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "tessera/Transforms/Parallel/Sharding.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRPARAMETERSERVER
#include "tessera/Transforms/Parallel/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

struct TsrParameterServerPass
    : tessera::impl::TsrParameterServerBase<TsrParameterServerPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f) || failed(run(*f)))
      signalPassFailure();
  }

  LogicalResult run(func::FuncOp f) {
    auto plan = f->getAttrOfType<DictionaryAttr>(tsr::attr::kParameterServer);
    if (!plan)
      return f.emitError("tsr-parameter-server needs the function's "
                         "tsr.parameter_server (tsr-data-parallel-plan "
                         "servers=S)");
    int64_t servers = plan.getAs<IntegerAttr>("servers").getInt();
    SmallVector<unsigned> carried;
    SmallVector<GradientResult> grads = getGradientResults(f, carried);
    SmallVector<SmallVector<const GradientResult *>> held(servers);
    for (const GradientResult &g : grads) {
      auto server =
          f.getResultAttrOfType<IntegerAttr>(g.result, tsr::attr::kServer);
      if (!server)
        return f.emitError("gradient result ")
               << g.result << " has no tsr.server (tsr-data-parallel-plan "
               << "puts every parameter on a server)";
      if (server.getInt() >= servers)
        return f.emitError("gradient result ")
               << g.result << " is on server " << server.getInt()
               << " of a plan with " << servers << " servers";
      held[server.getInt()].push_back(&g);
    }

    ModuleOp module = getOperation();
    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(f);
    SymbolTable symbols(module);
    for (auto [s, mine] : llvm::enumerate(held)) {
      std::string name = "server" + std::to_string(s);
      if (symbols.lookup(name))
        return f.emitError("the module already has a function @") << name;
      if (mine.empty())
        return f.emitError("server ") << s << " holds no parameter";
      // Inputs: the parameters, their gradients, the loss.
      SmallVector<Type> inputs, results;
      SmallVector<DictionaryAttr> inputAttrs, resultAttrs;
      for (const GradientResult *g : mine) {
        inputs.push_back(g->param.getType());
        inputAttrs.push_back(f.getArgAttrDict(g->param.getArgNumber()));
      }
      for (const GradientResult *g : mine) {
        inputs.push_back(g->value.getType());
        inputAttrs.push_back(b.getDictionaryAttr(
            {b.getNamedAttr(
                 tsr::attr::kName,
                 b.getStringAttr(getArgString(f, g->param.getArgNumber(),
                                              tsr::attr::kName) +
                                 ".grad")),
             b.getNamedAttr(
                 tsr::attr::kRole,
                 tsr::RoleAttr::get(b.getContext(), tsr::Role::grad))}));
      }
      inputs.push_back(f.getResultTypes()[0]);
      inputAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(tsr::attr::kName, b.getStringAttr("loss")),
           b.getNamedAttr(
               tsr::attr::kRole,
               tsr::RoleAttr::get(b.getContext(), tsr::Role::loss))}));
      results.push_back(f.getResultTypes()[0]);
      resultAttrs.push_back(f.getResultAttrDict(0));
      for (auto [i, g] : llvm::enumerate(mine)) {
        results.push_back(g->value.getType());
        NamedAttrList attrs(f.getResultAttrDict(g->result));
        attrs.set(tsr::attr::kGradOf, b.getI64IntegerAttr(i));
        attrs.erase(tsr::attr::kServer);
        resultAttrs.push_back(attrs.getDictionary(b.getContext()));
      }
      auto server = func::FuncOp::create(b, f.getLoc(), name,
                                         b.getFunctionType(inputs, results));
      server.setAllArgAttrs(inputAttrs);
      server.setAllResultAttrs(resultAttrs);
      server->setAttr(tsr::attr::kServer, b.getI64IntegerAttr(s));
      Block *body = server.addEntryBlock();
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(body);
      SmallVector<Value> returned{body->getArgument(2 * mine.size())};
      for (size_t i = 0; i < mine.size(); ++i)
        returned.push_back(body->getArgument(mine.size() + i));
      func::ReturnOp::create(b, f.getLoc(), returned);
      b.setInsertionPointAfter(server);
    }
    // A step calls the workers' program; the servers' run on other ranks,
    // which the runtime drives from the manifest's "parameter_server".
    module->setAttr(
        tsr::attr::kSchedule,
        b.getArrayAttr({FlatSymbolRefAttr::get(f.getSymNameAttr())}));
    return success();
  }
};

} // namespace
