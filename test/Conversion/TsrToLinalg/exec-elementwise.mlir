// RUN: tessera-opt %s %tsr_exec_pipeline | %mlir_runner | FileCheck %s

// Elementwise semantics (Python and C mod, truncating int division, integer pow,
// round half to even, exact gelu, float->int cast, clip, unsigned arithmetic),
// losses with weights/ignore_index, einsum (matmul, trace, sum) and dropout
// (every output is 0 or 2·x and agrees with its mask); hand-computed.
// random_uniform against splitmix64 computed in NumPy (24-bit draws for
// f32), without and with a seed offset.

func.func @int_ops(%a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  %0 = tsr.mod %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %1 = tsr.mod %a, %b {fmod = true} : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %2 = tsr.div %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %3 = tsr.pow %b, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0, %1, %2, %3 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
}

func.func @float_ops(%a: tensor<4xf32>, %b: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>) {
  %0 = tsr.mod %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %1 = tsr.round %a : tensor<4xf32>
  %2 = tsr.gelu %a : tensor<4xf32>
  %3 = tsr.cast %a : tensor<4xf32> to tensor<4xi32>
  %4 = tsr.clip %a {min = -1.0 : f64, max = 2.0 : f64} : tensor<4xf32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>
}

func.func @unsigned(%a: tensor<2xui8>, %b: tensor<2xui8>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = tsr.div %a, %b : tensor<2xui8>, tensor<2xui8> -> tensor<2xui8>
  %1 = tsr.cast %0 : tensor<2xui8> to tensor<2xf32>
  %2 = tsr.max %a, %b : tensor<2xui8>, tensor<2xui8> -> tensor<2xui8>
  %3 = tsr.cast %2 : tensor<2xui8> to tensor<2xf32>
  return %1, %3 : tensor<2xf32>, tensor<2xf32>
}

func.func @losses(%x: tensor<2x3xf32>, %t: tensor<2xi64>, %w: tensor<3xf32>, %s: tensor<2x3xf32>) -> (tensor<f32>, tensor<f32>, tensor<2xf32>, tensor<f32>) {
  %0 = tsr.nll_loss %x, %t, %w {reduction = #tsr.loss_reduction<mean>} : (tensor<2x3xf32>, tensor<2xi64>, tensor<3xf32>) -> tensor<f32>
  %1 = tsr.nll_loss %x, %t, %w {reduction = #tsr.loss_reduction<mean>, ignore_index = 2 : i64} : (tensor<2x3xf32>, tensor<2xi64>, tensor<3xf32>) -> tensor<f32>
  %2 = tsr.nll_loss %x, %t {reduction = #tsr.loss_reduction<none>} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2xf32>
  %3 = tsr.softmax_cross_entropy_loss %s, %t {reduction = #tsr.loss_reduction<sum>} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<2xf32>, tensor<f32>
}

func.func @einsum(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<f32>, tensor<2xf32>) {
  %0 = tsr.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = tsr.einsum %a {equation = "ii"} : (tensor<2x2xf32>) -> tensor<f32>
  %2 = tsr.einsum %a {equation = "ij->j"} : (tensor<2x2xf32>) -> tensor<2xf32>
  return %0, %1, %2 : tensor<2x2xf32>, tensor<f32>, tensor<2xf32>
}

func.func @dropout(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0, %m = tsr.dropout %x {ratio = 0.5 : f64, seed = 7 : i64} : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xi1>)
  %1 = tsr.cast %m : tensor<8xi1> to tensor<8xf32>
  %2 = tsr.mul %1, %x : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %3 = tsr.add %2, %2 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %4 = tsr.sub %0, %3 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %0, %4 : tensor<8xf32>, tensor<8xf32>
}

func.func @random_uniform(%offset: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = tsr.random_uniform {seed = 7 : i64} : () -> tensor<4xf32>
  %1 = tsr.random_uniform %offset {seed = 7 : i64} : (tensor<i64>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI32(memref<*xi32>)

func.func @main() {
  %a0 = arith.constant dense<[7, -7, 7, -7]> : tensor<4xi32>
  %a1 = arith.constant dense<[3, 3, -3, -3]> : tensor<4xi32>
  %r2_0, %r2_1, %r2_2, %r2_3 = call @int_ops(%a0, %a1) : (tensor<4xi32>, tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>)
  %m2_0 = bufferization.to_buffer %r2_0 : tensor<4xi32> to memref<4xi32>
  %u2_0 = memref.cast %m2_0 : memref<4xi32> to memref<*xi32>
  // int_ops#0
  // CHECK: [1,  2,  -2,  -1]
  call @printMemrefI32(%u2_0) : (memref<*xi32>) -> ()
  %m2_1 = bufferization.to_buffer %r2_1 : tensor<4xi32> to memref<4xi32>
  %u2_1 = memref.cast %m2_1 : memref<4xi32> to memref<*xi32>
  // int_ops#1
  // CHECK: [1,  -1,  1,  -1]
  call @printMemrefI32(%u2_1) : (memref<*xi32>) -> ()
  %m2_2 = bufferization.to_buffer %r2_2 : tensor<4xi32> to memref<4xi32>
  %u2_2 = memref.cast %m2_2 : memref<4xi32> to memref<*xi32>
  // int_ops#2
  // CHECK: [2,  -2,  -2,  2]
  call @printMemrefI32(%u2_2) : (memref<*xi32>) -> ()
  %m2_3 = bufferization.to_buffer %r2_3 : tensor<4xi32> to memref<4xi32>
  %u2_3 = memref.cast %m2_3 : memref<4xi32> to memref<*xi32>
  // int_ops#3
  // CHECK: [27,  27,  0,  0]
  call @printMemrefI32(%u2_3) : (memref<*xi32>) -> ()
  %a3 = arith.constant dense<[2.5, -2.5, 0.5, 3.5]> : tensor<4xf32>
  %a4 = arith.constant dense<2.0> : tensor<f32>
  %r5_0, %r5_1, %r5_2, %r5_3, %r5_4 = call @float_ops(%a3, %a4) : (tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>)
  %m5_0 = bufferization.to_buffer %r5_0 : tensor<4xf32> to memref<4xf32>
  %u5_0 = memref.cast %m5_0 : memref<4xf32> to memref<*xf32>
  // float_ops#0
  // CHECK: [0.5,  1.5,  0.5,  1.5]
  call @printMemrefF32(%u5_0) : (memref<*xf32>) -> ()
  %m5_1 = bufferization.to_buffer %r5_1 : tensor<4xf32> to memref<4xf32>
  %u5_1 = memref.cast %m5_1 : memref<4xf32> to memref<*xf32>
  // float_ops#1
  // CHECK: [2,  -2,  0,  4]
  call @printMemrefF32(%u5_1) : (memref<*xf32>) -> ()
  %m5_2 = bufferization.to_buffer %r5_2 : tensor<4xf32> to memref<4xf32>
  %u5_2 = memref.cast %m5_2 : memref<4xf32> to memref<*xf32>
  // float_ops#2
  // CHECK: [2.48448,  -0.0155242,  0.345731,  3.49919]
  call @printMemrefF32(%u5_2) : (memref<*xf32>) -> ()
  %m5_3 = bufferization.to_buffer %r5_3 : tensor<4xi32> to memref<4xi32>
  %u5_3 = memref.cast %m5_3 : memref<4xi32> to memref<*xi32>
  // float_ops#3
  // CHECK: [2,  -2,  0,  3]
  call @printMemrefI32(%u5_3) : (memref<*xi32>) -> ()
  %m5_4 = bufferization.to_buffer %r5_4 : tensor<4xf32> to memref<4xf32>
  %u5_4 = memref.cast %m5_4 : memref<4xf32> to memref<*xf32>
  // float_ops#4
  // CHECK: [2,  -1,  0.5,  2]
  call @printMemrefF32(%u5_4) : (memref<*xf32>) -> ()
  %a6 = tsr.constant dense<[200, 7]> : tensor<2xui8>
  %a7 = tsr.constant dense<[3, 250]> : tensor<2xui8>
  %r8_0, %r8_1 = call @unsigned(%a6, %a7) : (tensor<2xui8>, tensor<2xui8>) -> (tensor<2xf32>, tensor<2xf32>)
  %m8_0 = bufferization.to_buffer %r8_0 : tensor<2xf32> to memref<2xf32>
  %u8_0 = memref.cast %m8_0 : memref<2xf32> to memref<*xf32>
  // unsigned#0
  // CHECK: [66,  0]
  call @printMemrefF32(%u8_0) : (memref<*xf32>) -> ()
  %m8_1 = bufferization.to_buffer %r8_1 : tensor<2xf32> to memref<2xf32>
  %u8_1 = memref.cast %m8_1 : memref<2xf32> to memref<*xf32>
  // unsigned#1
  // CHECK: [200,  250]
  call @printMemrefF32(%u8_1) : (memref<*xf32>) -> ()
  %a9 = arith.constant dense<[[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0]]> : tensor<2x3xf32>
  %a10 = arith.constant dense<[0, 2]> : tensor<2xi64>
  %a11 = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %a12 = arith.constant dense<0.0> : tensor<2x3xf32>
  %r13_0, %r13_1, %r13_2, %r13_3 = call @losses(%a9, %a10, %a11, %a12) : (tensor<2x3xf32>, tensor<2xi64>, tensor<3xf32>, tensor<2x3xf32>) -> (tensor<f32>, tensor<f32>, tensor<2xf32>, tensor<f32>)
  %m13_0 = bufferization.to_buffer %r13_0 : tensor<f32> to memref<f32>
  %u13_0 = memref.cast %m13_0 : memref<f32> to memref<*xf32>
  // losses#0
  // CHECK: [4.75]
  call @printMemrefF32(%u13_0) : (memref<*xf32>) -> ()
  %m13_1 = bufferization.to_buffer %r13_1 : tensor<f32> to memref<f32>
  %u13_1 = memref.cast %m13_1 : memref<f32> to memref<*xf32>
  // losses#1
  // CHECK: [1]
  call @printMemrefF32(%u13_1) : (memref<*xf32>) -> ()
  %m13_2 = bufferization.to_buffer %r13_2 : tensor<2xf32> to memref<2xf32>
  %u13_2 = memref.cast %m13_2 : memref<2xf32> to memref<*xf32>
  // losses#2
  // CHECK: [1,  6]
  call @printMemrefF32(%u13_2) : (memref<*xf32>) -> ()
  %m13_3 = bufferization.to_buffer %r13_3 : tensor<f32> to memref<f32>
  %u13_3 = memref.cast %m13_3 : memref<f32> to memref<*xf32>
  // losses#3
  // CHECK: [2.19722]
  call @printMemrefF32(%u13_3) : (memref<*xf32>) -> ()
  %a14 = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %a15 = arith.constant dense<[[0.0, 1.0], [1.0, 0.0]]> : tensor<2x2xf32>
  %r16_0, %r16_1, %r16_2 = call @einsum(%a14, %a15) : (tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<f32>, tensor<2xf32>)
  %m16_0 = bufferization.to_buffer %r16_0 : tensor<2x2xf32> to memref<2x2xf32>
  %u16_0 = memref.cast %m16_0 : memref<2x2xf32> to memref<*xf32>
  // einsum#0
  // CHECK: {{\[\[}}2,   1],
  // CHECK-NEXT: [4,   3{{\]\]}}
  call @printMemrefF32(%u16_0) : (memref<*xf32>) -> ()
  %m16_1 = bufferization.to_buffer %r16_1 : tensor<f32> to memref<f32>
  %u16_1 = memref.cast %m16_1 : memref<f32> to memref<*xf32>
  // einsum#1
  // CHECK: [5]
  call @printMemrefF32(%u16_1) : (memref<*xf32>) -> ()
  %m16_2 = bufferization.to_buffer %r16_2 : tensor<2xf32> to memref<2xf32>
  %u16_2 = memref.cast %m16_2 : memref<2xf32> to memref<*xf32>
  // einsum#2
  // CHECK: [4,  6]
  call @printMemrefF32(%u16_2) : (memref<*xf32>) -> ()
  %a17 = arith.constant dense<1.0> : tensor<8xf32>
  %r18_0, %r18_1 = call @dropout(%a17) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %m18_0 = bufferization.to_buffer %r18_0 : tensor<8xf32> to memref<8xf32>
  %u18_0 = memref.cast %m18_0 : memref<8xf32> to memref<*xf32>
  // dropout#0
  // CHECK: [0,  0,  2,  2,  0,  0,  0,  0]
  call @printMemrefF32(%u18_0) : (memref<*xf32>) -> ()
  %m18_1 = bufferization.to_buffer %r18_1 : tensor<8xf32> to memref<8xf32>
  %u18_1 = memref.cast %m18_1 : memref<8xf32> to memref<*xf32>
  // dropout#1
  // CHECK: [0,  0,  0,  0,  0,  0,  0,  0]
  call @printMemrefF32(%u18_1) : (memref<*xf32>) -> ()
  %a19 = arith.constant dense<3> : tensor<i64>
  %r20:2 = call @random_uniform(%a19) : (tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>)
  %m20_0 = bufferization.to_buffer %r20#0 : tensor<4xf32> to memref<4xf32>
  %u20_0 = memref.cast %m20_0 : memref<4xf32> to memref<*xf32>
  // random_uniform#0
  // CHECK: [0.38983,  0.0167882,  0.900761,  0.58293]
  call @printMemrefF32(%u20_0) : (memref<*xf32>) -> ()
  %m20_1 = bufferization.to_buffer %r20#1 : tensor<4xf32> to memref<4xf32>
  %u20_1 = memref.cast %m20_1 : memref<4xf32> to memref<*xf32>
  // random_uniform#1
  // CHECK: [0.847597,  0.225093,  0.510147,  0.0536127]
  call @printMemrefF32(%u20_1) : (memref<*xf32>) -> ()
  return
}
