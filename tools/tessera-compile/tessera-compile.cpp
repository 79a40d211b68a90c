//===- tessera-compile.cpp - The Tessera compiler driver ------------------===//
//
// tessera-compile MODEL.onnx --mode=infer --target=cpu -o ART
//
// Imports the ONNX model, lowers it for the target and writes the artifact
// directory ART (model.so + manifest.json) that tessera-run executes.
// --emit=tsr|llvm-dialect stops early and prints the IR instead.
//
//===----------------------------------------------------------------------===//
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "tessera/Conversion/CPU/Passes.h"
#include "tessera/Conversion/TsrToLinalg/Passes.h"
#include "tessera/Dialect/Onnx/IR/OnnxDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Import/ONNX/Import.h"
#include "tessera/Pipelines/Target.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::Required);
static cl::opt<std::string> outputDir("o", cl::desc("Artifact directory"),
                                      cl::value_desc("dir"));
static cl::opt<std::string> mode("mode", cl::desc("What to compile: infer"),
                                 cl::init("infer"));
static cl::opt<std::string> targetName("target",
                                       cl::desc("Code generation target: cpu"),
                                       cl::init("cpu"));
static cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("Static shape of a graph input: NAME=DxDx... "
                         "(repeatable; required for symbolic dimensions)"),
                cl::value_desc("NAME=DxD..."));
static cl::opt<std::string>
    emit("emit",
         cl::desc("Stop after a stage and print its IR: tsr, llvm-dialect"),
         cl::init(""));

static cl::opt<int64_t> cpuVectorSize(
    "cpu-vector-size",
    cl::desc("--target=cpu: most elements in one vector of tsr-cpu-vectorize "
             "(0: no vectorization, scalar loops)"),
    cl::init(tessera::CpuTargetOptions().vectorSize));

static int fail(const Twine &message) {
  llvm::WithColor::error(llvm::errs(), "tessera-compile") << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAllPasses();
  tessera::registerTesseraCPUPasses();
  tessera::registerTsrToLinalgPasses();
  cl::ParseCommandLineOptions(argc, argv, "Tessera compiler driver\n");

  if (mode != "infer")
    return fail("--mode=" + mode + " is not supported (supported: infer)");
  if (cpuVectorSize < 0)
    return fail("--cpu-vector-size=" + Twine(cpuVectorSize.getValue()) +
                " is negative (0 turns vectorization off)");
  std::unique_ptr<tessera::TargetBackend> target;
  if (targetName == "cpu")
    target = tessera::createCpuTarget({cpuVectorSize});
  else
    return fail("--target=" + targetName +
                " is not supported (supported: cpu)");
  if (emit != "" && emit != "tsr" && emit != "llvm-dialect")
    return fail("--emit=" + emit + " is not one of: tsr, llvm-dialect");
  if (emit.empty() && outputDir.empty())
    return fail("no output directory: give -o ART");

  tessera::OnnxImportOptions importOptions;
  for (const std::string &spec : inputShapes)
    if (failed(tessera::addInputShapeSpec(spec, importOptions)))
      return fail("malformed --input-shape '" + spec +
                  "' (expected NAME=DxDx..., e.g. x=1x3x224x224)");

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<tsr::TsrDialect, onnx_generic::OnnxDialect>();
  MLIRContext context(registry);
  // Diagnostics name the model and the node; a dump of the IR is noise.
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();
  // One `error:` line per diagnostic, notes indented under it.
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  OwningOpRef<ModuleOp> module =
      tessera::importOnnxModel(context, inputFile, importOptions);
  if (!module)
    return 1;
  if (emit == "tsr") {
    module->print(llvm::outs());
    return 0;
  }
  if (emit == "llvm-dialect") {
    if (failed(tessera::lowerModel(*module, *target)))
      return 1;
    module->print(llvm::outs());
    return 0;
  }
  if (failed(tessera::compileToArtifact(*module, *target, outputDir)))
    return 1;
  return 0;
}
