// RUN: tessera-opt %s -split-input-file --tsr-outline-layers -mlir-print-debuginfo | FileCheck %s

// Three layers' forward passes, identical but for their names: one
// function, called per layer, located at the names they share. The
// constant they read is copied in.
// CHECK-LABEL: func.func @main(
// CHECK: %[[L0:.*]] = call @"layers0-2.forward"(%arg0, %arg1) {tsr.layer = 0 : i64}
// CHECK-NEXT: %[[L1:.*]] = call @"layers0-2.forward"(%[[L0]], %arg2) {tsr.layer = 1 : i64}
// CHECK-NEXT: %[[L2:.*]] = call @"layers0-2.forward"(%[[L1]], %arg3) {tsr.layer = 2 : i64}
// CHECK-NEXT: return %[[L2]]
// CHECK: func.func private @"layers0-2.forward"(%arg0: tensor<4x8xf32> {{.*}}, %arg1: tensor<8x8xf32> {{.*}}) -> tensor<4x8xf32> attributes {tsr.layer = array<i64: 0, 1, 2>}
// CHECK-NEXT: tsr.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: tsr.matmul %arg0, %arg1 : {{.*}} loc(#[[FC:.*]])
// CHECK-NEXT: tsr.mul %{{.*}}, %{{.*}} : {{.*}} loc(#[[SCALE:.*]])
// CHECK-NOT: func.func private
// CHECK-DAG: #[[FC]] = loc("/blocks.*/fc")
// CHECK-DAG: #[[SCALE]] = loc("/blocks.*/scale")
func.func @main(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>,
                %w2: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %c = tsr.constant dense<2.0> : tensor<f32>
  %h0 = tsr.matmul %x, %w0 {tsr.layer = 0 : i64} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("/blocks.0/fc")
  %s0 = tsr.mul %h0, %c {tsr.layer = 0 : i64} : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32> loc("/blocks.0/scale")
  %h1 = tsr.matmul %s0, %w1 {tsr.layer = 1 : i64} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("/blocks.1/fc")
  %s1 = tsr.mul %h1, %c {tsr.layer = 1 : i64} : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32> loc("/blocks.1/scale")
  %h2 = tsr.matmul %s1, %w2 {tsr.layer = 2 : i64} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("/blocks.12/fc")
  %s2 = tsr.mul %h2, %c {tsr.layer = 2 : i64} : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32> loc("/blocks.12/scale")
  return %s2 : tensor<4x8xf32>
}

// -----

// Forward and backward passes and the work after the last backward op (a
// layer's part of a sum over all layers): one function per pass. What a
// backward pass reads of its forward pass is returned by the forward call.
// The sum starts from a value of no layer.
// CHECK-LABEL: func.func @train(
// CHECK: %[[F0:.*]]:2 = call @"layers0-1.forward"(%arg0, %arg1) {tsr.layer = 0 : i64}
// CHECK-NEXT: %[[F1:.*]]:2 = call @"layers0-1.forward"(%[[F0]]#1, %arg2) {tsr.layer = 1 : i64}
// CHECK-NEXT: %[[B1:.*]] = call @"layers0-1.backward"(%[[F1]]#1, %[[F1]]#0) {tsr.backward, tsr.layer = 1 : i64}
// CHECK-NEXT: %[[B0:.*]] = call @"layers0-1.backward"(%[[B1]], %[[F0]]#0) {tsr.backward, tsr.layer = 0 : i64}
// CHECK-NEXT: %[[U0:.*]] = call @"layers0-1.update"(%[[B0]], %arg3) {tsr.layer = 0 : i64}
// CHECK-NEXT: %[[U1:.*]] = call @"layers0-1.update"(%[[B1]], %[[U0]]) {tsr.layer = 1 : i64}
// CHECK-NEXT: return %[[U1]]
// CHECK-DAG: func.func private @"layers0-1.forward"({{.*}}) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {tsr.layer = array<i64: 0, 1>}
// CHECK-DAG: func.func private @"layers0-1.backward"({{.*}}) -> tensor<4x8xf32> attributes {tsr.layer = array<i64: 0, 1>}
// CHECK-DAG: func.func private @"layers0-1.update"({{.*}}) -> tensor<f32> attributes {tsr.layer = array<i64: 0, 1>}
func.func @train(%x: tensor<4x8xf32>, %b0: tensor<4x8xf32>,
                 %b1: tensor<4x8xf32>, %start: tensor<f32>) -> tensor<f32> {
  %h0 = tsr.add %x, %b0 {tsr.layer = 0 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a0 = tsr.tanh %h0 {tsr.layer = 0 : i64} : tensor<4x8xf32>
  %h1 = tsr.add %a0, %b1 {tsr.layer = 1 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a1 = tsr.tanh %h1 {tsr.layer = 1 : i64} : tensor<4x8xf32>
  %g1 = tsr.mul %a1, %h1 {tsr.backward, tsr.layer = 1 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %g0 = tsr.mul %g1, %h0 {tsr.backward, tsr.layer = 0 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r0 = tsr.reduce_sum %g0 {axes = array<i64: 0, 1>, keepdims = false, tsr.layer = 0 : i64} : (tensor<4x8xf32>) -> tensor<f32>
  %t0 = tsr.add %start, %r0 {tsr.layer = 0 : i64} : tensor<f32>, tensor<f32> -> tensor<f32>
  %r1 = tsr.reduce_sum %g1 {axes = array<i64: 0, 1>, keepdims = false, tsr.layer = 1 : i64} : (tensor<4x8xf32>) -> tensor<f32>
  %t1 = tsr.add %t0, %r1 {tsr.layer = 1 : i64} : tensor<f32>, tensor<f32> -> tensor<f32>
  return %t1 : tensor<f32>
}

// -----

// Update cells: each layer's parameter update (w - g) is the step's next
// value of its parameter (tsr.updates), and the call is the last to read
// it, so the cell's result is marked as the next value of the cell's
// argument it replaces (argument 0). @late reads %w1 after its update:
// layer 1's cell is not marked, and does not share layer 0's body.
// CHECK-LABEL: func.func @sgd(
// CHECK: call @"layers0-1.update"(%arg0, %arg2) {tsr.layer = 0 : i64}
// CHECK: call @"layers0-1.update"(%arg1, %arg3) {tsr.layer = 1 : i64}
// CHECK: func.func private @"layers0-1.update"({{.*}}) -> (tensor<8xf32> {tsr.updates = 0 : i64})
func.func @sgd(%w0: tensor<8xf32>, %w1: tensor<8xf32>, %g0: tensor<8xf32>,
               %g1: tensor<8xf32>)
    -> (tensor<8xf32> {tsr.updates = 0 : i64},
        tensor<8xf32> {tsr.updates = 1 : i64}) {
  %b = tsr.mul %g0, %g1 {tsr.backward} : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %n0 = tsr.sub %w0, %g0 {tsr.layer = 0 : i64} : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %n1 = tsr.sub %w1, %g1 {tsr.layer = 1 : i64} : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %n0, %n1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @late(
// CHECK: call @layer0.update(
// CHECK: call @layer1.update(
// CHECK-DAG: func.func private @layer0.update({{.*}}) -> (tensor<8xf32> {tsr.updates = 0 : i64}) attributes
// CHECK-DAG: func.func private @layer1.update({{.*}}) -> tensor<8xf32> attributes
func.func @late(%w0: tensor<8xf32>, %w1: tensor<8xf32>, %g0: tensor<8xf32>,
                %g1: tensor<8xf32>)
    -> (tensor<8xf32> {tsr.updates = 0 : i64},
        tensor<8xf32> {tsr.updates = 1 : i64}, tensor<8xf32>) {
  %b = tsr.mul %g0, %g1 {tsr.backward} : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %n0 = tsr.sub %w0, %g0 {tsr.layer = 0 : i64} : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %n1 = tsr.sub %w1, %g1 {tsr.layer = 1 : i64} : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %r = tsr.mul %w1, %w1 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %n0, %n1, %r : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A path that leaves a layer's pass through an op with side effects (a
// collective) and comes back splits the pass in two parts, each outlined.
// CHECK-LABEL: func.func @collective(
// CHECK: %[[P0:.*]] = call @"layers0-1.forward"(%arg0) {tsr.layer = 0 : i64}
// CHECK-NEXT: %[[R0:.*]] = tsr.all_reduce %[[P0]]
// CHECK-NEXT: %[[Q0:.*]] = call @"layers0-1.forward.1"(%[[R0]]) {tsr.layer = 0 : i64}
// CHECK-NEXT: %[[P1:.*]] = call @"layers0-1.forward"(%[[Q0]]) {tsr.layer = 1 : i64}
// CHECK-NEXT: %[[R1:.*]] = tsr.all_reduce %[[P1]]
// CHECK-NEXT: call @"layers0-1.forward.1"(%[[R1]]) {tsr.layer = 1 : i64}
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
func.func @collective(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h0 = tsr.tanh %x {tsr.layer = 0 : i64} : tensor<4x8xf32>
  %r0 = tsr.all_reduce %h0 {mesh_axes = ["tp"], serves = ["h0"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a0 = tsr.relu %r0 {tsr.layer = 0 : i64} : tensor<4x8xf32>
  %h1 = tsr.tanh %a0 {tsr.layer = 1 : i64} : tensor<4x8xf32>
  %r1 = tsr.all_reduce %h1 {mesh_axes = ["tp"], serves = ["h1"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a1 = tsr.relu %r1 {tsr.layer = 1 : i64} : tensor<4x8xf32>
  return %a1 : tensor<4x8xf32>
}
}
