// RUN: tessera-opt %s --tsr-autodiff | FileCheck %s

// A function partitioned over tp (tsr-sharding-partition) has the same loss
// on both tp ranks: the seed is 1/2, and the gradient of b, whole on every
// rank, is the sum of both ranks' shares; w's block needs no reduction.
// CHECK-LABEL: func.func @main(
// CHECK: %[[SEED:.*]] = tsr.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[DB:.*]] = tsr.reduce_sum %{{.*}} {axes = array<i64: 0>, keepdims = false, tsr.backward}
// CHECK: %[[DW:.*]] = tsr.matmul %{{.*}} {tsr.backward} : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<2x2xf32>
// CHECK: %[[SB:.*]] = tsr.all_reduce %[[DB]] {mesh_axes = ["tp"], serves = ["b"], tsr.backward{{.*}}} : (tensor<2xf32>) -> tensor<2xf32>
// CHECK: return %{{.*}}, %[[DW]], %[[SB]]
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @main(%w: tensor<2x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<[[], ["tp"]]>},
                  %b: tensor<2xf32> {tsr.name = "b", tsr.role = #tsr.role<param>},
                  %x: tensor<4x2xf32> {tsr.name = "x"}) -> tensor<f32> attributes {tsr.partitioned = ["tp"]} {
    %h = tsr.matmul %x, %w : tensor<4x2xf32>, tensor<2x2xf32> -> tensor<4x2xf32>
    %g = tsr.all_gather %h {dim = 1 : i64, mesh_axes = ["tp"]} : (tensor<4x2xf32>) -> tensor<4x4xf32>
    %s = tsr.reduce_sum %g {axes = array<i64: 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<4xf32>
    %r = tsr.reshape %s : tensor<4xf32> to tensor<2x2xf32>
    %y = tsr.add %r, %b : tensor<2x2xf32>, tensor<2xf32> -> tensor<2x2xf32>
    %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x2xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
