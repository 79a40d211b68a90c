//===- PrintPeakMemory.cpp - Report the predicted peak memory -------------===//
#include "tessera/Analysis/Passes.h"

#include "tessera/Analysis/PeakMemory.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRPRINTPEAKMEMORY
#include "tessera/Analysis/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {
struct TsrPrintPeakMemoryPass
    : tessera::impl::TsrPrintPeakMemoryBase<TsrPrintPeakMemoryPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp f) {
      if (f.isExternal())
        return;
      tessera::PeakMemory peak = tessera::predictPeakMemory(f);
      InFlightDiagnostic remark = emitRemark(f.getLoc(), "predicted peak ")
                                  << peak.peakBytes << " bytes";
      if (!peak.peakOp)
        return;
      remark << " at '" << peak.peakOp->getName() << "' ("
             << peak.liveAtPeak.size() << " buffers live)";
      for (auto &[value, bytes] : peak.liveAtPeak) {
        Operation *def = value.getDefiningOp();
        remark.attachNote(value.getLoc())
            << bytes << " bytes: "
            << (def ? def->getName().getStringRef() : StringRef("argument"));
      }
    });
  }
};
} // namespace
