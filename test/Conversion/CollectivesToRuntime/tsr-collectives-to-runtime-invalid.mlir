// RUN: tessera-opt %s -split-input-file --tsr-collectives-to-runtime -verify-diagnostics

func.func @on_tensors(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsrt.all_reduce' op is on tensors: tsr-collectives-to-runtime lowers the bufferized form (run one-shot-bufferize first)}}
  %r = tsrt.all_reduce ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>} -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

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

// -----

// The runtime's functions have fixed signatures.
func.func private @tsrt_wait(!llvm.ptr)

func.func @declared_otherwise(%x: memref<4xf32>) {
  tsrt.all_reduce async ins(%x : memref<4xf32>) outs(%x : memref<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  // expected-error @+2 {{'tsrt.wait' op needs the runtime function @tsrt_wait of type '(!llvm.ptr, !llvm.ptr) -> ()', but the module declares it as '(!llvm.ptr) -> ()'}}
  // expected-error @+1 {{failed to legalize operation 'tsrt.wait' that was explicitly marked illegal}}
  tsrt.wait outs(%x : memref<4xf32>)
  return
}

// -----

func.func @transfer_on_tensors(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tsr.offload_start' op is on tensors: tsr-collectives-to-runtime lowers the bufferized form (run one-shot-bufferize first)}}
  tsr.offload_start %x {transfer = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @transfer_strided(%x: memref<4x2xf32, strided<[4, 1]>>) {
  // expected-error @+1 {{'tsr.offload_start' op names a strided view ('memref<4x2xf32, strided<[4, 1]>>'): the runtime transfers contiguous buffers}}
  tsr.offload_start %x {transfer = 0 : i64} : memref<4x2xf32, strided<[4, 1]>>
  return
}
