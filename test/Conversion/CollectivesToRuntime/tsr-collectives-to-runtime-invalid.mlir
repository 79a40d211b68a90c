// RUN: tessera-opt %s -split-input-file --tsr-collectives-to-runtime -verify-diagnostics

func.func @on_tensors(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsrt.all_reduce' op is on tensors: tsr-collectives-to-runtime lowers the bufferized form (run one-shot-bufferize first)}}
  %r = tsrt.all_reduce ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>} -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Strided views are tsr-contiguous-collectives' to make contiguous.
func.func @strided(%x: memref<8x2xf32>, %z: memref<4x2xf32, strided<[4, 1]>>) {
  // expected-error @+1 {{'tsrt.reduce_scatter' op names a strided view ('memref<4x2xf32, strided<[4, 1]>>'): the runtime takes contiguous buffers (run tsr-contiguous-collectives first)}}
  tsrt.reduce_scatter ins(%x : memref<8x2xf32>) outs(%z : memref<4x2xf32, strided<[4, 1]>>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  return
}

// -----

// A call passes one stream.
func.func @two_tokens(%x: memref<4xf32>, %a: !gpu.async.token, %b: !gpu.async.token) {
  // expected-error @+1 {{'tsrt.all_reduce' op is queued after several tokens: the runtime takes one stream (run gpu-async-region, which chains one)}}
  %t = tsrt.all_reduce [%a, %b] ins(%x : memref<4xf32>) outs(%x : memref<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>} -> !gpu.async.token
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
