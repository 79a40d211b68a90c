// RUN: not tessera-opt %s -split-input-file --tsr-local-sgd 2>&1 | FileCheck %s
// RUN: not tessera-opt %S/tsr-local-sgd.mlir "--tsr-data-parallel-plan=dp=2 local-steps=4" --tsr-data-parallel --tsr-optimizer --tsr-local-sgd --tsr-local-sgd 2>&1 | FileCheck %s --check-prefix=TWICE

// The period comes from tsr-data-parallel-plan.
// CHECK: error: tsr-local-sgd needs the function's tsr.local_steps (tsr-data-parallel-plan local-steps=H)
func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.updates = 0 : i64}) {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}

// -----

// The average is due by the optimizer's step counter.
// CHECK: error: tsr-local-sgd needs the optimizer's step counter (the state 'step' that tsr-optimizer adds)
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
      -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
          tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.updates = 0 : i64})
      attributes {tsr.local_steps = 2 : i64, tsr.zero = #tsr.zero<stage = 0, axes = ["dp"]>} {
    %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
    return %l, %w : tensor<f32>, tensor<3xf32>
  }
}

// -----

// Without the data-parallel layout there is no axis to average over.
// CHECK: error: tsr-local-sgd needs the data-parallel layout (tsr.zero) that tsr-data-parallel-plan writes
func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.updates = 0 : i64})
    attributes {tsr.local_steps = 2 : i64} {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}

// -----

// The attribute's verifier: a period is at least one step.
// CHECK: error: 'func.func' op attribute 'tsr.local_steps' must be a period of at least 1 step, got 0 : i64
func.func @main() attributes {tsr.local_steps = 0 : i64} {
  return
}

// TWICE: error: the step already has a sync input ('local_sgd.sync'): tsr-local-sgd ran twice
