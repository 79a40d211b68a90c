// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 servers=2" | FileCheck %s --check-prefix=PLAN
// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 servers=2 staleness=3" --tsr-parameter-server | FileCheck %s
// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 servers=1" --tsr-parameter-server "--tsr-optimizer=optimizer=sgd lr=0.1 momentum=0.9 function=server0 metrics=true" | FileCheck %s --check-prefix=UPDATE

// The plan puts each parameter whole on a server, largest first, each on
// the server holding the fewest bytes: w (24 bytes) on 0, b (8) on 1.
// PLAN-LABEL: func.func @main(
// PLAN-SAME: tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>, tsr.server = 0 : i64}
// PLAN-SAME: tensor<2xf32> {tsr.grad_of = 1 : i64, tsr.name = "grad.b", tsr.role = #tsr.role<grad>, tsr.server = 1 : i64}
// PLAN-SAME: attributes {tsr.parameter_server = {servers = 2 : i64, staleness = -1 : i64}, tsr.zero = #tsr.zero<stage = 0, axes = ["dp"]>}
// PLAN-NOT: tsr.all_reduce
// PLAN-NOT: tsr.bucket

// The step stays the workers' program, reducing nothing; each server gets
// its parameters, their gradients and the loss, and returns a
// loss-and-gradient function of its own parameters.
// CHECK: module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>, tsr.schedule = [@main]}
// CHECK-LABEL: func.func @main(
// CHECK-SAME: tsr.parameter_server = {servers = 2 : i64, staleness = 3 : i64}
// CHECK-NOT: tsr.all_reduce
// CHECK: return
// CHECK-LABEL: func.func @server0(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
// CHECK-SAME: %[[GW:[a-z0-9]+]]: tensor<3x2xf32> {tsr.name = "w.grad", tsr.role = #tsr.role<grad>},
// CHECK-SAME: %[[L0:[a-z0-9]+]]: tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>})
// CHECK-SAME: -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>})
// CHECK-SAME: attributes {tsr.server = 0 : i64}
// CHECK-NEXT: return %[[L0]], %[[GW]]
// CHECK-LABEL: func.func @server1(
// CHECK-SAME: tensor<2xf32> {tsr.name = "b", tsr.role = #tsr.role<param>}
// CHECK-SAME: tensor<2xf32> {tsr.name = "b.grad", tsr.role = #tsr.role<grad>}
// CHECK-SAME: attributes {tsr.server = 1 : i64}

// tsr-optimizer turns a server's function into its update: parameters
// and momentum updated, the step counter added, and of the metrics only
// the learning rate (a server holds part of the gradient norm).
// UPDATE-LABEL: func.func @server0(
// UPDATE-SAME: tsr.name = "step", tsr.role = #tsr.role<state>
// UPDATE-SAME: tsr.name = "sgd.momentum.w", tsr.role = #tsr.role<state>
// UPDATE-SAME: tsr.name = "w", tsr.role = #tsr.role<param>, tsr.updates = 0 : i64
// UPDATE-SAME: tsr.name = "lr", tsr.role = #tsr.role<metric>})
// UPDATE-SAME: attributes {tsr.server = 0 : i64}
// UPDATE-NOT: grad_norm
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
