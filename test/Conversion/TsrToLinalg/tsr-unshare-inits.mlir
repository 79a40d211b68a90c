// RUN: tessera-opt %s --pass-pipeline='builtin.module(func.func(tsr-unshare-inits))' | FileCheck %s

// Two matmuls of one shape share the fill CSE left them: the second gets a
// fill (and an empty tensor) of its own, right before it. A shared
// tensor.empty is cloned the same way.
// CHECK-LABEL: func.func @shared(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[V:.*]]: tensor<8x16xf32>
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK: %[[Z0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<4x16xf32>)
// CHECK: linalg.matmul ins(%[[X]], %[[W]] : {{.*}}) outs(%[[Z0]] : tensor<4x16xf32>)
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK: %[[Z1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x16xf32>)
// CHECK: linalg.matmul ins(%[[X]], %[[V]] : {{.*}}) outs(%[[Z1]] : tensor<4x16xf32>)
// CHECK: %[[T0:.*]] = tensor.empty() : tensor<8x4xf32>
// CHECK: linalg.transpose ins(%[[X]] : tensor<4x8xf32>) outs(%[[T0]] : tensor<8x4xf32>)
// CHECK: %[[T1:.*]] = tensor.empty() : tensor<8x4xf32>
// CHECK: linalg.transpose ins(%{{.*}} : tensor<4x8xf32>) outs(%[[T1]] : tensor<8x4xf32>)
func.func @shared(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %v: tensor<8x16xf32>, %y: tensor<4x8xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %a = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %b = linalg.matmul ins(%x, %v : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %t = tensor.empty() : tensor<8x4xf32>
  %xt = linalg.transpose ins(%x : tensor<4x8xf32>) outs(%t : tensor<8x4xf32>) permutation = [1, 0]
  %yt = linalg.transpose ins(%y : tensor<4x8xf32>) outs(%t : tensor<8x4xf32>) permutation = [1, 0]
  return %a, %b, %xt, %yt : tensor<4x16xf32>, tensor<4x16xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// CHECK-LABEL: func.func @single(
// CHECK-COUNT-1: tensor.empty
// CHECK-NOT: tensor.empty
func.func @single(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %t = tensor.empty() : tensor<8x4xf32>
  %xt = linalg.transpose ins(%x : tensor<4x8xf32>) outs(%t : tensor<8x4xf32>) permutation = [1, 0]
  return %xt : tensor<8x4xf32>
}
