// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-launch))" --split-input-file | FileCheck %s

// A kernel of tsr-gpu-map becomes a gpu.launch of as many blocks and
// threads, whose ids replace the loops' induction variables; the temporary
// buffer moves to device memory.
#linear = affine_map<(d0, d1) -> (d0 * 256 + d1)>
// CHECK-LABEL: func.func @kernel
// CHECK: %[[TMP:.*]] = gpu.alloc () : memref<2000xf32>
// CHECK: %[[EIGHT:.*]] = arith.constant 8 : index
// CHECK: %[[WIDTH:.*]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[EIGHT]], {{.*}} threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[WIDTH]],
// CHECK-NEXT: %[[I:.*]] = affine.apply #{{.*}}(%[[B]], %[[T]])
// CHECK: memref.store %{{.*}}, %[[TMP]][%[[I]]]
// CHECK: gpu.terminator
// CHECK: gpu.dealloc %[[TMP]] : memref<2000xf32>
// CHECK-NOT: scf.forall
func.func @kernel(%x: memref<2000xf32>) {
  %c2000 = arith.constant 2000 : index
  %tmp = memref.alloc() : memref<2000xf32>
  scf.forall (%b) in (8) {
    scf.forall (%t) in (256) {
      %i = affine.apply #linear(%b, %t)
      %in = arith.cmpi ult, %i, %c2000 : index
      scf.if %in {
        %v = memref.load %x[%i] : memref<2000xf32>
        memref.store %v, %tmp[%i] : memref<2000xf32>
      }
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  memref.dealloc %tmp : memref<2000xf32>
  return
}

// -----

// A constant is copied to a device buffer where it is used and freed before
// the function returns.
memref.global "private" constant @bias : memref<3xf32> = dense<[1.0, 2.0, 3.0]>
// CHECK-LABEL: func.func @constant
// CHECK: %[[HOST:.*]] = memref.get_global @bias : memref<3xf32>
// CHECK: %[[DEV:.*]] = gpu.alloc () : memref<3xf32>
// CHECK: gpu.memcpy %[[DEV]], %[[HOST]] : memref<3xf32>, memref<3xf32>
// CHECK: gpu.launch
// CHECK: memref.load %[[DEV]]
// CHECK: gpu.dealloc %[[DEV]] : memref<3xf32>
// CHECK-NEXT: return
func.func @constant(%b: memref<3xf32>) {
  %g = memref.get_global @bias : memref<3xf32>
  scf.forall (%blk) in (1) {
    scf.forall (%t) in (3) {
      %v = memref.load %g[%t] : memref<3xf32>
      memref.store %v, %b[%t] : memref<3xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// The block's workgroup buffer becomes the launch's workgroup attribution
// (shared memory that the NVVM conversion allocates statically): an alloca
// in workgroup memory inside a kernel would not be.
// CHECK-LABEL: func.func @workgroup
// CHECK: gpu.launch
// CHECK-SAME: workgroup(%[[SMEM:.*]] : memref<8x32xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: memref.alloca
// CHECK: memref.store %{{.*}}, %[[SMEM]]
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: memref.load %[[SMEM]]
func.func @workgroup(%x: memref<256xf32>) {
  scf.forall (%b) in (1) {
    %smem = memref.alloca() : memref<8x32xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (256) {
      %wc:2 = affine.delinearize_index %t into (8, 32) : index, index
      %v = memref.load %x[%t] : memref<256xf32>
      memref.store %v, %smem[%wc#0, %wc#1] : memref<8x32xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %u = memref.load %smem[%wc#0, %wc#1] : memref<8x32xf32, #gpu.address_space<workgroup>>
      memref.store %u, %x[%t] : memref<256xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}
