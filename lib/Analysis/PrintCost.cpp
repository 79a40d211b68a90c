//===- PrintCost.cpp - Report the estimated time of every function --------===//
#include "tessera/Analysis/Passes.h"

#include "tessera/Analysis/CostModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRPRINTCOST
#include "tessera/Analysis/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {
/// Parses `AXIS:ALPHA:BETA`, both numbers non-negative.
std::optional<std::pair<StringRef, tessera::LinkCost>>
parseLink(StringRef spec) {
  SmallVector<StringRef> parts;
  spec.split(parts, ':');
  tessera::LinkCost link;
  if (parts.size() != 3 || parts[0].empty() ||
      parts[1].getAsDouble(link.alpha) || parts[2].getAsDouble(link.beta) ||
      link.alpha < 0 || link.beta < 0)
    return std::nullopt;
  return std::make_pair(parts[0], link);
}

struct TsrPrintCostPass : tessera::impl::TsrPrintCostBase<TsrPrintCostPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(peakFlops > 0) || !(bandwidth > 0)) {
      module.emitError("tsr-print-cost: peak-flops and bandwidth must be "
                       "positive");
      return signalPassFailure();
    }
    llvm::StringMap<tessera::LinkCost> linkCosts;
    for (const std::string &spec : links) {
      auto link = parseLink(spec);
      if (!link) {
        module.emitError("tsr-print-cost: malformed link '")
            << spec
            << "' in links: expected AXIS:ALPHA:BETA (seconds per "
               "message, seconds per byte; both non-negative numbers)";
        return signalPassFailure();
      }
      linkCosts[link->first] = link->second;
    }
    tessera::CostModel model({peakFlops, bandwidth}, std::move(linkCosts));

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
