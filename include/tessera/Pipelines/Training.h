//===- Training.h - The training pipeline -----------------------*- C++ -*-===//
//
// From an imported model (trainable initializers as `tsr.role = "param"`
// arguments) to a training step or a loss-and-gradient function, still in
// tsr: loss → precision → autodiff → gradient accumulation → optimizer update →
// rematerialization.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_PIPELINES_TRAINING_H
#define TESSERA_PIPELINES_TRAINING_H

#include "mlir/Pass/PassManager.h"
#include "tessera/Transforms/Autodiff/Passes.h"
#include "tessera/Transforms/Layers/Passes.h"
#include "tessera/Transforms/Optimizer/Passes.h"
#include "tessera/Transforms/Parallel/Passes.h"
#include "tessera/Transforms/Precision/Passes.h"
#include "tessera/Transforms/Remat/Passes.h"

namespace mlir::tessera {

struct TrainingPipelineOptions {
  TsrAppendLossOptions loss;
  TsrAutodiffOptions autodiff;
  int64_t microBatches = 1;
  /// Split the loss function over mesh axes before autodiff: expert
  /// parallelism over ep and tensor parallelism over tp, one decision per
  /// axis in this order, each adding its axis to the layouts the earlier
  /// ones wrote (empty: neither).
  SmallVector<TsrShardingPropagationOptions> sharding;
  /// One rank's part of a data-parallel step (absent: a single device).
  std::optional<TsrDataParallelPlanOptions> dataParallel;
  /// How tsr-data-parallel applies it (the type gradients are reduced in).
  TsrDataParallelOptions dataParallelApply;
  /// Train batch normalization with batch statistics (absent: keep the
  /// running statistics fixed, ONNX inference semantics).
  std::optional<TsrBatchNormStatisticsOptions> batchNorm;
  /// Absent: stop after the gradients (`--mode=grad`).
  std::optional<TsrOptimizerOptions> optimizer;
  /// Run the optimizer's update on the host, its state in host memory
  /// (tsr-offload-optimizer: ZeRO-Offload).
  bool offloadOptimizer = false;
  /// The compute type of each op (fp32: the model's own types).
  TsrPrecisionPlanOptions precision;
  /// Loss scaling before autodiff (the optimizer's `loss-scale` options
  /// must match).
  TsrLossScaleOptions lossScale;
  /// Which saved activations the backward pass recomputes.
  TsrRematPlanOptions remat;
  /// Split the step into pipeline stages over a mesh axis (absent: one
  /// program). Its stages count sets how many per-stage functions
  /// (@stage0, ...) the passes after it rewrite; `microBatches` is then the
  /// pipeline's.
  std::optional<TsrPipelinePlanOptions> pipelinePlan;
  TsrPipelineOptions pipeline;
  /// Find the model's repeated layers before autodiff (absent: none), and
  /// outline each kind into one function after the last rewrite.
  std::optional<TsrLayerPlanOptions> layerPlan;
  /// Run attention and its backward pass as one library op each (the CUDA
  /// target's cuDNN, tsr-gpu-attention), decided before the layers are
  /// outlined so that the layer cells hold the fused ops, and the
  /// probabilities are no saved activation.
  bool fuseAttention = false;
};

/// Adds the precision policy's decide and apply passes to `pm` (on the
/// module), unless the policy is fp32: the training pipeline's first half
/// of mixed precision, and all of it for an inference function.
void buildPrecisionPipeline(OpPassManager &pm,
                            const TsrPrecisionPlanOptions &options);

/// Adds the training passes, in order, to `pm` (on the module).
void buildTrainingPipeline(OpPassManager &pm,
                           const TrainingPipelineOptions &options);

} // namespace mlir::tessera

#endif // TESSERA_PIPELINES_TRAINING_H
