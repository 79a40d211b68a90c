//===- CpuTarget.cpp - The CPU target: LLVM code and a shared object ------===//
//
// tsr → linalg → one-shot bufferization (outputs become caller-owned
// buffers) → BLAS calls for f32 GEMMs → tiled vector code, or loops where
// the vectorizer declines → LLVM dialect → LLVM IR at -O3 for the host CPU →
// object → model.so linked with OpenBLAS and libm.
//
//===----------------------------------------------------------------------===//
#include "tessera/Pipelines/Target.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"
#include "tessera/Conversion/CPU/Passes.h"
#include "tessera/Conversion/CollectivesToRuntime/Passes.h"
#include "tessera/Conversion/GPU/Passes.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"
#include "llvm/Transforms/Utils/CodeExtractor.h"

using namespace mlir;
using namespace mlir::tessera;

namespace {
/// Finds an LLVM 22 tool: next to the LLVM we were built against first.
std::string findLlvmTool(StringRef name) {
  if (auto p = llvm::sys::findProgramByName(name, {"/usr/lib/llvm-22/bin"}))
    return *p;
  if (auto p = llvm::sys::findProgramByName((name + "-22").str()))
    return *p;
  return "";
}

class CpuTarget : public TargetBackend {
public:
  explicit CpuTarget(const CpuTargetOptions &options) : options(options) {}

  StringRef getName() const override { return "cpu"; }

  /// Host memory only, in memref's default space.
  SmallVector<TargetMemorySpace> getMemorySpaces(MLIRContext *) const override {
    return {{"host", Attribute()}};
  }

  /// Every element type an artifact's manifest can name.
  bool isSupportedElementType(Type elementType) const override {
    return !getDTypeName(elementType).empty();
  }

  // Defaults measured on the development machine (2 cores, see
  // docs/pipeline.md and docs/analysis.md), which a cluster file replaces:
  // f32 GEMM through OpenBLAS on 2 threads (0.185 TFLOP/s) and a 512 MiB
  // copy (25 GB/s).
  CostParameters getCostParameters() const override {
    return {/*peakFlops=*/185e9, /*memoryBandwidth=*/25e9};
  }

  /// Every axis is MPI over shared memory on one host, whatever the mesh:
  /// beta from a 4 MB all-reduce on 4 ranks (~6 ms for the 6 MB each rank
  /// moves: 1 GB/s); alpha (5 microseconds) an estimate of one MPI message
  /// over shared memory, not a measurement.
  LinkCost getDefaultLinkCost(ArrayRef<int64_t>, unsigned) const override {
    return {/*alpha=*/5e-6, /*beta=*/1e-9};
  }

  /// Emulating the CUDA target, its library decisions too: attention to
  /// cuDNN (which the runtime's fake cuDNN computes on the host in tests).
  void buildTsrPipeline(OpPassManager &pm) const override {
    if (!options.gpuMapping.empty())
      pm.addNestedPass<func::FuncOp>(createTsrGpuAttention());
  }

  /// Emulating the CUDA target, its split reductions too.
  void buildTensorPipeline(OpPassManager &funcPm) const override {
    funcPm.addPass(createTsrCpuFuseElementwise());
    if (!options.gpuMapping.empty())
      funcPm.addPass(createTsrGpuSplitReductions());
  }

  // Linalg ops left after the BLAS rewrite are tiled and vectorized on
  // buffers; what the vectorizer does not take becomes scalar loops. No
  // canonicalize runs on vector code: MLIR 22's vector.shape_cast
  // canonicalization miscompiles some shape_cast(broadcast) pairs (see
  // tsr-cpu-vectorize's description).
  /// Collectives become calls first, with a null stream (MPI has none).
  void buildCodegenPipeline(OpPassManager &pm) const override {
    pm.addNestedPass<func::FuncOp>(createTsrContiguousCollectives());
    pm.addPass(createTsrCollectivesToRuntime());
    pm.addNestedPass<func::FuncOp>(createTsrCpuEarlyDealloc());
    pm.addPass(createTsrCpuMemoryPlan());
    if (!options.gpuMapping.empty()) {
      pm.addNestedPass<func::FuncOp>(createTsrGpuMap());
      pm.addPass(createTsrGpuHorizontalFuse());
      pm.addNestedPass<func::FuncOp>(createTsrGpuEmulate({options.gpuMapping}));
      // The library calls run on the host, with no stream.
      pm.addPass(createTsrGpuLibraryCalls({/*synchronous=*/true}));
    }
    pm.addPass(createTsrLinalgToBlas({options.gemmLibrary}));
    pm.addPass(createTsrCpuOutlineKernels());
    pm.addPass(createTsrCpuProfileRegions());
    OpPassManager &funcPm = pm.nest<func::FuncOp>();
    funcPm.addPass(createTsrCpuVectorize({options.vectorSize}));
    funcPm.addPass(createCSEPass());
    funcPm.addPass(createConvertLinalgToLoopsPass());
    funcPm.addPass(createTsrCpuApproximateMath());
    pm.addPass(createConvertVectorToSCFPass(
        VectorTransferToSCFOptions().enableFullUnroll()));
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createSCFToControlFlowPass());
    pm.addPass(createConvertMathToLLVMPass());
    pm.addPass(createConvertMathToLibmPass());
    ConvertVectorToLLVMPassOptions vectorToLlvm;
    vectorToLlvm.reassociateFPReductions = true;
    pm.addPass(createConvertVectorToLLVMPass(vectorToLlvm));
    FinalizeMemRefToLLVMConversionPassOptions memrefToLlvm;
    memrefToLlvm.useGenericFunctions = true;
    pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLlvm));
    pm.addPass(arith::createArithExpandOpsPass());
    pm.addPass(createArithToLLVMConversionPass());
    pm.addPass(createConvertIndexToLLVMPass());
    pm.addPass(createConvertControlFlowToLLVMPass());
    ConvertFuncToLLVMPassOptions funcToLlvm;
    funcToLlvm.useBarePtrCallConv = true;
    pm.addPass(createConvertFuncToLLVMPass(funcToLlvm));
    pm.addPass(createUBToLLVMConversionPass());
    pm.addPass(createReconcileUnrealizedCastsPass());
    pm.addPass(createTsrCpuEntryPoint());
    // The glue (the step's calls, allocations and frees) builds a memref
    // descriptor per buffer that bare-pointer calls read one field of:
    // folded away here, LLVM's machine code for it (optnone, one huge
    // block) is no longer aggregate work for SelectionDAG's scheduler.
    pm.addPass(createCanonicalizerPass());
  }

  /// model.so needs libm and libc, and OpenBLAS when its f32 GEMMs call
  /// it; the GEMMs through oneDNN, the allocation functions and memrefCopy
  /// that MLIR's lowering calls resolve against the Tessera runtime, which
  /// loads the artifact (so an artifact runs where only the runtime is
  /// installed, not LLVM).
  LogicalResult emitLibrary(ModuleOp lowered, StringRef dir,
                            TimingScope &timing) const override {
    if (options.gemmLibrary == "openblas")
      return emitHostLibrary(lowered, dir, {"-lopenblas", "-lm"}, timing);
    return emitHostLibrary(lowered, dir, {"-lm"}, timing);
  }

private:
  CpuTargetOptions options;
};
} // namespace

/// Moves every top-level loop nest of each function with several into a
/// function of its own, marked noinline, with LLVM's CodeExtractor. Since
/// tsr-cpu-outline-kernels this splits the kernels of several nests and any
/// loops left in a program; before it a step was one function of thousands
/// of loop nests, and LLVM's -O3 grew faster than its length
/// (ScalarEvolution walks the chain of single-predecessor blocks back to the
/// entry for every loop guard it checks): a GPT-2-shaped step of 12 layers
/// spent 267 s there against 3.9 s for 2 layers. Each nest alone keeps the
/// optimizer's work linear in the number of nests; a call per nest costs
/// nothing beside the loop it runs. (LLVM's loop-extract pass does the same
/// but rebuilds its analysis of the whole function for every loop, which is
/// quadratic again: 115 s at 12 layers. One analysis serves every extraction
/// of a function here.)
static void outlineLoopNests(llvm::Module &module) {
  SmallVector<llvm::Function *> functions;
  for (llvm::Function &f : module)
    if (!f.isDeclaration())
      functions.push_back(&f);
  for (llvm::Function *f : functions) {
    llvm::DominatorTree dominators(*f);
    llvm::LoopInfo loops(dominators);
    SmallVector<llvm::Loop *> nests(loops.begin(), loops.end());
    if (nests.size() < 2)
      continue;
    llvm::CodeExtractorAnalysisCache cache(*f);
    for (llvm::Loop *nest : nests) {
      if (!nest->isLoopSimplifyForm())
        continue;
      llvm::CodeExtractor extractor(nest->getBlocks(), &dominators);
      if (!extractor.isEligible())
        continue;
      if (llvm::Function *kernel = extractor.extractCodeRegion(cache))
        kernel->addFnAttr(llvm::Attribute::NoInline);
    }
  }
}

/// Marks the programs (`tessera_entry_*`) that have no loop left after
/// outlining as `optnone`: they are glue that allocates, frees and calls
/// kernels and BLAS once each per step, so LLVM's fast instruction
/// selection and register allocation serve them as well as -O3 does, in
/// time linear in their length (at -O3, machine code for the 5000-call step
/// of a 24-layer GPT-2-shaped model grew faster than its length). Programs
/// that kept a loop stay at -O3.
static void markGlueUnoptimized(llvm::Module &module) {
  for (llvm::Function &program : module) {
    if (!program.getName().starts_with("tessera_entry_") ||
        program.isDeclaration())
      continue;
    llvm::DominatorTree dominators(program);
    llvm::LoopInfo loops(dominators);
    if (!loops.empty())
      continue;
    program.addFnAttr(llvm::Attribute::NoInline);
    program.addFnAttr(llvm::Attribute::OptimizeNone);
  }
}

LogicalResult mlir::tessera::emitHostLibrary(ModuleOp lowered, StringRef dir,
                                             ArrayRef<StringRef> libraries,
                                             TimingScope &timing) {
  TimingScope translation = timing.nest("translate to LLVM IR");
  registerBuiltinDialectTranslation(*lowered.getContext());
  registerLLVMDialectTranslation(*lowered.getContext());
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(lowered, llvmContext, "tessera_model");
  if (!llvmModule)
    return lowered.emitError("translation to LLVM IR failed");

  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return lowered.emitError("no LLVM target for ")
           << triple.str() << ": " << error;
  llvm::SubtargetFeatures features;
  for (const auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
    features.AddFeature(feature, enabled);
  llvm::TargetOptions targetOptions;
  // Constructors (the CUDA target registers its kernels in one) go in
  // .init_array, which the loader runs; LLVM's default is .ctors.
  targetOptions.UseInitArray = true;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(), targetOptions,
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);

  translation.stop();
  TimingScope extracting = timing.nest("outline loop nests");
  outlineLoopNests(*llvmModule);
  extracting.stop();
  // Functions that are identical once lowered share one body. Before
  // tsr-cpu-outline-kernels, this is what merged the 2623 loop nests of a
  // 12-layer GPT-2-shaped step into 137 functions (-O3 8 s to 0.9 s, machine
  // code 20 s to 4 s); now it catches kernels that differed only before
  // lowering.
  TimingScope merging = timing.nest("merge identical kernels");
  llvm::MergeFunctionsPass::runOnModule(*llvmModule);
  merging.stop();
  markGlueUnoptimized(*llvmModule);
  TimingScope optimizing = timing.nest("LLVM -O3");
  auto optimize = makeOptimizingTransformer(3, 0, machine.get());
  if (llvm::Error err = optimize(llvmModule.get()))
    return lowered.emitError("LLVM optimization failed: ")
           << llvm::toString(std::move(err));

  SmallString<256> object(dir), library(dir);
  llvm::sys::path::append(object, "model.o");
  llvm::sys::path::append(library, "model.so");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(object, ec);
    if (ec)
      return lowered.emitError("cannot write '")
             << object << "': " << ec.message();
    optimizing.stop();
    TimingScope machineCode = timing.nest("machine code");
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return lowered.emitError("the host target cannot emit objects");
    codegen.run(*llvmModule);
  }

  TimingScope linking = timing.nest("link model.so");
  std::string clang = findLlvmTool("clang");
  if (clang.empty())
    return lowered.emitError("clang (LLVM 22) not found; it links model.so "
                             "(install clang-22)");
  SmallVector<StringRef> args = {clang, "-shared", "-fuse-ld=lld",
                                 "-o",  library,   object};
  llvm::append_range(args, libraries);
  std::string linkError;
  int rc = llvm::sys::ExecuteAndWait(clang, args, std::nullopt, {}, 0, 0,
                                     &linkError);
  llvm::sys::fs::remove(object);
  if (rc != 0)
    return lowered.emitError("linking ")
           << library << " failed (exit " << rc << ")"
           << (linkError.empty() ? "" : ": ") << linkError;
  return success();
}

std::unique_ptr<TargetBackend>
mlir::tessera::createCpuTarget(const CpuTargetOptions &options) {
  return std::make_unique<CpuTarget>(options);
}
