// RUN: tessera-opt %s --pass-pipeline="builtin.module(tsr-gpu-library-calls)" --verify-diagnostics

// Without a dependency there is no stream to queue the product on.
func.func @synchronous(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>) {
  // expected-error @+1 {{tsr-gpu-library-calls: expected an async op with one dependency, the stream it runs on (run gpu-async-region first)}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  return
}
