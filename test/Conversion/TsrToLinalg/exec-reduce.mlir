// RUN: tessera-opt %s %tsr_exec_pipeline | %mlir_runner | FileCheck %s

// Reductions (keepdims, mean, empty inputs), ArgMax/ArgMin (ties, select_last_index,
// first NaN wins), TopK (ties keep the lower index; unsorted 1-D by radix select,
// in index order, over negative, infinite and integer keys) and CumSum
// (exclusive/reverse); hand-computed.

func.func @reduce(%x: tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<3xf32>, tensor<f32>, tensor<2xf32>, tensor<2xf32>) {
  %0 = tsr.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %1 = tsr.reduce_mean %x {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<3xf32>
  %2 = tsr.reduce_max %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  %3 = tsr.reduce_prod %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  %4 = tsr.reduce_min %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0, %1, %2, %3, %4 : tensor<2x1xf32>, tensor<3xf32>, tensor<f32>, tensor<2xf32>, tensor<2xf32>
}

func.func @reduce_empty(%x: tensor<0x3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0 = tsr.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<0x3xf32>) -> tensor<3xf32>
  %1 = tsr.reduce_prod %x {axes = array<i64: 0>, keepdims = false} : (tensor<0x3xf32>) -> tensor<3xf32>
  %2 = tsr.reduce_max %x {axes = array<i64: 0>, keepdims = false} : (tensor<0x3xf32>) -> tensor<3xf32>
  return %0, %1, %2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

func.func @argmax(%x: tensor<2x3xi32>) -> (tensor<2xi64>, tensor<2x1xi64>, tensor<2xi64>) {
  %0 = tsr.argmax %x {axis = 1 : i64, keepdims = false, select_last_index = false} : (tensor<2x3xi32>) -> tensor<2xi64>
  %1 = tsr.argmax %x {axis = 1 : i64, keepdims = true, select_last_index = true} : (tensor<2x3xi32>) -> tensor<2x1xi64>
  %2 = tsr.argmin %x {axis = 1 : i64, keepdims = false, select_last_index = false} : (tensor<2x3xi32>) -> tensor<2xi64>
  return %0, %1, %2 : tensor<2xi64>, tensor<2x1xi64>, tensor<2xi64>
}

func.func @argmax_nan(%x: tensor<4xf32>) -> tensor<i64> {
  %0 = tsr.argmax %x {axis = 0 : i64, keepdims = false, select_last_index = false} : (tensor<4xf32>) -> tensor<i64>
  return %0 : tensor<i64>
}

func.func @topk(%x: tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>, tensor<2x3xf32>, tensor<2x3xi64>) {
  %v, %i = tsr.topk %x {k = 2 : i64, axis = 1 : i64, largest = true} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %w, %j = tsr.topk %x {k = 3 : i64, axis = 1 : i64, largest = false} : (tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  return %v, %i, %w, %j : tensor<2x2xf32>, tensor<2x2xi64>, tensor<2x3xf32>, tensor<2x3xi64>
}

func.func @cumsum(%x: tensor<4xf32>, %y: tensor<2x2xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>) {
  %0 = tsr.cumsum %x {axis = 0 : i64, exclusive = false, reverse = false} : tensor<4xf32>
  %1 = tsr.cumsum %x {axis = 0 : i64, exclusive = true, reverse = false} : tensor<4xf32>
  %2 = tsr.cumsum %x {axis = 0 : i64, exclusive = false, reverse = true} : tensor<4xf32>
  %3 = tsr.cumsum %x {axis = 0 : i64, exclusive = true, reverse = true} : tensor<4xf32>
  %4 = tsr.cumsum %y {axis = 0 : i64, exclusive = false, reverse = false} : tensor<2x2xf32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>
}

// Unsorted: the two largest of three tied 5s are the first two; the three
// smallest (with -inf); the four largest of floats with 1e30 and a tie at
// 3; the three largest signed integers.
func.func @topk_unsorted(%x: tensor<8xf32>, %y: tensor<6xf32>, %z: tensor<5xi32>)
    -> (tensor<2xf32>, tensor<2xi64>, tensor<3xf32>, tensor<3xi64>, tensor<4xf32>, tensor<4xi64>, tensor<3xi32>, tensor<3xi64>) {
  %a, %ai = tsr.topk %x {k = 2 : i64, axis = 0 : i64, largest = true, sorted = false} : (tensor<8xf32>) -> (tensor<2xf32>, tensor<2xi64>)
  %b, %bi = tsr.topk %x {k = 3 : i64, axis = 0 : i64, largest = false, sorted = false} : (tensor<8xf32>) -> (tensor<3xf32>, tensor<3xi64>)
  %c, %ci = tsr.topk %y {k = 4 : i64, axis = 0 : i64, largest = true, sorted = false} : (tensor<6xf32>) -> (tensor<4xf32>, tensor<4xi64>)
  %d, %di = tsr.topk %z {k = 3 : i64, axis = 0 : i64, largest = true, sorted = false} : (tensor<5xi32>) -> (tensor<3xi32>, tensor<3xi64>)
  return %a, %ai, %b, %bi, %c, %ci, %d, %di : tensor<2xf32>, tensor<2xi64>, tensor<3xf32>, tensor<3xi64>, tensor<4xf32>, tensor<4xi64>, tensor<3xi32>, tensor<3xi64>
}

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI64(memref<*xi64>)
func.func private @printMemrefI32(memref<*xi32>)

func.func @main() {
  %a0 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r1_0, %r1_1, %r1_2, %r1_3, %r1_4 = call @reduce(%a0) : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<3xf32>, tensor<f32>, tensor<2xf32>, tensor<2xf32>)
  %m1_0 = bufferization.to_buffer %r1_0 : tensor<2x1xf32> to memref<2x1xf32>
  %u1_0 = memref.cast %m1_0 : memref<2x1xf32> to memref<*xf32>
  // reduce#0
  // CHECK: {{\[\[}}6],
  // CHECK-NEXT: [15{{\]\]}}
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %m1_1 = bufferization.to_buffer %r1_1 : tensor<3xf32> to memref<3xf32>
  %u1_1 = memref.cast %m1_1 : memref<3xf32> to memref<*xf32>
  // reduce#1
  // CHECK: [2.5,  3.5,  4.5]
  call @printMemrefF32(%u1_1) : (memref<*xf32>) -> ()
  %m1_2 = bufferization.to_buffer %r1_2 : tensor<f32> to memref<f32>
  %u1_2 = memref.cast %m1_2 : memref<f32> to memref<*xf32>
  // reduce#2
  // CHECK: [6]
  call @printMemrefF32(%u1_2) : (memref<*xf32>) -> ()
  %m1_3 = bufferization.to_buffer %r1_3 : tensor<2xf32> to memref<2xf32>
  %u1_3 = memref.cast %m1_3 : memref<2xf32> to memref<*xf32>
  // reduce#3
  // CHECK: [6,  120]
  call @printMemrefF32(%u1_3) : (memref<*xf32>) -> ()
  %m1_4 = bufferization.to_buffer %r1_4 : tensor<2xf32> to memref<2xf32>
  %u1_4 = memref.cast %m1_4 : memref<2xf32> to memref<*xf32>
  // reduce#4
  // CHECK: [1,  4]
  call @printMemrefF32(%u1_4) : (memref<*xf32>) -> ()
  %a2 = arith.constant dense<>  : tensor<0x3xf32>
  %r3_0, %r3_1, %r3_2 = call @reduce_empty(%a2) : (tensor<0x3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  %m3_0 = bufferization.to_buffer %r3_0 : tensor<3xf32> to memref<3xf32>
  %u3_0 = memref.cast %m3_0 : memref<3xf32> to memref<*xf32>
  // reduce_empty#0
  // CHECK: [0,  0,  0]
  call @printMemrefF32(%u3_0) : (memref<*xf32>) -> ()
  %m3_1 = bufferization.to_buffer %r3_1 : tensor<3xf32> to memref<3xf32>
  %u3_1 = memref.cast %m3_1 : memref<3xf32> to memref<*xf32>
  // reduce_empty#1
  // CHECK: [1,  1,  1]
  call @printMemrefF32(%u3_1) : (memref<*xf32>) -> ()
  %m3_2 = bufferization.to_buffer %r3_2 : tensor<3xf32> to memref<3xf32>
  %u3_2 = memref.cast %m3_2 : memref<3xf32> to memref<*xf32>
  // reduce_empty#2
  // CHECK: [-inf,  -inf,  -inf]
  call @printMemrefF32(%u3_2) : (memref<*xf32>) -> ()
  %a4 = arith.constant dense<[[1, 3, 3], [5, 2, 5]]> : tensor<2x3xi32>
  %r5_0, %r5_1, %r5_2 = call @argmax(%a4) : (tensor<2x3xi32>) -> (tensor<2xi64>, tensor<2x1xi64>, tensor<2xi64>)
  %m5_0 = bufferization.to_buffer %r5_0 : tensor<2xi64> to memref<2xi64>
  %u5_0 = memref.cast %m5_0 : memref<2xi64> to memref<*xi64>
  // argmax#0
  // CHECK: [1,  0]
  call @printMemrefI64(%u5_0) : (memref<*xi64>) -> ()
  %m5_1 = bufferization.to_buffer %r5_1 : tensor<2x1xi64> to memref<2x1xi64>
  %u5_1 = memref.cast %m5_1 : memref<2x1xi64> to memref<*xi64>
  // argmax#1
  // CHECK: {{\[\[}}2],
  // CHECK-NEXT: [2{{\]\]}}
  call @printMemrefI64(%u5_1) : (memref<*xi64>) -> ()
  %m5_2 = bufferization.to_buffer %r5_2 : tensor<2xi64> to memref<2xi64>
  %u5_2 = memref.cast %m5_2 : memref<2xi64> to memref<*xi64>
  // argmax#2
  // CHECK: [0,  1]
  call @printMemrefI64(%u5_2) : (memref<*xi64>) -> ()
  %a6 = arith.constant dense<[1.0, 0x7FC00000, 7.0, 0x7FC00000]> : tensor<4xf32>
  %r7_0 = call @argmax_nan(%a6) : (tensor<4xf32>) -> (tensor<i64>)
  %m7_0 = bufferization.to_buffer %r7_0 : tensor<i64> to memref<i64>
  %u7_0 = memref.cast %m7_0 : memref<i64> to memref<*xi64>
  // argmax_nan#0
  // CHECK: [1]
  call @printMemrefI64(%u7_0) : (memref<*xi64>) -> ()
  %a8 = arith.constant dense<[[3.0, 1.0, 4.0, 1.0], [5.0, 9.0, 2.0, 6.0]]> : tensor<2x4xf32>
  %r9_0, %r9_1, %r9_2, %r9_3 = call @topk(%a8) : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>, tensor<2x3xf32>, tensor<2x3xi64>)
  %m9_0 = bufferization.to_buffer %r9_0 : tensor<2x2xf32> to memref<2x2xf32>
  %u9_0 = memref.cast %m9_0 : memref<2x2xf32> to memref<*xf32>
  // topk#0
  // CHECK: {{\[\[}}4,   3],
  // CHECK-NEXT: [9,   6{{\]\]}}
  call @printMemrefF32(%u9_0) : (memref<*xf32>) -> ()
  %m9_1 = bufferization.to_buffer %r9_1 : tensor<2x2xi64> to memref<2x2xi64>
  %u9_1 = memref.cast %m9_1 : memref<2x2xi64> to memref<*xi64>
  // topk#1
  // CHECK: {{\[\[}}2,   0],
  // CHECK-NEXT: [1,   3{{\]\]}}
  call @printMemrefI64(%u9_1) : (memref<*xi64>) -> ()
  %m9_2 = bufferization.to_buffer %r9_2 : tensor<2x3xf32> to memref<2x3xf32>
  %u9_2 = memref.cast %m9_2 : memref<2x3xf32> to memref<*xf32>
  // topk#2
  // CHECK: {{\[\[}}1,   1,   3],
  // CHECK-NEXT: [2,   5,   6{{\]\]}}
  call @printMemrefF32(%u9_2) : (memref<*xf32>) -> ()
  %m9_3 = bufferization.to_buffer %r9_3 : tensor<2x3xi64> to memref<2x3xi64>
  %u9_3 = memref.cast %m9_3 : memref<2x3xi64> to memref<*xi64>
  // topk#3
  // CHECK: {{\[\[}}1,   3,   0],
  // CHECK-NEXT: [2,   0,   3{{\]\]}}
  call @printMemrefI64(%u9_3) : (memref<*xi64>) -> ()
  %a10 = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %a11 = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %r12_0, %r12_1, %r12_2, %r12_3, %r12_4 = call @cumsum(%a10, %a11) : (tensor<4xf32>, tensor<2x2xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>)
  %m12_0 = bufferization.to_buffer %r12_0 : tensor<4xf32> to memref<4xf32>
  %u12_0 = memref.cast %m12_0 : memref<4xf32> to memref<*xf32>
  // cumsum#0
  // CHECK: [1,  3,  6,  10]
  call @printMemrefF32(%u12_0) : (memref<*xf32>) -> ()
  %m12_1 = bufferization.to_buffer %r12_1 : tensor<4xf32> to memref<4xf32>
  %u12_1 = memref.cast %m12_1 : memref<4xf32> to memref<*xf32>
  // cumsum#1
  // CHECK: [0,  1,  3,  6]
  call @printMemrefF32(%u12_1) : (memref<*xf32>) -> ()
  %m12_2 = bufferization.to_buffer %r12_2 : tensor<4xf32> to memref<4xf32>
  %u12_2 = memref.cast %m12_2 : memref<4xf32> to memref<*xf32>
  // cumsum#2
  // CHECK: [10,  9,  7,  4]
  call @printMemrefF32(%u12_2) : (memref<*xf32>) -> ()
  %m12_3 = bufferization.to_buffer %r12_3 : tensor<4xf32> to memref<4xf32>
  %u12_3 = memref.cast %m12_3 : memref<4xf32> to memref<*xf32>
  // cumsum#3
  // CHECK: [9,  7,  4,  0]
  call @printMemrefF32(%u12_3) : (memref<*xf32>) -> ()
  %m12_4 = bufferization.to_buffer %r12_4 : tensor<2x2xf32> to memref<2x2xf32>
  %u12_4 = memref.cast %m12_4 : memref<2x2xf32> to memref<*xf32>
  // cumsum#4
  // CHECK: {{\[\[}}1,   2],
  // CHECK-NEXT: [4,   6{{\]\]}}
  call @printMemrefF32(%u12_4) : (memref<*xf32>) -> ()
  %a13 = arith.constant dense<[-1.0, 5.0, 3.0, 5.0, -7.0, 0.0, 5.0, 2.0]> : tensor<8xf32>
  %a14 = arith.constant dense<[0.5, -0.25, 1.0e30, 0xFF800000, 3.0, 3.0]> : tensor<6xf32>
  %a15 = arith.constant dense<[-3, 2, -8, 7, 2]> : tensor<5xi32>
  %r16:8 = call @topk_unsorted(%a13, %a14, %a15) : (tensor<8xf32>, tensor<6xf32>, tensor<5xi32>) -> (tensor<2xf32>, tensor<2xi64>, tensor<3xf32>, tensor<3xi64>, tensor<4xf32>, tensor<4xi64>, tensor<3xi32>, tensor<3xi64>)
  %m16_0 = bufferization.to_buffer %r16#0 : tensor<2xf32> to memref<2xf32>
  %u16_0 = memref.cast %m16_0 : memref<2xf32> to memref<*xf32>
  // topk_unsorted#0
  // CHECK: [5,  5]
  call @printMemrefF32(%u16_0) : (memref<*xf32>) -> ()
  %m16_1 = bufferization.to_buffer %r16#1 : tensor<2xi64> to memref<2xi64>
  %u16_1 = memref.cast %m16_1 : memref<2xi64> to memref<*xi64>
  // topk_unsorted#1
  // CHECK: [1,  3]
  call @printMemrefI64(%u16_1) : (memref<*xi64>) -> ()
  %m16_2 = bufferization.to_buffer %r16#2 : tensor<3xf32> to memref<3xf32>
  %u16_2 = memref.cast %m16_2 : memref<3xf32> to memref<*xf32>
  // topk_unsorted#2
  // CHECK: [-1,  -7,  0]
  call @printMemrefF32(%u16_2) : (memref<*xf32>) -> ()
  %m16_3 = bufferization.to_buffer %r16#3 : tensor<3xi64> to memref<3xi64>
  %u16_3 = memref.cast %m16_3 : memref<3xi64> to memref<*xi64>
  // topk_unsorted#3
  // CHECK: [0,  4,  5]
  call @printMemrefI64(%u16_3) : (memref<*xi64>) -> ()
  %m16_4 = bufferization.to_buffer %r16#4 : tensor<4xf32> to memref<4xf32>
  %u16_4 = memref.cast %m16_4 : memref<4xf32> to memref<*xf32>
  // topk_unsorted#4
  // CHECK: [0.5,  1e+30,  3,  3]
  call @printMemrefF32(%u16_4) : (memref<*xf32>) -> ()
  %m16_5 = bufferization.to_buffer %r16#5 : tensor<4xi64> to memref<4xi64>
  %u16_5 = memref.cast %m16_5 : memref<4xi64> to memref<*xi64>
  // topk_unsorted#5
  // CHECK: [0,  2,  4,  5]
  call @printMemrefI64(%u16_5) : (memref<*xi64>) -> ()
  %m16_6 = bufferization.to_buffer %r16#6 : tensor<3xi32> to memref<3xi32>
  %u16_6 = memref.cast %m16_6 : memref<3xi32> to memref<*xi32>
  // topk_unsorted#6
  // CHECK: [2,  7,  2]
  call @printMemrefI32(%u16_6) : (memref<*xi32>) -> ()
  %m16_7 = bufferization.to_buffer %r16#7 : tensor<3xi64> to memref<3xi64>
  %u16_7 = memref.cast %m16_7 : memref<3xi64> to memref<*xi64>
  // topk_unsorted#7
  // CHECK: [1,  3,  4]
  call @printMemrefI64(%u16_7) : (memref<*xi64>) -> ()
  return
}
