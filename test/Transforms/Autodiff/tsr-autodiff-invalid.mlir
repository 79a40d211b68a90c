// RUN: tessera-opt %s -split-input-file "--tsr-autodiff=frozen=frozen.*" -verify-diagnostics
// RUN: not tessera-opt %s -split-input-file "--tsr-autodiff=frozen=[" 2>&1 | FileCheck %s --check-prefix=MALFORMED

// Every error of tsr-autodiff. The `frozen.*` pattern must match a parameter,
// so the functions that get past argument selection have a `frozen.w`.

// MALFORMED: error: malformed frozen-parameter pattern '['

// expected-error @+1 {{tsr-autodiff expects exactly one public function, found 2}}
module {
  func.func @a(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func @b(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

// expected-error @+1 {{tsr-autodiff expects a single-block function}}
func.func @blocks(%x: tensor<f32>) -> tensor<f32> {
  cf.br ^bb1
^bb1:
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{tsr-autodiff expects the function to return one scalar floating-point loss, got 2 result(s) (tsr-append-loss makes a loss)}}
func.func @two_results(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{expects the function to return one scalar floating-point loss, got 1 result(s)}}
func.func @not_scalar(%x: tensor<3xf32> {tsr.name = "x", tsr.role = #tsr.role<param>}) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}

// -----

// expected-error @+1 {{frozen-parameter pattern 'frozen.*' matches no parameter}}
func.func @frozen_matches_nothing(%w: tensor<f32> {tsr.name = "w", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  return %w : tensor<f32>
}

// -----

func.func @no_rule(%f: tensor<f32> {tsr.name = "frozen.w", tsr.role = #tsr.role<param>},
                   %x: tensor<1x1x4xf32> {tsr.name = "x", tsr.role = #tsr.role<param>},
                   %dy: tensor<1x1x2xf32> {tsr.name = "dy", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  // expected-error @+1 {{'tsr.max_pool_grad' op is on the path to the loss but has no gradient rule}}
  %g = tsr.max_pool_grad %x, %dy {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x1x4xf32>, tensor<1x1x2xf32>) -> tensor<1x1x4xf32>
  %l = tsr.reduce_sum %g {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<1x1x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @foreign_op(%f: tensor<f32> {tsr.name = "frozen.w", tsr.role = #tsr.role<param>},
                      %x: tensor<4xf32> {tsr.name = "x", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  // expected-error @+1 {{'arith.addf' op is on the path to the loss but has no gradient rule}}
  %y = arith.addf %x, %x : tensor<4xf32>
  %l = tsr.reduce_sum %y {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @scatter_mul(%f: tensor<f32> {tsr.name = "frozen.w", tsr.role = #tsr.role<param>},
                       %x: tensor<4xf32> {tsr.name = "x", tsr.role = #tsr.role<param>},
                       %i: tensor<2xi64> {tsr.name = "i"},
                       %u: tensor<2xf32> {tsr.name = "u", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  // expected-error @+1 {{'tsr.scatter_elements' op has no gradient rule for reduction 'mul' (none and add have one)}}
  %y = tsr.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = #tsr.scatter_reduction<mul>} : (tensor<4xf32>, tensor<2xi64>, tensor<2xf32>) -> tensor<4xf32>
  %l = tsr.reduce_sum %y {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @einsum_repeated_output(%f: tensor<f32> {tsr.name = "frozen.w", tsr.role = #tsr.role<param>},
                                  %x: tensor<3xf32> {tsr.name = "x", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  // expected-error @+1 {{'tsr.einsum' op has no gradient rule for the repeated output label 'i' of 'i->ii'}}
  %y = tsr.einsum %x {equation = "i->ii"} : (tensor<3xf32>) -> tensor<3x3xf32>
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @reflect_past_crop(%f: tensor<f32> {tsr.name = "frozen.w", tsr.role = #tsr.role<param>},
                             %x: tensor<4xf32> {tsr.name = "x", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  // expected-error @+1 {{'tsr.pad' op has no gradient rule for reflect padding wider than its cropped dimension 0 (2 elements)}}
  %y = tsr.pad %x {pads = array<i64: -2, 2>, mode = #tsr.pad_mode<reflect>} : (tensor<4xf32>) -> tensor<4xf32>
  %l = tsr.reduce_sum %y {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @extremum_across_ranks(%f: tensor<f32> {tsr.name = "frozen.w", tsr.role = #tsr.role<param>},
                                   %x: tensor<4xf32> {tsr.name = "x", tsr.role = #tsr.role<param>}) -> tensor<f32> {
    // expected-error @+1 {{'tsr.all_reduce' op has no gradient rule for reduction 'max' (only sum and mean are differentiable across ranks)}}
    %y = tsr.all_reduce %x {mesh_axes = ["tp"], reduction = #tsr.reduction<max>} : (tensor<4xf32>) -> tensor<4xf32>
    %l = tsr.reduce_sum %y {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
