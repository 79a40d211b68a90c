// RUN: not tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2" 2>&1 | FileCheck %s
// RUN: not tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2 zero=4" 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=1 zero=1" --tsr-data-parallel "--tsr-optimizer=optimizer=adafactor" 2>&1 | FileCheck %s --check-prefix=ADAFACTOR
// RUN: not tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2 compression=topk:2" 2>&1 | FileCheck %s --check-prefix=SPEC
// RUN: not tessera-opt %S/Inputs/mesh-dp-tp.mlir "--tsr-data-parallel-plan=compression=topk:0.1" 2>&1 | FileCheck %s --check-prefix=AXES
// RUN: not tessera-opt %S/Inputs/mesh-dp-tp.mlir "--tsr-data-parallel-plan=local-steps=4" 2>&1 | FileCheck %s --check-prefix=LOCALAXES
// RUN: not tessera-opt %S/tsr-data-parallel-plan.mlir "--tsr-data-parallel-plan=dp=2 zero=1 local-steps=4" 2>&1 | FileCheck %s --check-prefix=LOCALZERO
// RUN: not tessera-opt %S/tsr-data-parallel-plan.mlir "--tsr-data-parallel-plan=dp=2 compression=qsgd:8 local-steps=4" 2>&1 | FileCheck %s --check-prefix=LOCALCOMPRESS
// RUN: not tessera-opt %S/tsr-data-parallel-plan.mlir "--tsr-data-parallel-plan=dp=2 local-steps=-2" 2>&1 | FileCheck %s --check-prefix=LOCALNEG
// RUN: not tessera-opt %S/tsr-data-parallel-plan.mlir "--tsr-data-parallel-plan=dp=2 zero=2 compression=onebit:5" 2>&1 | FileCheck %s --check-prefix=ONEBITZERO
// RUN: not tessera-opt %S/Inputs/loss-scale-state.mlir "--tsr-data-parallel-plan=dp=2 local-steps=4" 2>&1 | FileCheck %s --check-prefix=LOCALSCALE

// Running statistics updated from the batch would differ on every rank.
// CHECK: error: result 2 ('bn.running_mean') updates running statistics from the batch, which differ between data-parallel ranks (synchronized batch norm is not supported): compile with --batch-norm=running
// STAGE: error: ZeRO stage must be 0, 1, 2 or 3, got 4
// SPEC: error: compression 'topk:2' is not none, topk:R (0 < R <= 1), qsgd:BITS[:BUCKET] (2 <= BITS <= 8), powersgd:RANK (RANK >= 1) or onebit[:WARMUP[:BETA1]] (WARMUP >= 1, 0 <= BETA1 < 1)
// AXES: error: gradient compression goes with data parallelism alone so far; the mesh #tsr.mesh<["dp"=2, "tp"=2]> also has axis 'tp'
// LOCALAXES: error: local SGD goes with data parallelism alone so far; the mesh #tsr.mesh<["dp"=2, "tp"=2]> also has axis 'tp'
// LOCALZERO: error: local SGD needs ZeRO-0: ZeRO 1 shards the optimizer state of an update that every rank applies alike, and local SGD's ranks update apart
// LOCALCOMPRESS: error: local SGD reduces no gradient, so there is none to compress (compression 'qsgd:8')
// LOCALNEG: error: local-steps must be at least 1 (or 0: all-reduce the gradients), got -2
// ONEBITZERO: error: 1-bit Adam exchanges the whole momentum: it needs ZeRO-0, not ZeRO 2
// LOCALSCALE: error: local SGD does not go with dynamic loss scaling: ranks that skip steps on their own would disagree on when to average
// ADAFACTOR: error: adafactor's factored second moments are row and column means, which ZeRO's flat shards would split: use --zero=0 with adafactor
func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %m: tensor<3xf32> {tsr.name = "bn.running_mean", tsr.role = #tsr.role<param>, tsr.statistics})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>},
        tensor<3xf32> {tsr.name = "bn.running_mean", tsr.role = #tsr.role<param>, tsr.updates = 1 : i64}) {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %w, %m : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// A loss that ignores labels is weighted per rank by its count of labels;
// that needs the loss to be the step's own result, a plain mean.
// CHECK: error: a loss that ignores label -100 is supported with dp > 1 only as the step's one loss, a mean without class weights, computed in the step itself (not with --micro-batches > 1)
func.func @main(%w: tensor<4x5xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %y: tensor<4xi64> {tsr.name = "y", tsr.role = #tsr.role<label>},
                %c: tensor<5xf32> {tsr.name = "class_weights"})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<4x5xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}) {
  %l = tsr.softmax_cross_entropy_loss %w, %y, %c {reduction = #tsr.loss_reduction<mean>, ignore_index = -100 : i64} : (tensor<4x5xf32>, tensor<4xi64>, tensor<5xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<4x5xf32>
}

// -----

// The axis must be one of the declared mesh's.
// CHECK: error: the data-parallel axis 'dp' is not an axis of the module's mesh #tsr.mesh<["tp"=2]>
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
      -> (tensor<f32>, tensor<3xf32> {tsr.grad_of = 0 : i64}) {
    %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
    return %l, %w : tensor<f32>, tensor<3xf32>
  }
}
