// RUN: tessera-opt %s -split-input-file --tsr-batch-norm-statistics=momentum=0.8 | FileCheck %s

// Batch statistics over N and the spatial dimensions; the running ones are
// returned updated, naming the arguments they replace.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<2x3x4xf32>
// CHECK-SAME: %[[M:arg[0-9]+]]: tensor<3xf32> {tsr.name = "bn.mean", tsr.role = #tsr.role<param>, tsr.statistics}
// CHECK-SAME: %[[V:arg[0-9]+]]: tensor<3xf32> {tsr.name = "bn.var", tsr.role = #tsr.role<param>, tsr.statistics}
// CHECK-SAME: -> (tensor<2x3x4xf32>, tensor<3xf32> {tsr.name = "bn.mean", tsr.role = #tsr.role<param>, tsr.updates = 3 : i64}, tensor<3xf32> {tsr.name = "bn.var", tsr.role = #tsr.role<param>, tsr.updates = 4 : i64})
// CHECK: %[[SUM:.*]] = tsr.reduce_sum %[[X]] {axes = array<i64: 0, 2>, keepdims = false}
// CHECK: %[[MEAN:.*]] = tsr.mul %[[SUM]], %{{.*}} : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
// CHECK: %[[VAR:.*]] = tsr.mul %{{.*}}, %{{.*}} : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
// CHECK: %[[Y:.*]] = tsr.batch_norm %[[X]], %{{.*}}, %{{.*}}, %[[MEAN]], %[[VAR]]
// CHECK: %[[KEEP:.*]] = tsr.constant dense<8.000000e-01> : tensor<f32>
// CHECK: %[[OLD:.*]] = tsr.mul %[[KEEP]], %[[M]]
// CHECK: %[[NEW:.*]] = tsr.mul %{{.*}}, %[[MEAN]]
// CHECK: %[[M1:.*]] = tsr.add %[[OLD]], %[[NEW]]
// CHECK: %[[V1:.*]] = tsr.add
// CHECK: return %[[Y]], %[[M1]], %[[V1]]
func.func @main(%x: tensor<2x3x4xf32> {tsr.name = "x"},
                %s: tensor<3xf32> {tsr.name = "bn.scale", tsr.role = #tsr.role<param>},
                %b: tensor<3xf32> {tsr.name = "bn.bias", tsr.role = #tsr.role<param>},
                %m: tensor<3xf32> {tsr.name = "bn.mean", tsr.role = #tsr.role<param>, tsr.statistics},
                %v: tensor<3xf32> {tsr.name = "bn.var", tsr.role = #tsr.role<param>, tsr.statistics})
    -> tensor<2x3x4xf32> {
  %y = tsr.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

// Statistics that are not marked (constants) keep inference semantics.
// CHECK-LABEL: func.func @constants(
// CHECK-SAME: -> tensor<2x3xf32>
// CHECK: tsr.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon
// CHECK-NOT: tsr.reduce_sum
func.func @constants(%x: tensor<2x3xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %m = tsr.constant dense<0.0> : tensor<3xf32>
  %v = tsr.constant dense<1.0> : tensor<3xf32>
  %y = tsr.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

