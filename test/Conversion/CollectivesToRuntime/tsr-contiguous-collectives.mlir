// RUN: tessera-opt %s -split-input-file --tsr-contiguous-collectives | FileCheck %s

// The runtime never sees a strided view: an operand is copied into a
// contiguous temporary first (freed after the op), a destination receives
// into one that is copied back after the op.
// CHECK-LABEL: func.func @strided(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<4x2xf32, strided<[4, 1]>>, %[[Y:[a-z0-9]+]]: memref<8x2xf32>, %[[Z:[a-z0-9]+]]: memref<4x2xf32, strided<[4, 1], offset: 2>>
func.func @strided(%x: memref<4x2xf32, strided<[4, 1]>>, %y: memref<8x2xf32>,
                   %z: memref<4x2xf32, strided<[4, 1], offset: 2>>) {
  // CHECK: %[[T:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x2xf32>
  // CHECK-NEXT: memref.copy %[[X]], %[[T]] : memref<4x2xf32, strided<[4, 1]>> to memref<4x2xf32>
  // CHECK-NEXT: tsrt.all_gather ins(%[[T]] : memref<4x2xf32>) outs(%[[Y]] : memref<8x2xf32>)
  // CHECK-NEXT: memref.dealloc %[[T]] : memref<4x2xf32>
  tsrt.all_gather ins(%x : memref<4x2xf32, strided<[4, 1]>>) outs(%y : memref<8x2xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64}
  // CHECK-NEXT: %[[R:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x2xf32>
  // CHECK-NEXT: tsrt.reduce_scatter ins(%[[Y]] : memref<8x2xf32>) outs(%[[R]] : memref<4x2xf32>)
  // CHECK-NEXT: memref.copy %[[R]], %[[Z]] : memref<4x2xf32> to memref<4x2xf32, strided<[4, 1], offset: 2>>
  // CHECK-NEXT: memref.dealloc %[[R]] : memref<4x2xf32>
  tsrt.reduce_scatter ins(%y : memref<8x2xf32>) outs(%z : memref<4x2xf32, strided<[4, 1], offset: 2>>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  // Contiguous buffers, a view at an offset among them, stay as they are.
  // CHECK-NEXT: memref.subview
  // CHECK-NEXT: %[[V:.*]] = memref.collapse_shape
  // CHECK-NEXT: tsrt.all_reduce ins(%[[V]] : memref<6xf32, strided<[1], offset: 2>>) outs(%[[V]] : memref<6xf32, strided<[1], offset: 2>>)
  // CHECK-NEXT: return
  %v = memref.subview %y[1, 0] [3, 2] [1, 1] : memref<8x2xf32> to memref<3x2xf32, strided<[2, 1], offset: 2>>
  %w = memref.collapse_shape %v [[0, 1]] : memref<3x2xf32, strided<[2, 1], offset: 2>> into memref<6xf32, strided<[1], offset: 2>>
  tsrt.all_reduce ins(%w : memref<6xf32, strided<[1], offset: 2>>) outs(%w : memref<6xf32, strided<[1], offset: 2>>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  return
}

// -----

// An in-place collective on a strided view gets one temporary, copied in
// before and back after.
// CHECK-LABEL: func.func @in_place(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<4x2xf32, strided<[4, 1]>>
func.func @in_place(%x: memref<4x2xf32, strided<[4, 1]>>) {
  // CHECK-NEXT: %[[T:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x2xf32>
  // CHECK-NEXT: memref.copy %[[X]], %[[T]]
  // CHECK-NEXT: tsrt.all_reduce ins(%[[T]] : memref<4x2xf32>) outs(%[[T]] : memref<4x2xf32>)
  // CHECK-NEXT: memref.copy %[[T]], %[[X]]
  // CHECK-NEXT: memref.dealloc %[[T]] : memref<4x2xf32>
  // CHECK-NEXT: return
  tsrt.all_reduce ins(%x : memref<4x2xf32, strided<[4, 1]>>) outs(%x : memref<4x2xf32, strided<[4, 1]>>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  return
}

// -----

// An async collective with a strided destination receives into a
// temporary until its wait, which waits on the temporary and then copies
// it back.
// CHECK-LABEL: func.func @async_strided(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<8x2xf32>, %[[Z:[a-z0-9]+]]: memref<4x2xf32, strided<[4, 1]>>
func.func @async_strided(%x: memref<8x2xf32>, %z: memref<4x2xf32, strided<[4, 1]>>) {
  // CHECK-NEXT: %[[R:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x2xf32>
  // CHECK-NEXT: tsrt.reduce_scatter async ins(%[[X]] : memref<8x2xf32>) outs(%[[R]] : memref<4x2xf32>)
  // CHECK-NOT: memref.copy
  // CHECK: linalg.fill
  // CHECK-NEXT: tsrt.wait outs(%[[R]] : memref<4x2xf32>)
  // CHECK-NEXT: memref.copy %[[R]], %[[Z]] : memref<4x2xf32> to memref<4x2xf32, strided<[4, 1]>>
  // CHECK-NEXT: memref.dealloc %[[R]] : memref<4x2xf32>
  tsrt.reduce_scatter async ins(%x : memref<8x2xf32>) outs(%z : memref<4x2xf32, strided<[4, 1]>>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  %c = arith.constant 1.0 : f32
  linalg.fill ins(%c : f32) outs(%x : memref<8x2xf32>)
  tsrt.wait outs(%z : memref<4x2xf32, strided<[4, 1]>>)
  return
}
