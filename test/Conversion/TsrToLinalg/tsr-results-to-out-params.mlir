// RUN: tessera-opt %s --tsr-results-to-out-params | FileCheck %s

// Every result becomes an out-parameter. The update bufferization wrote
// over %w (tsr.in_place names argument 0 for result 1) needs no copy: the
// caller passes w's buffer as that out-parameter. The loss, an allocation
// of the function's own, is that out-parameter from the start: its
// allocation goes, and nothing is copied. The counter's next value, which
// bufferization wrote into a buffer of its own although tsr.in_place names
// argument 1, is copied: its out-parameter is the argument's buffer, which
// the function still reads, so the copy stays at the end.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[W:[^:]*]]: memref<4xf32>, %[[S:[^:]*]]: memref<i64>,
// CHECK-SAME: %[[LOSS:[^:]*]]: memref<f32>, %[[WOUT:[^:]*]]: memref<4xf32>, %[[SOUT:[^:]*]]: memref<i64>)
// CHECK-SAME: attributes {tsr.in_place = array<i64: -1, 0, 1>}
// CHECK-NOT: memref.alloc() : memref<f32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[LOSS]] : memref<f32>)
// CHECK: %[[N:.*]] = memref.alloc() : memref<i64>
// CHECK-NOT: memref.copy %[[W]]
// CHECK: memref.copy %[[N]], %[[SOUT]]
// CHECK-NOT: memref.copy
// CHECK: return
// CHECK-NOT: memref.copy
func.func @step(%w: memref<4xf32>, %s: memref<i64>)
    -> (memref<f32>, memref<4xf32>, memref<i64>)
    attributes {tsr.in_place = array<i64: -1, 0, 1>} {
  %loss = memref.alloc() : memref<f32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%loss : memref<f32>)
  %next = memref.alloc() : memref<i64>
  return %loss, %w, %next : memref<f32>, memref<4xf32>, memref<i64>
}

// One allocation returned as two results: copied into both.
// CHECK-LABEL: func.func @twice(
// CHECK-SAME: %[[O1:[^:]*]]: memref<4xf32>, %[[O2:[^:]*]]: memref<4xf32>)
// CHECK: %[[T:.*]] = memref.alloc() : memref<4xf32>
// CHECK-DAG: memref.copy %[[T]], %[[O1]]
// CHECK-DAG: memref.copy %[[T]], %[[O2]]
func.func @twice() -> (memref<4xf32>, memref<4xf32>) {
  %t = memref.alloc() : memref<4xf32>
  return %t, %t : memref<4xf32>, memref<4xf32>
}

// A function without tsr.in_place: upstream's buffer-results-to-out-params,
// copying every result.
// CHECK-LABEL: func.func @plain(
// CHECK-SAME: %[[A:[^:]*]]: memref<4xf32>, %[[OUT:[^:]*]]: memref<4xf32>)
// CHECK: memref.copy %[[A]], %[[OUT]]
func.func @plain(%a: memref<4xf32>) -> memref<4xf32> {
  return %a : memref<4xf32>
}

// A result that is a reshaped view of an allocation returned once (a 3-D
// product computed as 2-D): the allocation becomes the out-parameter
// viewed the other way, and nothing is copied.
// CHECK-LABEL: func.func @reshaped(
// CHECK-SAME: %[[OUT:[^:]*]]: memref<2x3x4xf32>)
// CHECK-NOT: memref.alloc
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[OUT]] {{\[}}[0, 1], [2]]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[FLAT]] : memref<6x4xf32>)
// CHECK-NOT: memref.copy
// CHECK: return
func.func @reshaped() -> memref<2x3x4xf32> {
  %flat = memref.alloc() : memref<6x4xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%flat : memref<6x4xf32>)
  %r = memref.expand_shape %flat [[0, 1], [2]] output_shape [2, 3, 4]
      : memref<6x4xf32> into memref<2x3x4xf32>
  return %r : memref<2x3x4xf32>
}

// Two views of one allocation returned: both are copied.
// CHECK-LABEL: func.func @two_views(
// CHECK-SAME: %[[O1:[^:]*]]: memref<2x3x4xf32>, %[[O2:[^:]*]]: memref<6x4xf32>)
// CHECK: %[[T:.*]] = memref.alloc() : memref<6x4xf32>
// CHECK-DAG: memref.copy %{{.*}}, %[[O1]]
// CHECK-DAG: memref.copy %[[T]], %[[O2]]
func.func @two_views() -> (memref<2x3x4xf32>, memref<6x4xf32>) {
  %flat = memref.alloc() : memref<6x4xf32>
  %r = memref.expand_shape %flat [[0, 1], [2]] output_shape [2, 3, 4]
      : memref<6x4xf32> into memref<2x3x4xf32>
  return %r, %flat : memref<2x3x4xf32>, memref<6x4xf32>
}
