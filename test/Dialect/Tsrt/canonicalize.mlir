// RUN: tessera-opt %s --canonicalize --cse | FileCheck %s

// Every rank must issue the same collectives in the same order: an unused
// one stays (on tensors and on buffers, even into a buffer nothing reads),
// and two identical ones stay two. The rank of a group is a pure value.
// CHECK-LABEL: func.func @kept(
// CHECK: tsrt.all_gather ins(%{{.*}} : tensor<2xf32>)
// CHECK: tsrt.all_gather ins(%{{.*}} : tensor<2xf32>)
// CHECK: %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: tsrt.all_gather ins(%{{.*}} : memref<2xf32>) outs(%[[A]] : memref<4xf32>)
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NOT: tsrt.axis_rank
// CHECK: return
func.func @kept(%x: tensor<2xf32>, %m: memref<2xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %g = tsrt.all_gather ins(%x : tensor<2xf32>) outs(%e : tensor<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64} -> tensor<4xf32>
  %h = tsrt.all_gather ins(%x : tensor<2xf32>) outs(%e : tensor<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64} -> tensor<4xf32>
  %a = memref.alloc() : memref<4xf32>
  tsrt.all_gather ins(%m : memref<2xf32>) outs(%a : memref<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64}
  memref.dealloc %a : memref<4xf32>
  %r = tsrt.axis_rank group 1
  return
}
