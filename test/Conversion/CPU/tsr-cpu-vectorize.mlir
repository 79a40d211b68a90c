// RUN: tessera-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(tsr-cpu-vectorize))' | FileCheck %s
// RUN: tessera-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(tsr-cpu-vectorize{vector-size=0}))' | FileCheck %s --check-prefix=OFF

// A row sum (ReduceSum over the last axis, layer norm and softmax
// statistics): one row per vector, reduced horizontally.
// CHECK-LABEL: func @reduce_sum_rows
// CHECK-SAME: (%[[X:.*]]: memref<8x64xf32>, %[[Y:.*]]: memref<8xf32>)
// CHECK: scf.for %[[I:.*]] =
// CHECK:   %[[ROW:.*]] = memref.subview %[[X]][%[[I]], 0] [1, 64] [1, 1]
// CHECK:   %[[ACC:.*]] = memref.subview %[[Y]][%[[I]]] [1] [1]
// CHECK:   %[[V:.*]] = vector.transfer_read %[[ROW]]{{.*}} vector<64xf32>
// CHECK:   %[[A:.*]] = vector.transfer_read %[[ACC]]{{.*}} vector<1xf32>
// CHECK:   %[[A0:.*]] = vector.extract %[[A]][0]
// CHECK:   %[[S:.*]] = vector.reduction <add>, %[[V]], %[[A0]] : vector<64xf32> into f32
// CHECK:   %[[B:.*]] = vector.broadcast %[[S]] : f32 to vector<1xf32>
// CHECK:   vector.transfer_write %[[B]], %[[ACC]]
// CHECK-NOT: linalg.generic
// OFF-LABEL: func @reduce_sum_rows
// OFF-NOT: vector.
// OFF: linalg.generic
func.func @reduce_sum_rows(%x: memref<8x64xf32>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// An elementwise generic with a broadcast operand: 64-lane tiles.
// CHECK-LABEL: func @bias_relu
// CHECK-SAME: (%[[X:.*]]: memref<4x128xf32>, %[[B:.*]]: memref<128xf32>, %[[Y:.*]]: memref<4x128xf32>)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<64xf32>
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: scf.for %[[I:.*]] =
// CHECK:   scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %[[C64]]
// CHECK-DAG: %[[XT:.*]] = memref.subview %[[X]][%[[I]], %[[J]]] [1, 64] [1, 1]
// CHECK-DAG: %[[BT:.*]] = memref.subview %[[B]][%[[J]]] [64] [1]
// CHECK-DAG: %[[YT:.*]] = memref.subview %[[Y]][%[[I]], %[[J]]] [1, 64] [1, 1]
// CHECK:     %[[XV:.*]] = vector.transfer_read %[[XT]]{{.*}} vector<64xf32>
// CHECK:     %[[BV:.*]] = vector.transfer_read %[[BT]]{{.*}} vector<64xf32>
// CHECK:     %[[SUM:.*]] = arith.addf %[[XV]], %[[BV]] : vector<64xf32>
// CHECK:     %[[RELU:.*]] = arith.maximumf %[[SUM]], %[[ZERO]] : vector<64xf32>
// CHECK:     vector.transfer_write %[[RELU]], %[[YT]]
func.func @bias_relu(%x: memref<4x128xf32>, %b: memref<128xf32>, %y: memref<4x128xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d1)>,
                                   affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<4x128xf32>, memref<128xf32>) outs(%y : memref<4x128xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %0 = arith.addf %in, %bias : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// A contraction that elementwise fusion made a generic: the output row is
// the vector, the reduction loop is innermost and carries the accumulator in
// a register (read before the loop, written after it).
// CHECK-LABEL: func @contraction
// CHECK-SAME: (%[[A:.*]]: memref<4x32xf32>, %[[W:.*]]: memref<32x16xf32>, %[[C:.*]]: memref<4x16xf32>)
// CHECK: scf.for %[[I:.*]] =
// CHECK:   %[[CT:.*]] = memref.subview %[[C]][%[[I]], 0] [1, 16] [1, 1]
// CHECK:   %[[INIT:.*]] = vector.transfer_read %[[CT]]{{.*}} vector<16xf32>
// CHECK:   %[[INIT2:.*]] = vector.broadcast %[[INIT]] : vector<16xf32> to vector<1x16xf32>
// CHECK:   %[[SUM:.*]] = scf.for %[[K:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %[[INIT2]]) -> (vector<1x16xf32>)
// CHECK-DAG: %[[AT:.*]] = memref.subview %[[A]][%[[I]], %[[K]]] [1, 1] [1, 1]
// CHECK-DAG: %[[WT:.*]] = memref.subview %[[W]][%[[K]], 0] [1, 16] [1, 1]
// CHECK:     %[[AV:.*]] = vector.transfer_read %[[AT]]{{.*}} vector<1xf32>
// CHECK:     %[[WV:.*]] = vector.transfer_read %[[WT]]{{.*}} vector<16xf32>
// CHECK:     %[[AB:.*]] = vector.broadcast %[[AV]] : vector<1xf32> to vector<16xf32>
// CHECK:     %[[P:.*]] = arith.mulf %[[AB]], %[[WV]] : vector<16xf32>
// CHECK:     %[[ACC1:.*]] = vector.extract %[[ACC]][0]
// CHECK:     %[[NEXT:.*]] = arith.addf %[[ACC1]], %[[P]] : vector<16xf32>
// CHECK:     %[[NEXT2:.*]] = vector.broadcast %[[NEXT]] : vector<16xf32> to vector<1x16xf32>
// CHECK:     scf.yield %[[NEXT2]]
// CHECK:   %[[OUT:.*]] = vector.extract %[[SUM]][0]
// CHECK:   vector.transfer_write %[[OUT]], %[[CT]]
func.func @contraction(%a: memref<4x32xf32>, %w: memref<32x16xf32>, %c: memref<4x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                   affine_map<(d0, d1, d2) -> (d2, d1)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : memref<4x32xf32>, memref<32x16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %0 = arith.mulf %x, %y : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// Max pooling (2x2, stride 2) as tsr-to-linalg builds it: the window loops
// step by one around the vector, and the strided window access becomes a
// strided view.
// CHECK-LABEL: func @max_pool
// CHECK-SAME: (%[[X:.*]]: memref<1x4x8x8xf32>, %{{.*}}: memref<2x2xi1>, %[[Y:.*]]: memref<1x4x4x4xf32>)
// CHECK: %[[INIT:.*]] = vector.transfer_read %[[Y]]{{.*}} vector<4x4x4xf32>
// CHECK: scf.for %[[KH:.*]] = {{.*}} iter_args
// CHECK:   scf.for %[[KW:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}})
// CHECK:     %[[WIN:.*]] = memref.subview %[[X]][0, 0, %[[KH]], %[[KW]]] [1, 4, 7, 7] [1, 1, 1, 1]
// CHECK:     %[[STRIDED:.*]] = memref.subview %[[WIN]][0, 0, 0, 0] [1, 4, 4, 4] [1, 1, 2, 2] {{.*}} to memref<1x4x4x4xf32, strided<[256, 64, 16, 2], offset: ?>>
// CHECK:     %[[V:.*]] = vector.transfer_read %[[STRIDED]]{{.*}} vector<4x4x4xf32>
// CHECK:     %[[ACC1:.*]] = vector.extract %[[ACC]][0]
// CHECK:     arith.maximumf %[[ACC1]], %[[V]] : vector<4x4x4xf32>
// CHECK: vector.transfer_write %{{.*}}, %[[Y]]
func.func @max_pool(%x: memref<1x4x8x8xf32>, %window: memref<2x2xi1>, %y: memref<1x4x4x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>,
                                   affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>,
                                   affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %window : memref<1x4x8x8xf32>, memref<2x2xi1>) outs(%y : memref<1x4x4x4xf32>) {
  ^bb0(%in: f32, %w: i1, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Left for the loop lowering: a gather (memref.load in the body) and a
// dynamic shape.
// CHECK-LABEL: func @left_alone
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK:   memref.load
// CHECK: linalg.generic
// CHECK-SAME: memref<?x8xf32>
// CHECK-NOT: vector.
func.func @left_alone(%table: memref<16x8xf32>, %ids: memref<4xi64>, %y: memref<4x8xf32>,
                      %d: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>,
                                   affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%ids : memref<4xi64>) outs(%y : memref<4x8xf32>) {
  ^bb0(%id: i64, %out: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 1 : index
    %0 = memref.load %table[%i, %j] : memref<16x8xf32>
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%d : memref<?x8xf32>) outs(%d : memref<?x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A transpose: an 8x8 square of the input's and the output's innermost
// loops, read by rows, transposed in registers, written by rows (the
// ordinary tile would read the input one element per row).
// CHECK-LABEL: func @transpose_by_squares
// CHECK-SAME: (%[[X:.*]]: memref<32x16xf32>, %[[Y:.*]]: memref<16x32xf32>)
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %[[C8:.*]] {
// CHECK:   scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %[[C8]] {
// CHECK:     %[[IN:.*]] = memref.subview %[[X]][%[[J]], %[[I]]] [8, 8] [1, 1]
// CHECK:     %[[OUT:.*]] = memref.subview %[[Y]][%[[I]], %[[J]]] [8, 8] [1, 1]
// CHECK:     %[[V:.*]] = vector.transfer_read %[[IN]]{{.*}} : {{.*}}, vector<8x8xf32>
// CHECK:     %[[T:.*]] = vector.transpose %[[V]], [1, 0] : vector<8x8xf32> to vector<8x8xf32>
// CHECK:     vector.transfer_write %[[T]], %[[OUT]]
// CHECK-NOT: linalg.transpose
func.func @transpose_by_squares(%x: memref<32x16xf32>, %y: memref<16x32xf32>) {
  linalg.transpose ins(%x : memref<32x16xf32>) outs(%y : memref<16x32xf32>) permutation = [1, 0]
  return
}

// -----

// A range the square does not divide (a vocabulary): the first 16 columns
// go by squares, the last one by the ordinary tile.
// CHECK-LABEL: func @transpose_splits_a_remainder
// CHECK-SAME: (%[[X:.*]]: memref<8x17xf32>, %[[Y:.*]]: memref<17x8xf32>)
// CHECK: %[[MAIN:.*]] = memref.subview %[[X]][0, 0] [8, 16] [1, 1]
// CHECK: vector.transpose %{{.*}}, [1, 0] : vector<8x8xf32> to vector<8x8xf32>
// CHECK: %[[REST:.*]] = memref.subview %[[X]][0, 16] [8, 1] [1, 1]
// CHECK: vector.transfer_read %{{.*}} vector<8x1xf32>
// CHECK-NOT: linalg.transpose
func.func @transpose_splits_a_remainder(%x: memref<8x17xf32>, %y: memref<17x8xf32>) {
  linalg.transpose ins(%x : memref<8x17xf32>) outs(%y : memref<17x8xf32>) permutation = [1, 0]
  return
}
