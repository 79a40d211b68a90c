// RUN: tessera-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(tsr-cpu-early-dealloc))" | FileCheck %s

// %a's last use is the copy: it is freed before %b is even allocated.
// CHECK-LABEL: func.func @straight
// CHECK: %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: memref.copy %[[A]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: return
func.func @straight(%c: f32, %out: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  linalg.fill ins(%c : f32) outs(%a : memref<4xf32>)
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  %b = memref.alloc() : memref<8xf32>
  linalg.fill ins(%c : f32) outs(%b : memref<8xf32>)
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<8xf32>
  return
}

// -----

// A view keeps its buffer alive, and so does an address handed to a
// runtime call: the async collective's wait reads %in's address last.
// CHECK-LABEL: func.func @views_and_addresses
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<2x2xf32> to memref<2x2xf32>
// CHECK-NEXT: memref.dealloc %[[V:.*]] : memref<4xf32>
// CHECK: call @start
// CHECK: call @other
// CHECK: call @wait
// CHECK-NEXT: memref.dealloc %{{.*}} : memref<16xf32>
// CHECK-NEXT: return
func.func private @start(i64)
func.func private @other()
func.func private @wait(i64)
func.func @views_and_addresses(%c: f32, %out: memref<2x2xf32>) {
  %v = memref.alloc() : memref<4xf32>
  linalg.fill ins(%c : f32) outs(%v : memref<4xf32>)
  %e = memref.expand_shape %v [[0, 1]] output_shape [2, 2] : memref<4xf32> into memref<2x2xf32>
  memref.copy %e, %out : memref<2x2xf32> to memref<2x2xf32>
  %in = memref.alloc() : memref<16xf32>
  %p = memref.extract_aligned_pointer_as_index %in : memref<16xf32> -> index
  %i = arith.index_cast %p : index to i64
  call @start(%i) : (i64) -> ()
  call @other() : () -> ()
  call @wait(%i) : (i64) -> ()
  memref.dealloc %v : memref<4xf32>
  memref.dealloc %in : memref<16xf32>
  return
}

// -----

// A use inside a loop counts at the loop; a buffer returned, or freed in
// another block, stays as it is.
// CHECK-LABEL: func.func @regions
// CHECK: scf.for
// CHECK: }
// CHECK-NEXT: memref.dealloc %{{.*}} : memref<4xf32>
// CHECK: memref.dealloc %{{.*}} : memref<2xf32>
// CHECK-NEXT: return %{{.*}} : memref<3xf32>
func.func @regions(%c: f32) -> memref<3xf32> {
  %a = memref.alloc() : memref<4xf32>
  %r = memref.alloc() : memref<3xf32>
  %z = memref.alloc() : memref<2xf32>
  %lb = arith.constant 0 : index
  %ub = arith.constant 4 : index
  %one = arith.constant 1 : index
  scf.for %k = %lb to %ub step %one {
    memref.store %c, %a[%k] : memref<4xf32>
  }
  linalg.fill ins(%c : f32) outs(%r : memref<3xf32>)
  linalg.fill ins(%c : f32) outs(%z : memref<2xf32>)
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %z : memref<2xf32>
  return %r : memref<3xf32>
}
