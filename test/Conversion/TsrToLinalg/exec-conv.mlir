// RUN: tessera-opt %s %tsr_exec_pipeline | %mlir_runner | FileCheck %s

// Convolution through im2col + batch_matmul: bias, groups with strides and
// symmetric pads, dilations, asymmetric pads and a batch of 2 (values hand-computed).

func.func @conv2d(%x: tensor<1x1x3x3xf32>, %w: tensor<2x1x2x2xf32>, %b: tensor<2xf32>) -> tensor<1x2x2x2xf32> {
  %0 = tsr.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %0 : tensor<1x2x2x2xf32>
}

func.func @conv1d_grouped(%x: tensor<1x2x4xf32>, %w: tensor<2x1x3xf32>) -> tensor<1x2x2xf32> {
  %0 = tsr.conv %x, %w {strides = array<i64: 2>, pads = array<i64: 1, 1>, dilations = array<i64: 1>, group = 2 : i64} : (tensor<1x2x4xf32>, tensor<2x1x3xf32>) -> tensor<1x2x2xf32>
  return %0 : tensor<1x2x2xf32>
}

func.func @conv2d_dilated(%x: tensor<1x1x3x3xf32>, %w: tensor<1x1x2x2xf32>) -> tensor<1x1x1x1xf32> {
  %0 = tsr.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}

func.func @conv2d_asym_pad(%x: tensor<2x1x2x2xf32>, %w: tensor<1x1x1x2xf32>) -> tensor<2x1x3x2xf32> {
  %0 = tsr.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 0, 0, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x1x2x2xf32>, tensor<1x1x1x2xf32>) -> tensor<2x1x3x2xf32>
  return %0 : tensor<2x1x3x2xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %a0 = arith.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>
  %a1 = arith.constant dense<[[[[1.0, 0.0], [0.0, 1.0]]], [[[1.0, 1.0], [1.0, 1.0]]]]> : tensor<2x1x2x2xf32>
  %a2 = arith.constant dense<[10.0, 20.0]> : tensor<2xf32>
  %r3_0 = call @conv2d(%a0, %a1, %a2) : (tensor<1x1x3x3xf32>, tensor<2x1x2x2xf32>, tensor<2xf32>) -> (tensor<1x2x2x2xf32>)
  %m3_0 = bufferization.to_buffer %r3_0 : tensor<1x2x2x2xf32> to memref<1x2x2x2xf32>
  %u3_0 = memref.cast %m3_0 : memref<1x2x2x2xf32> to memref<*xf32>
  // conv2d#0
  // CHECK: {{\[\[}}{{\[\[}}16,     18],
  // CHECK-NEXT: [22,     24{{\]\]}},
  // CHECK-NEXT: {{\[\[}}32,     36],
  // CHECK-NEXT: [44,     48{{\]\]}}{{\]\]}}
  call @printMemrefF32(%u3_0) : (memref<*xf32>) -> ()
  %a4 = arith.constant dense<[[[1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]]]> : tensor<1x2x4xf32>
  %a5 = arith.constant dense<[[[1.0, 1.0, 1.0]], [[1.0, 0.0, -1.0]]]> : tensor<2x1x3xf32>
  %r6_0 = call @conv1d_grouped(%a4, %a5) : (tensor<1x2x4xf32>, tensor<2x1x3xf32>) -> (tensor<1x2x2xf32>)
  %m6_0 = bufferization.to_buffer %r6_0 : tensor<1x2x2xf32> to memref<1x2x2xf32>
  %u6_0 = memref.cast %m6_0 : memref<1x2x2xf32> to memref<*xf32>
  // conv1d_grouped#0
  // CHECK: {{\[\[}}[3,    9],
  // CHECK-NEXT: [-20,    -20{{\]\]}}]
  call @printMemrefF32(%u6_0) : (memref<*xf32>) -> ()
  %a7 = arith.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>
  %a8 = arith.constant dense<1.0> : tensor<1x1x2x2xf32>
  %r9_0 = call @conv2d_dilated(%a7, %a8) : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>) -> (tensor<1x1x1x1xf32>)
  %m9_0 = bufferization.to_buffer %r9_0 : tensor<1x1x1x1xf32> to memref<1x1x1x1xf32>
  %u9_0 = memref.cast %m9_0 : memref<1x1x1x1xf32> to memref<*xf32>
  // conv2d_dilated#0
  // CHECK: {{\[\[}}{{\[\[}}20{{\]\]}}{{\]\]}}
  call @printMemrefF32(%u9_0) : (memref<*xf32>) -> ()
  %a10 = arith.constant dense<[[[[1.0, 2.0], [3.0, 4.0]]], [[[5.0, 6.0], [7.0, 8.0]]]]> : tensor<2x1x2x2xf32>
  %a11 = arith.constant dense<[[[[1.0, 10.0]]]]> : tensor<1x1x1x2xf32>
  %r12_0 = call @conv2d_asym_pad(%a10, %a11) : (tensor<2x1x2x2xf32>, tensor<1x1x1x2xf32>) -> (tensor<2x1x3x2xf32>)
  %m12_0 = bufferization.to_buffer %r12_0 : tensor<2x1x3x2xf32> to memref<2x1x3x2xf32>
  %u12_0 = memref.cast %m12_0 : memref<2x1x3x2xf32> to memref<*xf32>
  // conv2d_asym_pad#0
  // CHECK: {{\[\[}}{{\[\[}}0,     0],
  // CHECK-NEXT: [21,     2],
  // CHECK-NEXT: [43,     4{{\]\]}}],
  // CHECK-NEXT: {{\[\[}}[0,     0],
  // CHECK-NEXT: [65,     6],
  // CHECK-NEXT: [87,     8{{\]\]}}{{\]\]}}
  call @printMemrefF32(%u12_0) : (memref<*xf32>) -> ()
  return
}
