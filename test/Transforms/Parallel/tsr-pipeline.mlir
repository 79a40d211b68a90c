// RUN: tessera-opt %s -split-input-file "--tsr-pipeline-plan=split=head" --tsr-autodiff --canonicalize --cse "--tsr-pipeline=micro-batches=2" | FileCheck %s
// RUN: tessera-opt %s -split-input-file "--tsr-pipeline-plan=split=head" --tsr-autodiff --canonicalize --cse "--tsr-pipeline=micro-batches=2 schedule=gpipe" | FileCheck %s --check-prefix=GPIPE
// RUN: tessera-opt %s -split-input-file "--tsr-pipeline-plan=split=head" --tsr-autodiff --canonicalize --cse "--tsr-pipeline=micro-batches=2 schedule=zb-h1" | FileCheck %s --check-prefix=ZBH1
// RUN: tessera-opt %s -split-input-file "--tsr-pipeline-plan=virtual-stages=2" --tsr-autodiff --canonicalize --cse "--tsr-pipeline=micro-batches=2 schedule=interleaved" | FileCheck %s --check-prefix=INTERLEAVED
// RUN: tessera-opt %s -split-input-file "--tsr-pipeline-plan=split=head" --tsr-autodiff --canonicalize --cse "--tsr-pipeline=micro-batches=2 schedule=pipedream" | FileCheck %s --check-prefix=PIPEDREAM

// A two-layer MLP on two stages, 1F1B with two micro-batches. Each of the
// four cells is a private function; each stage a public one that runs its
// part of the schedule on its micro-batches (rows 0-3 and 4-7 of x).
// CHECK: module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>, tsr.schedule = [@stage0, @stage1]}
// CHECK-LABEL: func.func private @stage0.forward(
// CHECK-SAME: %{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-LABEL: func.func private @stage1.forward(
// CHECK-LABEL: func.func private @stage1.backward(
// CHECK-LABEL: func.func private @stage0.backward(

// Stage 0 holds w1 and takes the whole batch (8 rows); it returns the loss
// and the mean of w1's gradients. 1F1B: two forwards (P - s = 2 in
// flight), then the backwards.
// CHECK-LABEL: func.func @stage0(
// CHECK-SAME: %[[W1:.*]]: tensor<8x8xf32> {tsr.name = "w1", tsr.role = #tsr.role<param>}, %[[X:.*]]: tensor<8x8xf32> {tsr.name = "x"})
// CHECK-SAME: -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<8x8xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w1", tsr.role = #tsr.role<grad>})
// The simulated schedule: each action's predicted start and end, the
// stage's busy time and bubble, at most 2 micro-batches in flight.
// CHECK-SAME: tsr.pipeline_schedule = {actions = ["F0", "F1", "B0", "B1"], backward_seconds = {{.*}}, bubble = {{.*}}, busy_seconds = {{.*}}, ends = array<f64: {{.*}}>, forward_seconds = {{.*}}, micro_batches = 2 : i64, peak_in_flight = 2 : i64, schedule = "1f1b", starts = array<f64: 0.000000e+00, {{.*}}>, step_seconds = {{.*}}}, tsr.ranks = {pp = 0 : i64}
// CHECK: %[[X0:.*]] = tsr.slice %[[X]] {limits = array<i64: 4, 8>, starts = array<i64: 0, 0>
// CHECK-NEXT: %[[F0:.*]]:2 = call @stage0.forward(%[[X0]], %[[W1]])
// CHECK-NEXT: tsr.send %[[F0]]#1 {mesh_axes = ["pp"], peer = 1 : i64, serves = ["micro-batch 0 of stage0.forward"]} : tensor<4x8xf32>
// CHECK-NEXT: %[[X1:.*]] = tsr.slice %[[X]] {limits = array<i64: 8, 8>, starts = array<i64: 4, 0>
// CHECK-NEXT: %[[F1:.*]]:2 = call @stage0.forward(%[[X1]], %[[W1]])
// CHECK-NEXT: tsr.send %[[F1]]#1 {{.*}}serves = ["micro-batch 1 of stage0.forward"]
// CHECK-NEXT: %[[D0:.*]] = tsr.recv {mesh_axes = ["pp"], peer = 1 : i64, serves = ["micro-batch 0 of stage1.backward"]} : tensor<4x8xf32>
// CHECK-NEXT: %[[G0:.*]] = call @stage0.backward(%[[F0]]#0, %[[D0]], %[[X0]])
// CHECK-NEXT: %[[D1:.*]] = tsr.recv {{.*}}serves = ["micro-batch 1 of stage1.backward"]
// CHECK-NEXT: %[[G1:.*]] = call @stage0.backward(%[[F1]]#0, %[[D1]], %[[X1]])
// CHECK-NEXT: %[[SUM:.*]] = tsr.add %[[G0]], %[[G1]]
// The loss comes from stage 1.
// CHECK-NEXT: %[[ZERO:.*]] = tsr.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[LOSS:.*]] = tsr.broadcast_from %[[ZERO]] {mesh_axes = ["pp"], root = 1 : i64, serves = ["loss"]}
// CHECK-NEXT: %[[TWO:.*]] = tsr.constant dense<2.000000e+00> : tensor<8x8xf32>
// CHECK-NEXT: %[[MEAN:.*]] = tsr.div %[[SUM]], %[[TWO]]
// CHECK-NEXT: return %[[LOSS]], %[[MEAN]]

// Stage 1 alternates: one micro-batch in flight at most.
// CHECK-LABEL: func.func @stage1(
// CHECK-SAME: tsr.pipeline_schedule = {actions = ["F0", "B0", "F1", "B1"], {{.*}}peak_in_flight = 1 : i64{{.*}}tsr.ranks = {pp = 1 : i64}
// CHECK: tsr.recv {{.*}}peer = 0 : i64, serves = ["micro-batch 0 of stage0.forward"]
// CHECK: call @stage1.forward(
// CHECK: call @stage1.backward(
// CHECK: tsr.send {{.*}}peer = 0 : i64, serves = ["micro-batch 0 of stage1.backward"]
// CHECK: tsr.recv {{.*}}serves = ["micro-batch 1 of stage0.forward"]
// CHECK: tsr.broadcast_from %{{.*}} {mesh_axes = ["pp"], root = 1 : i64, serves = ["loss"]}

// ZB-H1 splits stage 1's backward pass: the input gradient that stage 0
// waits for (dy·w2ᵀ), and the weight gradient (aᵀ·dy), which runs after
// both micro-batches' input gradients have gone. Stage 0 has no input
// gradient to send: its whole backward pass is a weight gradient.
// ZBH1-LABEL: func.func private @stage1.backward(%{{.*}}: tensor<8x8xf32>) -> tensor<4x8xf32>
// ZBH1-LABEL: func.func private @stage1.weight_gradient(%{{.*}}: tensor<4x8xf32>) -> tensor<8x8xf32>
// ZBH1-LABEL: func.func private @stage0.weight_gradient(
// ZBH1: func.func @stage0({{.*}}actions = ["F0", "F1", "B0", "W0", "B1", "W1"]
// ZBH1: func.func @stage1({{.*}}actions = ["F0", "B0", "F1", "B1", "W0", "W1"]
// ZBH1: call @stage1.backward(
// ZBH1-NEXT: tsr.send {{.*}}serves = ["micro-batch 0 of stage1.backward"]
// ZBH1: call @stage1.backward(
// ZBH1-NEXT: tsr.send {{.*}}serves = ["micro-batch 1 of stage1.backward"]
// ZBH1-NEXT: call @stage1.weight_gradient(
// ZBH1-NEXT: call @stage1.weight_gradient(

// Interleaved: four chunks of one op each, chunk c on rank c mod 2, so
// stage 0 holds w1 (chunk 0) and w2 (chunk 2); Megatron's order with
// 2 (P - 1) + (V - 1) P = 4 warm-up forwards on rank 0 (all of them here).
// INTERLEAVED-LABEL: func.func private @stage0.chunk0.forward(
// INTERLEAVED-LABEL: func.func private @stage1.chunk0.forward(
// INTERLEAVED-LABEL: func.func private @stage0.chunk1.forward(
// INTERLEAVED-LABEL: func.func private @stage1.chunk1.forward(
// INTERLEAVED: func.func @stage0({{.*}}tsr.name = "w1"{{.*}}tsr.name = "w2"{{.*}}actions = ["F0.0", "F1.0", "F0.1", "F1.1", "B0.1", "B1.1", "B0.0", "B1.0"]{{.*}}peak_in_flight = 4{{.*}}virtual_stages = 2
// INTERLEAVED: func.func @stage1({{.*}}actions = ["F0.0", "F1.0", "F0.1", "B0.1", "F1.1", "B1.1", "B0.0", "B1.0"]

// PipeDream: no flush. A step opens with the backward passes of the
// previous step's last micro-batches (B-2 on stage 0, B-1 on stage 1),
// whose values are state: stage 1's backward of micro-batch -1 uses the
// stashed w2 its forward used, then returns this step's w2 as the next
// stash, and sends first the input gradient its last backward pass of the
// previous step computed. Those gradients count from the second step on.
// PIPEDREAM-LABEL: func.func @stage0(
// PIPEDREAM-SAME: tsr.name = "pipedream.started"
// PIPEDREAM-SAME: actions = ["B-2", "F0", "B-1", "F1"]
// PIPEDREAM: tsr.recv {{.*}}serves = ["micro-batch -2 of stage1.backward"]
// PIPEDREAM-NEXT: call @stage0.backward(
// PIPEDREAM: func.func @stage1(%[[W2:[^:]*]]: tensor<8x8xf32> {tsr.name = "w2"
// PIPEDREAM-SAME: %[[STARTED:[^:]*]]: tensor<f32> {tsr.init = 0.000000e+00 : f64, tsr.name = "pipedream.started"
// PIPEDREAM-SAME: %[[OUTBOX:[^:]*]]: tensor<4x8xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "pipedream.carry.0"
// PIPEDREAM-SAME: %[[STASH:[^:]*]]: tensor<8x8xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "pipedream.stash.w2"
// PIPEDREAM-SAME: actions = ["B-1", "F0", "B0", "F1"]
// PIPEDREAM-NEXT: tsr.send %[[OUTBOX]] {{{.*}}serves = ["micro-batch -2 of stage1.backward"]}
// PIPEDREAM-NEXT: %[[OLD:.*]]:2 = call @stage1.backward(%[[STASH]],
// PIPEDREAM: %[[NEW:.*]]:2 = call @stage1.backward(%[[W2]],
// PIPEDREAM: %[[ON:.*]] = tsr.greater %[[STARTED]]
// PIPEDREAM: tsr.where %[[ON]], %[[OLD]]#1
// PIPEDREAM: return {{.*}}, %[[NEW]]#0, %[[W2]], %{{.*}} :

// GPipe: every forward, then every backward, on both stages.
// GPIPE: func.func @stage0({{.*}}actions = ["F0", "F1", "B0", "B1"]{{.*}}peak_in_flight = 2
// GPIPE: func.func @stage1({{.*}}actions = ["F0", "F1", "B0", "B1"]{{.*}}peak_in_flight = 2
module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"},
                %w1: tensor<8x8xf32> {tsr.name = "w1", tsr.role = #tsr.role<param>},
                %w2: tensor<8x8xf32> {tsr.name = "w2", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
  %h = tsr.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("fc")
  %a = tsr.relu %h : tensor<4x8xf32> loc("act")
  %y = tsr.matmul %a, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("head")
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}
}

// -----

// A parameter that two stages read (a tied embedding and output head) lives
// on the first; it travels with each micro-batch's activations, and the
// second stage sends its share of the gradient back, which the first one's
// backward pass adds to its own.
// CHECK-LABEL: func.func @stage0(
// CHECK-SAME: %[[W:.*]]: tensor<8x8xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}
// CHECK: tsr.send %[[W]] {{.*}}serves = ["micro-batch 0 of stage0.forward"]} : tensor<8x8xf32>
// CHECK: tsr.recv {{.*}}serves = ["micro-batch 0 of stage1.backward"]} : tensor<4x8xf32>
// CHECK-NEXT: %[[SHARE:.*]] = tsr.recv {{.*}}serves = ["micro-batch 0 of stage1.backward"]} : tensor<8x8xf32>
// CHECK-NEXT: call @stage0.backward({{.*}}%[[SHARE]])
// CHECK-LABEL: func.func @stage1(
// CHECK-SAME: %{{.*}}: tensor<8x8xf32> {tsr.name = "x"}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>})
// CHECK: %[[WR:.*]] = tsr.recv {{.*}} : tensor<8x8xf32>
// CHECK: call @stage1.forward(%{{.*}}, %[[WR]])
// CHECK: %[[B:.*]]:2 = call @stage1.backward(
// CHECK-NEXT: tsr.send %[[B]]#0
// CHECK-NEXT: tsr.send %[[B]]#1 {{.*}} : tensor<8x8xf32>
module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"},
                %w: tensor<8x8xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
  %h = tsr.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("embed")
  %a = tsr.relu %h : tensor<4x8xf32> loc("act")
  %y = tsr.matmul %a, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("head")
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}
}
