// RUN: tessera-opt %s "--tsr-optimizer=optimizer=lamb lr=0.01 clip-norm=1.0" | FileCheck %s
// RUN: not tessera-opt %s "--tsr-optimizer=optimizer=adafactor" 2>&1 | FileCheck %s --check-prefix=ADAFACTOR

// ADAFACTOR: error: adafactor's factored second moments are row and column means, which tensor parallelism splits ('w' is split): use another optimizer

// Under tensor parallelism a split parameter's norms cover its whole: the
// squares of this rank's block are summed over the tp ranks holding the
// others. w is split over tp, b is whole (the same on every tp rank): the
// clipping norm sums w's squares over tp once and adds b's; LAMB's trust
// ratio sums over tp for w only.
// The moments of w are blocks like w (so the runtime and checkpoints map
// them to the whole tensor), those of b whole; the new values are laid out
// as the arguments they update.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: tensor<2x2xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "lamb.m.w", tsr.role = #tsr.role<state>, tsr.sharding = #tsr.sharding<{{\[\[\], \["tp"\]\]}}>}
// CHECK-SAME: tensor<2x2xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "lamb.v.w", tsr.role = #tsr.role<state>, tsr.sharding = #tsr.sharding<{{\[\[\], \["tp"\]\]}}>}
// CHECK-SAME: tensor<2xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "lamb.m.b", tsr.role = #tsr.role<state>}
// CHECK-SAME: -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<2x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\[\], \["tp"\]\]}}>, tsr.updates = 0 : i64}, tensor<2xf32> {tsr.name = "b", tsr.role = #tsr.role<param>, tsr.updates = 1 : i64}
// CHECK: %[[WSQ:.*]] = tsr.reduce_sum %{{.*}} : (tensor<2x2xf64>) -> tensor<f64>
// CHECK: %[[BSQ:.*]] = tsr.reduce_sum %{{.*}} : (tensor<2xf64>) -> tensor<f64>
// CHECK: %[[WALL:.*]] = tsr.all_reduce %[[WSQ]] {mesh_axes = ["tp"], serves = ["w"], tsr.reason = "a norm over the whole of w (split over tp)"} : (tensor<f64>) -> tensor<f64>
// CHECK: tsr.add %[[BSQ]], %[[WALL]]
// CHECK: tsr.all_reduce %{{.*}} {mesh_axes = ["tp"], serves = ["w"], tsr.reason = "a norm over the whole of w (split over tp)"} : (tensor<f32>) -> tensor<f32>
// CHECK: tsr.all_reduce %{{.*}} {mesh_axes = ["tp"], serves = ["w"], tsr.reason = "a norm over the whole of w (split over tp)"} : (tensor<f32>) -> tensor<f32>
// CHECK-NOT: serves = ["b"]
// CHECK: return
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @main(%w: tensor<2x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<[[], ["tp"]]>},
                  %b: tensor<2xf32> {tsr.name = "b", tsr.role = #tsr.role<param>})
      -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
          tensor<2x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>},
          tensor<2xf32> {tsr.grad_of = 1 : i64, tsr.name = "grad.b", tsr.role = #tsr.role<grad>})
      attributes {tsr.partitioned = ["tp"]} {
    %l = tsr.reduce_sum %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x2xf32>) -> tensor<f32>
    return %l, %w, %b : tensor<f32>, tensor<2x2xf32>, tensor<2xf32>
  }
}
