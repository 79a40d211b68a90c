// RUN: tessera-opt %s "--tsr-sharding-propagation=sequence-parallel=true" | FileCheck %s
// RUN: tessera-opt %s "--tsr-sharding-propagation=sequence-parallel=true" --tsr-sharding-partition | FileCheck %s --check-prefix=PART

// Sequence parallelism: the norm and the residual add run on sequence
// blocks (dimension 1 of the data input, followed through the ops), the
// column-parallel matmul takes the gathered sequence, and the row-parallel
// one's pending sum meets the residual stream as a reduce-scatter along it.
// CHECK-LABEL: func.func @sequence(
// CHECK: tsr.layer_norm %{{.*}} tsr.sharding = [#tsr.sharding<{{\[\[\], \["tp"\], \[\]\]}}>]
// CHECK: tsr.matmul %{{.*}} {tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \[\], \[\]\]}}>, #tsr.sharding<{{\[\[\], \["tp"\]\]}}>]
// CHECK: tsr.matmul %{{.*}} tsr.sharding = [#tsr.sharding<{{\[\[\], \[\], \[\]\]}}, partial = ["tp"]>]
// CHECK: tsr.add %{{.*}} {tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \["tp"\], \[\]\]}}>, #tsr.sharding<{{\[\[\], \["tp"\], \[\]\]}}>], tsr.sharding = [#tsr.sharding<{{\[\[\], \["tp"\], \[\]\]}}>]}
// PART: tsr.local_shard %{{.*}} {dim = 1 : i64, mesh_axes = ["tp"]} : (tensor<2x4x8xf32>) -> tensor<2x2x8xf32>
// PART: tsr.layer_norm %{{.*}} -> tensor<2x2x8xf32>
// PART: tsr.all_gather %{{.*}} {dim = 1 : i64, mesh_axes = ["tp"]{{.*}}} : (tensor<2x2x8xf32>) -> tensor<2x4x8xf32>
// PART: tsr.reduce_scatter %{{.*}} {dim = 1 : i64, mesh_axes = ["tp"]{{.*}}} : (tensor<2x4x8xf32>) -> tensor<2x2x8xf32>
// PART-NOT: tsr.all_reduce %{{.*}} : (tensor<2x4x8xf32>)
// PART: tsr.all_reduce %{{.*}} {mesh_axes = ["tp"]{{.*}}} : (tensor<f32>) -> tensor<f32>
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @sequence(%x: tensor<2x4x8xf32> {tsr.name = "x"},
                      %g: tensor<8xf32> {tsr.name = "ln.weight", tsr.role = #tsr.role<param>},
                      %w1: tensor<8x16xf32> {tsr.name = "w1", tsr.role = #tsr.role<param>},
                      %w2: tensor<16x8xf32> {tsr.name = "w2", tsr.role = #tsr.role<param>}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
    %n = tsr.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %h = tsr.matmul %n, %w1 : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
    %a = tsr.relu %h : tensor<2x4x16xf32>
    %y = tsr.matmul %a, %w2 : tensor<2x4x16xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
    %r = tsr.add %x, %y : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    %t = tsr.tanh %r : tensor<2x4x8xf32>
    %l = tsr.reduce_sum %t {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
