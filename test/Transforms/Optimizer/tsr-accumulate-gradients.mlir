// RUN: tessera-opt %s -split-input-file --tsr-accumulate-gradients=micro-batches=2 | FileCheck %s
// RUN: not tessera-opt %s -split-input-file --tsr-accumulate-gradients=micro-batches=0 2>&1 | FileCheck %s --check-prefix=ZERO

// The micro-step keeps the micro-batch shapes and becomes private; the new
// public step takes 2x4 rows of x and y, slices them, and averages the
// losses and gradients of the two calls.
// CHECK-LABEL: func.func private @tessera_micro_step(
// CHECK-SAME: tensor<3x2xf32>, %{{.*}}: tensor<4x3xf32>, %{{.*}}: tensor<4xi64>) -> (tensor<f32>, tensor<3x2xf32>)
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[W:arg[0-9]+]]: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<8x3xf32> {tsr.name = "x"}
// CHECK-SAME: %[[Y:arg[0-9]+]]: tensor<8xi64> {tsr.name = "y", tsr.role = #tsr.role<label>}
// CHECK: %[[X0:.*]] = tsr.slice %[[X]] {limits = array<i64: 4, 3>, starts = array<i64: 0, 0>
// CHECK: %[[Y0:.*]] = tsr.slice %[[Y]] {limits = array<i64: 4>, starts = array<i64: 0>
// CHECK: %[[C0:.*]]:2 = call @tessera_micro_step(%[[W]], %[[X0]], %[[Y0]])
// CHECK: %[[X1:.*]] = tsr.slice %[[X]] {limits = array<i64: 8, 3>, starts = array<i64: 4, 0>
// CHECK: %[[Y1:.*]] = tsr.slice %[[Y]] {limits = array<i64: 8>, starts = array<i64: 4>
// CHECK: %[[C1:.*]]:2 = call @tessera_micro_step(%[[W]], %[[X1]], %[[Y1]])
// CHECK: %[[L:.*]] = tsr.add %[[C0]]#0, %[[C1]]#0
// CHECK: %[[G:.*]] = tsr.add %[[C0]]#1, %[[C1]]#1
// CHECK: %[[LM:.*]] = tsr.div %[[L]], %{{.*}}
// CHECK: %[[GM:.*]] = tsr.div %[[G]], %{{.*}}
// CHECK: return %[[LM]], %[[GM]]
// ZERO: error: micro-batches must be at least 1, got 0
func.func @main(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %x: tensor<4x3xf32> {tsr.name = "x"},
                %y: tensor<4xi64> {tsr.name = "y", tsr.role = #tsr.role<label>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}) {
  %m = tsr.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %l = tsr.softmax_cross_entropy_loss %m, %y : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3x2xf32>
}

// -----

// The rng argument reaches micro-batch j as rng·k + j.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[R:arg[0-9]+]]: tensor<i64> {tsr.name = "rng.step", tsr.role = #tsr.role<rng>}
// CHECK: %[[K:.*]] = tsr.constant dense<2> : tensor<i64>
// CHECK: %[[RK:.*]] = tsr.mul %[[R]], %[[K]]
// CHECK: %[[J0:.*]] = tsr.constant dense<0> : tensor<i64>
// CHECK: %[[S0:.*]] = tsr.add %[[RK]], %[[J0]]
// CHECK: call @tessera_micro_step(%{{.*}}, %[[S0]])
// CHECK: %[[J1:.*]] = tsr.constant dense<1> : tensor<i64>
// CHECK: %[[S1:.*]] = tsr.add %{{.*}}, %[[J1]]
// CHECK: call @tessera_micro_step(%{{.*}}, %[[S1]])
func.func @main(%x: tensor<4x3xf32> {tsr.name = "x"},
                %r: tensor<i64> {tsr.name = "rng.step", tsr.role = #tsr.role<rng>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
  %y, %m = tsr.dropout %x, %r {ratio = 0.5 : f64, seed = 1 : i64} : (tensor<4x3xf32>, tensor<i64>) -> (tensor<4x3xf32>, tensor<4x3xi1>)
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A partitioned step stays partitioned: its arguments are the same blocks
// (w is 2 of the 4 columns a split over tp makes).
// CHECK-LABEL: func.func @main(
// CHECK-SAME: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\[\], \["tp"\]\]}}>}
// CHECK-SAME: attributes {tsr.partitioned = ["tp"]}
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @main(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<[[], ["tp"]]>},
                  %x: tensor<4x3xf32> {tsr.name = "x"})
      -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
          tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>, tsr.sharding = #tsr.sharding<[[], ["tp"]]>})
      attributes {tsr.partitioned = ["tp"]} {
    %m = tsr.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
    %l = tsr.reduce_sum %m {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
    return %l, %w : tensor<f32>, tensor<3x2xf32>
  }
}

// -----

// A metric (a count over the batch) is the sum of the micro-batches', not
// their mean.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<2xi64> {tsr.name = "hits", tsr.role = #tsr.role<metric>})
// CHECK: %[[C0:.*]]:2 = call @tessera_micro_step(
// CHECK: %[[C1:.*]]:2 = call @tessera_micro_step(
// CHECK: %[[L:.*]] = tsr.add %[[C0]]#0, %[[C1]]#0
// CHECK: %[[H:.*]] = tsr.add %[[C0]]#1, %[[C1]]#1
// CHECK: %[[LM:.*]] = tsr.div %[[L]], %{{.*}}
// CHECK-NEXT: return %[[LM]], %[[H]]
func.func @main(%x: tensor<4x2xf32> {tsr.name = "x"},
                %i: tensor<4xi64> {tsr.name = "i"})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<2xi64> {tsr.name = "hits", tsr.role = #tsr.role<metric>}) {
  %l = tsr.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  %h = tsr.one_hot %i {depth = 2 : i64, axis = -1 : i64, on_value = 1.0 : f64, off_value = 0.0 : f64} : (tensor<4xi64>) -> tensor<4x2xi64>
  %c = tsr.reduce_sum %h {axes = array<i64: 0>, keepdims = false} : (tensor<4x2xi64>) -> tensor<2xi64>
  return %l, %c : tensor<f32>, tensor<2xi64>
}
