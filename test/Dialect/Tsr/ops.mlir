// RUN: tessera-opt %s -split-input-file | tessera-opt -split-input-file | FileCheck %s
// RUN: tessera-opt %s -split-input-file -mlir-print-op-generic | tessera-opt -split-input-file | FileCheck %s

// Round trip of every tsr op, one function per family.

// CHECK-LABEL: func @unary
func.func @unary(%x: tensor<2x3xf32>, %i: tensor<4xi32>, %b: tensor<4xi1>) {
  // CHECK: tsr.neg %{{.*}} : tensor<2x3xf32>
  %0 = tsr.neg %x : tensor<2x3xf32>
  // CHECK: tsr.abs %{{.*}} : tensor<4xi32>
  %1 = tsr.abs %i : tensor<4xi32>
  // CHECK: tsr.sign
  %2 = tsr.sign %x : tensor<2x3xf32>
  // CHECK: tsr.relu
  %3 = tsr.relu %x : tensor<2x3xf32>
  // CHECK: tsr.identity %{{.*}} : tensor<4xi1>
  %4 = tsr.identity %b : tensor<4xi1>
  // CHECK: tsr.not %{{.*}} : tensor<4xi1>
  %5 = tsr.not %b : tensor<4xi1>
  // CHECK: tsr.exp
  %6 = tsr.exp %x : tensor<2x3xf32>
  // CHECK: tsr.log
  %7 = tsr.log %x : tensor<2x3xf32>
  // CHECK: tsr.sqrt
  %8 = tsr.sqrt %x : tensor<2x3xf32>
  // CHECK: tsr.reciprocal
  %9 = tsr.reciprocal %x : tensor<2x3xf32>
  // CHECK: tsr.tanh
  %10 = tsr.tanh %x : tensor<2x3xf32>
  // CHECK: tsr.sigmoid
  %11 = tsr.sigmoid %x : tensor<2x3xf32>
  // CHECK: tsr.erf
  %12 = tsr.erf %x : tensor<2x3xf32>
  // CHECK: tsr.sin
  %13 = tsr.sin %x : tensor<2x3xf32>
  // CHECK: tsr.cos
  %14 = tsr.cos %x : tensor<2x3xf32>
  // CHECK: tsr.tan
  %15 = tsr.tan %x : tensor<2x3xf32>
  // CHECK: tsr.atan
  %16 = tsr.atan %x : tensor<2x3xf32>
  // CHECK: tsr.floor
  %17 = tsr.floor %x : tensor<2x3xf32>
  // CHECK: tsr.ceil
  %18 = tsr.ceil %x : tensor<2x3xf32>
  // CHECK: tsr.round
  %19 = tsr.round %x : tensor<2x3xf32>
  // CHECK: tsr.softplus
  %20 = tsr.softplus %x : tensor<2x3xf32>
  // CHECK: tsr.softsign
  %21 = tsr.softsign %x : tensor<2x3xf32>
  // CHECK: tsr.is_nan %{{.*}} : tensor<2x3xf32> -> tensor<2x3xi1>
  %22 = tsr.is_nan %x : tensor<2x3xf32> -> tensor<2x3xi1>
  // CHECK: tsr.gelu %{{.*}} {approximate = #tsr.gelu_approximation<tanh>} : tensor<2x3xf32>
  %23 = tsr.gelu %x {approximate = #tsr.gelu_approximation<tanh>} : tensor<2x3xf32>
  // CHECK: tsr.gelu %{{.*}} : tensor<2x3xf32>
  %24 = tsr.gelu %x : tensor<2x3xf32>
  // CHECK: tsr.leaky_relu %{{.*}} {alpha = 1.000000e-02 : f64}
  %25 = tsr.leaky_relu %x {alpha = 0.01 : f64} : tensor<2x3xf32>
  // CHECK: tsr.elu %{{.*}} {alpha = 1.000000e+00 : f64}
  %26 = tsr.elu %x {alpha = 1.0 : f64} : tensor<2x3xf32>
  // CHECK: tsr.selu %{{.*}} {alpha = 1.670000e+00 : f64, gamma = 1.050000e+00 : f64}
  %27 = tsr.selu %x {alpha = 1.67 : f64, gamma = 1.05 : f64} : tensor<2x3xf32>
  // CHECK: tsr.hard_sigmoid %{{.*}} {alpha = 2.000000e-01 : f64, beta = 5.000000e-01 : f64}
  %28 = tsr.hard_sigmoid %x {alpha = 0.2 : f64, beta = 0.5 : f64} : tensor<2x3xf32>
  // CHECK: tsr.clip %{{.*}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<2x3xf32>
  %29 = tsr.clip %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x3xf32>
  // CHECK: tsr.clip %{{.*}} {min = 1.000000e+00 : f64} : tensor<4xi32>
  %30 = tsr.clip %i {min = 1.0 : f64} : tensor<4xi32>
  // CHECK: tsr.cast %{{.*}} : tensor<2x3xf32> to tensor<2x3xi64>
  %31 = tsr.cast %x : tensor<2x3xf32> to tensor<2x3xi64>
  // CHECK: tsr.cast %{{.*}} : tensor<4xi32> to tensor<4xui8>
  %32 = tsr.cast %i : tensor<4xi32> to tensor<4xui8>
  return
}

// -----

// CHECK-LABEL: func @binary
func.func @binary(%x: tensor<2x3xf32>, %r: tensor<3xf32>, %s: tensor<f32>, %i: tensor<4xi64>, %u: tensor<4xui8>, %b: tensor<4xi1>, %c: tensor<2x1xi1>) {
  // CHECK: tsr.add %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %0 = tsr.add %x, %r : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: tsr.sub %{{.*}}, %{{.*}} : tensor<f32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = tsr.sub %s, %x : tensor<f32>, tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: tsr.mul
  %2 = tsr.mul %x, %x : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: tsr.div %{{.*}}, %{{.*}} : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %3 = tsr.div %i, %i : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  // CHECK: tsr.pow
  %4 = tsr.pow %x, %s : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  // CHECK: tsr.max
  %5 = tsr.max %x, %r : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: tsr.min %{{.*}}, %{{.*}} : tensor<4xui8>, tensor<4xui8> -> tensor<4xui8>
  %6 = tsr.min %u, %u : tensor<4xui8>, tensor<4xui8> -> tensor<4xui8>
  // CHECK: tsr.mod %{{.*}}, %{{.*}} {fmod = true}
  %7 = tsr.mod %x, %r {fmod = true} : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: tsr.mod %{{.*}}, %{{.*}} : tensor<4xi64>
  %8 = tsr.mod %i, %i : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  // CHECK: tsr.and %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<2x1xi1> -> tensor<2x4xi1>
  %9 = tsr.and %b, %c : tensor<4xi1>, tensor<2x1xi1> -> tensor<2x4xi1>
  // CHECK: tsr.or
  %10 = tsr.or %b, %b : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  // CHECK: tsr.xor
  %11 = tsr.xor %b, %b : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  // CHECK: tsr.equal %{{.*}}, %{{.*}} : tensor<4xi64>, tensor<4xi64> -> tensor<4xi1>
  %12 = tsr.equal %i, %i : tensor<4xi64>, tensor<4xi64> -> tensor<4xi1>
  // CHECK: tsr.less %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
  %13 = tsr.less %x, %r : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
  // CHECK: tsr.less_equal
  %14 = tsr.less_equal %x, %r : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
  // CHECK: tsr.greater
  %15 = tsr.greater %u, %u : tensor<4xui8>, tensor<4xui8> -> tensor<4xi1>
  // CHECK: tsr.greater_equal
  %16 = tsr.greater_equal %x, %s : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xi1>
  // CHECK: tsr.prelu
  %17 = tsr.prelu %x, %r : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: tsr.where %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %18 = tsr.where %c, %x, %s : tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  // CHECK: tsr.constant dense<[1, 2]> : tensor<2xi64>
  %19 = tsr.constant dense<[1, 2]> : tensor<2xi64>
  return
}

// -----

// CHECK-LABEL: func @contractions
func.func @contractions(%a: tensor<8x4x16xf32>, %b: tensor<16x32xf32>, %v: tensor<16xf32>,
                        %x: tensor<1x4x9x9xf32>, %w: tensor<6x2x3x3xf32>, %bias: tensor<6xf32>,
                        %x1: tensor<2x3x10xf32>, %w1: tensor<4x3x3xf32>) {
  // CHECK: tsr.matmul %{{.*}}, %{{.*}} : tensor<8x4x16xf32>, tensor<16x32xf32> -> tensor<8x4x32xf32>
  %0 = tsr.matmul %a, %b : tensor<8x4x16xf32>, tensor<16x32xf32> -> tensor<8x4x32xf32>
  // CHECK: tsr.matmul %{{.*}}, %{{.*}} : tensor<8x4x16xf32>, tensor<16xf32> -> tensor<8x4xf32>
  %1 = tsr.matmul %a, %v : tensor<8x4x16xf32>, tensor<16xf32> -> tensor<8x4xf32>
  // CHECK: tsr.matmul %{{.*}}, %{{.*}} : tensor<16xf32>, tensor<16x32xf32> -> tensor<32xf32>
  %2 = tsr.matmul %v, %b : tensor<16xf32>, tensor<16x32xf32> -> tensor<32xf32>
  // CHECK: tsr.conv %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 2, 1>, group = 2 : i64, pads = array<i64: 1, 0, 1, 2>, strides = array<i64: 2, 1>} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x9xf32>
  %3 = tsr.conv %x, %w, %bias {strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 1, 2>, dilations = array<i64: 2, 1>, group = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x9xf32>
  // CHECK: tsr.conv %{{.*}}, %{{.*}} {{.*}} : (tensor<2x3x10xf32>, tensor<4x3x3xf32>) -> tensor<2x4x8xf32>
  %4 = tsr.conv %x1, %w1 {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1 : i64} : (tensor<2x3x10xf32>, tensor<4x3x3xf32>) -> tensor<2x4x8xf32>
  // CHECK: tsr.einsum %{{.*}}, %{{.*}} {equation = "bij,jk->bik"} : (tensor<8x4x16xf32>, tensor<16x32xf32>) -> tensor<8x4x32xf32>
  %5 = tsr.einsum %a, %b {equation = "bij,jk->bik"} : (tensor<8x4x16xf32>, tensor<16x32xf32>) -> tensor<8x4x32xf32>
  // CHECK: tsr.einsum %{{.*}} {equation = "ii"} : (tensor<16x16xf32>) -> tensor<f32>
  %sq = tsr.reshape %b : tensor<16x32xf32> to tensor<32x16xf32>
  %sq2 = tsr.slice %sq {starts = array<i64: 0, 0>, limits = array<i64: 16, 16>, steps = array<i64: 1, 1>} : (tensor<32x16xf32>) -> tensor<16x16xf32>
  %6 = tsr.einsum %sq2 {equation = "ii"} : (tensor<16x16xf32>) -> tensor<f32>
  return
}

// -----

// CHECK-LABEL: func @norm_pool
func.func @norm_pool(%x: tensor<2x3x8x8xf32>, %c: tensor<3xf32>, %t: tensor<2x8x16xf32>, %g: tensor<16xf32>) {
  // CHECK: tsr.max_pool %{{.*}} {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
  %0 = tsr.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
  // CHECK: tsr.avg_pool %{{.*}} {count_include_pad = true, {{.*}}} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %1 = tsr.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = true} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  // CHECK: tsr.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64}
  %2 = tsr.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f64} : (tensor<2x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x8x8xf32>
  // CHECK: tsr.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64, epsilon = 1.000000e-05 : f64}
  %3 = tsr.layer_norm %t, %g, %g {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // CHECK: tsr.layer_norm %{{.*}}, %{{.*}} {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x8x16xf32>, tensor<16xf32>)
  %4 = tsr.layer_norm %t, %g {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // CHECK: tsr.softmax %{{.*}} {axis = 2 : i64} : tensor<2x8x16xf32>
  %5 = tsr.softmax %t {axis = 2 : i64} : tensor<2x8x16xf32>
  // CHECK: tsr.log_softmax %{{.*}} {axis = 0 : i64} : tensor<2x8x16xf32>
  %6 = tsr.log_softmax %t {axis = 0 : i64} : tensor<2x8x16xf32>
  return
}

// -----

// CHECK-LABEL: func @reductions
func.func @reductions(%x: tensor<2x3x4xf32>, %i: tensor<5xi32>) {
  // CHECK: tsr.reduce_sum %{{.*}} {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %0 = tsr.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  // CHECK: tsr.reduce_mean %{{.*}} {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %1 = tsr.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  // CHECK: tsr.reduce_max
  %2 = tsr.reduce_max %x {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  // CHECK: tsr.reduce_min
  %3 = tsr.reduce_min %i {axes = array<i64: 0>, keepdims = true} : (tensor<5xi32>) -> tensor<1xi32>
  // CHECK: tsr.reduce_prod
  %4 = tsr.reduce_prod %x {axes = array<i64>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK: tsr.argmax %{{.*}} {axis = 1 : i64, keepdims = true, select_last_index = false} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  %5 = tsr.argmax %x {axis = 1 : i64, keepdims = true, select_last_index = false} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  // CHECK: tsr.argmin %{{.*}} {axis = 0 : i64, keepdims = false, select_last_index = true} : (tensor<5xi32>) -> tensor<i64>
  %6 = tsr.argmin %i {axis = 0 : i64, keepdims = false, select_last_index = true} : (tensor<5xi32>) -> tensor<i64>
  // CHECK: tsr.cumsum %{{.*}} {axis = 2 : i64, exclusive = true, reverse = false} : tensor<2x3x4xf32>
  %7 = tsr.cumsum %x {axis = 2 : i64, exclusive = true, reverse = false} : tensor<2x3x4xf32>
  // CHECK: tsr.topk %{{.*}} {axis = 2 : i64, k = 2 : i64, largest = true} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi64>)
  %8:2 = tsr.topk %x {k = 2 : i64, axis = 2 : i64, largest = true} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi64>)
  return
}

// -----

// CHECK-LABEL: func @data_movement
func.func @data_movement(%x: tensor<2x3x4xf32>, %y: tensor<1x3x4xf32>, %ids: tensor<2x5xi64>, %i32: tensor<2x3x2xi32>, %col: tensor<3x1xf32>) {
  // CHECK: tsr.reshape %{{.*}} : tensor<2x3x4xf32> to tensor<6x4xf32>
  %0 = tsr.reshape %x : tensor<2x3x4xf32> to tensor<6x4xf32>
  // CHECK: tsr.transpose %{{.*}} {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = tsr.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK: tsr.broadcast %{{.*}} : tensor<3x1xf32> to tensor<2x3x4xf32>
  %2 = tsr.broadcast %col : tensor<3x1xf32> to tensor<2x3x4xf32>
  // CHECK: tsr.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<1x3x4xf32>) -> tensor<3x3x4xf32>
  %3 = tsr.concat %x, %y {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<1x3x4xf32>) -> tensor<3x3x4xf32>
  // CHECK: tsr.slice %{{.*}} {limits = array<i64: 2, -1, 4>, starts = array<i64: 0, 2, 0>, steps = array<i64: 1, -1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  %4 = tsr.slice %x {starts = array<i64: 0, 2, 0>, limits = array<i64: 2, -1, 4>, steps = array<i64: 1, -1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  // CHECK: tsr.gather %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5xi64>) -> tensor<2x2x5x4xf32>
  %5 = tsr.gather %x, %ids {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5xi64>) -> tensor<2x2x5x4xf32>
  // CHECK: tsr.gather_elements %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x2xi32>) -> tensor<2x3x2xf32>
  %6 = tsr.gather_elements %x, %i32 {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x2xi32>) -> tensor<2x3x2xf32>
  // CHECK: tsr.scatter_elements %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64, reduction = #tsr.scatter_reduction<add>}
  %7 = tsr.scatter_elements %x, %i32, %4 {axis = 2 : i64, reduction = #tsr.scatter_reduction<add>} : (tensor<2x3x4xf32>, tensor<2x3x2xi32>, tensor<2x3x2xf32>) -> tensor<2x3x4xf32>
  // CHECK: tsr.tile %{{.*}} {repeats = array<i64: 1, 2, 3>} : (tensor<2x3x4xf32>) -> tensor<2x6x12xf32>
  %8 = tsr.tile %x {repeats = array<i64: 1, 2, 3>} : (tensor<2x3x4xf32>) -> tensor<2x6x12xf32>
  // CHECK: tsr.pad %{{.*}} {mode = #tsr.pad_mode<reflect>, pads = array<i64: 0, 1, -1, 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x5x5xf32>
  %9 = tsr.pad %x {pads = array<i64: 0, 1, -1, 0, 1, 2>, mode = #tsr.pad_mode<reflect>} : (tensor<2x3x4xf32>) -> tensor<2x5x5xf32>
  // CHECK: tsr.trilu %{{.*}} {k = -1 : i64, upper = false} : tensor<2x3x4xf32>
  %10 = tsr.trilu %x {upper = false, k = -1 : i64} : tensor<2x3x4xf32>
  // CHECK: tsr.one_hot %{{.*}} {axis = -1 : i64, depth = 7 : i64, off_value = 0.000000e+00 : f64, on_value = 1.000000e+00 : f64} : (tensor<2x5xi64>) -> tensor<2x5x7xf32>
  %11 = tsr.one_hot %ids {depth = 7 : i64, axis = -1 : i64, on_value = 1.0 : f64, off_value = 0.0 : f64} : (tensor<2x5xi64>) -> tensor<2x5x7xf32>
  return
}

// -----

// CHECK-LABEL: func @training
func.func @training(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %w: tensor<10xf32>, %s: tensor<2x5x3xf32>, %st: tensor<2x3xi32>) {
  // CHECK: tsr.dropout %{{.*}} {ratio = 1.000000e-01 : f64, seed = 7 : i64} : (tensor<4x10xf32>) -> (tensor<4x10xf32>, tensor<4x10xi1>)
  %0:2 = tsr.dropout %x {ratio = 0.1 : f64, seed = 7 : i64} : (tensor<4x10xf32>) -> (tensor<4x10xf32>, tensor<4x10xi1>)
  // CHECK: tsr.softmax_cross_entropy_loss %{{.*}}, %{{.*}} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  %1 = tsr.softmax_cross_entropy_loss %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  // CHECK: tsr.softmax_cross_entropy_loss %{{.*}}, %{{.*}}, %{{.*}} {ignore_index = -1 : i64, reduction = #tsr.loss_reduction<none>} : (tensor<2x5x3xf32>, tensor<2x3xi32>, tensor<5xf32>) -> tensor<2x3xf32>
  %w5 = tsr.slice %w {starts = array<i64: 0>, limits = array<i64: 5>, steps = array<i64: 1>} : (tensor<10xf32>) -> tensor<5xf32>
  %2 = tsr.softmax_cross_entropy_loss %s, %st, %w5 {reduction = #tsr.loss_reduction<none>, ignore_index = -1 : i64} : (tensor<2x5x3xf32>, tensor<2x3xi32>, tensor<5xf32>) -> tensor<2x3xf32>
  // CHECK: tsr.nll_loss %{{.*}}, %{{.*}}, %{{.*}} {reduction = #tsr.loss_reduction<sum>} : (tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>) -> tensor<f32>
  %3 = tsr.nll_loss %x, %t, %w {reduction = #tsr.loss_reduction<sum>} : (tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>) -> tensor<f32>
  // CHECK: tsr.dropout %{{.*}}, %{{.*}} {ratio = 1.000000e-01 : f64, seed = 7 : i64} : (tensor<4x10xf32>, tensor<i64>) -> (tensor<4x10xf32>, tensor<4x10xi1>)
  %step = tsr.constant dense<3> : tensor<i64>
  %4:2 = tsr.dropout %x, %step {ratio = 0.1 : f64, seed = 7 : i64} : (tensor<4x10xf32>, tensor<i64>) -> (tensor<4x10xf32>, tensor<4x10xi1>)
  // CHECK: tsr.stop_gradient %{{.*}} : tensor<4x10xf32>
  %5 = tsr.stop_gradient %x : tensor<4x10xf32>
  return
}

// -----

// CHECK-LABEL: func.func @remat_barrier(
// CHECK: tsr.remat_barrier %{{.*}} : tensor<2x3xf32>
func.func @remat_barrier(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = tsr.remat_barrier %x : tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @moe(
// CHECK: tsr.moe_assign %{{.*}} {capacity = 3 : i64, num_experts = 4 : i64} : (tensor<2x6x2xi64>) -> (tensor<2x6x2xi64>, tensor<4x2x3xi64>)
// CHECK: tsr.moe_dispatch %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x6x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<4x2x3xi64>) -> tensor<4x2x3x8xf32>
// CHECK: tsr.moe_combine %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} weights %{{.*}} : (tensor<4x2x3x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<4x2x3xi64>, tensor<2x6x2xf32>) -> tensor<2x6x8xf32>
func.func @moe(%x: tensor<2x6x8xf32>, %e: tensor<2x6x2xi64>, %w: tensor<2x6x2xf32>) -> tensor<2x6x8xf32> {
  %slots, %sources = tsr.moe_assign %e {num_experts = 4 : i64, capacity = 3 : i64} : (tensor<2x6x2xi64>) -> (tensor<2x6x2xi64>, tensor<4x2x3xi64>)
  %buf = tsr.moe_dispatch %x, %e, %slots, %sources : (tensor<2x6x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<4x2x3xi64>) -> tensor<4x2x3x8xf32>
  %y = tsr.moe_combine %buf, %e, %slots, %sources weights %w : (tensor<4x2x3x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<4x2x3xi64>, tensor<2x6x2xf32>) -> tensor<2x6x8xf32>
  return %y : tensor<2x6x8xf32>
}
