// RUN: tessera-opt %s %tsr_exec_pipeline | %mlir_runner | FileCheck %s

func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x2xf32> {
  %0 = tsr.matmul %a, %b : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// Batched lhs against a broadcast rhs, and a vector lhs.
func.func @batched(%a: tensor<2x1x2x2xf32>, %b: tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32> {
  %0 = tsr.matmul %a, %b : tensor<2x1x2x2xf32>, tensor<3x2x1xf32> -> tensor<2x3x2x1xf32>
  return %0 : tensor<2x3x2x1xf32>
}

func.func @vecmat(%v: tensor<3xf32>, %b: tensor<3x2xf32>) -> tensor<2xf32> {
  %0 = tsr.matmul %v, %b : tensor<3xf32>, tensor<3x2xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

func.func @imatmul(%a: tensor<2x2xi32>, %b: tensor<2x2xi32>) -> tensor<2x2xi32> {
  %0 = tsr.matmul %a, %b : tensor<2x2xi32>, tensor<2x2xi32> -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
}

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI32(memref<*xi32>)

func.func @main() {
  %a = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = arith.constant dense<[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]> : tensor<3x2xf32>
  %0 = call @matmul(%a, %b) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %m0 = bufferization.to_buffer %0 : tensor<2x2xf32> to memref<2x2xf32>
  %u0 = memref.cast %m0 : memref<2x2xf32> to memref<*xf32>
  // CHECK: [4,   5]
  // CHECK-NEXT: [10,   11]
  call @printMemrefF32(%u0) : (memref<*xf32>) -> ()

  %ba = arith.constant dense<[[[[1.0, 0.0], [0.0, 1.0]]], [[[2.0, 0.0], [0.0, 2.0]]]]> : tensor<2x1x2x2xf32>
  %bb = arith.constant dense<[[[1.0], [2.0]], [[3.0], [4.0]], [[5.0], [6.0]]]> : tensor<3x2x1xf32>
  %1 = call @batched(%ba, %bb) : (tensor<2x1x2x2xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
  %m1 = bufferization.to_buffer %1 : tensor<2x3x2x1xf32> to memref<2x3x2x1xf32>
  %u1 = memref.cast %m1 : memref<2x3x2x1xf32> to memref<*xf32>
  // CHECK: {{\[}}{{\[}}{{\[}}[1],
  // CHECK-NEXT: [2]],
  // CHECK-NEXT: {{\[}}[3],
  // CHECK-NEXT: [4]],
  // CHECK-NEXT: {{\[}}[5],
  // CHECK-NEXT: [6]]],
  // CHECK-NEXT: {{\[}}{{\[}}[2],
  // CHECK-NEXT: [4]],
  // CHECK-NEXT: {{\[}}[6],
  // CHECK-NEXT: [8]],
  // CHECK-NEXT: {{\[}}[10],
  // CHECK-NEXT: [12]]]]
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()

  %v = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %2 = call @vecmat(%v, %b) : (tensor<3xf32>, tensor<3x2xf32>) -> tensor<2xf32>
  %m2 = bufferization.to_buffer %2 : tensor<2xf32> to memref<2xf32>
  %u2 = memref.cast %m2 : memref<2xf32> to memref<*xf32>
  // CHECK: [4,  5]
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()

  %ia = arith.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %3 = call @imatmul(%ia, %ia) : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
  %m3 = bufferization.to_buffer %3 : tensor<2x2xi32> to memref<2x2xi32>
  %u3 = memref.cast %m3 : memref<2x2xi32> to memref<*xi32>
  // CHECK: [7,   10]
  // CHECK-NEXT: [15,   22]
  call @printMemrefI32(%u3) : (memref<*xi32>) -> ()
  return
}
