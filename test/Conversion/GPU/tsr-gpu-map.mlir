// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-map{fuse-rows=false}))" --split-input-file | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-map))" --split-input-file | FileCheck %s --check-prefix=CHAIN

// An elementwise op whose innermost dimension (49) takes no vector: one
// thread per element of its 40x49 iteration space, 256 threads to a block,
// 8 blocks, a guard for the last one. The copy to the output is a kernel
// too.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[LINEAR:.*]] = affine_map<(d0, d1) -> (d0 * 256 + d1)>
// CHECK-LABEL: func.func @elementwise
// CHECK: %[[TMP:.*]] = memref.alloc() : memref<40x49xf32>
// CHECK: scf.forall (%[[B:.*]]) in (8) {
// CHECK-NEXT: scf.forall (%[[T:.*]]) in (256) {
// CHECK-NEXT: %[[I:.*]] = affine.apply #[[LINEAR]](%[[B]], %[[T]])
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[I]], %c1960
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK-NEXT: affine.delinearize_index %[[I]] into (40, 49)
// CHECK: math.exp %{{.*}} : f32
// CHECK: memref.store %{{.*}}, %[[TMP]]
// CHECK: } {mapping = [#gpu.thread<x>]}
// CHECK-NEXT: } {mapping = [#gpu.block<x>]}
// CHECK: scf.forall (%{{.*}}) in (8) {
// CHECK: memref.store %{{.*}}, %arg1
// CHECK: } {mapping = [#gpu.block<x>]}
// CHECK-NEXT: memref.dealloc %[[TMP]] : memref<40x49xf32>
func.func @elementwise(%x: memref<40x49xf32>, %y: memref<40x49xf32>) {
  %tmp = memref.alloc() : memref<40x49xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<40x49xf32>) outs(%tmp : memref<40x49xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  memref.copy %tmp, %y : memref<40x49xf32> to memref<40x49xf32>
  memref.dealloc %tmp : memref<40x49xf32>
  return
}

// -----

// Vectorized elementwise ops: a thread runs 16 bytes of the innermost
// dimension (4 f32), each operand read along it one aligned vector.load,
// each output one aligned vector.store. A bias along the innermost
// dimension is a vector too; a value per row (%r, read along d0 only) is a
// scalar load broadcast where a vector op uses it; the body's ops on
// values that differ within the vector (those of %a) take vectors, the
// others (the row index's conversion) stay scalar.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[GROUP:.*]] = affine_map<(d0) -> (d0 * 4)>
// CHECK-LABEL: func.func @vectorized
// CHECK: scf.forall (%{{.*}}) in (3) {
// CHECK-NEXT: scf.forall (%{{.*}}) in (256) {
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[I:.*]], %c640
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK-NEXT: %[[IJ:.*]]:2 = affine.delinearize_index %[[I]] into (40, 16)
// CHECK-NEXT: %[[J:.*]] = affine.apply #[[GROUP]](%[[IJ]]#1)
// CHECK-NEXT: %[[A:.*]] = vector.load %arg0[%[[IJ]]#0, %[[J]]] {alignment = 16 : i64} : memref<40x64xf32>, vector<4xf32>
// CHECK-NEXT: %[[B:.*]] = vector.load %arg1[%[[J]]] {alignment = 16 : i64} : memref<64xf32>, vector<4xf32>
// CHECK-NEXT: %[[R:.*]] = memref.load %arg2[%[[IJ]]#0] : memref<40xf32>
// CHECK-NEXT: %[[ROW:.*]] = arith.index_cast %[[IJ]]#0 : index to i32
// CHECK-NEXT: %[[ROWF:.*]] = arith.sitofp %[[ROW]] : i32 to f32
// CHECK-NEXT: %[[SCALE:.*]] = arith.mulf %[[ROWF]], %[[R]] : f32
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[A]], %[[B]] : vector<4xf32>
// CHECK-NEXT: %[[SPLAT:.*]] = vector.broadcast %[[SCALE]] : f32 to vector<4xf32>
// CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[SUM]], %[[SPLAT]] : vector<4xf32>
// CHECK-NEXT: %[[POS:.*]] = arith.cmpf ogt, %[[Y]], %{{.*}} : vector<4xf32>
// CHECK-NEXT: %[[RELU:.*]] = arith.select %[[POS]], %[[Y]], %{{.*}} : vector<4xi1>, vector<4xf32>
// CHECK-NEXT: vector.store %[[RELU]], %arg3[%[[IJ]]#0, %[[J]]] {alignment = 16 : i64} : memref<40x64xf32>, vector<4xf32>
func.func @vectorized(%x: memref<40x64xf32>, %b: memref<64xf32>, %r: memref<40xf32>,
                      %y: memref<40x64xf32>) {
  linalg.generic {indexing_maps = [#id, #col, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b, %r : memref<40x64xf32>, memref<64xf32>, memref<40xf32>) outs(%y : memref<40x64xf32>) {
  ^bb0(%a: f32, %c: f32, %s: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %i = linalg.index 0 : index
    %i32 = arith.index_cast %i : index to i32
    %f = arith.sitofp %i32 : i32 to f32
    %scale = arith.mulf %f, %s : f32
    %sum = arith.addf %a, %c : f32
    %v = arith.mulf %sum, %scale : f32
    %pos = arith.cmpf ogt, %v, %zero : f32
    %relu = arith.select %pos, %v, %zero : f32
    linalg.yield %relu : f32
  }
  return
}

// -----

// The width is 16 bytes of the narrowest element (8 for bf16: the f32
// output then takes two 16-byte stores' worth, aligned to 16), halved until
// it divides the innermost dimension and the layout: a subview whose
// offset (2 elements) is a multiple of 2 but not 4 gets 2, an output read
// in the body is loaded as a vector too, and a fill broadcasts its scalar.
// What keeps a thread per element: an i1 buffer (a vector<4xi1> in memory
// is packed bits, not bytes), a transposed read. linalg.index of the
// innermost dimension cast to an integer (a one-hot's class) is the
// thread's first position plus [0, 1, 2, 3].
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @widths
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<4xf32>
// CHECK-DAG: %[[STEPS:.*]] = arith.constant dense<[0, 1, 2, 3]> : vector<4xi32>
// CHECK: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<8x64xbf16>, vector<8xbf16>
// CHECK: arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// CHECK: vector.store %{{.*}}, %arg1[{{.*}}] {alignment = 16 : i64} : memref<8x64xf32>, vector<8xf32>
// CHECK: %[[SUB:.*]] = memref.subview
// CHECK: vector.load %[[SUB]][{{.*}}] {alignment = 8 : i64} : memref<8x6xf32, strided<[64, 1], offset: 2>>, vector<2xf32>
// CHECK: %[[O:.*]] = vector.load %[[OUT:.*]][{{.*}}] {alignment = 8 : i64} : memref<8x6xf32, strided<[64, 1], offset: 8>>, vector<2xf32>
// CHECK: arith.addf %{{.*}}, %[[O]] : vector<2xf32>
// CHECK: vector.store %{{.*}}, %[[OUT]][{{.*}}] {alignment = 8 : i64} : memref<8x6xf32, strided<[64, 1], offset: 8>>, vector<2xf32>
// CHECK: vector.store %[[ZERO]], %arg1[{{.*}}] {alignment = 16 : i64} : memref<8x64xf32>, vector<4xf32>
// CHECK-NOT: vector.
// CHECK: memref.load %arg2
// CHECK-NOT: vector.
// CHECK: memref.load %arg4
// CHECK-NOT: vector.
// CHECK: %[[J:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK-NEXT: %[[JS:.*]] = vector.broadcast %[[J]] : i32 to vector<4xi32>
// CHECK-NEXT: %[[JV:.*]] = arith.addi %[[JS]], %[[STEPS]] : vector<4xi32>
// CHECK-NEXT: %[[F:.*]] = arith.sitofp %[[JV]] : vector<4xi32> to vector<4xf32>
// CHECK-NEXT: vector.store %[[F]], %arg1[{{.*}}] {alignment = 16 : i64} : memref<8x64xf32>, vector<4xf32>
// CHECK: return
func.func @widths(%h: memref<8x64xbf16>, %y: memref<8x64xf32>, %m: memref<8x64xi1>,
                  %z: memref<8x64xf32>, %t: memref<64x8xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : memref<8x64xbf16>) outs(%y : memref<8x64xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %e = arith.extf %a : bf16 to f32
    linalg.yield %e : f32
  }
  %sub = memref.subview %y[0, 2] [8, 6] [1, 1] : memref<8x64xf32> to memref<8x6xf32, strided<[64, 1], offset: 2>>
  %out = memref.subview %y[0, 8] [8, 6] [1, 1] : memref<8x64xf32> to memref<8x6xf32, strided<[64, 1], offset: 8>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sub : memref<8x6xf32, strided<[64, 1], offset: 2>>) outs(%out : memref<8x6xf32, strided<[64, 1], offset: 8>>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  }
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<8x64xf32>)
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %z : memref<8x64xi1>, memref<8x64xf32>) outs(%y : memref<8x64xf32>) {
  ^bb0(%c: i1, %a: f32, %o: f32):
    %s = arith.select %c, %a, %o : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<64x8xf32>) outs(%y : memref<8x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%y : memref<8x64xf32>) {
  ^bb0(%o: f32):
    %j = linalg.index 1 : index
    %j32 = arith.index_cast %j : index to i32
    %f = arith.sitofp %j32 : i32 to f32
    linalg.yield %f : f32
  }
  return
}

// -----

// A row reduction: a warp per row, eight to a block (40 rows: five blocks).
// Lane l folds columns l, l + 32, ... from the identity (-0.0 for a sum;
// 49 columns: no vector width divides them, a column at a time),
// gpu.subgroup_reduce combines the lanes, and lane 0 of a warp with a row
// adds the result to the output; the surplus warps of the last block read
// the last row (39) again and store nothing. A full reduction to a scalar
// is one row: one warp (its 40 sums read four at a time).
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @reductions
// CHECK-DAG: %[[ID:.*]] = arith.constant -0.000000e+00 : f32
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.forall (%{{.*}}) in (10) {
// CHECK: vector.store %cst
// CHECK: scf.forall (%[[B:.*]]) in (5) {
// CHECK-NEXT: scf.forall (%[[T:.*]]) in (256) {
// CHECK-NEXT: %[[WL:.*]]:2 = affine.delinearize_index %[[T]] into (8, 32)
// CHECK-NEXT: %[[ROW:.*]] = affine.apply #{{.*}}(%[[B]], %[[WL]]#0)
// CHECK-NEXT: %[[R:.*]] = arith.minui %[[ROW]], %c39
// CHECK-NEXT: %[[PART:.*]] = scf.for %[[K:.*]] = %[[WL]]#1 to %c49 step %c32 iter_args(%[[ACC:.*]] = %[[ID]]) -> (f32) {
// CHECK-NEXT: %[[A:.*]] = memref.load %arg0[%[[R]], %[[K]]]
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[A]]
// CHECK-NEXT: scf.yield %[[S]]
// CHECK: %[[ALL:.*]] = gpu.subgroup_reduce add %[[PART]] uniform : (f32) -> f32
// CHECK-NEXT: %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %c40
// CHECK-NEXT: %[[L0:.*]] = arith.cmpi eq, %[[WL]]#1, %c0
// CHECK-NEXT: %[[BOTH:.*]] = arith.andi %[[IN]], %[[L0]]
// CHECK-NEXT: scf.if %[[BOTH]] {
// CHECK-NEXT: %[[O:.*]] = memref.load %arg1[%[[R]]]
// CHECK-NEXT: %[[N:.*]] = arith.addf %[[O]], %[[ALL]]
// CHECK-NEXT: memref.store %[[N]], %arg1[%[[R]]]
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.forall (%{{.*}}) in (32) {
// CHECK: scf.for %{{.*}} = %{{.*}} to %c40 step %c128
// CHECK: vector.load %arg1[%{{.*}}] {alignment = 16 : i64} : memref<40xf32>, vector<4xf32>
// CHECK: gpu.subgroup_reduce add
// CHECK: memref.store %{{.*}}, %arg2[] : memref<f32>
func.func @reductions(%x: memref<40x49xf32>, %s: memref<40xf32>, %t: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<40xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<40x49xf32>) outs(%s : memref<40xf32>) {
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

// The warp mapping takes the other combiners with their identities (a
// softmax's maximum: -inf), the element computed by the body in the loop
// (here exp(x - m)), several reduction dimensions (linearized, the lanes
// striding through them) and f64 (odd rows: no vector loads).
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @combiners
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK: scf.for %{{.*}} = %{{.*}} to %c49 step %c32 iter_args(%{{.*}} = %[[NINF]]) -> (f32)
// CHECK: arith.maximumf
// CHECK: gpu.subgroup_reduce maximumf
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c49 step %c32 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: arith.addf %[[ACC]], %[[E]]
// CHECK: gpu.subgroup_reduce add
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.forall (%{{.*}}) in (128) {
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c54 step %c32 iter_args(%{{.*}} = %[[ONE]]) -> (f64)
// CHECK-NEXT: %[[JK:.*]]:2 = affine.delinearize_index %[[K]] into (6, 9)
// CHECK-NEXT: memref.load %arg3[%{{.*}}, %[[JK]]#0, %[[JK]]#1] : memref<4x6x9xf64>
// CHECK: gpu.subgroup_reduce mul
func.func @combiners(%x: memref<40x49xf32>, %m: memref<40xf32>, %s: memref<40xf32>,
                     %y: memref<4x6x9xf64>, %p: memref<4xf64>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<40x49xf32>) outs(%m : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<40x49xf32>, memref<40xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%y : memref<4x6x9xf64>) outs(%p : memref<4xf64>) {
  ^bb0(%a: f64, %o: f64):
    %r = arith.mulf %o, %a : f64
    linalg.yield %r : f64
  }
  return
}

// -----

// A row reduction whose rows are 16-byte multiples reads 16 bytes per lane
// and iteration: lane l folds columns 4l to 4l + 3, then 4(l + 32) on, each
// run of four in order (64 f32 columns: the lanes cover a row in one
// iteration of step 128). A value per row (the softmax's maximum) is
// broadcast where the body's vector ops use it; 8 bf16 go in 16 bytes.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_vectorized
// CHECK: %[[WL:.*]]:2 = affine.delinearize_index %{{.*}} into (8, 32)
// CHECK: %[[R:.*]] = arith.minui
// CHECK-NEXT: %[[START:.*]] = affine.apply #{{.*}}(%[[WL]]#1)
// CHECK-NEXT: %[[PART:.*]] = scf.for %[[K:.*]] = %[[START]] to %c64 step %c128 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT: %[[V:.*]] = vector.load %arg0[%[[R]], %[[K]]] {alignment = 16 : i64} : memref<40x64xf32>, vector<4xf32>
// CHECK-NEXT: %[[E0:.*]] = vector.extract %[[V]][0] : f32 from vector<4xf32>
// CHECK-NEXT: %[[M0:.*]] = arith.maximumf %[[ACC]], %[[E0]] : f32
// CHECK-NEXT: %[[E1:.*]] = vector.extract %[[V]][1] : f32 from vector<4xf32>
// CHECK-NEXT: %[[M1:.*]] = arith.maximumf %[[M0]], %[[E1]] : f32
// CHECK-NEXT: %[[E2:.*]] = vector.extract %[[V]][2] : f32 from vector<4xf32>
// CHECK-NEXT: %[[M2:.*]] = arith.maximumf %[[M1]], %[[E2]] : f32
// CHECK-NEXT: %[[E3:.*]] = vector.extract %[[V]][3] : f32 from vector<4xf32>
// CHECK-NEXT: %[[M3:.*]] = arith.maximumf %[[M2]], %[[E3]] : f32
// CHECK-NEXT: scf.yield %[[M3]]
// CHECK: gpu.subgroup_reduce maximumf %[[PART]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64 step %c128
// CHECK: %[[X:.*]] = vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<40x64xf32>, vector<4xf32>
// CHECK-NEXT: %[[MAX:.*]] = memref.load %arg1[
// CHECK-NEXT: %[[B:.*]] = vector.broadcast %[[MAX]] : f32 to vector<4xf32>
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[X]], %[[B]] : vector<4xf32>
// CHECK-NEXT: math.exp %[[D]] : vector<4xf32>
// CHECK-COUNT-4: arith.addf
// CHECK: gpu.subgroup_reduce add
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64 step %c256
// CHECK: vector.load %arg3[{{.*}}] {alignment = 16 : i64} : memref<40x64xbf16>, vector<8xbf16>
// CHECK: arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// CHECK-COUNT-8: arith.addf
func.func @row_vectorized(%x: memref<40x64xf32>, %m: memref<40xf32>, %s: memref<40xf32>,
                          %h: memref<40x64xbf16>, %t: memref<40xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<40x64xf32>) outs(%m : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<40x64xf32>, memref<40xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %r = arith.addf %o, %e : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : memref<40x64xbf16>) outs(%t : memref<40xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %w = arith.extf %a : bf16 to f32
    %r = arith.addf %o, %w : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A reduction over a middle axis (the softmax over the classes of a
// [batch, class, position] tensor) reads positions, its last parallel
// dimension, innermost: a column reduction. What stays one thread per
// output element: fewer than 32 reduction iterations; a body whose output
// feeds more than the combiner; a reduction whose inputs are read along
// neither (a transposed read).
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#mid = affine_map<(d0, d1, d2) -> (d0, d2)>
#tr = affine_map<(d0, d1, d2) -> (d2, d1, d0)>
#par = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @thread_reductions
// CHECK-NOT: gpu.subgroup_reduce
// CHECK-NOT: gpu.barrier
// CHECK: scf.forall (%{{.*}}) in (16) {
// CHECK-NEXT: memref.alloca() : memref<8x32xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c86 step %c8
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK-NOT: gpu.subgroup_reduce
// CHECK: return
func.func @thread_reductions(%short: memref<40x31xf32>, %s: memref<40xf32>,
                             %x: memref<40x50xf32>, %z: memref<16x86x32xf32>,
                             %zm: memref<16x32xf32>, %w: memref<40x5x6xf32>,
                             %wm: memref<6x5xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%short : memref<40x31xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<40x50xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %o : f32
    %r = arith.addf %m, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id3, #mid], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%z : memref<16x86x32xf32>) outs(%zm : memref<16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#tr, #par], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w : memref<40x5x6xf32>) outs(%wm : memref<6x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A column reduction (a bias gradient: the sum over leading batch rows):
// a block per 32 consecutive columns (64 columns: two blocks). Thread
// (w, c) of the block's 8 x 32 sums rows w, w + 8, ... of its column (the
// lanes of a warp read 32 consecutive elements of a row) into workgroup
// memory allocated in the block loop; after a barrier the first warp adds
// the 8 values of its column in order, then into the output.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @column_reduction
// CHECK: scf.forall (%[[B:.*]]) in (2) {
// CHECK-NEXT: %[[SMEM:.*]] = memref.alloca() : memref<8x32xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: scf.forall (%[[T:.*]]) in (256) {
// CHECK-NEXT: %[[WC:.*]]:2 = affine.delinearize_index %[[T]] into (8, 32)
// CHECK-NEXT: %[[COL:.*]] = affine.apply #{{.*}}(%[[B]], %[[WC]]#1)
// CHECK-NEXT: %[[C:.*]] = arith.minui %[[COL]], %c63
// CHECK: %[[PART:.*]] = scf.for %[[R:.*]] = %[[WC]]#0 to %c512 step %c8 iter_args
// CHECK-NEXT: memref.load %arg0[%[[R]], %[[C]]] : memref<512x64xf32>
// CHECK: memref.store %[[PART]], %[[SMEM]][%[[WC]]#0, %[[WC]]#1]
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK-NEXT: %[[O:.*]] = memref.load %arg1[%[[C]]]
// CHECK-NEXT: %[[P0:.*]] = memref.load %[[SMEM]][%c0, %[[WC]]#1]
// CHECK-NEXT: %[[P1:.*]] = memref.load %[[SMEM]][%c1, %[[WC]]#1]
// CHECK-NEXT: arith.addf %[[P0]], %[[P1]]
// CHECK-COUNT-6: memref.load %[[SMEM]]
// CHECK: memref.store %{{.*}}, %arg1[%[[C]]]
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

// -----

// A row chain: softmax over rows of 64 (its fill, maximum, exponentials,
// fill, sum and division) is one kernel of a warp per row. Each lane runs
// elements [4l, 4l + 4) of its row (one width for the chain); the fills
// and the reductions' totals are held by every lane (no load of %m or %s),
// and not stored: nothing else uses %m and %s (the maximum's combination
// with the fill's -inf folds away). Nothing else reads the exponentials
// either, so they are not stored: the sum and the division compute them
// again from %x and the maximum. Buffers no kernel touches any more are not
// allocated at all. With fuse-rows=false these are six kernels.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHAIN-LABEL: func.func @softmax_chain
// CHAIN-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHAIN-NOT: memref.alloc
// CHAIN: scf.forall (%[[B:.*]]) in (5) {
// CHAIN-NEXT: scf.forall (%[[T:.*]]) in (256) {
// CHAIN-NEXT: %[[WL:.*]]:2 = affine.delinearize_index %[[T]] into (8, 32)
// CHAIN-NEXT: %[[ROW:.*]] = affine.apply #{{.*}}(%[[B]], %[[WL]]#0)
// CHAIN-NEXT: %[[R:.*]] = arith.minui %[[ROW]], %c39
// CHAIN-NEXT: %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %c40
// CHAIN-NEXT: %[[START:.*]] = affine.apply #{{.*}}(%[[WL]]#1)
// CHAIN-NEXT: %[[PMAX:.*]] = scf.for %{{.*}} = %[[START]] to %c64 step %c128
// CHAIN-COUNT-4: arith.maximumf
// CHAIN: %[[MAX:.*]] = gpu.subgroup_reduce maximumf %[[PMAX]] uniform
// CHAIN-NEXT: %[[PSUM:.*]] = scf.for %[[K:.*]] = %[[START]] to %c64 step %c128 iter_args
// CHAIN-NEXT: %[[X:.*]] = vector.load %arg0[%[[R]], %[[K]]] {alignment = 16 : i64} : memref<40x64xf32>, vector<4xf32>
// CHAIN-NEXT: %[[BMAX:.*]] = vector.broadcast %[[MAX]] : f32 to vector<4xf32>
// CHAIN-NEXT: %[[D:.*]] = arith.subf %[[X]], %[[BMAX]]
// CHAIN-NEXT: %[[E:.*]] = math.exp %[[D]] : vector<4xf32>
// CHAIN-COUNT-4: arith.addf
// CHAIN: %[[WSUM:.*]] = gpu.subgroup_reduce add %[[PSUM]] uniform
// CHAIN-NEXT: %[[SUM:.*]] = arith.addf %[[WSUM]], %[[ZERO]]
// CHAIN-NEXT: scf.for %[[K2:.*]] = %[[START]] to %c64 step %c128 {
// CHAIN-NEXT: %[[X2:.*]] = vector.load %arg0[%[[R]], %[[K2]]]
// CHAIN-NEXT: %[[BMAX2:.*]] = vector.broadcast %[[MAX]] : f32 to vector<4xf32>
// CHAIN-NEXT: %[[D2:.*]] = arith.subf %[[X2]], %[[BMAX2]]
// CHAIN-NEXT: %[[E2:.*]] = math.exp %[[D2]] : vector<4xf32>
// CHAIN-NEXT: %[[BSUM:.*]] = vector.broadcast %[[SUM]] : f32 to vector<4xf32>
// CHAIN-NEXT: %[[Q:.*]] = arith.divf %[[E2]], %[[BSUM]]
// CHAIN-NEXT: scf.if %[[IN]] {
// CHAIN-NEXT: vector.store %[[Q]], %arg1[%[[R]], %[[K2]]]
// CHAIN: } {mapping = [#gpu.thread<x>]}
// CHAIN-NEXT: } {mapping = [#gpu.block<x>]}
// CHAIN-NEXT: return
func.func @softmax_chain(%x: memref<40x64xf32>, %y: memref<40x64xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %m = memref.alloc() : memref<40xf32>
  linalg.fill ins(%ninf : f32) outs(%m : memref<40xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<40x64xf32>) outs(%m : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  }
  %e = memref.alloc() : memref<40x64xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : memref<40x64xf32>, memref<40xf32>) outs(%e : memref<40x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  }
  memref.dealloc %m : memref<40xf32>
  %s = memref.alloc() : memref<40xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<40xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : memref<40x64xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : memref<40x64xf32>, memref<40xf32>) outs(%y : memref<40x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  }
  memref.dealloc %e : memref<40x64xf32>
  memref.dealloc %s : memref<40xf32>
  return
}

// -----

// An op over the rows only (a mean: the sum divided by 64) runs on every
// lane and its result stays in registers for the ops after it; the mean
// is still stored (lane 0) for a reader after the kernel (%mean is an
// argument).
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#r1 = affine_map<(d0) -> (d0)>
// CHAIN-LABEL: func.func @uniform_op
// CHAIN: scf.forall (%{{.*}}) in (5) {
// CHAIN: %[[T:.*]] = gpu.subgroup_reduce add
// CHAIN-NEXT: %[[S:.*]] = arith.addf %[[T]], %cst
// CHAIN: %[[MEAN:.*]] = arith.divf %[[S]], %cst
// CHAIN-NEXT: scf.if
// CHAIN-NEXT: memref.store %[[MEAN]], %arg1
// CHAIN: scf.for
// CHAIN-NOT: memref.load
// CHAIN: vector.broadcast %[[MEAN]]
// CHAIN: vector.store %{{.*}}, %arg2
// CHAIN: } {mapping = [#gpu.block<x>]}
// CHAIN-NOT: scf.forall
func.func @uniform_op(%x: memref<40x64xf32>, %mean: memref<40xf32>, %y: memref<40x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 64.0 : f32
  %s = memref.alloc() : memref<40xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<40xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<40x64xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#r1, #r1], iterator_types = ["parallel"]}
      ins(%s : memref<40xf32>) outs(%mean : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %q = arith.divf %a, %n : f32
    linalg.yield %q : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean : memref<40x64xf32>, memref<40xf32>) outs(%y : memref<40x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  }
  memref.dealloc %s : memref<40xf32>
  return
}

// -----

// Where a chain stops (each case two kernels): (1) the division reads the
// sums through another index (%s[j], which other warps write); (2) a
// reduction into an argument it did not fill leaves its total in lane 0's
// memory only, which the next op's other lanes would read; (3) an op that
// reads a view whose rows are aligned to two elements only would lower the
// chain's width of 4; (4) an op with other effects in
// between; (5) in a private function, whose callers may pass one buffer
// for two arguments, the chain writes an argument that it also reads in
// another way.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
// CHAIN-LABEL: func.func @chain_stops
// CHAIN-COUNT-2: {mapping = [#gpu.block<x>]}
// CHAIN-NOT: {mapping = [#gpu.block<x>]}
// CHAIN-LABEL: func.func @lane_zero_total
// CHAIN-COUNT-2: {mapping = [#gpu.block<x>]}
// CHAIN-NOT: {mapping = [#gpu.block<x>]}
// CHAIN-LABEL: func.func @narrower
// CHAIN-COUNT-2: {mapping = [#gpu.block<x>]}
// CHAIN-NOT: {mapping = [#gpu.block<x>]}
// CHAIN-LABEL: func.func @effects_between
// CHAIN-COUNT-2: {mapping = [#gpu.block<x>]}
// CHAIN-NOT: {mapping = [#gpu.block<x>]}
// CHAIN-LABEL: func.func private @aliasing_arguments
// CHAIN-COUNT-2: {mapping = [#gpu.block<x>]}
// CHAIN-NOT: {mapping = [#gpu.block<x>]}
// CHAIN-LABEL: func.func private @distinct_enough
// CHAIN-COUNT-1: {mapping = [#gpu.block<x>]}
// CHAIN-NOT: {mapping = [#gpu.block<x>]}
func.func @chain_stops(%x: memref<64x64xf32>, %s: memref<64xf32>, %y: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<64xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x64xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<64x64xf32>, memref<64xf32>) outs(%y : memref<64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  }
  return
}
func.func @lane_zero_total(%x: memref<40x64xf32>, %s: memref<40xf32>, %y: memref<40x64xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<40x64xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<40x64xf32>, memref<40xf32>) outs(%y : memref<40x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  }
  return
}
func.func @narrower(%x: memref<40x64xf32>, %s: memref<40xf32>, %big: memref<40x66xf32>,
                    %y: memref<40x64xf32>) {
  %w = memref.subview %big[0, 2] [40, 64] [1, 1] : memref<40x66xf32> to memref<40x64xf32, strided<[66, 1], offset: 2>>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<40xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<40x64xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s, %w : memref<40xf32>, memref<40x64xf32, strided<[66, 1], offset: 2>>) outs(%y : memref<40x64xf32>) {
  ^bb0(%b: f32, %v: f32, %o: f32):
    %q = arith.mulf %v, %b : f32
    linalg.yield %q : f32
  }
  return
}
func.func private @opaque(memref<40xf32>)
func.func @effects_between(%x: memref<40x64xf32>, %s: memref<40xf32>, %y: memref<40x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<40xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<40x64xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  func.call @opaque(%s) : (memref<40xf32>) -> ()
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<40x64xf32>, memref<40xf32>) outs(%y : memref<40x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  }
  return
}
func.func private @aliasing_arguments(%x: memref<40x64xf32>, %s: memref<40xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<40xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<40x64xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  return
}
// The arguments read and written at the iteration's element only: one
// buffer passed twice would still be read back by the lane that wrote it.
func.func private @distinct_enough(%x: memref<40x64xf32>, %y: memref<40x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<40xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<40xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<40x64xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<40x64xf32>, memref<40xf32>) outs(%y : memref<40x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  }
  memref.dealloc %s : memref<40xf32>
  return
}

// -----

// Where an elementwise op of a chain still stores its output: a reader
// after the kernel (%e is an argument; the sum reads it back from memory,
// through the lane that wrote it), or a later op of the chain writes what
// it reads (the division overwrites %x in place, so %t must hold the
// differences first). All of it is one chain: two reductions, and %x read
// and written at the iteration's element only.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHAIN-LABEL: func.func @stored_intermediates
// CHAIN: scf.forall (%{{.*}}) in (5) {
// CHAIN: vector.store %{{.*}}, %arg1
// CHAIN: vector.load %arg1
// CHAIN: gpu.subgroup_reduce add
// CHAIN-NOT: {mapping = [#gpu.block<x>]}
// CHAIN: vector.store %{{.*}}, %[[T:alloc.*]][
// CHAIN: vector.load %[[T]][
// CHAIN: gpu.subgroup_reduce add
// CHAIN: vector.load %[[T]][
// CHAIN: vector.store %{{.*}}, %arg0[
// CHAIN: } {mapping = [#gpu.block<x>]}
func.func @stored_intermediates(%x: memref<40x64xf32>, %e: memref<40x64xf32>,
                                %s: memref<40xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<40x64xf32>) outs(%e : memref<40x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  }
  linalg.fill ins(%zero : f32) outs(%s : memref<40xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : memref<40x64xf32>) outs(%s : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  %c = memref.alloc() : memref<40x64xf32>
  %t = memref.alloc() : memref<40x64xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<40x64xf32>, memref<40xf32>) outs(%t : memref<40x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  }
  %u = memref.alloc() : memref<40xf32>
  linalg.fill ins(%zero : f32) outs(%u : memref<40xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%t : memref<40x64xf32>) outs(%u : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %u : memref<40x64xf32>, memref<40xf32>) outs(%x : memref<40x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  }
  memref.dealloc %t : memref<40x64xf32>
  memref.dealloc %u : memref<40xf32>
  memref.dealloc %c : memref<40x64xf32>
  return
}

// -----

// A column reduction combines the value of the fill before it into each
// output element itself (no load of %db), also past ops on other buffers
// (%other's fill: both fills go), and consecutive independent column
// reductions over the same extents are one kernel (a LayerNorm's weight
// and bias gradients), each with its own workgroup memory and barrier.
// With an op between that reads the output (a copy of %db), the fill
// stays a kernel; a reduction into what the one before wrote (%s twice)
// gets a kernel of its own, and so does one whose body reads it.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @column_fill
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.forall (%{{.*}}) in (2) {
// CHECK-NEXT: memref.alloca() : memref<8x32xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: memref.alloca() : memref<8x32xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK-NOT: memref.load %arg1
// CHECK: memref.load %{{.*}}[%c0,
// CHECK-COUNT-7: arith.addf
// CHECK-NEXT: %[[R:.*]] = arith.addf %{{.*}}, %[[ZERO]] : f32
// CHECK-NEXT: memref.store %[[R]], %arg1
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %arg2
// CHECK: } {mapping = [#gpu.block<x>]}
// CHECK-NOT: {mapping = [#gpu.block<x>]}
// CHECK-LABEL: func.func @column_fill_read
// CHECK-COUNT-3: {mapping = [#gpu.block<x>]}
// CHECK-NOT: {mapping = [#gpu.block<x>]}
// CHECK-LABEL: func.func @column_dependent
// CHECK-COUNT-2: {mapping = [#gpu.block<x>]}
// CHECK-NOT: {mapping = [#gpu.block<x>]}
// CHECK-LABEL: func.func @column_body_reads
// CHECK-COUNT-2: {mapping = [#gpu.block<x>]}
// CHECK-NOT: {mapping = [#gpu.block<x>]}
func.func @column_fill(%dy: memref<512x64xf32>, %db: memref<64xf32>,
                       %other: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%other : memref<64xf32>)
  linalg.fill ins(%zero : f32) outs(%db : memref<64xf32>)
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%dy : memref<512x64xf32>) outs(%db : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%dy : memref<512x64xf32>) outs(%other : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  return
}
func.func @column_fill_read(%dy: memref<512x64xf32>, %db: memref<64xf32>,
                            %other: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%db : memref<64xf32>)
  linalg.copy ins(%db : memref<64xf32>) outs(%other : memref<64xf32>)
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%dy : memref<512x64xf32>) outs(%db : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  return
}
func.func @column_dependent(%x: memref<512x64xf32>, %y: memref<512x64xf32>,
                            %s: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<512x64xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%y : memref<512x64xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  return
}
func.func @column_body_reads(%x: memref<512x64xf32>, %s: memref<64xf32>,
                             %t: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<512x64xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<512x64xf32>) outs(%t : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %j = linalg.index 1 : index
    %m = memref.load %s[%j] : memref<64xf32>
    %d = arith.subf %a, %m : f32
    %r = arith.addf %d, %o : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A loss's reduction reads each sample's log-probability at its label from
// a buffer it does not write: still one warp, each lane loading the
// elements of its samples in its loop. A reduction whose body reads the
// buffer it accumulates into stays a loop on one thread.
#vec = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @gathering_reduction
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.forall (%{{.*}}) in (32) {
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c512 step %c32 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT: %[[T:.*]] = memref.load %arg0[%[[K]]] : memref<512xi64>
// CHECK-NEXT: %[[C:.*]] = arith.index_cast %[[T]] : i64 to index
// CHECK-NEXT: %[[LP:.*]] = memref.load %arg1[%[[K]], %[[C]]] : memref<512x86xf32>
// CHECK-NEXT: %[[NEG:.*]] = arith.negf %[[LP]] : f32
// CHECK-NEXT: arith.addf %[[ACC]], %[[NEG]] : f32
// CHECK: gpu.subgroup_reduce add
// CHECK-LABEL: func.func @self_reading_reduction
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.forall (%{{.*}}) in (1) {
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c512 step %c1 {
// CHECK-NOT: gpu.subgroup_reduce
// CHECK: return
func.func @gathering_reduction(%labels: memref<512xi64>, %logp: memref<512x86xf32>,
                               %loss: memref<f32>) {
  linalg.generic {indexing_maps = [#vec, #all], iterator_types = ["reduction"]}
      ins(%labels : memref<512xi64>) outs(%loss : memref<f32>) {
  ^bb0(%t: i64, %o: f32):
    %c = arith.index_cast %t : i64 to index
    %n = linalg.index 0 : index
    %lp = memref.load %logp[%n, %c] : memref<512x86xf32>
    %neg = arith.negf %lp : f32
    %r = arith.addf %o, %neg : f32
    linalg.yield %r : f32
  }
  return
}
func.func @self_reading_reduction(%x: memref<512xf32>, %s: memref<f32>) {
  linalg.generic {indexing_maps = [#vec, #all], iterator_types = ["reduction"]}
      ins(%x : memref<512xf32>) outs(%s : memref<f32>) {
  ^bb0(%a: f32, %o: f32):
    %prev = memref.load %s[] : memref<f32>
    %m = arith.mulf %a, %prev : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  return
}
