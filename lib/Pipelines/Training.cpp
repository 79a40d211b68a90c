//===- Training.cpp - The training pipeline -------------------------------===//
#include "tessera/Pipelines/Training.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/Passes.h"
#include "tessera/Conversion/GPU/Passes.h"

using namespace mlir;
using namespace mlir::tessera;

void mlir::tessera::buildPrecisionPipeline(
    OpPassManager &pm, const TsrPrecisionPlanOptions &options) {
  if (options.precision == "fp32")
    return;
  pm.addPass(createTsrPrecisionPlan(options));
  pm.addPass(createTsrPrecision());
}

void mlir::tessera::buildTrainingPipeline(
    OpPassManager &pm, const TrainingPipelineOptions &options) {
  // A training step draws fresh dropout masks every step; a gradient
  // function keeps the seeds it was given, so it is a pure function.
  if (options.batchNorm)
    pm.addPass(createTsrBatchNormStatistics(*options.batchNorm));
  if (options.optimizer)
    pm.addPass(createTsrSeedDropout());
  pm.addPass(createTsrAppendLoss(options.loss));
  // Expert and tensor parallelism partition the loss function; autodiff then
  // derives the backward communication from the collectives' gradient rules.
  if (!options.sharding.empty()) {
    TsrShardingPartitionOptions partition;
    for (const TsrShardingPropagationOptions &axis : options.sharding) {
      pm.addPass(createTsrShardingPropagation(axis));
      if (axis.expertParallel)
        partition.allToAll.push_back(axis.axis);
    }
    pm.addPass(createTsrShardingPartition(partition));
  }
  // The backward pass inherits each op's precision through the gradient
  // rules (a cast's gradient is the cast back).
  buildPrecisionPipeline(pm, options.precision);
  if (options.lossScale.scale != "none")
    pm.addPass(createTsrLossScale(options.lossScale));
  // Pipeline stages are chosen on the forward pass; autodiff gives each
  // gradient op its forward op's stage.
  if (options.pipelinePlan)
    pm.addPass(createTsrPipelinePlan(*options.pipelinePlan));
  // Repeated layers, found on the forward pass; autodiff gives each
  // gradient op its forward op's layer.
  if (options.layerPlan)
    pm.addPass(createTsrLayerPlan(*options.layerPlan));
  pm.addPass(createTsrAutodiff(options.autodiff));
  // Drop what does not reach the loss and fold the seed before the
  // micro-step is outlined.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // The functions the passes below rewrite: the step, or each stage's.
  SmallVector<std::string> steps{""};
  if (options.pipelinePlan) {
    TsrPipelineOptions pipeline = options.pipeline;
    pipeline.microBatches = options.microBatches;
    pm.addPass(createTsrPipeline(pipeline));
    steps.clear();
    for (int64_t k = 0; k < options.pipelinePlan->stages; ++k)
      steps.push_back("stage" + std::to_string(k));
  } else if (options.microBatches > 1) {
    pm.addPass(createTsrAccumulateGradients(
        TsrAccumulateGradientsOptions{options.microBatches}));
  }
  for (const std::string &step : steps) {
    // Gradients are reduced once per step, after the micro-batches.
    if (options.dataParallel) {
      TsrDataParallelPlanOptions plan = *options.dataParallel;
      plan.function = step;
      pm.addPass(createTsrDataParallelPlan(plan));
      if (plan.servers > 0) {
        // The servers apply the optimizer; the step (the workers') stops
        // at the gradients.
        pm.addPass(createTsrParameterServer(TsrParameterServerOptions{step}));
        if (options.optimizer)
          for (int64_t s = 0; s < plan.servers; ++s) {
            TsrOptimizerOptions optimizer = *options.optimizer;
            optimizer.function = "server" + std::to_string(s);
            pm.addPass(createTsrOptimizer(optimizer));
          }
        continue;
      }
      TsrDataParallelOptions apply = options.dataParallelApply;
      apply.function = step;
      pm.addPass(createTsrDataParallel(apply));
    }
    if (options.optimizer) {
      TsrOptimizerOptions optimizer = *options.optimizer;
      optimizer.function = step;
      if (options.offloadOptimizer) {
        // The step stops at the gradients; the host program updates.
        TsrOffloadOptimizerOptions offload;
        offload.function = step;
        pm.addPass(createTsrOffloadOptimizer(offload));
        optimizer.function = offload.update;
      }
      pm.addPass(createTsrOptimizer(optimizer));
      // Local SGD averages what the optimizer updated.
      if (options.dataParallel && options.dataParallel->localSteps > 0) {
        TsrLocalSGDOptions average;
        average.bucketBytes = options.dataParallel->bucketBytes;
        average.function = step;
        pm.addPass(createTsrLocalSGD(average));
      }
    }
  }
  if (options.optimizer) {
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  // The backward pass casts the parameters again rather than keeping the
  // forward pass's 16-bit copies until it reads them.
  if (options.precision.precision != "fp32")
    pm.addPass(createTsrRecastParameters());
  // Last: the recomputations start at barriers, which CSE respects.
  if (options.remat.policy != "none") {
    pm.addPass(createTsrRematPlan(options.remat));
    pm.addPass(createTsrRemat());
    TsrOffloadOptions offload;
    offload.hostBandwidth = options.remat.hostBandwidth;
    offload.peakFlops = options.remat.peakFlops;
    offload.bandwidth = options.remat.bandwidth;
    pm.addPass(createTsrOffload(offload));
  }
  // After the recomputations (a recomputed attention keeps its ops), before
  // the layer cells are cut.
  if (options.fuseAttention)
    pm.addNestedPass<func::FuncOp>(createTsrGpuAttention());
  // After every rewrite: each kind of layer compiled once.
  if (options.layerPlan)
    pm.addPass(createTsrOutlineLayers());
}
