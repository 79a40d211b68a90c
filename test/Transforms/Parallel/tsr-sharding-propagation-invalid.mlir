// RUN: tessera-opt %s -split-input-file --tsr-sharding-propagation -verify-diagnostics

// expected-error @+1 {{tsr-sharding-propagation needs the module's tsr.mesh (e.g. #tsr.mesh<["tp"=2]>)}}
func.func @no_mesh(%w: tensor<4x4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  %l = tsr.reduce_sum %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  // expected-error @+1 {{the tensor-parallel axis 'tp' is not an axis of the module's mesh #tsr.mesh<["dp"=2]>}}
  func.func @no_tp_axis(%w: tensor<4x4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}) -> tensor<f32> {
    %l = tsr.reduce_sum %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
