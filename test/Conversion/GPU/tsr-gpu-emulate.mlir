// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-emulate))" | FileCheck %s --check-prefix=FORWARD
// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-emulate{order=reverse}))" | FileCheck %s --check-prefix=REVERSE
// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-emulate{order=shuffle}))" | FileCheck %s --check-prefix=SHUFFLE

// Every block in turn, every thread of it in turn: in order, backwards, or
// i -> i * m mod n with m coprime to n (8 blocks: m = 5; 256 threads:
// m = 159).
#linear = affine_map<(d0, d1) -> (d0 * 256 + d1)>
// FORWARD: scf.for %[[I:.*]] = %c0 to %c8 step %c1 {
// FORWARD-NEXT: scf.for %[[J:.*]] = %c0 to %c256 step %c1 {
// FORWARD-NEXT: affine.apply #{{.*}}(%[[I]], %[[J]])
// FORWARD-NOT: scf.forall

// REVERSE: scf.for %[[I:.*]] = %c0 to %c8 step %c1 {
// REVERSE-NEXT: %[[B:.*]] = arith.subi %c7, %[[I]] : index
// REVERSE: scf.for %[[J:.*]] = %c0 to %c256 step %c1 {
// REVERSE-NEXT: %[[T:.*]] = arith.subi %c255, %[[J]] : index
// REVERSE-NEXT: affine.apply #{{.*}}(%[[B]], %[[T]])

// SHUFFLE: scf.for %[[I:.*]] = %c0 to %c8 step %c1 {
// SHUFFLE-NEXT: %[[BM:.*]] = arith.muli %[[I]], %c5 : index
// SHUFFLE-NEXT: %[[B:.*]] = arith.remui %[[BM]], %c8 : index
// SHUFFLE: scf.for %[[J:.*]] = %c0 to %c256 step %c1 {
// SHUFFLE-NEXT: %[[TM:.*]] = arith.muli %[[J]], %c159 : index
// SHUFFLE-NEXT: %[[T:.*]] = arith.remui %[[TM]], %c256 : index
// SHUFFLE-NEXT: affine.apply #{{.*}}(%[[B]], %[[T]])
func.func @kernel(%x: memref<2000xf32>, %y: memref<2000xf32>) {
  %c2000 = arith.constant 2000 : index
  scf.forall (%b) in (8) {
    scf.forall (%t) in (256) {
      %i = affine.apply #linear(%b, %t)
      %in = arith.cmpi ult, %i, %c2000 : index
      scf.if %in {
        %v = memref.load %x[%i] : memref<2000xf32>
        memref.store %v, %y[%i] : memref<2000xf32>
      }
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// A warp reduction of tsr-gpu-map: per block, the threads up to the
// gpu.subgroup_reduce store their values in a buffer at the function's
// entry; each warp's 32 values are combined as the shuffle lowering
// combines them (offsets 1, 2, ..., 16, lane i taking `mine + theirs` and
// lane i ^ offset `theirs + mine`); then the threads run the rest, reading
// their result from the buffer, with the index math they use from before
// the reduction recomputed (in shuffle order as well).
// FORWARD-LABEL: func.func @warp_reduction
// FORWARD-NEXT: %[[LANES:.*]] = memref.alloca() : memref<64xf32>
// FORWARD: scf.for %[[B:.*]] = %{{.*}} to %c3 step %{{.*}} {
// FORWARD-NEXT: scf.for %[[T:.*]] = %{{.*}} to %c64 step %{{.*}} {
// FORWARD: %[[PART:.*]] = scf.for
// FORWARD: memref.store %[[PART]], %[[LANES]][%[[T]]]
// FORWARD: scf.for %[[W:.*]] = %{{.*}} to %c2 step
// FORWARD-NEXT: %[[BASE:.*]] = arith.muli %[[W]], %[[C32:.*]] :
// FORWARD-NEXT: scf.for %[[L:.*]] = %{{.*}} to %[[C32]] step
// FORWARD-NEXT: %[[OTHER:.*]] = arith.xori %[[L]], %c1
// FORWARD-NEXT: %[[LT:.*]] = arith.cmpi ult, %[[L]], %[[OTHER]]
// FORWARD-NEXT: scf.if %[[LT]] {
// FORWARD-NEXT: %[[I:.*]] = arith.addi %[[BASE]], %[[L]]
// FORWARD-NEXT: %[[J:.*]] = arith.addi %[[BASE]], %[[OTHER]]
// FORWARD-NEXT: %[[MINE:.*]] = memref.load %[[LANES]][%[[I]]]
// FORWARD-NEXT: %[[THEIRS:.*]] = memref.load %[[LANES]][%[[J]]]
// FORWARD-NEXT: %[[X:.*]] = arith.addf %[[MINE]], %[[THEIRS]]
// FORWARD-NEXT: memref.store %[[X]], %[[LANES]][%[[I]]]
// FORWARD-NEXT: %[[Y:.*]] = arith.addf %[[THEIRS]], %[[MINE]]
// FORWARD-NEXT: memref.store %[[Y]], %[[LANES]][%[[J]]]
// FORWARD: arith.xori %{{.*}}, %c2
// FORWARD: arith.xori %{{.*}}, %c4
// FORWARD: arith.xori %{{.*}}, %c8
// FORWARD: arith.xori %{{.*}}, %c16
// FORWARD: scf.for %[[T2:.*]] = %{{.*}} to %c64 step %{{.*}} {
// FORWARD-NEXT: %[[ALL:.*]] = memref.load %[[LANES]][%[[T2]]]
// FORWARD-NEXT: %[[WL:.*]]:2 = affine.delinearize_index %[[T2]] into (2, 32)
// FORWARD-NEXT: %[[ROW:.*]] = affine.apply #{{.*}}(%[[B]], %[[WL]]#0)
// FORWARD-NEXT: %[[R:.*]] = arith.minui %[[ROW]]
// FORWARD-NEXT: %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %c5
// FORWARD: arith.addf %{{.*}}, %[[ALL]]
// FORWARD-NOT: gpu.subgroup_reduce

// SHUFFLE-LABEL: func.func @warp_reduction
// SHUFFLE: scf.for %{{.*}} = %{{.*}} to %c3 step
// SHUFFLE: scf.for %[[J:.*]] = %{{.*}} to %c64 step %{{.*}} {
// SHUFFLE-NEXT: %[[TM:.*]] = arith.muli %[[J]], %c39 : index
// SHUFFLE-NEXT: %[[T:.*]] = arith.remui %[[TM]], %c64 : index
// SHUFFLE: memref.store %{{.*}}, %{{.*}}[%[[T]]]
// SHUFFLE: scf.for %[[J2:.*]] = %{{.*}} to %c64 step %{{.*}} {
// SHUFFLE-NEXT: %[[TM2:.*]] = arith.muli %[[J2]], %c39 : index
// SHUFFLE-NEXT: %[[T2:.*]] = arith.remui %[[TM2]], %c64 : index
// SHUFFLE-NEXT: memref.load %{{.*}}[%[[T2]]]
// SHUFFLE-NEXT: affine.delinearize_index %[[T2]] into (2, 32)
#wrow = affine_map<(d0, d1) -> (d0 * 2 + d1)>
func.func @warp_reduction(%x: memref<5x40xf32>, %s: memref<5xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c32 = arith.constant 32 : index
  %c40 = arith.constant 40 : index
  %zero = arith.constant -0.0 : f32
  scf.forall (%b) in (3) {
    scf.forall (%t) in (64) {
      %wl:2 = affine.delinearize_index %t into (2, 32) : index, index
      %row = affine.apply #wrow(%b, %wl#0)
      %r = arith.minui %row, %c4 : index
      %part = scf.for %k = %wl#1 to %c40 step %c32 iter_args(%acc = %zero) -> (f32) {
        %a = memref.load %x[%r, %k] : memref<5x40xf32>
        %n = arith.addf %acc, %a : f32
        scf.yield %n : f32
      }
      %all = gpu.subgroup_reduce add %part uniform : (f32) -> f32
      %in = arith.cmpi ult, %row, %c5 : index
      %first = arith.cmpi eq, %wl#1, %c0 : index
      %both = arith.andi %in, %first : i1
      scf.if %both {
        %o = memref.load %s[%r] : memref<5xf32>
        %n = arith.addf %o, %all : f32
        memref.store %n, %s[%r] : memref<5xf32>
      }
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// A column reduction's kernel: its workgroup buffer becomes one stack
// buffer at the entry, shared by the kernels of the function (both use the
// same one) and by every block; the barrier splits each block's threads in
// two loops, the second recomputing the index it uses.
// FORWARD-LABEL: func.func @barrier
// FORWARD-NEXT: %[[SMEM:.*]] = memref.alloca() : memref<8x32xf32>
// FORWARD-NOT: memref.alloca
// FORWARD: scf.for %{{.*}} = %{{.*}} to %c2 step
// FORWARD-NEXT: scf.for %[[T:.*]] = %{{.*}} to %c256 step
// FORWARD-NEXT: %[[WC:.*]]:2 = affine.delinearize_index %[[T]] into (8, 32)
// FORWARD-NEXT: memref.load
// FORWARD-NEXT: memref.store %{{.*}}, %[[SMEM]][%[[WC]]#0, %[[WC]]#1]
// FORWARD-NEXT: }
// FORWARD-NEXT: scf.for %[[T2:.*]] = %{{.*}} to %c256 step
// FORWARD-NEXT: %[[WC2:.*]]:2 = affine.delinearize_index %[[T2]] into (8, 32)
// FORWARD-NEXT: memref.load %[[SMEM]][%[[WC2]]#1, %[[WC2]]#0]
// FORWARD: scf.for
// FORWARD: memref.store %{{.*}}, %[[SMEM]]
// FORWARD-NOT: gpu.barrier
func.func @barrier(%x: memref<64x8xf32>, %y: memref<64x8xf32>) {
  scf.forall (%b) in (2) {
    %smem = memref.alloca() : memref<8x32xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (256) {
      %wc:2 = affine.delinearize_index %t into (8, 32) : index, index
      %v = memref.load %x[%wc#1, %wc#0] : memref<64x8xf32>
      memref.store %v, %smem[%wc#0, %wc#1] : memref<8x32xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %u = memref.load %smem[%wc#1, %wc#0] : memref<8x32xf32, #gpu.address_space<workgroup>>
      memref.store %u, %y[%wc#1, %wc#0] : memref<64x8xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  scf.forall (%b) in (1) {
    %smem = memref.alloca() : memref<8x32xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (256) {
      %wc:2 = affine.delinearize_index %t into (8, 32) : index, index
      %v = memref.load %x[%wc#1, %wc#0] : memref<64x8xf32>
      memref.store %v, %smem[%wc#0, %wc#1] : memref<8x32xf32, #gpu.address_space<workgroup>>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// A value loaded before a barrier and used after it (a row chain's value
// of an output it did not write) is not recomputed, since the load might
// see another value then: each thread stores it in a buffer of one element
// per thread at the end of its phase and loads it back in the next.
// FORWARD-LABEL: func.func @loaded_across
// FORWARD: %[[KEPT:.*]] = memref.alloca() : memref<32xf32>
// FORWARD: scf.for %[[T0:.*]] = %c0 to %c32 step %c1 {
// FORWARD-NEXT: %[[V:.*]] = memref.load %arg0[%[[T0]]] : memref<32xf32>
// FORWARD-NEXT: memref.store %[[V]], %[[KEPT]][%[[T0]]] : memref<32xf32>
// FORWARD: scf.for %[[T1:.*]] = %c0 to %c32 step %c1 {
// FORWARD-NEXT: %[[W:.*]] = memref.load %[[KEPT]][%[[T1]]] : memref<32xf32>
// FORWARD-NEXT: memref.store %[[W]], %arg1[%[[T1]]] : memref<32xf32>
func.func @loaded_across(%x: memref<32xf32>, %y: memref<32xf32>) {
  scf.forall (%b) in (1) {
    scf.forall (%t) in (32) {
      %v = memref.load %x[%t] : memref<32xf32>
      gpu.barrier
      memref.store %v, %y[%t] : memref<32xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}
