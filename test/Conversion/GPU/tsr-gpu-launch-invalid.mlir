// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-launch))" --split-input-file --verify-diagnostics

// Only tsr-gpu-map's kernels have a launch.
func.func @not_a_kernel(%x: memref<8xf32>) {
  // expected-error @+1 {{tsr-gpu-launch: expected a kernel of tsr-gpu-map (a loop over #gpu.block<x> holding one over #gpu.thread<x>, static bounds)}}
  scf.forall (%t) in (8) {
    %v = memref.load %x[%t] : memref<8xf32>
    memref.store %v, %x[%t] : memref<8xf32>
  } {mapping = [#gpu.thread<x>]}
  return
}

// -----

// The host cannot touch device memory.
func.func @host_access(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{tsr-gpu-launch: the cuda target cannot run memref.store on the host: it reads or writes a buffer in device memory (run tsr-gpu-map first)}}
  memref.store %zero, %x[%c0] : memref<8xf32>
  return
}

// -----

// Workgroup memory allocated inside the thread loop would be a stack buffer
// mislabeled as shared memory after the NVVM conversion.
func.func @workgroup_in_thread(%x: memref<32xf32>) {
  scf.forall (%b) in (1) {
    scf.forall (%t) in (32) {
      // expected-error @+1 {{tsr-gpu-launch: workgroup memory must be allocated in a kernel's block loop, before its thread loop (it becomes the launch's workgroup attribution), not by memref.alloca}}
      %smem = memref.alloca() : memref<32xf32, #gpu.address_space<workgroup>>
      %v = memref.load %x[%t] : memref<32xf32>
      memref.store %v, %smem[%t] : memref<32xf32, #gpu.address_space<workgroup>>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}
