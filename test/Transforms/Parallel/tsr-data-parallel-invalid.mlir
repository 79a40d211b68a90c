// RUN: not tessera-opt %s -split-input-file --tsr-data-parallel 2>&1 | FileCheck %s

// The apply pass needs the plan.
// CHECK: error: tsr-data-parallel needs the layout that tsr-data-parallel-plan writes (tsr.zero)
func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32>, tensor<3xf32> {tsr.grad_of = 0 : i64}) {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}

// -----

// CHECK: error: gradient result 1 has no tsr.bucket (run tsr-data-parallel-plan)
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
      -> (tensor<f32>, tensor<3xf32> {tsr.grad_of = 0 : i64})
      attributes {tsr.zero = #tsr.zero<stage = 0, axes = ["dp"]>} {
    %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
    return %l, %w : tensor<f32>, tensor<3xf32>
  }
}

// -----

// RUN: not tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2" "--tsr-data-parallel=reduce-type=fp8" 2>&1 | FileCheck %s --check-prefix=TYPE
// TYPE: error: reduce-type 'fp8' is not bf16 or f16 (or empty: the gradients' own type)
func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32>, tensor<3xf32> {tsr.grad_of = 0 : i64}) {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}
