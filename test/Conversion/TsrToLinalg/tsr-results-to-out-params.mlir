// RUN: tessera-opt %s --tsr-results-to-out-params | FileCheck %s

// Every result becomes an out-parameter. The update bufferization wrote
// over %w (tsr.in_place names argument 0 for result 1) needs no copy: the
// caller passes w's buffer as that out-parameter. The loss is copied, and
// so is the counter's next value, which bufferization wrote into a buffer
// of its own although tsr.in_place names argument 1: the copy stays at the
// end, after every read of the argument.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[W:[^:]*]]: memref<4xf32>, %[[S:[^:]*]]: memref<i64>,
// CHECK-SAME: %[[LOSS:[^:]*]]: memref<f32>, %[[WOUT:[^:]*]]: memref<4xf32>, %[[SOUT:[^:]*]]: memref<i64>)
// CHECK-SAME: attributes {tsr.in_place = array<i64: -1, 0, 1>}
// CHECK: %[[L:.*]] = memref.alloc() : memref<f32>
// CHECK: %[[N:.*]] = memref.alloc() : memref<i64>
// CHECK-NOT: memref.copy %[[W]]
// CHECK-DAG: memref.copy %[[L]], %[[LOSS]]
// CHECK-DAG: memref.copy %[[N]], %[[SOUT]]
// CHECK-NOT: memref.copy
// CHECK: return
// CHECK-NOT: memref.copy
func.func @step(%w: memref<4xf32>, %s: memref<i64>)
    -> (memref<f32>, memref<4xf32>, memref<i64>)
    attributes {tsr.in_place = array<i64: -1, 0, 1>} {
  %loss = memref.alloc() : memref<f32>
  %next = memref.alloc() : memref<i64>
  return %loss, %w, %next : memref<f32>, memref<4xf32>, memref<i64>
}

// A function without tsr.in_place: upstream's buffer-results-to-out-params,
// copying every result.
// CHECK-LABEL: func.func @plain(
// CHECK-SAME: %[[A:[^:]*]]: memref<4xf32>, %[[OUT:[^:]*]]: memref<4xf32>)
// CHECK: memref.copy %[[A]], %[[OUT]]
func.func @plain(%a: memref<4xf32>) -> memref<4xf32> {
  return %a : memref<4xf32>
}
