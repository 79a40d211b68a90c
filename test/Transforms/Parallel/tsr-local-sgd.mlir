// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 local-steps=4" --tsr-data-parallel "--tsr-optimizer=optimizer=sgd lr=0.1 momentum=0.9" --tsr-local-sgd | FileCheck %s
// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 local-steps=4" --tsr-data-parallel "--tsr-optimizer=optimizer=sgd lr=0.1 momentum=0.9" "--tsr-local-sgd=bucket-bytes=24" | FileCheck %s --check-prefix=SMALL

// Local SGD: tsr-data-parallel reduced only the loss, tsr-optimizer applied
// this rank's own update, and the average of the parameters and the
// momentum is due when 4 divides the new step count or the runtime's sync
// input is 1. Both branches yield buffers of their own (the other steps'
// a copy). The step counter is not averaged.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[SYNC:[a-z0-9]+]]: tensor<i64> {tsr.name = "local_sgd.sync", tsr.role = #tsr.role<sync>})
// CHECK-SAME: attributes {tsr.local_steps = 4 : i64, tsr.zero = #tsr.zero<stage = 0, axes = ["dp"]>}
// CHECK: %[[LOSS:.+]] = tsr.all_reduce %{{.+}} {mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["loss"]}
// CHECK-NOT: tsr.all_reduce
// CHECK: %[[STEP:.+]] = tsr.add %{{.+}}, %{{.+}} : tensor<i64>, tensor<i64> -> tensor<i64>
// CHECK: %[[FOUR:.+]] = tsr.constant dense<4> : tensor<i64>
// CHECK: %[[REM:.+]] = tsr.mod %[[STEP]], %[[FOUR]]
// CHECK: %[[PERIODIC:.+]] = tsr.equal %[[REM]],
// CHECK: %[[ASKED:.+]] = tsr.equal %[[SYNC]],
// CHECK: %[[DUE:.+]] = tsr.or %[[PERIODIC]], %[[ASKED]]
// CHECK: %[[C:.+]] = tensor.extract %[[DUE]][] : tensor<i1>
// CHECK: %[[AVG:.+]]:4 = scf.if %[[C]] -> (tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>) {
// CHECK: %[[FLAT:.+]] = tsr.concat
// CHECK-SAME: -> tensor<16xf32>
// CHECK: %[[START:.+]] = tsr.all_reduce %[[FLAT]] {async, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w", "b", "sgd.momentum.w", "sgd.momentum.b"], tsr.local_steps = 4 : i64, tsr.reason = "local SGD: the ranks' average every 4 steps (and on a step the runtime marks sync)"}
// CHECK: %[[DONE:.+]] = tsr.wait %[[START]]
// CHECK: tsr.slice %[[DONE]]
// CHECK: bufferization.alloc_tensor() copy(
// CHECK: scf.yield
// CHECK: } else {
// CHECK-COUNT-4: bufferization.alloc_tensor() copy(
// CHECK: scf.yield
// CHECK: return %[[LOSS]], %[[AVG]]#0, %[[AVG]]#1, %[[STEP]], %[[AVG]]#2, %[[AVG]]#3
// With 24-byte buckets, filled in order and closed when the next tensor
// would overflow: w (24 bytes), b (8), w's momentum (24), b's momentum (8)
// each travel alone, all started before the first wait.
// SMALL-COUNT-4: tsr.all_reduce %{{.+}} {async
// SMALL-NOT: tsr.all_reduce
// SMALL-COUNT-4: tsr.wait
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
