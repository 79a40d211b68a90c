// RUN: tessera-opt %s -split-input-file -verify-diagnostics

func.func @no_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs an enclosing op with a tsr.mesh attribute}}
  %y = tsr.all_reduce %x {mesh_axes = ["dp"]} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @unknown_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{mesh axis 'tp' is not declared by #tsr.mesh<["dp"=2]>}}
    %y = tsr.all_reduce %x {mesh_axes = ["tp"]} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @bad_reduction(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+2 {{expected ::mlir::tsr::CollectiveReduction to be one of: sum, mean, max, min}}
    // expected-error @+1 {{failed to parse Tsr_CollectiveReductionAttr}}
    %y = tsr.all_reduce %x {mesh_axes = ["dp"], reduction = #tsr.reduction<avg>} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @integer_mean(%x: tensor<4xi64>) -> tensor<4xi64> {
    // expected-error @+1 {{reduction mean needs a float element type}}
    %y = tsr.all_reduce %x {mesh_axes = ["dp"], reduction = #tsr.reduction<mean>} : (tensor<4xi64>) -> tensor<4xi64>
    return %y : tensor<4xi64>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @scatter_blocks(%x: tensor<6xf32>) -> tensor<2xf32> {
    // expected-error @+1 {{dimension 0 of the operand (6) must be the group size (2) times that of the result (2)}}
    %y = tsr.reduce_scatter %x {mesh_axes = ["dp"]} : (tensor<6xf32>) -> tensor<2xf32>
    return %y : tensor<2xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=4]>} {
  func.func @gather_blocks(%x: tensor<2x3xf32>) -> tensor<8x2xf32> {
    // expected-error @+1 {{operand and result differ beyond dimension 0}}
    %y = tsr.all_gather %x {mesh_axes = ["dp"]} : (tensor<2x3xf32>) -> tensor<8x2xf32>
    return %y : tensor<8x2xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=4]>} {
  func.func @all_to_all_blocks(%x: tensor<6xf32>) -> tensor<6xf32> {
    // expected-error @+1 {{dimension 0 must exist and split into 4 equal blocks}}
    %y = tsr.all_to_all %x {mesh_axes = ["dp"]} : (tensor<6xf32>) -> tensor<6xf32>
    return %y : tensor<6xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @root(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{root 2 is not a rank of the group ["dp"] (size 2)}}
    %y = tsr.broadcast_from %x {mesh_axes = ["dp"], root = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @shard_type(%x: tensor<4xf32>) -> tensor<2xf64> {
    // expected-error @+1 {{operand and result element types differ}}
    %y = tsr.local_shard %x {mesh_axes = ["dp"]} : (tensor<4xf32>) -> tensor<2xf64>
    return %y : tensor<2xf64>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @async_unwaited(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{is async: its result must have exactly one use, as the pending operand of a tsr.wait}}
    %y = tsr.all_reduce %x {async, mesh_axes = ["dp"]} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @async_all_to_all(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{cannot be async (only all_reduce, reduce_scatter and all_gather can)}}
    %y = tsr.all_to_all %x {async, mesh_axes = ["dp"]} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @wait_sync(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = tsr.all_reduce %x {mesh_axes = ["dp"]} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{pending operand must be the result of an async collective}}
    %z = tsr.wait %y : (tensor<4xf32>) -> tensor<4xf32>
    return %z : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>} {
  func.func @axes_out_of_order(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{mesh axes must be distinct and in the mesh's order #tsr.mesh<["dp"=2, "tp"=2]>}}
    %y = tsr.all_reduce %x {mesh_axes = ["tp", "dp"]} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>} {
  func.func @no_axes(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{attribute 'mesh_axes' failed to satisfy constraint}}
    %y = tsr.all_reduce %x {mesh_axes = []} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>} {
  func.func @gather_dim_of_group(%x: tensor<4x2xf32>) -> tensor<4x4xf32> {
    // expected-error @+1 {{dimension 1 of the result (4) must be the group size (4) times that of the operand (2)}}
    %y = tsr.all_gather %x {dim = 1 : i64, mesh_axes = ["dp", "tp"]} : (tensor<4x2xf32>) -> tensor<4x4xf32>
    return %y : tensor<4x4xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @dim_out_of_range(%x: tensor<4xf32>) -> tensor<2xf32> {
    // expected-error @+1 {{dim 1 is not a dimension of a rank-1 tensor}}
    %y = tsr.reduce_scatter %x {dim = 1 : i64, mesh_axes = ["dp"]} : (tensor<4xf32>) -> tensor<2xf32>
    return %y : tensor<2xf32>
  }
}

// -----

// expected-error @+1 {{mesh axis 'dp' is declared twice}}
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "dp"=4]>} {
}

// -----

// expected-error @+1 {{mesh axis 'tp' must have a positive size, got 0}}
module attributes {tsr.mesh = #tsr.mesh<["tp"=0]>} {
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
  func.func @peer_out_of_range(%x: tensor<4xf32>) {
    // expected-error @+1 {{'tsr.send' op peer 2 is not a rank of the group ["pp"] (size 2)}}
    tsr.send %x {mesh_axes = ["pp"], peer = 2 : i64} : tensor<4xf32>
    return
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
  func.func @recv_unknown_axis() -> tensor<4xf32> {
    // expected-error @+1 {{'tsr.recv' op}}
    %r = tsr.recv {mesh_axes = ["ep"], peer = 0 : i64} : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

func.func @prefetch_both(%b: memref<4xf32>) {
  // expected-error @+1 {{'tsr.prefetch_start' op needs a result (on tensors) or an `into` buffer (on memrefs), not both}}
  %p = tsr.prefetch_start {transfer = 0 : i64} into %b : memref<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @prefetch_neither() {
  // expected-error @+1 {{'tsr.prefetch_start' op needs a result}}
  tsr.prefetch_start {transfer = 0 : i64}
  return
}

// -----

func.func @wait_other_transfer() -> tensor<4xf32> {
  %p = tsr.prefetch_start {transfer = 0 : i64} -> tensor<4xf32>
  // expected-error @+1 {{'tsr.prefetch_wait' op pending operand must be the result of the tsr.prefetch_start of transfer 1, and this op its one use}}
  %y = tsr.prefetch_wait %p {transfer = 1 : i64} : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @wait_not_prefetched(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.prefetch_wait' op pending operand must be the result of the tsr.prefetch_start of transfer 0}}
  %y = tsr.prefetch_wait %x {transfer = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @wait_type(%b: memref<4xf32>) -> tensor<8xf32> {
  %p = tsr.prefetch_start {transfer = 0 : i64} -> tensor<4xf32>
  // expected-error @+1 {{'tsr.prefetch_wait' op on a tensor returns it: the result type must equal the pending operand's type}}
  %y = tsr.prefetch_wait %p {transfer = 0 : i64} : tensor<4xf32> -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @negative_transfer(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tsr.offload_start' op attribute 'transfer' failed to satisfy constraint}}
  tsr.offload_start %x {transfer = -1 : i64} : tensor<4xf32>
  return
}

// -----

func.func @queued_tensor(%x: tensor<4xf32>) {
  %t = gpu.wait async
  // expected-error @+1 {{'tsr.offload_start' op is queued on a stream (async dependencies or a token) only on memrefs}}
  tsr.offload_start [%t] %x {transfer = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @queued_prefetch_tensor() {
  %t = gpu.wait async
  // expected-error @+1 {{'tsr.prefetch_start' op is queued on a stream (async dependencies) only into a memref}}
  %p = tsr.prefetch_start [%t] {transfer = 0 : i64} -> tensor<4xf32>
  return
}
