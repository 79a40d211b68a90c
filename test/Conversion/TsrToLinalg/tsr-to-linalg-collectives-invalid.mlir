// RUN: tessera-opt %s -split-input-file --tsr-to-linalg -verify-diagnostics

// The runtime's collectives carry the element types of tsr_dtype_t only.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @no_dtype(%x: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
    // expected-error @+2 {{'tsr.all_gather' op has element type 'f8E4M3FN', which the runtime's collectives do not carry}}
    // expected-error @+1 {{failed to legalize operation 'tsr.all_gather' that was explicitly marked illegal}}
    %g = tsr.all_gather %x {mesh_axes = ["dp"]} : (tensor<4xf8E4M3FN>) -> tensor<8xf8E4M3FN>
    %s = tsr.local_shard %g {mesh_axes = ["dp"]} : (tensor<8xf8E4M3FN>) -> tensor<4xf8E4M3FN>
    return %s : tensor<4xf8E4M3FN>
  }
}
