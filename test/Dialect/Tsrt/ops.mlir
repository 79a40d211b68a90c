// RUN: tessera-opt %s | tessera-opt | FileCheck %s

// Every tsrt op prints and parses back, on tensors (returning the written
// destination) and on memrefs (returning nothing); the default id (-1) is
// not printed.

// CHECK-LABEL: func.func @on_tensors(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<8x3xf32>, %[[S:[a-z0-9]+]]: tensor<2x3xf32>, %[[U:[a-z0-9]+]]: tensor<5xi32>
func.func @on_tensors(%x: tensor<8x3xf32>, %s: tensor<2x3xf32>, %u: tensor<5xi32>)
    -> (tensor<8x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<5xi32>, i64) {
  // CHECK: %[[A:.*]] = tsrt.all_reduce ins(%[[X]] : tensor<8x3xf32>) outs(%[[X]] : tensor<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 2 : i64, id = 7 : i64, reduction = #tsrt.reduction<mean>} -> tensor<8x3xf32>
  %a = tsrt.all_reduce ins(%x : tensor<8x3xf32>) outs(%x : tensor<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 2 : i64, id = 7 : i64, reduction = #tsrt.reduction<mean>} -> tensor<8x3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  // CHECK: %[[P:.*]] = tsrt.reduce_scatter async ins(%[[X]] : tensor<8x3xf32>) outs(%{{.*}} : tensor<2x3xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>} -> tensor<2x3xf32>
  // CHECK-NEXT: %[[R:.*]] = tsrt.wait outs(%[[P]] : tensor<2x3xf32>) -> tensor<2x3xf32>
  %p = tsrt.reduce_scatter async ins(%x : tensor<8x3xf32>) outs(%e : tensor<2x3xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, id = -1 : i64, reduction = #tsrt.reduction<sum>} -> tensor<2x3xf32>
  %r = tsrt.wait outs(%p : tensor<2x3xf32>) -> tensor<2x3xf32>
  %f = tensor.empty() : tensor<8x3xf32>
  // CHECK: tsrt.all_gather ins(%[[S]] : tensor<2x3xf32>) outs(%{{.*}} : tensor<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 3 : i64} -> tensor<8x3xf32>
  %g = tsrt.all_gather ins(%s : tensor<2x3xf32>) outs(%f : tensor<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 3 : i64} -> tensor<8x3xf32>
  // CHECK: tsrt.all_to_all ins(%[[X]] : tensor<8x3xf32>) outs(%{{.*}} : tensor<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 4 : i64} -> tensor<8x3xf32>
  %t = tsrt.all_to_all ins(%x : tensor<8x3xf32>) outs(%f : tensor<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 4 : i64} -> tensor<8x3xf32>
  // Signless i32 buffers of unsigned values.
  // CHECK: tsrt.broadcast ins(%[[U]] : tensor<5xi32>) outs(%[[U]] : tensor<5xi32>) {dtype = #tsrt.dtype<uint32>, group = 1 : i64, root = 1 : i64} -> tensor<5xi32>
  %b = tsrt.broadcast ins(%u : tensor<5xi32>) outs(%u : tensor<5xi32>) {dtype = #tsrt.dtype<uint32>, group = 1 : i64, root = 1 : i64} -> tensor<5xi32>
  // CHECK: tsrt.axis_rank group 6
  %k = tsrt.axis_rank group 6
  return %a, %r, %g, %t, %b, %k : tensor<8x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<5xi32>, i64
}

// CHECK-LABEL: func.func @on_memrefs(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<8xi1>, %[[Y:[a-z0-9]+]]: memref<4xbf16, strided<[2]>>, %[[Z:[a-z0-9]+]]: memref<8xbf16>
func.func @on_memrefs(%x: memref<8xi1>, %y: memref<4xbf16, strided<[2]>>, %z: memref<8xbf16>) {
  // CHECK: tsrt.all_reduce ins(%[[X]] : memref<8xi1>) outs(%[[X]] : memref<8xi1>) {dtype = #tsrt.dtype<bool>, group = 1 : i64, reduction = #tsrt.reduction<max>}
  tsrt.all_reduce ins(%x : memref<8xi1>) outs(%x : memref<8xi1>) {dtype = #tsrt.dtype<bool>, group = 1 : i64, reduction = #tsrt.reduction<max>}
  // CHECK: tsrt.all_gather async ins(%[[Y]] : memref<4xbf16, strided<[2]>>) outs(%[[Z]] : memref<8xbf16>) {dtype = #tsrt.dtype<bfloat16>, group = 1 : i64}
  // CHECK-NEXT: tsrt.wait outs(%[[Z]] : memref<8xbf16>)
  tsrt.all_gather async ins(%y : memref<4xbf16, strided<[2]>>) outs(%z : memref<8xbf16>) {dtype = #tsrt.dtype<bfloat16>, group = 1 : i64}
  tsrt.wait outs(%z : memref<8xbf16>)
  return
}

// The GPU product, synchronous and queued after a token.
// CHECK-LABEL: func.func @gpu_gemm(
// CHECK: tsrt.gpu_gemm ins(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<16x4xf32>) outs(%{{.*}} : memref<8x4xf32>) {accumulate = true}
// CHECK: %[[T:.*]] = gpu.wait async
// CHECK: %{{.*}} = tsrt.gpu_gemm async [%[[T]]] ins(%{{.*}}, %{{.*}} : memref<2x8x16xbf16>, memref<2x16x4xbf16>) outs(%{{.*}} : memref<2x8x4xf32>)
// CHECK-NOT: accumulate
// CHECK: tsrt.gpu_gemm ins(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<16x4xf32>) outs(%{{.*}} : memref<8x4xf32>) bias(%{{.*}} : memref<4xf32>) {epilogue = "relu_bias"}
func.func @gpu_gemm(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>,
                    %d: memref<2x8x16xbf16>, %e: memref<2x16x4xbf16>, %f: memref<2x8x4xf32>) {
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) {accumulate = true}
  %t0 = gpu.wait async
  %t1 = tsrt.gpu_gemm async [%t0] ins(%d, %e : memref<2x8x16xbf16>, memref<2x16x4xbf16>) outs(%f : memref<2x8x4xf32>)
  gpu.wait [%t1]
  %bias = memref.alloc() : memref<4xf32>
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) bias(%bias : memref<4xf32>) {epilogue = "relu_bias"}
  return
}

// On the CUDA target's stream (what gpu-async-region makes of them): queued
// after a token, returning one.
// CHECK-LABEL: func.func @on_stream(
// CHECK-SAME: %[[G:[a-z0-9]+]]: memref<6xf32>, %[[T:[a-z0-9]+]]: !gpu.async.token
func.func @on_stream(%g: memref<6xf32>, %t: !gpu.async.token) -> !gpu.async.token {
  // CHECK: %[[A:.*]] = tsrt.all_reduce async[%[[T]]] ins(%[[G]] : memref<6xf32>) outs(%[[G]] : memref<6xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<mean>} -> !gpu.async.token
  %a = tsrt.all_reduce async [%t] ins(%g : memref<6xf32>) outs(%g : memref<6xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<mean>} -> !gpu.async.token
  // CHECK-NEXT: %[[W:.*]] = tsrt.wait[%[[A]]] outs(%[[G]] : memref<6xf32>) -> !gpu.async.token
  %w = tsrt.wait [%a] outs(%g : memref<6xf32>) -> !gpu.async.token
  return %w : !gpu.async.token
}
