//===- CpuTarget.cpp - The CPU target: LLVM code and a shared object ------===//
//
// tsr → linalg → one-shot bufferization (outputs become caller-owned
// buffers) → BLAS calls for f32 GEMMs → tiled vector code, or loops where
// the vectorizer declines → LLVM dialect → LLVM IR at -O3 for the host CPU →
// object → model.so linked with OpenBLAS and libm.
//
//===----------------------------------------------------------------------===//
#include "tessera/Pipelines/Target.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
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

using namespace mlir;
using namespace mlir::tessera;

namespace {
// The lowering from tsr to the LLVM dialect, as one textual pipeline so that
// tessera-opt can run exactly the same thing (`--tsr-cpu-codegen`). Linalg
// ops left after the BLAS rewrite are tiled and vectorized on buffers; what
// the vectorizer does not take becomes scalar loops. No canonicalize runs on
// vector code: MLIR 22's vector.shape_cast canonicalization miscompiles some
// shape_cast(broadcast) pairs (see tsr-cpu-vectorize's description).
std::string getCpuPipeline(const CpuTargetOptions &options) {
  return ("tsr-to-linalg,"
          "func.func(canonicalize,tsr-cpu-fuse-elementwise,cse,"
          "tsr-cpu-unshare-inits),"
          "one-shot-bufferize{bufferize-function-boundaries "
          "function-boundary-type-conversion=identity-layout-map},"
          "buffer-results-to-out-params{modify-public-functions},"
          "buffer-deallocation-pipeline,"
          "convert-bufferization-to-memref,func.func(tsr-cpu-early-dealloc),"
          "tsr-cpu-memory-plan,"
          "tsr-linalg-to-blas,"
          "func.func(tsr-cpu-vectorize{vector-size=" +
          Twine(options.vectorSize) +
          "},cse,convert-linalg-to-loops),"
          "convert-vector-to-scf{full-unroll},"
          "expand-strided-metadata,lower-affine,convert-scf-to-cf,"
          "convert-math-to-llvm,convert-math-to-libm,"
          "convert-vector-to-llvm{reassociate-fp-reductions},"
          "finalize-memref-to-llvm{use-generic-functions},"
          "arith-expand,convert-arith-to-llvm,convert-index-to-llvm,"
          "convert-cf-to-llvm,"
          "convert-func-to-llvm{use-bare-ptr-memref-call-conv},"
          "convert-ub-to-llvm,reconcile-unrealized-casts,"
          "tsr-cpu-entry-point")
      .str();
}

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

  LogicalResult buildCodegenPipeline(OpPassManager &pm) const override {
    return parsePassPipeline(getCpuPipeline(options), pm);
  }

  LogicalResult emitLibrary(ModuleOp lowered, StringRef dir) const override {
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
    std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
        triple, llvm::sys::getHostCPUName(), features.getString(),
        targetOptions, llvm::Reloc::PIC_, std::nullopt,
        llvm::CodeGenOptLevel::Aggressive));
    llvmModule->setDataLayout(machine->createDataLayout());
    llvmModule->setTargetTriple(triple);

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
      llvm::legacy::PassManager codegen;
      if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                       llvm::CodeGenFileType::ObjectFile))
        return lowered.emitError("the host target cannot emit objects");
      codegen.run(*llvmModule);
    }

    std::string clang = findLlvmTool("clang");
    if (clang.empty())
      return lowered.emitError("clang (LLVM 22) not found; it links model.so "
                               "(install clang-22)");
    SmallVector<StringRef> args = {clang,
                                   "-shared",
                                   "-fuse-ld=lld",
                                   "-o",
                                   library,
                                   object,
                                   "-L/usr/lib/llvm-22/lib",
                                   "-lmlir_c_runner_utils",
                                   "-Wl,-rpath,/usr/lib/llvm-22/lib",
                                   "-lopenblas",
                                   "-lm"};
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

private:
  CpuTargetOptions options;
};
} // namespace

std::unique_ptr<TargetBackend>
mlir::tessera::createCpuTarget(const CpuTargetOptions &options) {
  return std::make_unique<CpuTarget>(options);
}

void mlir::tessera::registerTesseraPipelines() {
  PassPipelineRegistration<>(
      "tsr-cpu-codegen",
      "Lower tsr to the LLVM dialect for the CPU target (what tessera-compile "
      "--target=cpu runs before emitting model.so)",
      [](OpPassManager &pm) {
        if (failed(parsePassPipeline(getCpuPipeline({}), pm)))
          llvm::report_fatal_error("tsr-cpu-codegen names an unregistered "
                                   "pass");
      });
}
