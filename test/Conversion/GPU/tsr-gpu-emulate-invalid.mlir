// RUN: not tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-emulate{order=sideways}))" --split-input-file 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-emulate))" --split-input-file --verify-diagnostics

// ORDER: error: tsr-gpu-emulate: order 'sideways' is not one of forward, reverse, shuffle
func.func @order() {
  return
}

// -----

// The threads of a kernel meet in a barrier or a subgroup reduction only
// at the top of their loop: in a branch not every thread would reach it.
func.func @branch(%c: i1) {
  scf.forall (%b) in (1) {
    scf.forall (%t) in (32) {
      scf.if %c {
        // expected-error @+1 {{tsr-gpu-emulate: gpu.barrier must be at the top of its kernel's thread loop, reached by every thread}}
        gpu.barrier
      }
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

func.func @partial_warp(%x: memref<48xf32>) {
  scf.forall (%b) in (1) {
    scf.forall (%t) in (48) {
      %v = memref.load %x[%t] : memref<48xf32>
      // expected-error @+1 {{tsr-gpu-emulate: a gpu.subgroup_reduce must reduce whole warps of 32 threads (the kernel has 48)}}
      %s = gpu.subgroup_reduce add %v uniform : (f32) -> f32
      memref.store %s, %x[%t] : memref<48xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A buffer that a thread makes before a barrier and uses after it is
// neither recomputed nor kept per thread.
func.func @buffer_across(%x: memref<32xf32>) {
  scf.forall (%b) in (1) {
    scf.forall (%t) in (32) {
      // expected-error @+1 {{tsr-gpu-emulate: a value that a thread uses after a gpu.barrier or gpu.subgroup_reduce must be a scalar or a vector, or come from pure ops (it is recomputed); this one is 'memref<1xf32>'}}
      %m = memref.alloca() : memref<1xf32>
      gpu.barrier
      %v = memref.load %m[%b] : memref<1xf32>
      memref.store %v, %x[%t] : memref<32xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}
