//===- PrintCost.cpp - Report the estimated time of every function --------===//
#include "tessera/Analysis/Passes.h"

#include "tessera/Analysis/ClusterSpec.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRPRINTCOST
#include "tessera/Analysis/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {
struct TsrPrintCostPass : tessera::impl::TsrPrintCostBase<TsrPrintCostPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(peakFlops > 0) || !(bandwidth > 0)) {
      module.emitError("tsr-print-cost: peak-flops and bandwidth must be "
                       "positive");
      return signalPassFailure();
    }
    tessera::ClusterSpec spec;
    if (!cluster.empty()) {
      llvm::Expected<tessera::ClusterSpec> read =
          tessera::readClusterSpec(cluster);
      if (!read) {
        module.emitError("tsr-print-cost: ")
            << llvm::toString(read.takeError());
        return signalPassFailure();
      }
      spec = std::move(*read);
    }
    // The link of every axis of every mesh that the cluster file gives one
    // (there is no default link): both figures, or neither.
    llvm::StringMap<tessera::LinkCost> linkCosts;
    WalkResult meshes = module->walk([&](Operation *op) {
      auto mesh = op->getAttrOfType<tsr::MeshAttr>(tsr::attr::kMesh);
      if (!mesh)
        return WalkResult::advance();
      for (StringAttr axis : mesh.getNames()) {
        tessera::LinkSpec link = spec.getLink(axis);
        if (link.alpha && link.beta) {
          linkCosts[axis] = {*link.alpha, *link.beta};
        } else if (link.alpha || link.beta) {
          StringRef missing = link.alpha ? "bandwidth_gb_per_s" : "latency_us";
          op->emitError("tsr-print-cost: ")
              << cluster << " gives mesh axis '" << axis.getValue() << "' no "
              << missing << " (in links." << axis.getValue()
              << " or default_link)";
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (meshes.wasInterrupted())
      return signalPassFailure();
    tessera::CostModel model(spec.getCostParameters({peakFlops, bandwidth}),
                             std::move(linkCosts));

    auto print = [](const char *format, double x) {
      std::string text;
      llvm::raw_string_ostream(text) << llvm::format(format, x);
      return text;
    };
    auto fmt = [&](double x) { return print("%.4g", x); };
    auto count = [&](double x) { return print("%.0f", x); };
    WalkResult walk = module.walk([&](func::FuncOp f) {
      if (f.isExternal())
        return WalkResult::advance();
      FailureOr<tessera::FunctionCost> cost = model.getFunctionCost(f);
      if (failed(cost))
        return WalkResult::interrupt();
      InFlightDiagnostic remark =
          mlir::emitRemark(f.getLoc(), "estimated ")
          << fmt(cost->getSeconds()) << " s: compute "
          << fmt(cost->compute.seconds) << " s (" << count(cost->compute.flops)
          << " flops, " << count(cost->compute.bytes)
          << " bytes), communication " << fmt(cost->communication.seconds)
          << " s (" << count(cost->communication.bytes) << " bytes)";
      for (auto &[op, opCost] : cost->collectives)
        remark.attachNote(op->getLoc())
            << op->getName().stripDialect() << " over "
            << op->getAttr("mesh_axes") << ": " << count(opCost.bytes)
            << " bytes, " << fmt(opCost.seconds) << " s";
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
