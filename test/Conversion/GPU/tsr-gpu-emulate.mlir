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
