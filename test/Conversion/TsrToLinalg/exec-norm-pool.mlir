// RUN: tessera-opt %s %tsr_exec_pipeline | %mlir_runner | FileCheck %s

// Softmax/LogSoftmax (stable at 1000), LayerNorm with scale and bias,
// BatchNorm, and pooling with padding, count_include_pad and ceil_mode
// (values hand-computed; avg pool counts match onnxruntime).

func.func @softmax(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = tsr.softmax %x {axis = 1 : i64} : tensor<2x3xf32>
  %1 = tsr.log_softmax %x {axis = 1 : i64} : tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

func.func @layer_norm(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = tsr.layer_norm %x, %s, %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

func.func @batch_norm(%x: tensor<1x2x1x1xf32>, %s: tensor<2xf32>, %b: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>) -> tensor<1x2x1x1xf32> {
  %0 = tsr.batch_norm %x, %s, %b, %m, %v {epsilon = 0.0 : f64} : (tensor<1x2x1x1xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x1x1xf32>
  return %0 : tensor<1x2x1x1xf32>
}

func.func @max_pool_padded(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %0 = tsr.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

func.func @avg_pool_padded(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %0 = tsr.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = false} : (tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

func.func @avg_pool_padded_include(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %0 = tsr.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true} : (tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

func.func @avg_pool_ceil(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %0 = tsr.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true, count_include_pad = true} : (tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

func.func @max_pool_ceil(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %0 = tsr.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true} : (tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %a0 = arith.constant dense<[[1.0, 2.0, 3.0], [1000.0, 1000.0, 1000.0]]> : tensor<2x3xf32>
  %r1_0, %r1_1 = call @softmax(%a0) : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  %m1_0 = bufferization.to_buffer %r1_0 : tensor<2x3xf32> to memref<2x3xf32>
  %u1_0 = memref.cast %m1_0 : memref<2x3xf32> to memref<*xf32>
  // softmax#0
  // CHECK: {{\[\[}}0.0900306,   0.244728,   0.665241],
  // CHECK-NEXT: [0.333333,   0.333333,   0.333333{{\]\]}}
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %m1_1 = bufferization.to_buffer %r1_1 : tensor<2x3xf32> to memref<2x3xf32>
  %u1_1 = memref.cast %m1_1 : memref<2x3xf32> to memref<*xf32>
  // softmax#1
  // CHECK: {{\[\[}}-2.40761,   -1.40761,   -0.407606],
  // CHECK-NEXT: [-1.09861,   -1.09861,   -1.09861{{\]\]}}
  call @printMemrefF32(%u1_1) : (memref<*xf32>) -> ()
  %a2 = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]]> : tensor<2x4xf32>
  %a3 = arith.constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  %a4 = arith.constant dense<[0.0, 0.0, 0.0, 1.0]> : tensor<4xf32>
  %r5_0 = call @layer_norm(%a2, %a3, %a4) : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>)
  %m5_0 = bufferization.to_buffer %r5_0 : tensor<2x4xf32> to memref<2x4xf32>
  %u5_0 = memref.cast %m5_0 : memref<2x4xf32> to memref<*xf32>
  // layer_norm#0
  // CHECK: {{\[\[}}-1.34164,   -0.447212,   0.894424,   3.68327],
  // CHECK-NEXT: [0,   0,   0,   1{{\]\]}}
  call @printMemrefF32(%u5_0) : (memref<*xf32>) -> ()
  %a6 = arith.constant dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>
  %a7 = arith.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %a8 = arith.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %a9 = arith.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %a10 = arith.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %r11_0 = call @batch_norm(%a6, %a7, %a8, %a9, %a10) : (tensor<1x2x1x1xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x1x1xf32>)
  %m11_0 = bufferization.to_buffer %r11_0 : tensor<1x2x1x1xf32> to memref<1x2x1x1xf32>
  %u11_0 = memref.cast %m11_0 : memref<1x2x1x1xf32> to memref<*xf32>
  // batch_norm#0
  // CHECK: {{\[\[}}{{\[\[}}3{{\]\]}},
  // CHECK-NEXT: {{\[\[}}2.5{{\]\]}}{{\]\]}}
  call @printMemrefF32(%u11_0) : (memref<*xf32>) -> ()
  %a12 = arith.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>
  %r13_0 = call @max_pool_padded(%a12) : (tensor<1x1x3x3xf32>) -> (tensor<1x1x2x2xf32>)
  %m13_0 = bufferization.to_buffer %r13_0 : tensor<1x1x2x2xf32> to memref<1x1x2x2xf32>
  %u13_0 = memref.cast %m13_0 : memref<1x1x2x2xf32> to memref<*xf32>
  // max_pool_padded#0
  // CHECK: {{\[\[}}{{\[\[}}1,     3],
  // CHECK-NEXT: [7,     9{{\]\]}}{{\]\]}}
  call @printMemrefF32(%u13_0) : (memref<*xf32>) -> ()
  %a14 = arith.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>
  %r15_0 = call @avg_pool_padded(%a14) : (tensor<1x1x3x3xf32>) -> (tensor<1x1x2x2xf32>)
  %m15_0 = bufferization.to_buffer %r15_0 : tensor<1x1x2x2xf32> to memref<1x1x2x2xf32>
  %u15_0 = memref.cast %m15_0 : memref<1x1x2x2xf32> to memref<*xf32>
  // avg_pool_padded#0
  // CHECK: {{\[\[}}{{\[\[}}1,     2.5],
  // CHECK-NEXT: [5.5,     7{{\]\]}}{{\]\]}}
  call @printMemrefF32(%u15_0) : (memref<*xf32>) -> ()
  %a16 = arith.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>
  %r17_0 = call @avg_pool_padded_include(%a16) : (tensor<1x1x3x3xf32>) -> (tensor<1x1x2x2xf32>)
  %m17_0 = bufferization.to_buffer %r17_0 : tensor<1x1x2x2xf32> to memref<1x1x2x2xf32>
  %u17_0 = memref.cast %m17_0 : memref<1x1x2x2xf32> to memref<*xf32>
  // avg_pool_padded_include#0
  // CHECK: {{\[\[}}{{\[\[}}0.25,     1.25],
  // CHECK-NEXT: [2.75,     7{{\]\]}}{{\]\]}}
  call @printMemrefF32(%u17_0) : (memref<*xf32>) -> ()
  %a18 = arith.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>
  %r19_0 = call @avg_pool_ceil(%a18) : (tensor<1x1x3x3xf32>) -> (tensor<1x1x2x2xf32>)
  %m19_0 = bufferization.to_buffer %r19_0 : tensor<1x1x2x2xf32> to memref<1x1x2x2xf32>
  %u19_0 = memref.cast %m19_0 : memref<1x1x2x2xf32> to memref<*xf32>
  // avg_pool_ceil#0
  // CHECK: {{\[\[}}{{\[\[}}3,     4.5],
  // CHECK-NEXT: [7.5,     9{{\]\]}}{{\]\]}}
  call @printMemrefF32(%u19_0) : (memref<*xf32>) -> ()
  %a20 = arith.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>
  %r21_0 = call @max_pool_ceil(%a20) : (tensor<1x1x3x3xf32>) -> (tensor<1x1x2x2xf32>)
  %m21_0 = bufferization.to_buffer %r21_0 : tensor<1x1x2x2xf32> to memref<1x1x2x2xf32>
  %u21_0 = memref.cast %m21_0 : memref<1x1x2x2xf32> to memref<*xf32>
  // max_pool_ceil#0
  // CHECK: {{\[\[}}{{\[\[}}5,     6],
  // CHECK-NEXT: [8,     9{{\]\]}}{{\]\]}}
  call @printMemrefF32(%u21_0) : (memref<*xf32>) -> ()
  return
}
