// RUN: tessera-opt %s -split-input-file --tsr-contiguous-collectives -verify-diagnostics

// A strided destination is received into a temporary that the wait copies
// back: without a wait there is nowhere to copy it.
func.func @async_strided_without_wait(%x: memref<8x2xf32>, %z: memref<4x2xf32, strided<[4, 1]>>) {
  // expected-error @+1 {{'tsrt.reduce_scatter' op is async and writes a strided view ('memref<4x2xf32, strided<[4, 1]>>'), which it receives into a contiguous temporary that its tsrt.wait copies back, but no tsrt.wait of that buffer follows it in its block}}
  tsrt.reduce_scatter async ins(%x : memref<8x2xf32>) outs(%z : memref<4x2xf32, strided<[4, 1]>>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  return
}

// -----

func.func @wait_without_start(%z: memref<4x2xf32, strided<[4, 1]>>) {
  // expected-error @+1 {{'tsrt.wait' op waits on a strided view ('memref<4x2xf32, strided<[4, 1]>>') that no async tsrt collective before it in its block writes}}
  tsrt.wait outs(%z : memref<4x2xf32, strided<[4, 1]>>)
  return
}
