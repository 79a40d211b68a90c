//===- tessera-translate.cpp - ONNX to MLIR -------------------------------===//
//
// tessera-translate --import-onnx MODEL.onnx [--input-shape NAME=DxDx...]...
//                   [--generic] -o OUT.mlir
//
// Imports an ONNX model to tsr (or, with --generic, stops at the generic
// `onnx.node` form). Without --import-onnx it is an opt-style driver over
// the dialects and the `tsr-legalize-onnx` pass, so stage 2 can be tested on
// hand-written generic IR.
//
//===----------------------------------------------------------------------===//
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "tessera/Dialect/Onnx/IR/OnnxDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Import/ONNX/Import.h"
#include "tessera/Import/ONNX/Passes.h"
#include "tessera/Version.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
namespace cl = llvm::cl;

static int fail(const Twine &message) {
  llvm::WithColor::error(llvm::errs(), "tessera-translate") << message << "\n";
  return 1;
}

static int importMain(int argc, char **argv) {
  cl::opt<bool> importOnnx("import-onnx",
                           cl::desc("Import the ONNX model given as input"));
  cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                 cl::Required);
  cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                  cl::value_desc("file"), cl::init("-"));
  cl::list<std::string> inputShapes(
      "input-shape",
      cl::desc("Static shape of a graph input: NAME=DxDx... (repeatable; "
               "required for symbolic dimensions)"),
      cl::value_desc("NAME=DxD..."));
  cl::opt<bool> generic(
      "generic", cl::desc("Stop after stage 1: print generic onnx.node ops"));
  cl::ParseCommandLineOptions(argc, argv, "Tessera ONNX importer\n");

  tessera::OnnxImportOptions opts;
  opts.legalize = !generic;
  for (const std::string &spec : inputShapes)
    if (failed(tessera::addInputShapeSpec(spec, opts)))
      return fail("malformed --input-shape '" + spec +
                  "' (expected NAME=DxDx..., e.g. x=1x3x224x224)");

  DialectRegistry registry;
  registry
      .insert<tsr::TsrDialect, onnx_generic::OnnxDialect, func::FuncDialect>();
  MLIRContext context(registry);
  // Diagnostics name the model and the node; a dump of the IR is noise.
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  OwningOpRef<ModuleOp> module =
      tessera::importOnnxModel(context, inputFile, opts);
  if (!module)
    return 1;
  std::string error;
  auto output = openOutputFile(outputFile, &error);
  if (!output)
    return fail(error);
  module->print(output->os());
  output->os() << "\n";
  output->keep();
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::tessera::setVersionPrinter("tessera-translate");
  for (int i = 1; i < argc; ++i)
    if (StringRef(argv[i]).starts_with("--import-onnx") ||
        StringRef(argv[i]).starts_with("-import-onnx"))
      return importMain(argc, argv);

  DialectRegistry registry;
  registry
      .insert<tsr::TsrDialect, onnx_generic::OnnxDialect, func::FuncDialect>();
  tessera::registerTesseraOnnxImportPasses();
  registerCanonicalizerPass();
  registerCSEPass();
  return asMainReturnCode(MlirOptMain(
      argc, argv, "Tessera ONNX importer (opt mode over generic IR)\n",
      registry));
}
