//===- tessera-opt.cpp - Tessera's mlir-opt -------------------------------===//
//
// Holds every dialect and pass of Tessera plus the upstream ones its
// pipelines use, for lit tests and for inspecting any stage by hand.
//
//===----------------------------------------------------------------------===//
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "tessera/Analysis/Passes.h"
#include "tessera/Conversion/CPU/Passes.h"
#include "tessera/Conversion/CollectivesToRuntime/Passes.h"
#include "tessera/Conversion/GPU/Passes.h"
#include "tessera/Conversion/TsrToLinalg/Passes.h"
#include "tessera/Dialect/Onnx/IR/OnnxDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/Transforms/BufferizableOpInterfaceImpl.h"
#include "tessera/Dialect/Tsrt/IR/TsrtDialect.h"
#include "tessera/Dialect/Tsrt/Transforms/BufferizableOpInterfaceImpl.h"
#include "tessera/Import/ONNX/Passes.h"
#include "tessera/Pipelines/Lowering.h"
#include "tessera/Transforms/Autodiff/GradientRules.h"
#include "tessera/Transforms/Autodiff/Passes.h"
#include "tessera/Transforms/Layers/Passes.h"
#include "tessera/Transforms/Optimizer/Passes.h"
#include "tessera/Transforms/Parallel/Passes.h"
#include "tessera/Transforms/Parallel/ShardingRules.h"
#include "tessera/Transforms/Precision/Passes.h"
#include "tessera/Transforms/Remat/Passes.h"
#include "tessera/Version.h"

int main(int argc, char **argv) {
  mlir::tessera::setVersionPrinter("tessera-opt");
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // The CUDA target's kernels go through LLVM IR inside the pipeline.
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::registerAllPasses();
  mlir::tessera::registerTesseraCPUPasses();
  mlir::tessera::registerTesseraGPUPasses();
  mlir::tessera::registerTsrToLinalgPasses();
  mlir::tessera::registerCollectivesToRuntimePasses();
  mlir::tessera::registerTesseraPipelines();
  mlir::tessera::registerTesseraOnnxImportPasses();
  mlir::tessera::registerTesseraAutodiffPasses();
  mlir::tessera::registerTesseraOptimizerPasses();
  mlir::tessera::registerTesseraLayersPasses();
  mlir::tessera::registerTesseraRematPasses();
  mlir::tessera::registerTesseraPrecisionPasses();
  mlir::tessera::registerTesseraParallelPasses();
  mlir::tessera::registerTesseraAnalysisPasses();
  mlir::tessera::registerGradientRules(registry);
  mlir::tessera::registerShardingRules(registry);
  mlir::tsrt::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::tsr::registerBufferizableOpInterfaceExternalModels(registry);
  registry.insert<mlir::tsr::TsrDialect, mlir::tsrt::TsrtDialect,
                  mlir::onnx_generic::OnnxDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Tessera optimizer driver\n", registry));
}
