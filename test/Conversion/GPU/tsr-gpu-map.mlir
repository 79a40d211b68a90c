// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-map))" --split-input-file | FileCheck %s

// An elementwise op: one thread per element of its 40x50 iteration space,
// 256 threads to a block, 8 blocks, a guard for the last one. The copy to
// the output is a kernel too.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[LINEAR:.*]] = affine_map<(d0, d1) -> (d0 * 256 + d1)>
// CHECK-LABEL: func.func @elementwise
// CHECK: %[[TMP:.*]] = memref.alloc() : memref<40x50xf32>
// CHECK: scf.forall (%[[B:.*]]) in (8) {
// CHECK-NEXT: scf.forall (%[[T:.*]]) in (256) {
// CHECK-NEXT: %[[I:.*]] = affine.apply #[[LINEAR]](%[[B]], %[[T]])
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[I]], %c2000
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK-NEXT: affine.delinearize_index %[[I]] into (40, 50)
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[TMP]]
// CHECK: } {mapping = [#gpu.thread<x>]}
// CHECK-NEXT: } {mapping = [#gpu.block<x>]}
// CHECK: scf.forall (%{{.*}}) in (8) {
// CHECK: memref.store %{{.*}}, %arg1
// CHECK: } {mapping = [#gpu.block<x>]}
// CHECK-NEXT: memref.dealloc %[[TMP]] : memref<40x50xf32>
func.func @elementwise(%x: memref<40x50xf32>, %y: memref<40x50xf32>) {
  %tmp = memref.alloc() : memref<40x50xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<40x50xf32>) outs(%tmp : memref<40x50xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  memref.copy %tmp, %y : memref<40x50xf32> to memref<40x50xf32>
  memref.dealloc %tmp : memref<40x50xf32>
  return
}

// -----

// A row reduction: one thread per row (40 threads, one block), the
// reduction a serial loop in the thread; a full reduction to a scalar has no
// parallel dimension and runs on one thread of one block.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @reductions
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.forall (%{{.*}}) in (40) {
// CHECK: memref.store %cst
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.forall (%{{.*}}) in (40) {
// CHECK: scf.if
// CHECK-NEXT: scf.for %{{.*}} = %{{.*}} to %c50
// CHECK: arith.addf
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.for %{{.*}} = %{{.*}} to %c40
// CHECK: memref.store %{{.*}}, %arg2[] : memref<f32>
func.func @reductions(%x: memref<40x50xf32>, %s: memref<40xf32>, %t: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<40xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<40x50xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.reduce ins(%s : memref<40xf32>) outs(%t : memref<f32>) dimensions = [0]
    (%a: f32, %o: f32) {
      %r = arith.addf %a, %o : f32
      linalg.yield %r : f32
    }
  return
}

// -----

// A column reduction (a bias gradient: the sum over leading batch rows)
// has its parallel dimension moved first: one thread per column (64
// threads), the serial loop over the 512 rows in the thread. A reduction
// before the parallel dimension would put the whole nest on one thread.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @column_reduction
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.forall (%[[T:.*]]) in (64) {
// CHECK-NOT: scf.forall
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %c512
// CHECK: memref.load %arg0[%[[R]], %{{.*}}] : memref<512x64xf32>
// CHECK: arith.addf
// CHECK: } {mapping = [#gpu.thread<x>]}
func.func @column_reduction(%dy: memref<512x64xf32>, %db: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%dy : memref<512x64xf32>) outs(%db : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Loops that tsr-to-linalg emits directly (a scatter with accumulation)
// touch buffers outside any linalg op: consecutive ones share one kernel of
// one thread.
// CHECK-LABEL: func.func @host_loops
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.for
// CHECK: scf.for
// CHECK: } {mapping = [#gpu.thread<x>]}
// CHECK-NEXT: } {mapping = [#gpu.block<x>]}
// CHECK-NEXT: return
func.func @host_loops(%idx: memref<4xi64>, %src: memref<4xf32>, %dst: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %src[%i] : memref<4xf32>
    memref.store %v, %dst[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %j64 = memref.load %idx[%i] : memref<4xi64>
    %j = arith.index_cast %j64 : i64 to index
    %v = memref.load %src[%i] : memref<4xf32>
    %o = memref.load %dst[%j] : memref<8xf32>
    %s = arith.addf %v, %o : f32
    memref.store %s, %dst[%j] : memref<8xf32>
  }
  return
}

// -----

// A scatter loop of tsr-to-linalg (tsr.scatter_shape: axis 0 of 6x8
// updates): one thread per position outside the axis (8), each running the
// 6 updates along the axis in order at the loop's row-major index.
// CHECK-LABEL: func.func @scatter
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.forall (%{{.*}}) in (8) {
// CHECK: scf.for %[[A:.*]] = %c0 to %c6 step %c1 {
// CHECK: %[[ROW:.*]] = arith.muli %[[A]], %c8
// CHECK: %[[LINEAR:.*]] = arith.addi %{{.*}}, %[[ROW]]
// CHECK: arith.remui %[[LINEAR]], %c8
// CHECK: memref.store
// CHECK: } {mapping = [#gpu.thread<x>]}
func.func @scatter(%idx: memref<6x8xi64>, %upd: memref<6x8xf32>, %dst: memref<10x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c48 = arith.constant 48 : index
  scf.for %i = %c0 to %c48 step %c1 {
    %col = arith.remui %i, %c8 : index
    %rest = arith.divui %i, %c8 : index
    %row = arith.remui %rest, %c6 : index
    %u = memref.load %upd[%row, %col] : memref<6x8xf32>
    %t = memref.load %idx[%row, %col] : memref<6x8xi64>
    %at = arith.index_cast %t : i64 to index
    %old = memref.load %dst[%at, %col] : memref<10x8xf32>
    %new = arith.addf %old, %u : f32
    memref.store %new, %dst[%at, %col] : memref<10x8xf32>
  } {tsr.scatter_shape = array<i64: 0, 6, 8>}
  return
}
