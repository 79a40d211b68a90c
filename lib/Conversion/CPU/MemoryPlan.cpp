//===- MemoryPlan.cpp - Peak allocated bytes of the model function --------===//
#include "tessera/Conversion/CPU/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRCPUMEMORYPLAN
#include "tessera/Conversion/CPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// Bytes of a statically shaped buffer (i1 takes one byte, as lowered;
/// index, which buffer deallocation's ownership lists hold, 8).
std::optional<int64_t> bufferBytes(MemRefType type) {
  if (!type.hasStaticShape())
    return std::nullopt;
  unsigned bits =
      type.getElementType().isIndex() ? 64 : type.getElementTypeBitWidth();
  return type.getNumElements() * int64_t((bits + 7) / 8);
}

struct Simulator {
  SymbolTableCollection symbols;
  int64_t live = 0, peak = 0;

  LogicalResult run(Region &region) {
    for (Operation &op : region.getOps()) {
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        std::optional<int64_t> bytes = bufferBytes(alloc.getType());
        if (!bytes)
          return alloc.emitError("tsr-cpu-memory-plan: dynamically sized "
                                 "allocation");
        // finalize-memref-to-llvm over-allocates by the alignment and
        // aligns the pointer itself.
        live += *bytes + int64_t(alloc.getAlignment().value_or(0));
        peak = std::max(peak, live);
        continue;
      }
      if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        auto type = cast<MemRefType>(dealloc.getMemref().getType());
        int64_t padding = 0;
        if (auto alloc = dealloc.getMemref().getDefiningOp<memref::AllocOp>())
          padding = alloc.getAlignment().value_or(0);
        live -= bufferBytes(type).value_or(0) + padding;
        continue;
      }
      if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr());
        if (callee && !callee.isExternal() && failed(run(callee.getBody())))
          return failure();
        continue;
      }
      for (Region &nested : op.getRegions())
        if (failed(run(nested)))
          return failure();
    }
    return success();
  }
};

struct TsrCpuMemoryPlanPass
    : tessera::impl::TsrCpuMemoryPlanBase<TsrCpuMemoryPlanPass> {
  using Base::Base;
  void runOnOperation() override {
    for (auto program : getOperation().getOps<func::FuncOp>()) {
      if (!program.isPublic() || program.isExternal())
        continue;
      Simulator sim;
      if (failed(sim.run(program.getBody())))
        return signalPassFailure();
      program->setAttr(
          tsr::attr::kPeakAllocBytes,
          IntegerAttr::get(IntegerType::get(&getContext(), 64), sim.peak));
    }
  }
};

} // namespace
