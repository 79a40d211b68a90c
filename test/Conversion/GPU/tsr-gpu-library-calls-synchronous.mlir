// RUN: tessera-opt %s -split-input-file --pass-pipeline="builtin.module(tsr-gpu-library-calls{synchronous=true})" --verify-diagnostics | FileCheck %s

// With synchronous=true (the CPU emulation of the CUDA target's program,
// where "device" memory is host memory and nothing is queued) a library op
// is a call with a null stream.
// CHECK-LABEL: func.func @attention
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @tsrt_gpu_attention(%[[NULL]],
// CHECK-NOT: tsrt.gpu_attention
func.func @attention(%q: memref<2x4x8x8xbf16>, %scale: memref<f32>, %o: memref<2x4x8x8xbf16>) {
  tsrt.gpu_attention ins(%q, %q, %q, %scale : memref<2x4x8x8xbf16>, memref<2x4x8x8xbf16>, memref<2x4x8x8xbf16>, memref<f32>) outs(%o : memref<2x4x8x8xbf16>) {q_layout = array<i64: 0, 1, 2, 3>, k_layout = array<i64: 0, 1, 2, 3>, v_layout = array<i64: 0, 1, 2, 3>, out_layout = array<i64: 0, 1, 2, 3>}
  return
}

// -----

// An op queued on a stream is not what it expects.
func.func @queued(%q: memref<2x4x8x8xbf16>, %scale: memref<f32>, %o: memref<2x4x8x8xbf16>) {
  %t0 = gpu.wait async
  // expected-error @+1 {{tsr-gpu-library-calls: expected a synchronous op (synchronous=true)}}
  %t1 = tsrt.gpu_attention [%t0] ins(%q, %q, %q, %scale : memref<2x4x8x8xbf16>, memref<2x4x8x8xbf16>, memref<2x4x8x8xbf16>, memref<f32>) outs(%o : memref<2x4x8x8xbf16>) {q_layout = array<i64: 0, 1, 2, 3>, k_layout = array<i64: 0, 1, 2, 3>, v_layout = array<i64: 0, 1, 2, 3>, out_layout = array<i64: 0, 1, 2, 3>} -> !gpu.async.token
  gpu.wait [%t1]
  return
}
