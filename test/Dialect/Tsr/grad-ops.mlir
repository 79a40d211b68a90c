// RUN: tessera-opt %s -split-input-file | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s

// Round trip of the ops that gradient rules create.

// CHECK-LABEL: func @conv_backward
func.func @conv_backward(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %dy: tensor<1x4x4x4xf32>) -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) {
  // CHECK: tsr.conv_backward_data %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  %dx = tsr.conv_backward_data %dy, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  // CHECK: tsr.conv_backward_filter %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<1x4x4x4xf32>) -> tensor<4x3x3x3xf32>
  %dw = tsr.conv_backward_filter %x, %dy {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<1x4x4x4xf32>) -> tensor<4x3x3x3xf32>
  return %dx, %dw : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>
}

// -----

// A stride that leaves the last input row unread, groups and a 1-D and a 3-D
// convolution: the input and kernel sizes come from the result types.

// CHECK-LABEL: func @conv_backward_grouped
func.func @conv_backward_grouped(%x: tensor<2x4x9xf64>, %w: tensor<6x2x3xf64>, %dy: tensor<2x6x4xf64>, %dy3: tensor<1x2x1x1x2xf32>, %w3: tensor<2x1x2x2x2xf32>) -> (tensor<2x4x9xf64>, tensor<6x2x3xf64>, tensor<1x2x2x3x3xf32>) {
  // CHECK: tsr.conv_backward_data {{.*}} -> tensor<2x4x9xf64>
  %dx = tsr.conv_backward_data %dy, %w {strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 2 : i64} : (tensor<2x6x4xf64>, tensor<6x2x3xf64>) -> tensor<2x4x9xf64>
  // CHECK: tsr.conv_backward_filter {{.*}} -> tensor<6x2x3xf64>
  %dw = tsr.conv_backward_filter %x, %dy {strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 2 : i64} : (tensor<2x4x9xf64>, tensor<2x6x4xf64>) -> tensor<6x2x3xf64>
  // CHECK: tsr.conv_backward_data {{.*}} -> tensor<1x2x2x3x3xf32>
  %dx3 = tsr.conv_backward_data %dy3, %w3 {strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 2, 1>, group = 2 : i64} : (tensor<1x2x1x1x2xf32>, tensor<2x1x2x2x2xf32>) -> tensor<1x2x2x3x3xf32>
  return %dx, %dw, %dx3 : tensor<2x4x9xf64>, tensor<6x2x3xf64>, tensor<1x2x2x3x3xf32>
}

// -----

// CHECK-LABEL: func @max_pool_grad
func.func @max_pool_grad(%x: tensor<1x3x8x8xf32>, %dy: tensor<1x3x4x4xf32>, %x1: tensor<2x2x5xf64>, %dy1: tensor<2x2x3xf64>) -> (tensor<1x3x8x8xf32>, tensor<2x2x5xf64>) {
  // CHECK: tsr.max_pool_grad %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  %0 = tsr.max_pool_grad %x, %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  // CHECK: tsr.max_pool_grad {{.*}}ceil_mode = true{{.*}} -> tensor<2x2x5xf64>
  %1 = tsr.max_pool_grad %x1, %dy1 {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, ceil_mode = true} : (tensor<2x2x5xf64>, tensor<2x2x3xf64>) -> tensor<2x2x5xf64>
  return %0, %1 : tensor<1x3x8x8xf32>, tensor<2x2x5xf64>
}

// -----

// CHECK-LABEL: func @moe_gather_dot
func.func @moe_gather_dot(%buf: tensor<4x2x3x8xf32>, %e: tensor<2x6x2xi64>, %s: tensor<2x6x2xi64>, %dy: tensor<2x6x8xf32>) -> tensor<2x6x2xf32> {
  // CHECK: tsr.moe_gather_dot %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x2x3x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<2x6x8xf32>) -> tensor<2x6x2xf32>
  %0 = tsr.moe_gather_dot %buf, %e, %s, %dy : (tensor<4x2x3x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<2x6x8xf32>) -> tensor<2x6x2xf32>
  return %0 : tensor<2x6x2xf32>
}
