//===- Lowering.cpp - The target-independent stages of the lowering -------===//
#include "tessera/Pipelines/Lowering.h"

#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "tessera/Conversion/TsrToLinalg/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"

using namespace mlir;
using namespace mlir::tessera;

void mlir::tessera::buildTsrToLinalgPipeline(OpPassManager &pm,
                                             const TargetBackend *target) {
  if (target)
    target->buildTsrPipeline(pm);
  pm.addPass(createTsrToLinalg());
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  funcPm.addPass(createCanonicalizerPass());
  if (target)
    target->buildTensorPipeline(funcPm);
  funcPm.addPass(createCSEPass());
  // After CSE, which merged identical inits across the step.
  funcPm.addPass(createTsrUnshareInits());
  pm.addPass(createTsrDonateUpdates());
}

void mlir::tessera::buildBufferizationPipeline(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // A callee's result that is its argument's buffer (an update cell's
  // donated result) is no result: the caller reads the buffer it passed.
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  pm.addPass(createTsrResultsToOutParams());
  // Upstream's buffer-deallocation-pipeline, with tsr-split-deallocs before
  // the simplification, which is quadratic in a step's buffers otherwise.
  pm.addNestedPass<func::FuncOp>(
      memref::createExpandReallocPass({/*emitDeallocs=*/false}));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(
      bufferization::createOwnershipBasedBufferDeallocationPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createTsrSplitDeallocs());
  pm.addNestedPass<func::FuncOp>(
      bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addPass(createConvertBufferizationToMemRefPass());
}

void mlir::tessera::buildLoweringPipeline(OpPassManager &pm,
                                          const TargetBackend &target) {
  buildTsrToLinalgPipeline(pm, &target);
  buildBufferizationPipeline(pm);
  target.buildCodegenPipeline(pm);
}

LogicalResult mlir::tessera::verifyElementTypes(func::FuncOp model,
                                                const TargetBackend &target) {
  auto unsupported = [&](Type type) -> std::optional<Type> {
    if (auto shaped = dyn_cast<ShapedType>(type))
      if (!target.isSupportedElementType(shaped.getElementType()))
        return shaped.getElementType();
    return std::nullopt;
  };
  auto boundary = [&](StringRef kind, unsigned i, Type type,
                      DictionaryAttr attrs) -> LogicalResult {
    std::optional<Type> t = unsupported(type);
    if (!t)
      return success();
    auto name =
        attrs ? attrs.getAs<StringAttr>(tsr::attr::kName) : StringAttr();
    return model.emitError()
           << kind << " '"
           << (name ? name.str() : (kind + "_" + Twine(i)).str())
           << "' has element type " << *t << ", which the " << target.getName()
           << " target does not support";
  };
  FunctionType type = model.getFunctionType();
  for (auto [i, t] : llvm::enumerate(type.getInputs()))
    if (failed(boundary("input", i, t, model.getArgAttrDict(i))))
      return failure();
  for (auto [i, t] : llvm::enumerate(type.getResults()))
    if (failed(boundary("output", i, t, model.getResultAttrDict(i))))
      return failure();
  WalkResult walk = model.walk([&](Operation *op) {
    for (auto [i, result] : llvm::enumerate(op->getResults()))
      if (std::optional<Type> t = unsupported(result.getType())) {
        op->emitError() << "result " << i << " (" << result.getType()
                        << ") has element type " << *t << ", which the "
                        << target.getName() << " target does not support";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

void mlir::tessera::registerTesseraPipelines() {
  PassPipelineRegistration<>(
      "tsr-lower-to-linalg",
      "Lower tsr to linalg on tensors and clean up, without a target's "
      "tensor passes (the first stage of every target's lowering)",
      [](OpPassManager &pm) { buildTsrToLinalgPipeline(pm); });
  PassPipelineRegistration<>(
      "tsr-bufferize",
      "Bufferize linalg on tensors: identity layouts at function boundaries, "
      "results as out-parameters, explicit deallocation",
      buildBufferizationPipeline);
  PassPipelineRegistration<>(
      "tsr-cpu-codegen",
      "Lower tsr to the LLVM dialect for the CPU target (what tessera-compile "
      "--target=cpu runs before emitting model.so)",
      [](OpPassManager &pm) { buildLoweringPipeline(pm, *createCpuTarget()); });
  PassPipelineRegistration<>(
      "tsr-cuda-codegen",
      "Lower tsr to host LLVM dialect plus a gpu.binary of sm_90a kernels for "
      "the CUDA target (what tessera-compile --target=cuda runs before "
      "emitting model.so)",
      [](OpPassManager &pm) {
        buildLoweringPipeline(pm, *createCudaTarget());
      });
}
