// RUN: tessera-opt %s --tsr-lower-to-linalg | FileCheck %s --check-prefix=LINALG
// RUN: tessera-opt %s --tsr-lower-to-linalg --tsr-bufferize | FileCheck %s

// The target-independent stages of the lowering as tessera-opt runs them:
// linalg on tensors (no target's fusion: two generics), then buffers with
// the result as an out-parameter, which the last generic writes itself, and
// the temporary freed (each generic writes a buffer of its own:
// tsr-unshare-inits undoes CSE's sharing of their tensor.empty).

// LINALG-LABEL: func.func @relu_add(
// LINALG-SAME: -> tensor<2x3xf32>
// LINALG: arith.addf
// LINALG: } -> tensor<2x3xf32>
// LINALG: arith.maximumf
// LINALG: } -> tensor<2x3xf32>

// CHECK-LABEL: func.func @relu_add(
// CHECK-SAME: %{{.*}}: memref<2x3xf32>, %{{.*}}: memref<3xf32>, %[[OUT:.*]]: memref<2x3xf32>) {
// CHECK: %[[T:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x3xf32>
// CHECK: linalg.generic {{.*}} outs(%[[T]] : memref<2x3xf32>)
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic {{.*}} ins(%[[T]] : memref<2x3xf32>) outs(%[[OUT]] : memref<2x3xf32>)
// CHECK-NOT: memref.copy
// CHECK: memref.dealloc %[[T]]
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @relu_add(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = tsr.add %x, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %1 = tsr.relu %0 : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
