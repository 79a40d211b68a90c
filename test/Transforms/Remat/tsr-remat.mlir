// RUN: tessera-opt %s --tsr-remat | FileCheck %s

// The ops tsr-remat-plan marked (here: the softmax and the scores it reads)
// are cloned before the first backward op that reads them; the clone of the
// matmul reads the saved norm output and the weight through barriers, the
// softmax's clone reads the matmul's clone; the backward op reads the
// clone, so the forward softmax dies in the forward pass. The marks are
// gone, the clones are backward ops marked tsr.remat = "recomputed", and
// the backward ops that read nothing recomputed are untouched.
// CHECK-LABEL: func.func @block(
// CHECK: %[[N:.*]] = tsr.layer_norm
// CHECK: %[[S:.*]] = tsr.matmul %[[N]], %arg3 : tensor<2x4xf32>
// CHECK: %[[P:.*]] = tsr.softmax %[[S]] {axis = 1 : i64} : tensor<2x3xf32>
// CHECK: %[[O:.*]] = tsr.matmul %[[P]], %arg4 :
// CHECK: %[[D1:.*]] = tsr.matmul %{{.*}}, %arg3 {tsr.backward}
// CHECK: %[[BN:.*]] = tsr.remat_barrier %[[N]] {tsr.backward} : tensor<2x4xf32>
// CHECK: %[[BW:.*]] = tsr.remat_barrier %arg3 {tsr.backward} : tensor<4x3xf32>
// CHECK: %[[S2:.*]] = tsr.matmul %[[BN]], %[[BW]] {tsr.backward, tsr.remat = "recomputed"}
// CHECK: %[[P2:.*]] = tsr.softmax %[[S2]] {axis = 1 : i64, tsr.backward, tsr.remat = "recomputed"}
// CHECK: tsr.mul %[[P2]], %[[D1]] {tsr.backward}
// CHECK: tsr.mul %[[N]], %{{.*}} {tsr.backward}
// CHECK-NOT: tsr.remat = "recompute"}
// CHECK: return
func.func @block(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                 %w: tensor<4x3xf32>, %v: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %n = tsr.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %s = tsr.matmul %n, %w {tsr.remat = "recompute"} : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
  %p = tsr.softmax %s {axis = 1 : i64, tsr.remat = "recompute"} : tensor<2x3xf32>
  %o = tsr.matmul %p, %v : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r = tsr.add %o, %x : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %d1 = tsr.matmul %r, %w {tsr.backward} : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
  %d2 = tsr.mul %p, %d1 {tsr.backward} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %d3 = tsr.matmul %d2, %v {tsr.backward} : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %d4 = tsr.mul %n, %d3 {tsr.backward} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %d5 = tsr.add %d4, %x {tsr.backward} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %d5 : tensor<2x4xf32>
}
