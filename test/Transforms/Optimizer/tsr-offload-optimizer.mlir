// RUN: tessera-opt %s --tsr-offload-optimizer | FileCheck %s
// RUN: tessera-opt %s --tsr-offload-optimizer "--tsr-optimizer=optimizer=adam lr=0.01 function=host_update metrics=true" | FileCheck %s --check-prefix=UPDATE

// The step stays as it was, the device's program: loss and gradients. The
// host program takes the parameters and a gradient input named as the
// step's gradient result (the runtime binds it by that name), and returns
// the gradients of its own parameters, with no loss.
// CHECK: module attributes {tsr.schedule = [@main, @host_update]}
// CHECK-LABEL: func.func @main(
// CHECK-SAME: -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}, tensor<2xf32> {tsr.grad_of = 1 : i64, tsr.name = "grad.b", tsr.role = #tsr.role<grad>})
// CHECK: return
// CHECK-LABEL: func.func @host_update(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<2xf32> {tsr.name = "b", tsr.role = #tsr.role<param>},
// CHECK-SAME: %[[GW:[a-z0-9]+]]: tensor<3x2xf32> {tsr.name = "grad.w", tsr.role = #tsr.role<grad>},
// CHECK-SAME: %[[GB:[a-z0-9]+]]: tensor<2xf32> {tsr.name = "grad.b", tsr.role = #tsr.role<grad>})
// CHECK-SAME: -> (tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}, tensor<2xf32> {tsr.grad_of = 1 : i64, tsr.name = "grad.b", tsr.role = #tsr.role<grad>})
// CHECK-SAME: attributes {tsr.on_host}
// CHECK-NEXT: return %[[GW]], %[[GB]]

// tsr-optimizer turns the host program into the update: parameters and
// both moments updated, the step counter and the metrics added, no loss.
// The step still returns its loss and gradients.
// UPDATE-LABEL: func.func @main(
// UPDATE-SAME: -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<3x2xf32> {tsr.grad_of = 0 : i64
// UPDATE-NOT: adam
// UPDATE-LABEL: func.func @host_update(
// UPDATE-SAME: tsr.name = "adam.m.w", tsr.role = #tsr.role<state>
// UPDATE-SAME: -> (tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.updates = 0 : i64}
// UPDATE-SAME: tsr.name = "adam.v.b", tsr.role = #tsr.role<state>, tsr.updates = {{[0-9]+}} : i64}
// UPDATE-SAME: tsr.name = "lr", tsr.role = #tsr.role<metric>}
// UPDATE-SAME: tsr.name = "grad_norm", tsr.role = #tsr.role<metric>})
// UPDATE-SAME: attributes {tsr.on_host}
// UPDATE-NOT: tsr.role<loss>
// UPDATE: return
module {
func.func @main(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %b: tensor<2xf32> {tsr.name = "b", tsr.role = #tsr.role<param>},
                %x: tensor<4x3xf32> {tsr.name = "x"})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>},
        tensor<2xf32> {tsr.grad_of = 1 : i64, tsr.name = "grad.b", tsr.role = #tsr.role<grad>}) {
  %y = tsr.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %z = tsr.add %y, %b : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %l = tsr.reduce_sum %z {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  %one = tsr.constant dense<1.0> : tensor<4x2xf32>
  %gb = tsr.reduce_sum %one {axes = array<i64: 0>, keepdims = false} : (tensor<4x2xf32>) -> tensor<2xf32>
  %xt = tsr.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %gw = tsr.matmul %xt, %one : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
  return %l, %gw, %gb : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>
}
}

