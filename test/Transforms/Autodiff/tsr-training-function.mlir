// RUN: tessera-opt %s -split-input-file --tsr-autodiff="function=model" -verify-diagnostics | FileCheck %s

// The option `function` of every training pass names the function to
// rewrite, so a module may hold several programs: here only @model gets its
// gradient; @other is left as it was.
// CHECK-LABEL: func.func @other(
// CHECK-SAME: -> tensor<f32> {
// CHECK-LABEL: func.func @model(
// CHECK-SAME: -> (tensor<f32>, tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>})
func.func @other(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  %l = tsr.reduce_sum %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
func.func @model(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, %x: tensor<4x3xf32> {tsr.name = "x"}) -> tensor<f32> {
  %y = tsr.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A function that is missing, or only declared, is an error naming it.
// expected-error @+1 {{tsr-autodiff: the module has no function @model with a body to rewrite (option function=model)}}
module {
  func.func private @model(tensor<3xf32>) -> tensor<f32>
}
