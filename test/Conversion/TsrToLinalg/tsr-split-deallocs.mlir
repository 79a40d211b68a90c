// RUN: tessera-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(tsr-split-deallocs))" | FileCheck %s

// Distinct allocations freed unconditionally, nothing retained: one
// memref.dealloc each, in the dealloc's order.
// CHECK-LABEL: func.func @straight
// CHECK: %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[B:.*]] = memref.alloc() : memref<8xf32>
// CHECK: memref.dealloc %[[B]] : memref<8xf32>
// CHECK-NEXT: memref.dealloc %[[A]] : memref<4xf32>
// CHECK-NEXT: return
// CHECK-NOT: bufferization.dealloc
func.func @straight(%c: f32) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<8xf32>
  linalg.fill ins(%c : f32) outs(%a : memref<4xf32>)
  linalg.fill ins(%c : f32) outs(%b : memref<8xf32>)
  bufferization.dealloc (%b, %a : memref<8xf32>, memref<4xf32>) if (%true, %true)
  return
}

// -----

// A condition that is not constant true, a retained value, a buffer that is
// not an allocation (a view) or one listed twice: left to
// buffer-deallocation-simplification, unchanged.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: bufferization.dealloc
// CHECK-NOT: memref.dealloc
func.func @kept(%cond: i1, %out: memref<4xf32>) -> memref<4xf32> {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<8xf32>
  %v = memref.subview %b[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  bufferization.dealloc (%a : memref<4xf32>) if (%cond)
  %r = bufferization.dealloc (%a : memref<4xf32>) if (%true) retain (%out : memref<4xf32>)
  bufferization.dealloc (%v : memref<4xf32, strided<[1]>>) if (%true)
  bufferization.dealloc (%a, %a : memref<4xf32>, memref<4xf32>) if (%true, %true)
  return %out : memref<4xf32>
}
