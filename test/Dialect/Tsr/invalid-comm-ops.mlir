// RUN: tessera-opt %s -split-input-file -verify-diagnostics

func.func @no_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{mesh axis 'dp' needs an enclosing op with a tsr.mesh attribute}}
  %y = tsr.all_reduce %x {mesh_axis = "dp"} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

module attributes {tsr.mesh = {dp = 2 : i64}} {
  func.func @unknown_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{mesh axis 'tp' is not declared with a positive size in {dp = 2 : i64}}}
    %y = tsr.all_reduce %x {mesh_axis = "tp"} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = {dp = 2 : i64}} {
  func.func @bad_reduction(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{unknown reduction 'avg' (expected sum, mean, max or min)}}
    %y = tsr.all_reduce %x {mesh_axis = "dp", reduction = "avg"} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = {dp = 2 : i64}} {
  func.func @integer_mean(%x: tensor<4xi64>) -> tensor<4xi64> {
    // expected-error @+1 {{reduction mean needs a float element type}}
    %y = tsr.all_reduce %x {mesh_axis = "dp", reduction = "mean"} : (tensor<4xi64>) -> tensor<4xi64>
    return %y : tensor<4xi64>
  }
}

// -----

module attributes {tsr.mesh = {dp = 2 : i64}} {
  func.func @scatter_blocks(%x: tensor<6xf32>) -> tensor<2xf32> {
    // expected-error @+1 {{dimension 0 of the operand (6) must be the axis size (2) times that of the result (2)}}
    %y = tsr.reduce_scatter %x {mesh_axis = "dp"} : (tensor<6xf32>) -> tensor<2xf32>
    return %y : tensor<2xf32>
  }
}

// -----

module attributes {tsr.mesh = {dp = 4 : i64}} {
  func.func @gather_blocks(%x: tensor<2x3xf32>) -> tensor<8x2xf32> {
    // expected-error @+1 {{operand and result differ beyond dimension 0}}
    %y = tsr.all_gather %x {mesh_axis = "dp"} : (tensor<2x3xf32>) -> tensor<8x2xf32>
    return %y : tensor<8x2xf32>
  }
}

// -----

module attributes {tsr.mesh = {dp = 4 : i64}} {
  func.func @all_to_all_blocks(%x: tensor<6xf32>) -> tensor<6xf32> {
    // expected-error @+1 {{dimension 0 must split into 4 equal blocks}}
    %y = tsr.all_to_all %x {mesh_axis = "dp"} : (tensor<6xf32>) -> tensor<6xf32>
    return %y : tensor<6xf32>
  }
}

// -----

module attributes {tsr.mesh = {dp = 2 : i64}} {
  func.func @root(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{root 2 is not a rank of axis 'dp' (size 2)}}
    %y = tsr.broadcast_from %x {mesh_axis = "dp", root = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = {dp = 2 : i64}} {
  func.func @shard_type(%x: tensor<4xf32>) -> tensor<2xf64> {
    // expected-error @+1 {{operand and result element types differ}}
    %y = tsr.local_shard %x {mesh_axis = "dp"} : (tensor<4xf32>) -> tensor<2xf64>
    return %y : tensor<2xf64>
  }
}

// -----

module attributes {tsr.mesh = {dp = 2 : i64}} {
  func.func @async_unwaited(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{is async: its result must have exactly one use, as the pending operand of a tsr.wait}}
    %y = tsr.all_reduce %x {async, mesh_axis = "dp"} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = {dp = 2 : i64}} {
  func.func @async_all_to_all(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{cannot be async (only all_reduce, reduce_scatter and all_gather can)}}
    %y = tsr.all_to_all %x {async, mesh_axis = "dp"} : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = {dp = 2 : i64}} {
  func.func @wait_sync(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = tsr.all_reduce %x {mesh_axis = "dp"} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{pending operand must be the result of an async collective}}
    %z = tsr.wait %y : (tensor<4xf32>) -> tensor<4xf32>
    return %z : tensor<4xf32>
  }
}
