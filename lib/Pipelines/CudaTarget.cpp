//===- CudaTarget.cpp - The CUDA target: kernels in a fatbin, host code ---===//
//
// tsr → linalg → one-shot bufferization → one gpu.launch per linalg op
// (tsr-gpu-map, tsr-gpu-launch), buffers in device memory → kernels outlined
// into a gpu.module and lowered to NVVM → SASS for the chosen architecture plus
// PTX in a fatbin (ptxas and fatbinary from the toolkit, libdevice linked) →
// host code calling the `mgpu*` launch ABI, which libtessera_runtime
// implements over the CUDA driver → model.so. See docs/gpu.md.
//
//===----------------------------------------------------------------------===//
#include "tessera/Pipelines/Target.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "tessera/Conversion/CPU/Passes.h"
#include "tessera/Conversion/CollectivesToRuntime/Passes.h"
#include "tessera/Conversion/GPU/Passes.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"

extern "C" void LLVMInitializeNVPTXTargetInfo();
extern "C" void LLVMInitializeNVPTXTargetMC();

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// The architecture whose PTX runs on `arch` and on later GPUs: `arch`
/// without the suffix of an arch-specific (sm_90a) or family-specific
/// (sm_100f) feature set.
StringRef portableArch(StringRef arch) {
  if (arch.size() > 3 && (arch.back() == 'a' || arch.back() == 'f') &&
      llvm::isDigit(arch[arch.size() - 2]))
    return arch.drop_back();
  return arch;
}

class CudaTarget : public TargetBackend {
public:
  explicit CudaTarget(const CudaTargetOptions &options) : options(options) {}

  StringRef getName() const override { return "cuda"; }

  /// Device memory, in memref's default space: the host never touches a
  /// buffer of the program (tsr-gpu-launch checks it).
  SmallVector<TargetMemorySpace> getMemorySpaces(MLIRContext *) const override {
    return {{"device", Attribute()}};
  }

  bool isSupportedElementType(Type elementType) const override {
    return !getDTypeName(elementType).empty();
  }

  // One H100 SXM from NVIDIA's data sheet, which a cluster file replaces:
  // the f32 CUDA-core peak (67 TFLOP/s; the generated kernels use no tensor
  // cores yet) and HBM3 bandwidth (3.35 TB/s).
  CostParameters getCostParameters() const override {
    return {/*peakFlops=*/67e12, /*memoryBandwidth=*/3.35e12};
  }

  /// NCCL over NVLink inside one node: 10 microseconds per message and
  /// 200 GB/s per direction (estimates, not measurements).
  LinkCost getDefaultLinkCost(ArrayRef<int64_t>, unsigned) const override {
    return {/*alpha=*/10e-6, /*beta=*/1.0 / 200e9};
  }

  /// Attention to cuDNN, while its pattern is still tsr ops.
  void buildTsrPipeline(OpPassManager &pm) const override {
    pm.addNestedPass<func::FuncOp>(createTsrGpuAttention());
  }

  /// Long reductions with few outputs split across blocks.
  void buildTensorPipeline(OpPassManager &funcPm) const override {
    funcPm.addPass(createTsrCpuFuseElementwise());
    funcPm.addPass(createTsrGpuSplitReductions());
  }

  void buildCodegenPipeline(OpPassManager &pm) const override {
    // A strided collective buffer's copies become kernels like any copy.
    pm.addNestedPass<func::FuncOp>(createTsrContiguousCollectives());
    pm.addNestedPass<func::FuncOp>(createTsrCpuEarlyDealloc());
    pm.addPass(createTsrCpuMemoryPlan());
    pm.addNestedPass<func::FuncOp>(createTsrGpuGemm());
    pm.addNestedPass<func::FuncOp>(createTsrGpuMap());
    pm.addPass(createTsrGpuHorizontalFuse());
    pm.addNestedPass<func::FuncOp>(createTsrGpuLaunch());
    // Constants and index math used in a kernel are recomputed there rather
    // than passed in as parameters.
    pm.addPass(createGpuLaunchSinkIndexComputationsPass());
    pm.addPass(createGpuKernelOutliningPass());
    pm.addPass(createTsrGpuMergeKernels());
    pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
    // Collectives are async ops on the stream now: their calls pass it, and
    // the runtime orders its communication stream after it with events, so
    // the host never waits for one.
    pm.addPass(createTsrCollectivesToRuntime());
    // A module pass: it declares the runtime function in the module.
    pm.addPass(createTsrGpuLibraryCalls());
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createSCFToControlFlowPass());

    GpuNVVMAttachTargetOptions nvvm;
    nvvm.chip = options.arch;
    // PTX ISA 8.0 is the first with sm_90a; LLVM's default (6.0) aborts.
    nvvm.features = "+ptx80";
    nvvm.optLevel = 3;
    nvvm.linkLibs.push_back(options.toolkit +
                            "/nvvm/libdevice/libdevice.10.bc");
    pm.addPass(createGpuNVVMAttachTarget(nvvm));
    // An arch-specific chip's PTX JITs on that chip only: the family's PTX
    // is the fallback that later GPUs run (tsr-gpu-fatbin).
    if (StringRef family = portableArch(options.arch); family != options.arch) {
      nvvm.chip = family.str();
      pm.addPass(createGpuNVVMAttachTarget(nvvm));
    }
    OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
    kernels.addPass(createStripDebugInfoPass());
    kernels.addPass(createTsrGpuLowerSubgroupReduce());
    kernels.addPass(createConvertGpuOpsToNVVMOps());
    kernels.addPass(createCanonicalizerPass());
    kernels.addPass(createCSEPass());
    kernels.addPass(createReconcileUnrealizedCastsPass());

    pm.addPass(arith::createArithExpandOpsPass());
    pm.addPass(createArithToLLVMConversionPass());
    pm.addPass(createConvertIndexToLLVMPass());
    pm.addPass(createConvertControlFlowToLLVMPass());
    ConvertFuncToLLVMPassOptions funcToLlvm;
    funcToLlvm.useBarePtrCallConv = true;
    pm.addPass(createConvertFuncToLLVMPass(funcToLlvm));
    pm.addPass(createGpuToLLVMConversionPass());
    pm.addPass(createFinalizeMemRefToLLVMConversionPass());
    pm.addPass(createUBToLLVMConversionPass());
    pm.addPass(createReconcileUnrealizedCastsPass());

    GpuModuleToBinaryPassOptions binary;
    binary.toolkitPath = options.toolkit;
    binary.compilationTarget = "isa";
    pm.addPass(createGpuModuleToBinaryPass(binary));
    if (options.binaryFormat == "fatbin")
      pm.addPass(createTsrGpuFatbin({options.toolkit}));
    pm.addPass(createTsrCpuEntryPoint());
  }

  /// The kernels' fatbin is data of model.so; the `mgpu*` functions its
  /// host code calls resolve against libtessera_runtime when the runtime
  /// loads it, so model.so itself needs no CUDA library.
  LogicalResult emitLibrary(ModuleOp lowered, StringRef dir,
                            TimingScope &timing) const override {
    registerGPUDialectTranslation(*lowered.getContext());
    registerNVVMDialectTranslation(*lowered.getContext());
    return emitHostLibrary(lowered, dir, {}, timing);
  }

private:
  CudaTargetOptions options;
};

} // namespace

bool mlir::tessera::isKnownGpuArch(StringRef arch) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTargetMC();
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return false;
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, "", ""));
  return info && info->isCPUStringValid(arch);
}

std::unique_ptr<TargetBackend>
mlir::tessera::createCudaTarget(const CudaTargetOptions &options) {
  return std::make_unique<CudaTarget>(options);
}
