//===- MergeKernels.cpp - Every outlined kernel in one gpu.module ---------===//
#include "tessera/Conversion/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPUMERGEKERNELS
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// The name of the merged module.
constexpr StringLiteral kModuleName = "tessera_kernels";

struct TsrGpuMergeKernelsPass
    : tessera::impl::TsrGpuMergeKernelsBase<TsrGpuMergeKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernels(module.getOps<gpu::GPUModuleOp>());
    if (kernels.size() < 2)
      return;
    for (gpu::GPUModuleOp kernel : kernels)
      if (kernel.getTargetsAttr() || kernel.getOffloadingHandlerAttr()) {
        kernel.emitError("tsr-gpu-merge-kernels: expected gpu.modules "
                         "without targets (run it before attaching one)");
        return signalPassFailure();
      }
    SymbolTable symbols(module);
    OpBuilder builder(kernels.front());
    auto merged = gpu::GPUModuleOp::create(builder, kernels.front().getLoc(),
                                           kModuleName);
    symbols.insert(merged);
    SymbolTable mergedSymbols(merged);
    // Each function takes its module's name, unique in the parent; the
    // outliner names every kernel function after its host function, so
    // those collide.
    DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp kernel : kernels) {
      for (Operation &op :
           llvm::make_early_inc_range(kernel.getBody()->getOperations())) {
        auto symbol = dyn_cast<SymbolOpInterface>(op);
        if (!symbol) {
          op.emitError("tsr-gpu-merge-kernels: expected only symbols in a "
                       "gpu.module");
          return signalPassFailure();
        }
        StringAttr old = symbol.getNameAttr();
        op.moveBefore(merged.getBody(), merged.getBody()->end());
        StringAttr name = mergedSymbols.insert(&op);
        if (name != kernel.getSymNameAttr() &&
            succeeded(mergedSymbols.rename(&op, kernel.getSymNameAttr())))
          name = kernel.getSymNameAttr();
        renamed[{kernel.getSymNameAttr(), old}] = name;
      }
    }
    WalkResult walk = module.walk([&](gpu::LaunchFuncOp launch) {
      auto it =
          renamed.find({launch.getKernelModuleName(), launch.getKernelName()});
      if (it == renamed.end()) {
        launch.emitError("tsr-gpu-merge-kernels: launches a kernel of no "
                         "gpu.module");
        return WalkResult::interrupt();
      }
      launch.setKernelAttr(SymbolRefAttr::get(
          merged.getSymNameAttr(), {FlatSymbolRefAttr::get(it->second)}));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (gpu::GPUModuleOp kernel : kernels)
      kernel.erase();
  }
};

} // namespace
