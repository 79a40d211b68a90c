// RUN: tessera-opt %s %tsr_exec_pipeline | %mlir_runner | FileCheck %s

// Data movement: gather (negative and clamped indices), gather/scatter elements
// (later updates win; bf16 sums in f32), pad modes with cropping, reversed and strided slices, tile,
// transpose, concat, reshape, broadcast, trilu, one-hot; hand-computed.

func.func @gather(%d: tensor<3x2xf32>, %i: tensor<2x2xi64>, %j: tensor<1xi32>) -> (tensor<2x2x2xf32>, tensor<3x1xf32>) {
  %0 = tsr.gather %d, %i {axis = 0 : i64} : (tensor<3x2xf32>, tensor<2x2xi64>) -> tensor<2x2x2xf32>
  %1 = tsr.gather %d, %j {axis = 1 : i64} : (tensor<3x2xf32>, tensor<1xi32>) -> tensor<3x1xf32>
  return %0, %1 : tensor<2x2x2xf32>, tensor<3x1xf32>
}

func.func @gather_elements(%d: tensor<2x3xf32>, %i: tensor<2x2xi64>) -> tensor<2x2xf32> {
  %0 = tsr.gather_elements %d, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

func.func @scatter(%d: tensor<3xf32>, %i: tensor<3xi64>, %u: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0 = tsr.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = #tsr.scatter_reduction<none>} : (tensor<3xf32>, tensor<3xi64>, tensor<3xf32>) -> tensor<3xf32>
  %1 = tsr.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = #tsr.scatter_reduction<add>} : (tensor<3xf32>, tensor<3xi64>, tensor<3xf32>) -> tensor<3xf32>
  %2 = tsr.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = #tsr.scatter_reduction<max>} : (tensor<3xf32>, tensor<3xi64>, tensor<3xf32>) -> tensor<3xf32>
  return %0, %1, %2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// 300 updates of 1 into a bf16 zero: summed in f32 and rounded once, 300
// (bf16 holds it); summed in bf16, the sum would stop at 256, where
// 256 + 1 rounds back to 256.
func.func @scatter_bf16(%i: tensor<300xi64>, %u: tensor<300xbf16>) -> tensor<2xf32> {
  %d = tsr.constant dense<0.0> : tensor<2xbf16>
  %0 = tsr.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = #tsr.scatter_reduction<add>} : (tensor<2xbf16>, tensor<300xi64>, tensor<300xbf16>) -> tensor<2xbf16>
  %1 = tsr.cast %0 : tensor<2xbf16> to tensor<2xf32>
  return %1 : tensor<2xf32>
}

// An embedding gradient: token ids [2, 0, 2, -1] (-1 counts from the end:
// 2) broadcast along rows of 2; the scatter reads the ids from the
// broadcast's operand.
func.func @scatter_rows(%i: tensor<4xi64>, %u: tensor<4x2xf32>) -> tensor<3x2xf32> {
  %d = tsr.constant dense<0.0> : tensor<3x2xf32>
  %r = tsr.reshape %i : tensor<4xi64> to tensor<4x1xi64>
  %b = tsr.broadcast %r : tensor<4x1xi64> to tensor<4x2xi64>
  %0 = tsr.scatter_elements %d, %b, %u {axis = 0 : i64, reduction = #tsr.scatter_reduction<add>} : (tensor<3x2xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

func.func @pad_constant(%x: tensor<2x3xf32>) -> tensor<3x5xf32> {
  %0 = tsr.pad %x {pads = array<i64: 1, 0, 0, 2>, mode = #tsr.pad_mode<constant>, value = 9.0 : f64} : (tensor<2x3xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

func.func @pad_reflect(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  %0 = tsr.pad %x {pads = array<i64: 0, 2, 0, 1>, mode = #tsr.pad_mode<reflect>} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

func.func @pad_edge(%x: tensor<2x3xf32>) -> tensor<3x4xf32> {
  %0 = tsr.pad %x {pads = array<i64: 1, 1, 0, 0>, mode = #tsr.pad_mode<edge>} : (tensor<2x3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

func.func @pad_crop(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tsr.pad %x {pads = array<i64: 0, -1, 0, 1>, mode = #tsr.pad_mode<constant>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

func.func @slice_reverse(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %0 = tsr.slice %x {starts = array<i64: 1, 2>, limits = array<i64: -1, -1>, steps = array<i64: -1, -2>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

func.func @slice_strided(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %0 = tsr.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 2, 3>, steps = array<i64: 1, 2>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

func.func @tile(%x: tensor<2x3xf32>) -> tensor<4x6xf32> {
  %0 = tsr.tile %x {repeats = array<i64: 2, 2>} : (tensor<2x3xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

func.func @transpose(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = tsr.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

func.func @concat_reshape(%x: tensor<2x3xf32>) -> (tensor<2x6xf32>, tensor<3x2xf32>, tensor<2x2x3xf32>) {
  %0 = tsr.concat %x, %x {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  %1 = tsr.reshape %x : tensor<2x3xf32> to tensor<3x2xf32>
  %2 = tsr.broadcast %x : tensor<2x3xf32> to tensor<2x2x3xf32>
  return %0, %1, %2 : tensor<2x6xf32>, tensor<3x2xf32>, tensor<2x2x3xf32>
}

func.func @trilu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tsr.trilu %x {upper = false, k = 0 : i64} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

func.func @one_hot(%x: tensor<4xi64>) -> tensor<4x3xf32> {
  %0 = tsr.one_hot %x {depth = 3 : i64, axis = -1 : i64, on_value = 5.0 : f64, off_value = -1.0 : f64} : (tensor<4xi64>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %a0 = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %a1 = arith.constant dense<[[0, -1], [7, 1]]> : tensor<2x2xi64>
  %a2 = arith.constant dense<[1]> : tensor<1xi32>
  %r3_0, %r3_1 = call @gather(%a0, %a1, %a2) : (tensor<3x2xf32>, tensor<2x2xi64>, tensor<1xi32>) -> (tensor<2x2x2xf32>, tensor<3x1xf32>)
  %m3_0 = bufferization.to_buffer %r3_0 : tensor<2x2x2xf32> to memref<2x2x2xf32>
  %u3_0 = memref.cast %m3_0 : memref<2x2x2xf32> to memref<*xf32>
  // gather#0
  // CHECK: {{\[\[}}[1,    2],
  // CHECK-NEXT: [5,    6{{\]\]}},
  // CHECK-NEXT: {{\[\[}}5,    6],
  // CHECK-NEXT: [3,    4{{\]\]}}]
  call @printMemrefF32(%u3_0) : (memref<*xf32>) -> ()
  %m3_1 = bufferization.to_buffer %r3_1 : tensor<3x1xf32> to memref<3x1xf32>
  %u3_1 = memref.cast %m3_1 : memref<3x1xf32> to memref<*xf32>
  // gather#1
  // CHECK: {{\[\[}}2],
  // CHECK-NEXT: [4],
  // CHECK-NEXT: [6{{\]\]}}
  call @printMemrefF32(%u3_1) : (memref<*xf32>) -> ()
  %a4 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %a5 = arith.constant dense<[[2, 0], [-1, 1]]> : tensor<2x2xi64>
  %r6_0 = call @gather_elements(%a4, %a5) : (tensor<2x3xf32>, tensor<2x2xi64>) -> (tensor<2x2xf32>)
  %m6_0 = bufferization.to_buffer %r6_0 : tensor<2x2xf32> to memref<2x2xf32>
  %u6_0 = memref.cast %m6_0 : memref<2x2xf32> to memref<*xf32>
  // gather_elements#0
  // CHECK: {{\[\[}}3,   1],
  // CHECK-NEXT: [6,   5{{\]\]}}
  call @printMemrefF32(%u6_0) : (memref<*xf32>) -> ()
  %a7 = arith.constant dense<[10.0, 10.0, 10.0]> : tensor<3xf32>
  %a8 = arith.constant dense<[1, 1, -1]> : tensor<3xi64>
  %a9 = arith.constant dense<[1.0, 20.0, 3.0]> : tensor<3xf32>
  %r10_0, %r10_1, %r10_2 = call @scatter(%a7, %a8, %a9) : (tensor<3xf32>, tensor<3xi64>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  %m10_0 = bufferization.to_buffer %r10_0 : tensor<3xf32> to memref<3xf32>
  %u10_0 = memref.cast %m10_0 : memref<3xf32> to memref<*xf32>
  // scatter#0
  // CHECK: [10,  20,  3]
  call @printMemrefF32(%u10_0) : (memref<*xf32>) -> ()
  %m10_1 = bufferization.to_buffer %r10_1 : tensor<3xf32> to memref<3xf32>
  %u10_1 = memref.cast %m10_1 : memref<3xf32> to memref<*xf32>
  // scatter#1
  // CHECK: [10,  31,  13]
  call @printMemrefF32(%u10_1) : (memref<*xf32>) -> ()
  %m10_2 = bufferization.to_buffer %r10_2 : tensor<3xf32> to memref<3xf32>
  %u10_2 = memref.cast %m10_2 : memref<3xf32> to memref<*xf32>
  // scatter#2
  // CHECK: [10,  20,  10]
  call @printMemrefF32(%u10_2) : (memref<*xf32>) -> ()
  %a11 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r12_0 = call @pad_constant(%a11) : (tensor<2x3xf32>) -> (tensor<3x5xf32>)
  %m12_0 = bufferization.to_buffer %r12_0 : tensor<3x5xf32> to memref<3x5xf32>
  %u12_0 = memref.cast %m12_0 : memref<3x5xf32> to memref<*xf32>
  // pad_constant#0
  // CHECK: {{\[\[}}9,   9,   9,   9,   9],
  // CHECK-NEXT: [1,   2,   3,   9,   9],
  // CHECK-NEXT: [4,   5,   6,   9,   9{{\]\]}}
  call @printMemrefF32(%u12_0) : (memref<*xf32>) -> ()
  %a13 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r14_0 = call @pad_reflect(%a13) : (tensor<2x3xf32>) -> (tensor<2x6xf32>)
  %m14_0 = bufferization.to_buffer %r14_0 : tensor<2x6xf32> to memref<2x6xf32>
  %u14_0 = memref.cast %m14_0 : memref<2x6xf32> to memref<*xf32>
  // pad_reflect#0
  // CHECK: {{\[\[}}3,   2,   1,   2,   3,   2],
  // CHECK-NEXT: [6,   5,   4,   5,   6,   5{{\]\]}}
  call @printMemrefF32(%u14_0) : (memref<*xf32>) -> ()
  %a15 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r16_0 = call @pad_edge(%a15) : (tensor<2x3xf32>) -> (tensor<3x4xf32>)
  %m16_0 = bufferization.to_buffer %r16_0 : tensor<3x4xf32> to memref<3x4xf32>
  %u16_0 = memref.cast %m16_0 : memref<3x4xf32> to memref<*xf32>
  // pad_edge#0
  // CHECK: {{\[\[}}1,   1,   2,   3],
  // CHECK-NEXT: [1,   1,   2,   3],
  // CHECK-NEXT: [4,   4,   5,   6{{\]\]}}
  call @printMemrefF32(%u16_0) : (memref<*xf32>) -> ()
  %a17 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r18_0 = call @pad_crop(%a17) : (tensor<2x3xf32>) -> (tensor<2x3xf32>)
  %m18_0 = bufferization.to_buffer %r18_0 : tensor<2x3xf32> to memref<2x3xf32>
  %u18_0 = memref.cast %m18_0 : memref<2x3xf32> to memref<*xf32>
  // pad_crop#0
  // CHECK: {{\[\[}}2,   3,   0],
  // CHECK-NEXT: [5,   6,   0{{\]\]}}
  call @printMemrefF32(%u18_0) : (memref<*xf32>) -> ()
  %a19 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r20_0 = call @slice_reverse(%a19) : (tensor<2x3xf32>) -> (tensor<2x2xf32>)
  %m20_0 = bufferization.to_buffer %r20_0 : tensor<2x2xf32> to memref<2x2xf32>
  %u20_0 = memref.cast %m20_0 : memref<2x2xf32> to memref<*xf32>
  // slice_reverse#0
  // CHECK: {{\[\[}}6,   4],
  // CHECK-NEXT: [3,   1{{\]\]}}
  call @printMemrefF32(%u20_0) : (memref<*xf32>) -> ()
  %a21 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r22_0 = call @slice_strided(%a21) : (tensor<2x3xf32>) -> (tensor<2x2xf32>)
  %m22_0 = bufferization.to_buffer %r22_0 : tensor<2x2xf32> to memref<2x2xf32>
  %u22_0 = memref.cast %m22_0 : memref<2x2xf32> to memref<*xf32>
  // slice_strided#0
  // CHECK: {{\[\[}}1,   3],
  // CHECK-NEXT: [4,   6{{\]\]}}
  call @printMemrefF32(%u22_0) : (memref<*xf32>) -> ()
  %a23 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r24_0 = call @tile(%a23) : (tensor<2x3xf32>) -> (tensor<4x6xf32>)
  %m24_0 = bufferization.to_buffer %r24_0 : tensor<4x6xf32> to memref<4x6xf32>
  %u24_0 = memref.cast %m24_0 : memref<4x6xf32> to memref<*xf32>
  // tile#0
  // CHECK: {{\[\[}}1,   2,   3,   1,   2,   3],
  // CHECK-NEXT: [4,   5,   6,   4,   5,   6],
  // CHECK-NEXT: [1,   2,   3,   1,   2,   3],
  // CHECK-NEXT: [4,   5,   6,   4,   5,   6{{\]\]}}
  call @printMemrefF32(%u24_0) : (memref<*xf32>) -> ()
  %a25 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r26_0 = call @transpose(%a25) : (tensor<2x3xf32>) -> (tensor<3x2xf32>)
  %m26_0 = bufferization.to_buffer %r26_0 : tensor<3x2xf32> to memref<3x2xf32>
  %u26_0 = memref.cast %m26_0 : memref<3x2xf32> to memref<*xf32>
  // transpose#0
  // CHECK: {{\[\[}}1,   4],
  // CHECK-NEXT: [2,   5],
  // CHECK-NEXT: [3,   6{{\]\]}}
  call @printMemrefF32(%u26_0) : (memref<*xf32>) -> ()
  %a27 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r28_0, %r28_1, %r28_2 = call @concat_reshape(%a27) : (tensor<2x3xf32>) -> (tensor<2x6xf32>, tensor<3x2xf32>, tensor<2x2x3xf32>)
  %m28_0 = bufferization.to_buffer %r28_0 : tensor<2x6xf32> to memref<2x6xf32>
  %u28_0 = memref.cast %m28_0 : memref<2x6xf32> to memref<*xf32>
  // concat_reshape#0
  // CHECK: {{\[\[}}1,   2,   3,   1,   2,   3],
  // CHECK-NEXT: [4,   5,   6,   4,   5,   6{{\]\]}}
  call @printMemrefF32(%u28_0) : (memref<*xf32>) -> ()
  %m28_1 = bufferization.to_buffer %r28_1 : tensor<3x2xf32> to memref<3x2xf32>
  %u28_1 = memref.cast %m28_1 : memref<3x2xf32> to memref<*xf32>
  // concat_reshape#1
  // CHECK: {{\[\[}}1,   2],
  // CHECK-NEXT: [3,   4],
  // CHECK-NEXT: [5,   6{{\]\]}}
  call @printMemrefF32(%u28_1) : (memref<*xf32>) -> ()
  %m28_2 = bufferization.to_buffer %r28_2 : tensor<2x2x3xf32> to memref<2x2x3xf32>
  %u28_2 = memref.cast %m28_2 : memref<2x2x3xf32> to memref<*xf32>
  // concat_reshape#2
  // CHECK: {{\[\[}}[1,    2,    3],
  // CHECK-NEXT: [4,    5,    6{{\]\]}},
  // CHECK-NEXT: {{\[\[}}1,    2,    3],
  // CHECK-NEXT: [4,    5,    6{{\]\]}}]
  call @printMemrefF32(%u28_2) : (memref<*xf32>) -> ()
  %a29 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r30_0 = call @trilu(%a29) : (tensor<2x3xf32>) -> (tensor<2x3xf32>)
  %m30_0 = bufferization.to_buffer %r30_0 : tensor<2x3xf32> to memref<2x3xf32>
  %u30_0 = memref.cast %m30_0 : memref<2x3xf32> to memref<*xf32>
  // trilu#0
  // CHECK: {{\[\[}}1,   0,   0],
  // CHECK-NEXT: [4,   5,   0{{\]\]}}
  call @printMemrefF32(%u30_0) : (memref<*xf32>) -> ()
  %a31 = arith.constant dense<[0, -1, 5, 1]> : tensor<4xi64>
  %r32_0 = call @one_hot(%a31) : (tensor<4xi64>) -> (tensor<4x3xf32>)
  %m32_0 = bufferization.to_buffer %r32_0 : tensor<4x3xf32> to memref<4x3xf32>
  %u32_0 = memref.cast %m32_0 : memref<4x3xf32> to memref<*xf32>
  // one_hot#0
  // CHECK: {{\[\[}}5,   -1,   -1],
  // CHECK-NEXT: [-1,   -1,   5],
  // CHECK-NEXT: [-1,   -1,   -1],
  // CHECK-NEXT: [-1,   5,   -1{{\]\]}}
  call @printMemrefF32(%u32_0) : (memref<*xf32>) -> ()
  %a33 = arith.constant dense<0> : tensor<300xi64>
  %a34 = arith.constant dense<1.0> : tensor<300xbf16>
  %r35_0 = call @scatter_bf16(%a33, %a34) : (tensor<300xi64>, tensor<300xbf16>) -> (tensor<2xf32>)
  %m35_0 = bufferization.to_buffer %r35_0 : tensor<2xf32> to memref<2xf32>
  %u35_0 = memref.cast %m35_0 : memref<2xf32> to memref<*xf32>
  // scatter_bf16#0
  // CHECK: [300,  0]
  call @printMemrefF32(%u35_0) : (memref<*xf32>) -> ()
  %a36 = arith.constant dense<[2, 0, 2, -1]> : tensor<4xi64>
  %a37 = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>
  %r38_0 = call @scatter_rows(%a36, %a37) : (tensor<4xi64>, tensor<4x2xf32>) -> (tensor<3x2xf32>)
  %m38_0 = bufferization.to_buffer %r38_0 : tensor<3x2xf32> to memref<3x2xf32>
  %u38_0 = memref.cast %m38_0 : memref<3x2xf32> to memref<*xf32>
  // scatter_rows#0: row 0 gets the update with id 0, row 2 (1+5+7, 2+6+8)
  // those with ids 2 and -1.
  // CHECK: {{\[\[}}3,   4],
  // CHECK-NEXT: [0,   0],
  // CHECK-NEXT: [13,   16{{\]\]}}
  call @printMemrefF32(%u38_0) : (memref<*xf32>) -> ()
  return
}
