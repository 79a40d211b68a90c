//===- MergeKernels.cpp - Every outlined kernel in one gpu.module ---------===//
#include "tessera/Conversion/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPUMERGEKERNELS
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// The name of the merged module.
constexpr StringLiteral kModuleName = "tessera_kernels";

/// `name` as a PTX identifier: a letter, `_` or `$` first, then letters,
/// digits, `_` or `$` (a host function of a layer cell, `layers0-3.update`,
/// names its kernel with `-` and `.`, which NVPTX refuses with a fatal
/// error).
StringAttr ptxName(StringAttr name) {
  std::string text = name.str();
  for (char &c : text)
    if (!llvm::isAlnum(c) && c != '_' && c != '$')
      c = '_';
  if (text.empty() || llvm::isDigit(text.front()))
    text.insert(text.begin(), '_');
  return StringAttr::get(name.getContext(), text);
}

struct TsrGpuMergeKernelsPass
    : tessera::impl::TsrGpuMergeKernelsBase<TsrGpuMergeKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernels(module.getOps<gpu::GPUModuleOp>());
    if (kernels.empty())
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
        StringAttr wanted = ptxName(kernel.getSymNameAttr());
        if (name != wanted) {
          // The module's name, made unique where two sanitize alike.
          StringAttr candidate = wanted;
          for (unsigned i = 0; mergedSymbols.lookup(candidate); ++i)
            candidate = StringAttr::get(&getContext(),
                                        wanted.getValue() + "_" + Twine(i));
          if (failed(mergedSymbols.rename(&op, candidate))) {
            op.emitError("tsr-gpu-merge-kernels: cannot rename the kernel to ")
                << candidate;
            return signalPassFailure();
          }
          name = candidate;
        }
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
