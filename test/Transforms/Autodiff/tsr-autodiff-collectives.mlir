// RUN: tessera-opt %s --tsr-autodiff | FileCheck %s

// The gradient of a collective is its transpose over the same group
// (CollectiveRules.cpp): a per-rank program differentiates the sum of every
// rank's loss. Backward communication follows from the forward program.

module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=4]>} {
  // CHECK-LABEL: func.func @main(
  func.func @main(%a: tensor<2x3xf32> {tsr.name = "a", tsr.role = #tsr.role<param>},
                  %b: tensor<2x2xf32> {tsr.name = "b", tsr.role = #tsr.role<param>},
                  %c: tensor<8x2xf32> {tsr.name = "c", tsr.role = #tsr.role<param>},
                  %d: tensor<8x2xf32> {tsr.name = "d", tsr.role = #tsr.role<param>},
                  %e: tensor<3xf32> {tsr.name = "e", tsr.role = #tsr.role<param>},
                  %f: tensor<2x8xf32> {tsr.name = "f", tsr.role = #tsr.role<param>}) -> tensor<f32> {
    // all_reduce(mean) <- all_reduce(mean) over the same axes.
    %0 = tsr.all_reduce %a {mesh_axes = ["tp"], reduction = #tsr.reduction<mean>, serves = ["a"]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    // all_gather <- reduce_scatter(sum) along the same dimension.
    %1 = tsr.all_gather %b {dim = 1 : i64, mesh_axes = ["dp", "tp"]} : (tensor<2x2xf32>) -> tensor<2x16xf32>
    // reduce_scatter(mean) <- all_gather scaled by 1/N (N = 4).
    %2 = tsr.reduce_scatter %c {mesh_axes = ["tp"], reduction = #tsr.reduction<mean>} : (tensor<8x2xf32>) -> tensor<2x2xf32>
    // all_to_all <- all_to_all.
    %3 = tsr.all_to_all %d {mesh_axes = ["tp"]} : (tensor<8x2xf32>) -> tensor<8x2xf32>
    // broadcast_from <- all_reduce(sum), kept on the root only.
    %4 = tsr.broadcast_from %e {mesh_axes = ["dp"], root = 1 : i64} : (tensor<3xf32>) -> tensor<3xf32>
    // local_shard <- the gradient in this rank's block, zeros elsewhere.
    %5 = tsr.local_shard %f {dim = 1 : i64, mesh_axes = ["tp"]} : (tensor<2x8xf32>) -> tensor<2x2xf32>
    %s0 = tsr.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    %s1 = tsr.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x16xf32>) -> tensor<f32>
    %s2 = tsr.reduce_sum %2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x2xf32>) -> tensor<f32>
    %s3 = tsr.reduce_sum %3 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x2xf32>) -> tensor<f32>
    %s4 = tsr.reduce_sum %4 {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
    %s5 = tsr.reduce_sum %5 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x2xf32>) -> tensor<f32>
    %t0 = tsr.add %s0, %s1 : tensor<f32>, tensor<f32> -> tensor<f32>
    %t1 = tsr.add %t0, %s2 : tensor<f32>, tensor<f32> -> tensor<f32>
    %t2 = tsr.add %t1, %s3 : tensor<f32>, tensor<f32> -> tensor<f32>
    %t3 = tsr.add %t2, %s4 : tensor<f32>, tensor<f32> -> tensor<f32>
    %l = tsr.add %t3, %s5 : tensor<f32>, tensor<f32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// Backward runs in reverse program order: local_shard first.
// CHECK: %[[EYE:.*]] = tsr.constant {tsr.backward} dense<{{\[\[}}1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00]]> : tensor<4x4xf32>
// CHECK: %[[ROW:.*]] = tsr.local_shard %[[EYE]] {mesh_axes = ["tp"], tsr.backward} : (tensor<4x4xf32>) -> tensor<1x4xf32>
// CHECK: %[[MASK:.*]] = tsr.reshape %{{.*}} {tsr.backward} : tensor<4xf32> to tensor<1x4x1xf32>
// CHECK: %[[DY5:.*]] = tsr.reshape %{{.*}} {tsr.backward} : tensor<2x2xf32> to tensor<2x1x2xf32>
// CHECK: %[[BLOCKS:.*]] = tsr.broadcast %[[DY5]] {tsr.backward} : tensor<2x1x2xf32> to tensor<2x4x2xf32>
// CHECK: %[[KEPT:.*]] = tsr.mul %[[BLOCKS]], %[[MASK]] {tsr.backward}
// CHECK: %[[DF:.*]] = tsr.reshape %[[KEPT]] {tsr.backward} : tensor<2x4x2xf32> to tensor<2x8xf32>

// CHECK: %[[SUM4:.*]] = tsr.all_reduce %{{.*}} {mesh_axes = ["dp"], tsr.backward{{.*}}} : (tensor<3xf32>) -> tensor<3xf32>
// CHECK: %[[ROOT:.*]] = tsr.constant {tsr.backward} dense<{{\[\[}}0.000000e+00, 0.000000e+00], [1.000000e+00, 0.000000e+00]]> : tensor<2x2xf32>
// CHECK: tsr.local_shard %[[ROOT]] {mesh_axes = ["dp"], tsr.backward} : (tensor<2x2xf32>) -> tensor<1x2xf32>
// CHECK: %[[FACTOR:.*]] = tsr.reduce_sum %{{.*}} {axes = array<i64: 0>, keepdims = false, tsr.backward} : (tensor<2xf32>) -> tensor<f32>
// CHECK: %[[DE:.*]] = tsr.mul %[[SUM4]], %[[FACTOR]] {tsr.backward}

// CHECK: %[[DD:.*]] = tsr.all_to_all %{{.*}} {mesh_axes = ["tp"], tsr.backward{{.*}}} : (tensor<8x2xf32>) -> tensor<8x2xf32>

// CHECK: %[[G2:.*]] = tsr.all_gather %{{.*}} {mesh_axes = ["tp"], tsr.backward{{.*}}} : (tensor<2x2xf32>) -> tensor<8x2xf32>
// CHECK: %[[QUARTER:.*]] = tsr.constant {tsr.backward} dense<2.500000e-01> : tensor<f32>
// CHECK: %[[DC:.*]] = tsr.mul %[[G2]], %[[QUARTER]] {tsr.backward}

// CHECK: %[[DB:.*]] = tsr.reduce_scatter %{{.*}} {dim = 1 : i64, mesh_axes = ["dp", "tp"], tsr.backward{{.*}}} : (tensor<2x16xf32>) -> tensor<2x2xf32>

// CHECK: %[[DA:.*]] = tsr.all_reduce %{{.*}} {mesh_axes = ["tp"], reduction = #tsr.reduction<mean>, serves = ["a"], tsr.backward{{.*}}} : (tensor<2x3xf32>) -> tensor<2x3xf32>

// CHECK: return %{{.*}}, %[[DA]], %[[DB]], %[[DC]], %[[DD]], %[[DE]], %[[DF]]
