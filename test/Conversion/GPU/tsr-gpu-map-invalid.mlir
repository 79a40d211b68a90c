// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-map))" --split-input-file --verify-diagnostics

// The grid is sized at compile time.
#id = affine_map<(d0) -> (d0)>
func.func @dynamic(%x: memref<?xf32>, %y: memref<?xf32>) {
  // expected-error @+1 {{tsr-gpu-map: the GPU mapping needs static loop bounds}}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<?xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

// A value read from a buffer (device memory on the GPU) that the host then
// needs.
func.func @host_read(%x: memref<4xi64>, %y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{tsr-gpu-map: the GPU mapping cannot run memref.load on the host (it reads or writes a buffer, in device memory on the GPU) nor in a kernel (the host uses its result)}}
  %n64 = memref.load %x[%c0] : memref<4xi64>
  %n = arith.index_cast %n64 : i64 to index
  %v = memref.subview %y[0] [%n] [1] : memref<?xf32> to memref<?xf32, strided<[1]>>
  return
}
