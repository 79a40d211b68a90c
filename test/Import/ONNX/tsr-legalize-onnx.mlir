// RUN: tessera-translate --tsr-legalize-onnx -split-input-file %s | FileCheck %s

// Stage 2 of ONNX import, one case per handler behaviour, grouped by op
// family: elementwise, MathNN, reductions, data movement, training and shape
// ops. Inputs are hand-written generic `onnx.node` ops.

// CHECK-LABEL: func.func @add_broadcast(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<2x3xf32>, %[[ARG1:[^:]*]]: tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.add %[[ARG0]], %[[ARG1]] : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x3xf32>
func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<*xf32> {
  %y = onnx.node "Add"(%a, %b) {attrs = {}, domain = "", name = "add", opset = 14 : i64, since_version = 14 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @pow_int_exponent(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<4xf32>, %[[ARG1:[^:]*]]: tensor<4xi64>) -> tensor<4xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.cast %[[ARG1]] : tensor<4xi64> to tensor<4xf32>
// CHECK-NEXT: %[[V1:.*]] = tsr.pow %[[ARG0]], %[[V0]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: return %[[V1]] : tensor<4xf32>
func.func @pow_int_exponent(%a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<*xf32> {
  %y = onnx.node "Pow"(%a, %b) {attrs = {}, domain = "", name = "pow", opset = 15 : i64, since_version = 15 : i64} : (tensor<4xf32>, tensor<4xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @clip_constant_bounds(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.clip %[[ARG0]] {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<4xf32>
// CHECK-NEXT: return %[[V0]] : tensor<4xf32>
func.func @clip_constant_bounds(%x: tensor<4xf32>) -> tensor<*xf32> {
  %lo = tsr.constant dense<0.0> : tensor<f32>
  %hi = tsr.constant dense<6.0> : tensor<f32>
  %y = onnx.node "Clip"(%x, %lo, %hi) {attrs = {}, domain = "", name = "clip", opset = 13 : i64, since_version = 13 : i64} : (tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @clip_dynamic_max(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<4xf32>, %[[ARG1:[^:]*]]: tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.min %[[ARG0]], %[[ARG1]] : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
// CHECK-NEXT: return %[[V0]] : tensor<4xf32>
func.func @clip_dynamic_max(%x: tensor<4xf32>, %hi: tensor<f32>) -> tensor<*xf32> {
  %none = onnx.none
  %y = onnx.node "Clip"(%x, %none, %hi) {attrs = {}, domain = "", name = "clip", opset = 13 : i64, since_version = 13 : i64} : (tensor<4xf32>, none, tensor<f32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @variadic_mean(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<3xf32>, %[[ARG1:[^:]*]]: tensor<3xf32>, %[[ARG2:[^:]*]]: tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.add %[[ARG0]], %[[ARG1]] : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK-NEXT: %[[V1:.*]] = tsr.add %[[V0]], %[[ARG2]] : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK-NEXT: %[[V2:.*]] = tsr.constant dense<3.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[V3:.*]] = tsr.div %[[V1]], %[[V2]] : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
// CHECK-NEXT: return %[[V3]] : tensor<3xf32>
func.func @variadic_mean(%a: tensor<3xf32>, %b: tensor<3xf32>, %c: tensor<3xf32>) -> tensor<*xf32> {
  %y = onnx.node "Mean"(%a, %b, %c) {attrs = {}, domain = "", name = "mean", opset = 13 : i64, since_version = 13 : i64} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @cast_to_int(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<3xf32>) -> tensor<3xi32>
// CHECK-NEXT: %[[V0:.*]] = tsr.cast %[[ARG0]] : tensor<3xf32> to tensor<3xi32>
// CHECK-NEXT: return %[[V0]] : tensor<3xi32>
func.func @cast_to_int(%x: tensor<3xf32>) -> tensor<*xi32> {
  %y = onnx.node "Cast"(%x) {attrs = {to = 6 : i64}, domain = "", name = "cast", opset = 13 : i64, since_version = 13 : i64} : (tensor<3xf32>) -> tensor<*xi32>
  return %y : tensor<*xi32>
}

// -----

// CHECK-LABEL: func.func @gemm(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<4x3xf32>, %[[ARG1:[^:]*]]: tensor<5x4xf32>, %[[ARG2:[^:]*]]: tensor<5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.transpose %[[ARG0]] {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[V1:.*]] = tsr.transpose %[[ARG1]] {perm = array<i64: 1, 0>} : (tensor<5x4xf32>) -> tensor<4x5xf32>
// CHECK-NEXT: %[[V2:.*]] = tsr.matmul %[[V0]], %[[V1]] : tensor<3x4xf32>, tensor<4x5xf32> -> tensor<3x5xf32>
// CHECK-NEXT: %[[V3:.*]] = tsr.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[V4:.*]] = tsr.mul %[[V2]], %[[V3]] : tensor<3x5xf32>, tensor<f32> -> tensor<3x5xf32>
// CHECK-NEXT: %[[V5:.*]] = tsr.add %[[V4]], %[[ARG2]] : tensor<3x5xf32>, tensor<5xf32> -> tensor<3x5xf32>
// CHECK-NEXT: return %[[V5]] : tensor<3x5xf32>
func.func @gemm(%a: tensor<4x3xf32>, %b: tensor<5x4xf32>, %c: tensor<5xf32>) -> tensor<*xf32> {
  %y = onnx.node "Gemm"(%a, %b, %c) {attrs = {alpha = 2.0 : f32, transA = 1 : i64, transB = 1 : i64}, domain = "", name = "gemm", opset = 13 : i64, since_version = 13 : i64} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @conv_same_upper(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<1x3x5x5xf32>, %[[ARG1:[^:]*]]: tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.conv %[[ARG0]], %[[ARG1]] {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<1x4x3x3xf32>
func.func @conv_same_upper(%x: tensor<1x3x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<*xf32> {
  %y = onnx.node "Conv"(%x, %w) {attrs = {auto_pad = "SAME_UPPER", strides = [2, 2]}, domain = "", name = "conv", opset = 13 : i64, since_version = 11 : i64} : (tensor<1x3x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @max_pool(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.max_pool %[[ARG0]] {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT: return %[[V0]] : tensor<1x2x2x2xf32>
func.func @max_pool(%x: tensor<1x2x4x4xf32>) -> tensor<*xf32> {
  %y = onnx.node "MaxPool"(%x) {attrs = {kernel_shape = [2, 2], strides = [2, 2]}, domain = "", name = "pool", opset = 13 : i64, since_version = 12 : i64} : (tensor<1x2x4x4xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @global_average_pool(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.reduce_mean %[[ARG0]] {axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
// CHECK-NEXT: return %[[V0]] : tensor<1x2x1x1xf32>
func.func @global_average_pool(%x: tensor<1x2x4x4xf32>) -> tensor<*xf32> {
  %y = onnx.node "GlobalAveragePool"(%x) {attrs = {}, domain = "", name = "gap", opset = 13 : i64, since_version = 1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_legacy(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.reshape %[[ARG0]] : tensor<2x3x4xf32> to tensor<2x12xf32>
// CHECK-NEXT: %[[V1:.*]] = tsr.softmax %[[V0]] {axis = 1 : i64} : tensor<2x12xf32>
// CHECK-NEXT: %[[V2:.*]] = tsr.reshape %[[V1]] : tensor<2x12xf32> to tensor<2x3x4xf32>
// CHECK-NEXT: return %[[V2]] : tensor<2x3x4xf32>
func.func @softmax_legacy(%x: tensor<2x3x4xf32>) -> tensor<*xf32> {
  %y = onnx.node "Softmax"(%x) {attrs = {}, domain = "", name = "sm", opset = 11 : i64, since_version = 11 : i64} : (tensor<2x3x4xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_13(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.softmax %[[ARG0]] {axis = 1 : i64} : tensor<2x3x4xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x3x4xf32>
func.func @softmax_13(%x: tensor<2x3x4xf32>) -> tensor<*xf32> {
  %y = onnx.node "Softmax"(%x) {attrs = {axis = 1 : i64}, domain = "", name = "sm", opset = 13 : i64, since_version = 13 : i64} : (tensor<2x3x4xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @instance_norm(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<1x2x3x3xf32>, %[[ARG1:[^:]*]]: tensor<2xf32>, %[[ARG2:[^:]*]]: tensor<2xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.reduce_mean %[[ARG0]] {axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x2x3x3xf32>) -> tensor<1x2x1x1xf32>
// CHECK-NEXT: %[[V1:.*]] = tsr.sub %[[ARG0]], %[[V0]] : tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32> -> tensor<1x2x3x3xf32>
// CHECK-NEXT: %[[V2:.*]] = tsr.mul %[[V1]], %[[V1]] : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
// CHECK-NEXT: %[[V3:.*]] = tsr.reduce_mean %[[V2]] {axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x2x3x3xf32>) -> tensor<1x2x1x1xf32>
// CHECK-NEXT: %[[V4:.*]] = tsr.constant dense<1.000000e-03> : tensor<f32>
// CHECK-NEXT: %[[V5:.*]] = tsr.add %[[V3]], %[[V4]] : tensor<1x2x1x1xf32>, tensor<f32> -> tensor<1x2x1x1xf32>
// CHECK-NEXT: %[[V6:.*]] = tsr.sqrt %[[V5]] : tensor<1x2x1x1xf32>
// CHECK-NEXT: %[[V7:.*]] = tsr.div %[[V1]], %[[V6]] : tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32> -> tensor<1x2x3x3xf32>
// CHECK-NEXT: %[[V8:.*]] = tsr.reshape %[[ARG1]] : tensor<2xf32> to tensor<2x1x1xf32>
// CHECK-NEXT: %[[V9:.*]] = tsr.reshape %[[ARG2]] : tensor<2xf32> to tensor<2x1x1xf32>
// CHECK-NEXT: %[[V10:.*]] = tsr.mul %[[V7]], %[[V8]] : tensor<1x2x3x3xf32>, tensor<2x1x1xf32> -> tensor<1x2x3x3xf32>
// CHECK-NEXT: %[[V11:.*]] = tsr.add %[[V10]], %[[V9]] : tensor<1x2x3x3xf32>, tensor<2x1x1xf32> -> tensor<1x2x3x3xf32>
// CHECK-NEXT: return %[[V11]] : tensor<1x2x3x3xf32>
func.func @instance_norm(%x: tensor<1x2x3x3xf32>, %s: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<*xf32> {
  %y = onnx.node "InstanceNormalization"(%x, %s, %b) {attrs = {epsilon = 1.0e-3 : f32}, domain = "", name = "in", opset = 13 : i64, since_version = 6 : i64} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_sum_axes_input(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.reduce_sum %[[ARG0]] {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3xf32>
func.func @reduce_sum_axes_input(%x: tensor<2x3x4xf32>) -> tensor<*xf32> {
  %axes = tsr.constant dense<[-1, 0]> : tensor<2xi64>
  %y = onnx.node "ReduceSum"(%x, %axes) {attrs = {keepdims = 0 : i64}, domain = "", name = "rs", opset = 13 : i64, since_version = 13 : i64} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_mean_axes_attr(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.reduce_mean %[[ARG0]] {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x1x4xf32>
func.func @reduce_mean_axes_attr(%x: tensor<2x3x4xf32>) -> tensor<*xf32> {
  %y = onnx.node "ReduceMean"(%x) {attrs = {axes = [1]}, domain = "", name = "rm", opset = 13 : i64, since_version = 13 : i64} : (tensor<2x3x4xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_mean_18_axes_input(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.reduce_mean %[[ARG0]] {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x1x4xf32>
func.func @reduce_mean_18_axes_input(%x: tensor<2x3x4xf32>) -> tensor<*xf32> {
  %axes = tsr.constant dense<[1]> : tensor<1xi64>
  %y = onnx.node "ReduceMean"(%x, %axes) {attrs = {}, domain = "", name = "rm", opset = 18 : i64, since_version = 18 : i64} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_l2(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.mul %[[ARG0]], %[[ARG0]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: %[[V1:.*]] = tsr.reduce_sum %[[V0]] {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[V2:.*]] = tsr.sqrt %[[V1]] : tensor<2xf32>
// CHECK-NEXT: return %[[V2]] : tensor<2xf32>
func.func @reduce_l2(%x: tensor<2x3xf32>) -> tensor<*xf32> {
  %y = onnx.node "ReduceL2"(%x) {attrs = {axes = [1], keepdims = 0 : i64}, domain = "", name = "l2", opset = 13 : i64, since_version = 13 : i64} : (tensor<2x3xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_sum_noop(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: return %[[ARG0]] : tensor<2x3xf32>
func.func @reduce_sum_noop(%x: tensor<2x3xf32>) -> tensor<*xf32> {
  %axes = tsr.constant dense<> : tensor<0xi64>
  %y = onnx.node "ReduceSum"(%x, %axes) {attrs = {noop_with_empty_axes = 1 : i64}, domain = "", name = "rs", opset = 13 : i64, since_version = 13 : i64} : (tensor<2x3xf32>, tensor<0xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_zero_and_minus_one(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.reshape %[[ARG0]] : tensor<2x3x4xf32> to tensor<2x12xf32>
// CHECK-NEXT: return %[[V0]] : tensor<2x12xf32>
func.func @reshape_zero_and_minus_one(%x: tensor<2x3x4xf32>) -> tensor<*xf32> {
  %shape = tsr.constant dense<[0, -1]> : tensor<2xi64>
  %y = onnx.node "Reshape"(%x, %shape) {attrs = {}, domain = "", name = "r", opset = 14 : i64, since_version = 14 : i64} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @flatten_squeeze_unsqueeze(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<2x1x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<1x2x1x3x1xf32>)
// CHECK-NEXT: %[[V0:.*]] = tsr.reshape %[[ARG0]] : tensor<2x1x3xf32> to tensor<2x3xf32>
// CHECK-NEXT: %[[V1:.*]] = tsr.reshape %[[ARG0]] : tensor<2x1x3xf32> to tensor<2x3xf32>
// CHECK-NEXT: %[[V2:.*]] = tsr.reshape %[[ARG0]] : tensor<2x1x3xf32> to tensor<1x2x1x3x1xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]], %[[V2]] : tensor<2x3xf32>, tensor<2x3xf32>, tensor<1x2x1x3x1xf32>
func.func @flatten_squeeze_unsqueeze(%x: tensor<2x1x3xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %axes = tsr.constant dense<[1]> : tensor<1xi64>
  %f = onnx.node "Flatten"(%x) {attrs = {axis = 2 : i64}, domain = "", name = "f", opset = 13 : i64, since_version = 13 : i64} : (tensor<2x1x3xf32>) -> tensor<*xf32>
  %s = onnx.node "Squeeze"(%x, %axes) {attrs = {}, domain = "", name = "s", opset = 13 : i64, since_version = 13 : i64} : (tensor<2x1x3xf32>, tensor<1xi64>) -> tensor<*xf32>
  %u = onnx.node "Unsqueeze"(%x) {attrs = {axes = [0, -1]}, domain = "", name = "u", opset = 11 : i64, since_version = 11 : i64} : (tensor<2x1x3xf32>) -> tensor<*xf32>
  return %f, %s, %u : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @split_num_outputs(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<7x2xf32>) -> (tensor<4x2xf32>, tensor<3x2xf32>)
// CHECK-NEXT: %[[V0:.*]] = tsr.slice %[[ARG0]] {limits = array<i64: 4, 2>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<7x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: %[[V1:.*]] = tsr.slice %[[ARG0]] {limits = array<i64: 7, 2>, starts = array<i64: 4, 0>, steps = array<i64: 1, 1>} : (tensor<7x2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<4x2xf32>, tensor<3x2xf32>
func.func @split_num_outputs(%x: tensor<7x2xf32>) -> (tensor<*xf32>, tensor<*xf32>) {
  %a, %b = onnx.node "Split"(%x) {attrs = {num_outputs = 2 : i64}, domain = "", name = "split", opset = 18 : i64, since_version = 18 : i64} : (tensor<7x2xf32>) -> (tensor<*xf32>, tensor<*xf32>)
  return %a, %b : tensor<*xf32>, tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @slice_negative_step(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<5x6xf32>) -> tensor<3x3xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.slice %[[ARG0]] {limits = array<i64: -1, 6>, starts = array<i64: 4, 1>, steps = array<i64: -2, 2>} : (tensor<5x6xf32>) -> tensor<3x3xf32>
// CHECK-NEXT: return %[[V0]] : tensor<3x3xf32>
func.func @slice_negative_step(%x: tensor<5x6xf32>) -> tensor<*xf32> {
  %starts = tsr.constant dense<[-1, 1]> : tensor<2xi64>
  %ends = tsr.constant dense<[-1000, 1000]> : tensor<2xi64>
  %axes = tsr.constant dense<[0, 1]> : tensor<2xi64>
  %steps = tsr.constant dense<[-2, 2]> : tensor<2xi64>
  %y = onnx.node "Slice"(%x, %starts, %ends, %axes, %steps) {attrs = {}, domain = "", name = "slice", opset = 13 : i64, since_version = 13 : i64} : (tensor<5x6xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @expand_and_pad(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<3x1xf32>) -> (tensor<2x3x4xf32>, tensor<3x4xf32>)
// CHECK-NEXT: %[[V0:.*]] = tsr.broadcast %[[ARG0]] : tensor<3x1xf32> to tensor<2x3x4xf32>
// CHECK-NEXT: %[[V1:.*]] = tsr.pad %[[ARG0]] {pads = array<i64: 0, 1, 0, 2>, value = 5.000000e+00 : f64} : (tensor<3x1xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<2x3x4xf32>, tensor<3x4xf32>
func.func @expand_and_pad(%x: tensor<3x1xf32>) -> (tensor<*xf32>, tensor<*xf32>) {
  %shape = tsr.constant dense<[2, 1, 4]> : tensor<3xi64>
  %e = onnx.node "Expand"(%x, %shape) {attrs = {}, domain = "", name = "e", opset = 13 : i64, since_version = 13 : i64} : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<*xf32>
  %pads = tsr.constant dense<[0, 1, 0, 2]> : tensor<4xi64>
  %v = tsr.constant dense<5.0> : tensor<f32>
  %p = onnx.node "Pad"(%x, %pads, %v) {attrs = {}, domain = "", name = "p", opset = 13 : i64, since_version = 13 : i64} : (tensor<3x1xf32>, tensor<4xi64>, tensor<f32>) -> tensor<*xf32>
  return %e, %p : tensor<*xf32>, tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @dropout_inference(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
// CHECK-NEXT: %[[V0:.*]] = tsr.identity %[[ARG0]] : tensor<4xf32>
// CHECK-NEXT: %[[V1:.*]] = tsr.constant dense<true> : tensor<4xi1>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<4xf32>, tensor<4xi1>
func.func @dropout_inference(%x: tensor<4xf32>) -> (tensor<*xf32>, tensor<*xi1>) {
  %y, %m = onnx.node "Dropout"(%x) {attrs = {}, domain = "", name = "d", opset = 13 : i64, since_version = 13 : i64} : (tensor<4xf32>) -> (tensor<*xf32>, tensor<*xi1>)
  return %y, %m : tensor<*xf32>, tensor<*xi1>
}

// -----

// CHECK-LABEL: func.func @softmax_cross_entropy(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<3x5xf32>, %[[ARG1:[^:]*]]: tensor<3xi64>) -> tensor<f32>
// CHECK-NEXT: %[[V0:.*]] = tsr.softmax_cross_entropy_loss %[[ARG0]], %[[ARG1]] : (tensor<3x5xf32>, tensor<3xi64>) -> tensor<f32>
// CHECK-NEXT: return %[[V0]] : tensor<f32>
func.func @softmax_cross_entropy(%s: tensor<3x5xf32>, %t: tensor<3xi64>) -> tensor<*xf32> {
  %l = onnx.node "SoftmaxCrossEntropyLoss"(%s, %t) {attrs = {reduction = "mean"}, domain = "", name = "loss", opset = 13 : i64, since_version = 13 : i64} : (tensor<3x5xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %l : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @shape_chain_folds(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<5x3x4xf32>) -> tensor<5x12xf32>
// CHECK-NEXT: %[[V0:.*]] = tsr.reshape %[[ARG0]] : tensor<5x3x4xf32> to tensor<5x12xf32>
// CHECK-NEXT: return %[[V0]] : tensor<5x12xf32>
func.func @shape_chain_folds(%x: tensor<5x3x4xf32>) -> tensor<*xf32> {
  %zero = tsr.constant dense<0> : tensor<i64>
  %zero1 = tsr.constant dense<[0]> : tensor<1xi64>
  %m1 = tsr.constant dense<[-1]> : tensor<1xi64>
  %s = onnx.node "Shape"(%x) {attrs = {}, domain = "", name = "shape", opset = 13 : i64, since_version = 13 : i64} : (tensor<5x3x4xf32>) -> tensor<*xi64>
  %n = onnx.node "Gather"(%s, %zero) {attrs = {axis = 0 : i64}, domain = "", name = "g", opset = 13 : i64, since_version = 13 : i64} : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %n1 = onnx.node "Unsqueeze"(%n, %zero1) {attrs = {}, domain = "", name = "u", opset = 13 : i64, since_version = 13 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %t = onnx.node "Concat"(%n1, %m1) {attrs = {axis = 0 : i64}, domain = "", name = "c", opset = 13 : i64, since_version = 13 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %y = onnx.node "Reshape"(%x, %t) {attrs = {}, domain = "", name = "r", opset = 14 : i64, since_version = 14 : i64} : (tensor<5x3x4xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// CHECK-LABEL: func.func @constant_of_shape_and_range(
// CHECK-SAME: %[[ARG0:[^:]*]]: tensor<2xf32>) -> (tensor<2x3xf32>, tensor<3xi64>)
// CHECK-NEXT: %[[V0:.*]] = tsr.constant dense<1.500000e+00> : tensor<2x3xf32>
// CHECK-NEXT: %[[V1:.*]] = tsr.constant dense<[1, 4, 7]> : tensor<3xi64>
// CHECK-NEXT: return %[[V0]], %[[V1]] : tensor<2x3xf32>, tensor<3xi64>
func.func @constant_of_shape_and_range(%x: tensor<2xf32>) -> (tensor<*xf32>, tensor<*xi64>) {
  %shape = tsr.constant dense<[2, 3]> : tensor<2xi64>
  %c = onnx.node "ConstantOfShape"(%shape) {attrs = {value = dense<1.5> : tensor<1xf32>}, domain = "", name = "cos", opset = 13 : i64, since_version = 9 : i64} : (tensor<2xi64>) -> tensor<*xf32>
  %s = tsr.constant dense<1> : tensor<i64>
  %l = tsr.constant dense<10> : tensor<i64>
  %d = tsr.constant dense<3> : tensor<i64>
  %r = onnx.node "Range"(%s, %l, %d) {attrs = {}, domain = "", name = "range", opset = 13 : i64, since_version = 11 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<*xi64>
  return %c, %r : tensor<*xf32>, tensor<*xi64>
}
