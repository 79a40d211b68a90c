// RUN: tessera-opt %s -split-input-file -verify-diagnostics

// One invalid use of every check of the backward-pass ops' verifiers.

func.func @data_rank(%dy: tensor<1x4x4xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{input must have rank 3, 4 or 5, got 2}}
  %0 = tsr.conv_backward_data %dy, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1 : i64} : (tensor<1x4x4xf32>, tensor<4x3x3xf32>) -> tensor<3x6xf32>
  return
}

// -----

func.func @data_ranks_differ(%dy: tensor<1x4x4xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{input, kernel and dy must have one rank, got 3, 4 and 3}}
  %0 = tsr.conv_backward_data %dy, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1 : i64} : (tensor<1x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x6xf32>
  return
}

// -----

func.func @data_element_types(%dy: tensor<1x4x4xf64>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{input, kernel and dy element types differ}}
  %0 = tsr.conv_backward_data %dy, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1 : i64} : (tensor<1x4x4xf64>, tensor<4x3x3xf32>) -> tensor<1x3x6xf32>
  return
}

// -----

func.func @data_attr_sizes(%dy: tensor<1x4x4xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{strides and dilations need 1 entries and pads 2}}
  %0 = tsr.conv_backward_data %dy, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1 : i64} : (tensor<1x4x4xf32>, tensor<4x3x3xf32>) -> tensor<1x3x6xf32>
  return
}

// -----

func.func @data_group(%dy: tensor<1x4x4xf32>, %w: tensor<4x1x3xf32>) {
  // expected-error @+1 {{group 2 must divide input channels 3 and output channels 4}}
  %0 = tsr.conv_backward_data %dy, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 2 : i64} : (tensor<1x4x4xf32>, tensor<4x1x3xf32>) -> tensor<1x3x6xf32>
  return
}

// -----

func.func @data_channels(%dy: tensor<1x4x4xf32>, %w: tensor<4x2x3xf32>) {
  // expected-error @+1 {{kernel has 2 channels per group, input needs 3}}
  %0 = tsr.conv_backward_data %dy, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1 : i64} : (tensor<1x4x4xf32>, tensor<4x2x3xf32>) -> tensor<1x3x6xf32>
  return
}

// -----

func.func @data_stride(%dy: tensor<1x4x4xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{strides and dilations must be positive and pads non-negative}}
  %0 = tsr.conv_backward_data %dy, %w {strides = array<i64: 0>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1 : i64} : (tensor<1x4x4xf32>, tensor<4x3x3xf32>) -> tensor<1x3x6xf32>
  return
}

// -----

func.func @data_dy_shape(%dy: tensor<1x4x5xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{dy must have the forward result shape [1, 4, 4], got 'tensor<1x4x5xf32>'}}
  %0 = tsr.conv_backward_data %dy, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1 : i64} : (tensor<1x4x5xf32>, tensor<4x3x3xf32>) -> tensor<1x3x6xf32>
  return
}

// -----

func.func @filter_dy_shape(%x: tensor<1x3x6xf32>, %dy: tensor<1x4x3xf32>) {
  // expected-error @+1 {{dy must have the forward result shape [1, 4, 2], got 'tensor<1x4x3xf32>'}}
  %0 = tsr.conv_backward_filter %x, %dy {strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1 : i64} : (tensor<1x3x6xf32>, tensor<1x4x3xf32>) -> tensor<4x3x3xf32>
  return
}

// -----

func.func @filter_int(%x: tensor<1x3x6xi32>, %dy: tensor<1x4x4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.conv_backward_filter %x, %dy {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1 : i64} : (tensor<1x3x6xi32>, tensor<1x4x4xi32>) -> tensor<4x3x3xi32>
  return
}

// -----

func.func @pool_result(%x: tensor<1x1x4xf32>, %dy: tensor<1x1x2xf32>) {
  // expected-error @+1 {{result must have the type of x, got 'tensor<1x1x4xf64>'}}
  %0 = tsr.max_pool_grad %x, %dy {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x1x4xf32>, tensor<1x1x2xf32>) -> tensor<1x1x4xf64>
  return
}

// -----

func.func @pool_dy_type(%x: tensor<1x1x4xf32>, %dy: tensor<1x1x2xf64>) {
  // expected-error @+1 {{dy must have the rank and element type of x}}
  %0 = tsr.max_pool_grad %x, %dy {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x1x4xf32>, tensor<1x1x2xf64>) -> tensor<1x1x4xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<1x4xf32>, %dy: tensor<1x2xf32>) {
  // expected-error @+1 {{x must have rank at least 3}}
  %0 = tsr.max_pool_grad %x, %dy {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x4xf32>, tensor<1x2xf32>) -> tensor<1x4xf32>
  return
}

// -----

func.func @pool_attr_sizes(%x: tensor<1x1x4xf32>, %dy: tensor<1x1x2xf32>) {
  // expected-error @+1 {{kernel_shape, strides and dilations need 1 entries and pads 2}}
  %0 = tsr.max_pool_grad %x, %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x1x4xf32>, tensor<1x1x2xf32>) -> tensor<1x1x4xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x1x4xf32>, %dy: tensor<1x1x2xf32>) {
  // expected-error @+1 {{kernel_shape, strides and dilations must be positive and pads non-negative}}
  %0 = tsr.max_pool_grad %x, %dy {kernel_shape = array<i64: 0>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x1x4xf32>, tensor<1x1x2xf32>) -> tensor<1x1x4xf32>
  return
}

// -----

func.func @pool_pads(%x: tensor<1x1x4xf32>, %dy: tensor<1x1x3xf32>) {
  // expected-error @+1 {{pads must be smaller than the window}}
  %0 = tsr.max_pool_grad %x, %dy {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 2, 0>, dilations = array<i64: 1>} : (tensor<1x1x4xf32>, tensor<1x1x3xf32>) -> tensor<1x1x4xf32>
  return
}

// -----

func.func @pool_dy_shape(%x: tensor<1x1x5xf32>, %dy: tensor<1x1x2xf32>) {
  // expected-error @+1 {{dy must have the forward result shape [1, 1, 3], got 'tensor<1x1x2xf32>'}}
  %0 = tsr.max_pool_grad %x, %dy {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, ceil_mode = true} : (tensor<1x1x5xf32>, tensor<1x1x2xf32>) -> tensor<1x1x5xf32>
  return
}

// -----

func.func @moe_gather_dot_hidden(%buf: tensor<4x2x3x8xf32>, %e: tensor<2x6x2xi64>, %dy: tensor<2x6x7xf32>) {
  // expected-error @+1 {{buffer 'tensor<4x2x3x8xf32>' and u 'tensor<2x6x7xf32>' must be [experts, groups, capacity, hidden] and [groups, tokens, hidden] of one element type}}
  %0 = tsr.moe_gather_dot %buf, %e, %e, %dy : (tensor<4x2x3x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<2x6x7xf32>) -> tensor<2x6x2xf32>
  return
}

// -----

func.func @moe_gather_dot_result(%buf: tensor<4x2x3x8xf32>, %e: tensor<2x6x2xi64>, %dy: tensor<2x6x8xf32>) {
  // expected-error @+1 {{result must be [groups, tokens, k] of u's type}}
  %0 = tsr.moe_gather_dot %buf, %e, %e, %dy : (tensor<4x2x3x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<2x6x8xf32>) -> tensor<2x6x3xf32>
  return
}
