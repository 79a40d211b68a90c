// RUN: tessera-opt %s --tsr-offload-optimizer "--tsr-optimizer=optimizer=sgd lr=0.1 momentum=0.9 function=host_update" | FileCheck %s

// ZeRO-2: the step returns this rank's reduce-scattered shard of the
// gradient, which now says of which whole tensor; the host program takes it
// in that layout and keeps the step's tsr.zero, so tsr-optimizer updates
// this rank's shard (its momentum a shard too) and all-gathers the
// parameter whole, on the host.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<4xf32> {tsr.global_shape = array<i64: 8>, tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>, tsr.shards = 2 : i64})
// CHECK-LABEL: func.func @host_update(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<8xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<4xf32> {tsr.global_shape = array<i64: 8>, tsr.name = "grad.w", tsr.role = #tsr.role<grad>, tsr.shards = 2 : i64}
// CHECK-SAME: tensor<4xf32> {tsr.global_shape = array<i64: 8>, tsr.init = 0.000000e+00 : f64, tsr.name = "sgd.momentum.w", tsr.role = #tsr.role<state>, tsr.shards = 2 : i64}
// CHECK-SAME: attributes {tsr.on_host, tsr.zero = #tsr.zero<stage = 2, axes = ["dp"]>}
// CHECK: tsr.local_shard
// CHECK: tsr.all_gather
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
func.func @main(%w: tensor<8xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<4xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>, tsr.shards = 2 : i64})
    attributes {tsr.zero = #tsr.zero<stage = 2, axes = ["dp"]>} {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<8xf32>) -> tensor<f32>
  %g = tsr.slice %w {starts = array<i64: 0>, limits = array<i64: 4>, steps = array<i64: 1>} : (tensor<8xf32>) -> tensor<4xf32>
  return %l, %g : tensor<f32>, tensor<4xf32>
}
}
