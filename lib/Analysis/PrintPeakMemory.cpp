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
  using Base::Base;
  void runOnOperation() override {
    if (bufferPadding < 0) {
      emitError(getOperation().getLoc())
          << "tsr-print-peak-memory: buffer-padding must not be negative (got "
          << int64_t(bufferPadding) << ")";
      return signalPassFailure();
    }
    tessera::PeakMemoryOptions options;
    options.bufferPadding = bufferPadding;
    getOperation().walk([&](func::FuncOp f) {
      if (f.isExternal())
        return;
      tessera::PeakMemory peak = tessera::predictPeakMemory(f, options);
      InFlightDiagnostic remark = emitRemark(f.getLoc(), "predicted peak ")
                                  << peak.peakBytes << " bytes";
      if (!peak.peakOp)
        return;
      int64_t padding = 0;
      for (const tessera::PeakBuffer &b : peak.liveAtPeak)
        padding += b.padding;
      remark << " at '" << peak.peakOp->getName() << "' ("
             << peak.liveAtPeak.size()
             << (peak.liveAtPeak.size() == 1 ? " buffer" : " buffers")
             << " live, " << padding << " bytes of allocator padding";
      if (peak.calleeBytes)
        remark << ", " << peak.calleeBytes << " bytes in the callee";
      remark << ")";
      for (const tessera::PeakBuffer &b : peak.liveAtPeak) {
        if (b.value) {
          remark.attachNote(b.value.getLoc())
              << b.bytes << " bytes: " << b.op->getName();
          continue;
        }
        remark.attachNote(b.op->getLoc())
            << b.bytes << " bytes: " << b.op->getName() << " scratch ("
            << b.scratch << ")";
      }
    });
  }
};
} // namespace
