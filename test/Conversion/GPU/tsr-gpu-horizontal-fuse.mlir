// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-map{fuse-rows=false}),tsr-gpu-horizontal-fuse)" --split-input-file --allow-unregistered-dialect | FileCheck %s

// Two parameter updates, p -= g (1024 elements: 256 threads of 4 in one
// block) and q -= h (64: 16 threads in one block), with an allocation and
// a deallocation between them: one grid of 2 blocks and 256 threads. Block
// 0 runs the first update; block 1 the second, on its first 16 threads
// and with its own block index 0 (computed before the branch). The allocation the second kernel uses
// moves before the fused kernel; the deallocation stays after.
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @updates
// CHECK: %[[TMP:.*]] = memref.alloc() : memref<64xf32>
// CHECK: scf.forall (%[[B:.*]]) in (2) {
// CHECK-NEXT: scf.forall (%[[T:.*]]) in (256) {
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi ult, %[[B]], %c1
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK: vector.load %arg0
// CHECK: vector.store %{{.*}}, %arg0
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[B]], %c2
// CHECK-NEXT: %[[FROM:.*]] = arith.cmpi uge, %[[B]], %c1
// CHECK-NEXT: %[[MINE:.*]] = arith.andi %[[IN]], %[[FROM]]
// CHECK-NEXT: %[[LANE:.*]] = arith.cmpi ult, %[[T]], %c16
// CHECK-NEXT: %[[SECOND:.*]] = arith.andi %[[MINE]], %[[LANE]]
// CHECK-NEXT: %[[LOCAL:.*]] = affine.apply #{{.*}}(%[[B]])
// CHECK-NEXT: scf.if %[[SECOND]] {
// CHECK-NEXT: affine.apply #{{.*}}(%[[LOCAL]], %[[T]])
// CHECK: vector.store %{{.*}}, %[[TMP]]
// CHECK: } {mapping = [#gpu.thread<x>]}
// CHECK-NEXT: } {mapping = [#gpu.block<x>]}
// CHECK-NEXT: memref.dealloc %arg4
// CHECK-NEXT: "test.use"(%[[TMP]])
func.func @updates(%p: memref<1024xf32>, %g: memref<1024xf32>, %q: memref<64xf32>,
                   %h: memref<64xf32>, %dead: memref<8xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%g : memref<1024xf32>) outs(%p : memref<1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.subf %o, %a : f32
    linalg.yield %s : f32
  }
  memref.dealloc %dead : memref<8xf32>
  %tmp = memref.alloc() : memref<64xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%q, %h : memref<64xf32>, memref<64xf32>) outs(%tmp : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  }
  "test.use"(%tmp) : (memref<64xf32>) -> ()
  return
}

// -----

// What stays apart: a kernel that reads what the one before wrote (%y,
// through a subview of it) starts a new run, which the next independent
// kernel joins (2 + 4 blocks); a kernel with a barrier (a column
// reduction's workgroup memory) and a call end a run.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @dependent
// CHECK: scf.forall (%{{.*}}) in (4) {
// CHECK: math.exp
// CHECK: } {mapping = [#gpu.block<x>]}
// CHECK: memref.subview
// CHECK: scf.forall (%{{.*}}) in (6) {
// CHECK: arith.addf
// CHECK: math.tanh
// CHECK: } {mapping = [#gpu.block<x>]}
// CHECK-NEXT: scf.forall (%{{.*}}) in (2) {
// CHECK: gpu.barrier
// CHECK: } {mapping = [#gpu.block<x>]}
// CHECK-NEXT: scf.forall (%{{.*}}) in (4) {
// CHECK: } {mapping = [#gpu.block<x>]}
// CHECK-NEXT: call @opaque
// CHECK-NEXT: scf.forall (%{{.*}}) in (4) {
// CHECK: } {mapping = [#gpu.block<x>]}
// CHECK-NEXT: return
func.func @dependent(%x: memref<64x64xf32>, %y: memref<64x64xf32>, %z: memref<64xf32>,
                     %w: memref<64x64xf32>, %v: memref<64x64xf32>, %u: memref<32x64xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x64xf32>) outs(%y : memref<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  %view = memref.subview %y[32, 0] [32, 64] [1, 1] : memref<64x64xf32> to memref<32x64xf32, strided<[64, 1], offset: 2048>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%view : memref<32x64xf32, strided<[64, 1], offset: 2048>>) outs(%u : memref<32x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x64xf32>) outs(%v : memref<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.tanh %a : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<64x64xf32>) outs(%z : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x64xf32>) outs(%w : memref<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.tanh %a : f32
    linalg.yield %e : f32
  }
  func.call @opaque() : () -> ()
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<64x64xf32>) outs(%x : memref<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.tanh %a : f32
    linalg.yield %e : f32
  }
  return
}
func.func private @opaque()

// -----

// A private function's arguments may be one buffer when a call passes the
// same one twice: its kernels on %a and %b stay apart. @cell's are
// distinct at every call, so its kernels fuse.
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func private @aliased
// CHECK-COUNT-2: } {mapping = [#gpu.block<x>]}
// CHECK-LABEL: func.func private @cell
// CHECK-COUNT-1: } {mapping = [#gpu.block<x>]}
// CHECK-NOT: } {mapping = [#gpu.block<x>]}
// CHECK-LABEL: func.func @caller
func.func private @aliased(%a: memref<64xf32>, %b: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%a : memref<64xf32>) {
  ^bb0(%o: f32):
    %s = arith.addf %o, %o : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%b : memref<64xf32>) {
  ^bb0(%o: f32):
    %s = arith.mulf %o, %o : f32
    linalg.yield %s : f32
  }
  return
}
func.func private @cell(%a: memref<64xf32>, %b: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%a : memref<64xf32>) {
  ^bb0(%o: f32):
    %s = arith.addf %o, %o : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%b : memref<64xf32>) {
  ^bb0(%o: f32):
    %s = arith.mulf %o, %o : f32
    linalg.yield %s : f32
  }
  return
}
func.func @caller(%x: memref<64xf32>, %y: memref<64xf32>) {
  func.call @aliased(%x, %x) : (memref<64xf32>, memref<64xf32>) -> ()
  func.call @cell(%x, %y) : (memref<64xf32>, memref<64xf32>) -> ()
  return
}

// -----

// Full reductions (a squared norm per parameter, one warp each) form a run
// of their own: the elementwise update before them is its own kernel. In
// the fused kernel of two blocks of 32 threads each piece of a reduction
// kernel between its warp reductions runs in a branch on the block being
// its kernel's, yielding its partial value and the lane and row indices
// the next piece uses (zero elsewhere), and every
// block reaches both gpu.subgroup_reduce ops at the top of the thread body;
// block 0's lane 0 stores the first norm, block 1's the second.
#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @norms
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK: vector.store %{{.*}}, %arg0
// CHECK: } {mapping = [#gpu.block<x>]}
// CHECK: scf.forall (%[[B:.*]]) in (2) {
// CHECK-NEXT: scf.forall (%[[T:.*]]) in (32) {
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi ult, %[[B]], %c1
// CHECK-NEXT: %[[P0:.*]]:3 = scf.if %[[FIRST]] -> (index, index, f32) {
// CHECK: scf.for
// CHECK: vector.load %arg1
// CHECK: scf.yield %{{.*}}, %{{.*}}, %{{.*}} : index, index, f32
// CHECK-NEXT: } else {
// CHECK-DAG: %[[ZI:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[ZF:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.yield %{{.*}}, %{{.*}}, %[[ZF]] : index, index, f32
// CHECK: %[[R0:.*]] = gpu.subgroup_reduce add %[[P0]]#2 uniform
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK: memref.store %{{.*}}, %arg3[]
// CHECK: %[[SECOND:.*]] = arith.andi
// CHECK-NEXT: affine.apply
// CHECK-NEXT: %[[P1:.*]]:3 = scf.if %[[SECOND]] -> (index, index, f32) {
// CHECK: vector.load %arg2
// CHECK: %[[R1:.*]] = gpu.subgroup_reduce add %[[P1]]#2 uniform
// CHECK-NEXT: scf.if %[[SECOND]] {
// CHECK: memref.store %{{.*}}, %arg4[]
// CHECK: } {mapping = [#gpu.thread<x>]}
// CHECK-NEXT: } {mapping = [#gpu.block<x>]}
func.func @norms(%p: memref<1024xf32>, %g: memref<1024xf32>, %q: memref<64xf32>,
                 %n0: memref<f32>, %n1: memref<f32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%g : memref<1024xf32>) outs(%p : memref<1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.subf %o, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]}
      ins(%g : memref<1024xf32>) outs(%n0 : memref<f32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]}
      ins(%q : memref<64xf32>) outs(%n1 : memref<f32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  return
}
