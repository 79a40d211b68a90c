// RUN: tessera-opt %s %tsr_exec_pipeline | %mlir_runner | FileCheck %s

// Mixture-of-experts routing on 4 tokens, 3 experts of capacity 2, top-2;
// hand-computed. Priority is every first choice before any second one:
// experts [[0,1],[0,2],[0,1],[1,0]] fill expert 0 with tokens 0 and 1, so
// token 2's first choice and token 3's second are dropped, and expert 1's
// last slot goes to token 0's second choice before token 2's.

func.func @moe(%e: tensor<1x4x2xi64>, %x: tensor<1x4x2xf32>, %w: tensor<1x4x2xf32>) -> (tensor<1x4x2xf32>, tensor<3x1x2xf32>, tensor<3x1x2x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<3x1x2x2xf32>) {
  %slots, %sources = tsr.moe_assign %e {num_experts = 3 : i64, capacity = 2 : i64} : (tensor<1x4x2xi64>) -> (tensor<1x4x2xi64>, tensor<3x1x2xi64>)
  %buf = tsr.moe_dispatch %x, %e, %slots, %sources : (tensor<1x4x2xf32>, tensor<1x4x2xi64>, tensor<1x4x2xi64>, tensor<3x1x2xi64>) -> tensor<3x1x2x2xf32>
  %y = tsr.moe_combine %buf, %e, %slots, %sources weights %w : (tensor<3x1x2x2xf32>, tensor<1x4x2xi64>, tensor<1x4x2xi64>, tensor<3x1x2xi64>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  %dot = tsr.moe_gather_dot %buf, %e, %slots, %x : (tensor<3x1x2x2xf32>, tensor<1x4x2xi64>, tensor<1x4x2xi64>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  %wbuf = tsr.moe_dispatch %x, %e, %slots, %sources weights %w : (tensor<1x4x2xf32>, tensor<1x4x2xi64>, tensor<1x4x2xi64>, tensor<3x1x2xi64>, tensor<1x4x2xf32>) -> tensor<3x1x2x2xf32>
  %s = tsr.cast %slots : tensor<1x4x2xi64> to tensor<1x4x2xf32>
  %src = tsr.cast %sources : tensor<3x1x2xi64> to tensor<3x1x2xf32>
  return %s, %src, %buf, %y, %dot, %wbuf : tensor<1x4x2xf32>, tensor<3x1x2xf32>, tensor<3x1x2x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<3x1x2x2xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %e = arith.constant dense<[[[0, 1], [0, 2], [0, 1], [1, 0]]]> : tensor<1x4x2xi64>
  %x = arith.constant dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]]> : tensor<1x4x2xf32>
  %w = arith.constant dense<[[[0.5, 0.25], [1.0, 2.0], [3.0, 4.0], [10.0, 100.0]]]> : tensor<1x4x2xf32>
  %r:6 = call @moe(%e, %x, %w) : (tensor<1x4x2xi64>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> (tensor<1x4x2xf32>, tensor<3x1x2xf32>, tensor<3x1x2x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<3x1x2x2xf32>)
  %m0 = bufferization.to_buffer %r#0 : tensor<1x4x2xf32> to memref<1x4x2xf32>
  %u0 = memref.cast %m0 : memref<1x4x2xf32> to memref<*xf32>
  // slots
  // CHECK: {{\[\[\[}}0,    1],
  // CHECK-NEXT: [1,    0],
  // CHECK-NEXT: [-1,    -1],
  // CHECK-NEXT: [0,    -1{{\]\]\]}}
  call @printMemrefF32(%u0) : (memref<*xf32>) -> ()
  %m1 = bufferization.to_buffer %r#1 : tensor<3x1x2xf32> to memref<3x1x2xf32>
  %u1 = memref.cast %m1 : memref<3x1x2xf32> to memref<*xf32>
  // sources: s * k + j
  // CHECK: {{\[\[\[}}0,    2]],
  // CHECK-NEXT: {{\[\[}}6,    1]],
  // CHECK-NEXT: {{\[\[}}3,    -1{{\]\]\]}}
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %m2 = bufferization.to_buffer %r#2 : tensor<3x1x2x2xf32> to memref<3x1x2x2xf32>
  %u2 = memref.cast %m2 : memref<3x1x2x2xf32> to memref<*xf32>
  // dispatch
  // CHECK: {{\[\[\[\[}}1,     2],
  // CHECK-NEXT: [3,     4]]],
  // CHECK-NEXT: {{\[\[\[}}7,     8],
  // CHECK-NEXT: [1,     2]]],
  // CHECK-NEXT: {{\[\[\[}}3,     4],
  // CHECK-NEXT: [0,     0{{\]\]\]\]}}
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  %m3 = bufferization.to_buffer %r#3 : tensor<1x4x2xf32> to memref<1x4x2xf32>
  %u3 = memref.cast %m3 : memref<1x4x2xf32> to memref<*xf32>
  // combine: token 2 lost both choices, token 3 its second
  // CHECK: {{\[\[\[}}0.75,    1.5],
  // CHECK-NEXT: [9,    12],
  // CHECK-NEXT: [0,    0],
  // CHECK-NEXT: [70,    80{{\]\]\]}}
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %m4 = bufferization.to_buffer %r#4 : tensor<1x4x2xf32> to memref<1x4x2xf32>
  %u4 = memref.cast %m4 : memref<1x4x2xf32> to memref<*xf32>
  // gather_dot
  // CHECK: {{\[\[\[}}5,    5],
  // CHECK-NEXT: [25,    25],
  // CHECK-NEXT: [0,    0],
  // CHECK-NEXT: [113,    0{{\]\]\]}}
  call @printMemrefF32(%u4) : (memref<*xf32>) -> ()
  %m5 = bufferization.to_buffer %r#5 : tensor<3x1x2x2xf32> to memref<3x1x2x2xf32>
  %u5 = memref.cast %m5 : memref<3x1x2x2xf32> to memref<*xf32>
  // weighted dispatch
  // CHECK: {{\[\[\[\[}}0.5,     1],
  // CHECK-NEXT: [3,     4]]],
  // CHECK-NEXT: {{\[\[\[}}70,     80],
  // CHECK-NEXT: [0.25,     0.5]]],
  // CHECK-NEXT: {{\[\[\[}}6,     8],
  // CHECK-NEXT: [0,     0{{\]\]\]\]}}
  call @printMemrefF32(%u5) : (memref<*xf32>) -> ()
  return
}
