// RUN: tessera-opt %s -split-input-file "--tsr-sharding-propagation=axis=ep expert-parallel=true" -verify-diagnostics

module attributes {tsr.mesh = #tsr.mesh<["ep"=2]>} {
  func.func @experts(%x: tensor<2x4x8xf32> {tsr.name = "x", tsr.role = #tsr.role<data>}, %e: tensor<2x4x1xi64>) -> tensor<f32> {
    %slots, %sources = tsr.moe_assign %e {capacity = 4 : i64, num_experts = 3 : i64} : (tensor<2x4x1xi64>) -> (tensor<2x4x1xi64>, tensor<3x2x4xi64>)
    // expected-error @+1 {{expert parallelism over 'ep' needs the experts in 2 equal blocks, but this layer has 3}}
    %buf = tsr.moe_dispatch %x, %e, %slots, %sources : (tensor<2x4x8xf32>, tensor<2x4x1xi64>, tensor<2x4x1xi64>, tensor<3x2x4xi64>) -> tensor<3x2x4x8xf32>
    %l = tsr.reduce_sum %buf {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<3x2x4x8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["ep"=2]>} {
  // expected-error @+1 {{expert parallelism splits the batch over 'ep', but the batch of 3 rows does not split into 2 equal blocks}}
  func.func @ep_batch(%x: tensor<3x4xf32> {tsr.name = "x", tsr.role = #tsr.role<data>}) -> tensor<f32> {
    %l = tsr.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
