// RUN: tessera-opt %s --pass-pipeline="builtin.module(gpu.module(tsr-gpu-lower-subgroup-reduce))" --verify-diagnostics

// A value wider than a 64-bit shuffle has no lowering (tsr-gpu-map makes
// scalar reductions only).
gpu.module @kernels {
  gpu.func @wide(%x: memref<32xvector<3xf32>>) kernel {
    %t = gpu.thread_id x
    %v = memref.load %x[%t] : memref<32xvector<3xf32>>
    // expected-error @+1 {{tsr-gpu-lower-subgroup-reduce: no shuffle lowering for a subgroup reduction of 'vector<3xf32>'}}
    %s = gpu.subgroup_reduce add %v uniform : (vector<3xf32>) -> vector<3xf32>
    memref.store %s, %x[%t] : memref<32xvector<3xf32>>
    gpu.return
  }
}
