// RUN: tessera-opt %s -split-input-file -verify-diagnostics

// One invalid use of every verifier and type-inference rule of tsr.

func.func @f0(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.exp %x : tensor<4xi32>
  return
}

// -----

func.func @f1(%x: tensor<?xf32>) {
  // expected-error @+1 {{must be statically shaped tensor}}
  %0 = tsr.neg %x : tensor<?xf32>
  return
}

// -----

func.func @f2(%x: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = tsr.not %x : tensor<4xf32>
  return
}

// -----

func.func @f3(%x: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::tsr::GeluApproximation to be one of: none, tanh}}
  // expected-error @+1 {{failed to parse Tsr_GeluApproximationAttr}}
  %0 = tsr.gelu %x {approximate = #tsr.gelu_approximation<erf>} : tensor<4xf32>
  return
}

// -----

func.func @f4(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires attribute 'alpha'}}
  %0 = "tsr.leaky_relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f5(%x: tensor<2x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand shapes do not broadcast}}
  %0 = tsr.add %x, %y : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @f6(%x: tensor<3xf32>, %y: tensor<3xi32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operands have different element types}}
  %0 = tsr.mul %x, %y : tensor<3xf32>, tensor<3xi32> -> tensor<3xf32>
  return
}

// -----

func.func @f7(%x: tensor<3xf32>, %y: tensor<3xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = tsr.less %x, %y : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @f8(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{on_true and on_false have different element types}}
  %0 = tsr.where %c, %x, %y : tensor<3xi1>, tensor<3xf32>, tensor<3xi64> -> tensor<3xf32>
  return
}

// -----

func.func @f9(%x: tensor<3xf32>) {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %0 = tsr.cast %x : tensor<3xf32> to tensor<4xi32>
  return
}

// -----

func.func @f10() {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{value must be a statically shaped tensor}}
  %0 = "tsr.constant"() {value = dense<1.0> : vector<2xf32>} : () -> tensor<2xf32>
  return
}

// -----

func.func @f11(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{contracting dimensions differ: 3 vs 4}}
  %0 = tsr.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @f12(%a: tensor<2x2x3xf32>, %b: tensor<4x3x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{batch dimensions do not broadcast}}
  %0 = tsr.matmul %a, %b : tensor<2x2x3xf32>, tensor<4x3x5xf32> -> tensor<4x2x5xf32>
  return
}

// -----

func.func @f13(%x: tensor<1x4x8x8xf32>, %w: tensor<6x3x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{group 4 must divide input channels 4 and output channels 6}}
  %0 = tsr.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<1x4x8x8xf32>, tensor<6x3x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @f14(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{strides and dilations need 2 entries and pads 4}}
  %0 = tsr.conv %x, %w {strides = array<i64: 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @f15(%x: tensor<1x4x2x2xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{kernel larger than padded input}}
  %0 = tsr.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x1x1xf32>
  return
}

// -----

func.func @f16(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{label 'j' has sizes 3 and 4}}
  %0 = tsr.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @f17(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{malformed equation 'ij,jk->ik' for 1 operands}}
  %0 = tsr.einsum %a {equation = "ij,jk->ik"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @f18(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{pads must be smaller than the window}}
  %0 = tsr.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 2, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x9x7xf32>
  return
}

// -----

func.func @f19(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{kernel_shape, strides and dilations need 2 entries and pads 4}}
  %0 = tsr.avg_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  return
}

// -----

func.func @f20(%x: tensor<2x3x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{scale, bias, mean and var must have shape [3]}}
  %0 = tsr.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

func.func @f21(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{scale and bias must broadcast to the normalized shape [4]}}
  %0 = tsr.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

func.func @f22(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = tsr.softmax %x {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @f23(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis -1 is out of range for rank 2}}
  %0 = tsr.log_softmax %x {axis = -1 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @f24(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axes must be sorted and distinct}}
  %0 = tsr.reduce_sum %x {axes = array<i64: 1, 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return
}

// -----

func.func @f25(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 3 is out of range for rank 2}}
  %0 = tsr.reduce_mean %x {axes = array<i64: 3>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @f26(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<2x1xf32>'}}
  %0 = tsr.reduce_max %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @f27(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range}}
  %0 = tsr.reduce_min %x {axes = array<i64: 2>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @f28(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axes must be sorted and distinct}}
  %0 = tsr.reduce_prod %x {axes = array<i64: 1, 1>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @f29(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 5 is out of range for rank 2}}
  %0 = tsr.argmax %x {axis = 5 : i64, keepdims = true, select_last_index = false} : (tensor<2x3xf32>) -> tensor<2x1xi64>
  return
}

// -----

func.func @f30(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 64-bit signless integer values}}
  %0 = tsr.argmin %x {axis = 1 : i64, keepdims = false, select_last_index = false} : (tensor<2x3xf32>) -> tensor<2xi32>
  return
}

// -----

func.func @f31(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = tsr.cumsum %x {axis = 2 : i64, exclusive = false, reverse = false} : tensor<2x3xf32>
  return
}

// -----

func.func @f32(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{k = 4 is out of range for dimension of size 3}}
  %0:2 = tsr.topk %x {k = 4 : i64, axis = 1 : i64, largest = true} : (tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  return
}

// -----

func.func @f33(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot reshape 'tensor<2x3xf32>' to 'tensor<5xf32>': element counts differ}}
  %0 = tsr.reshape %x : tensor<2x3xf32> to tensor<5xf32>
  return
}

// -----

func.func @f34(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{perm is not a permutation}}
  %0 = tsr.transpose %x {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @f35(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot broadcast 'tensor<2x3xf32>' to 'tensor<4x3xf32>'}}
  %0 = tsr.broadcast %x : tensor<2x3xf32> to tensor<4x3xf32>
  return
}

// -----

func.func @f36(%x: tensor<2x3xf32>, %y: tensor<2x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operands differ in dimension 1}}
  %0 = tsr.concat %x, %y {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @f37(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{step of dimension 1 is zero}}
  %0 = tsr.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 2, 3>, steps = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @f38(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{bounds of dimension 0 are out of range}}
  %0 = tsr.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 5, 3>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<5x3xf32>
  return
}

// -----

func.func @f39(%x: tensor<2x3xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = tsr.gather %x, %i {axis = 2 : i64} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<2x3x4xf32>
  return
}

// -----

func.func @f40(%x: tensor<2x3xf32>, %i: tensor<4xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = tsr.gather %x, %i {axis = 0 : i64} : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @f41(%x: tensor<2x3xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{indices must have the rank of data}}
  %0 = tsr.gather_elements %x, %i {axis = 0 : i64} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @f42(%x: tensor<2x3xf32>, %i: tensor<2x2xi64>, %u: tensor<2x2xf32>) {
  // expected-error @+2 {{expected ::mlir::tsr::ScatterReduction to be one of: none, add, mul, max, min}}
  // expected-error @+1 {{failed to parse Tsr_ScatterReductionAttr}}
  %0 = tsr.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = #tsr.scatter_reduction<sub>} : (tensor<2x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @f43(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{repeats has 1 entries for rank 2}}
  %0 = tsr.tile %x {repeats = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @f44(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{reflect pads of dimension 1 must be smaller than its size}}
  %0 = tsr.pad %x {pads = array<i64: 0, 3, 0, 0>, mode = #tsr.pad_mode<reflect>} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @f45(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{expected ::mlir::tsr::PadMode to be one of: constant, reflect, edge}}
  // expected-error @+1 {{failed to parse Tsr_PadModeAttr}}
  %0 = tsr.pad %x {pads = array<i64: 0, 1, 0, 0>, mode = #tsr.pad_mode<wrap>} : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @f46(%x: tensor<3xf32>) {
  // expected-error @+1 {{operand must have rank at least 2}}
  %0 = tsr.trilu %x {upper = true, k = 0 : i64} : tensor<3xf32>
  return
}

// -----

func.func @f47(%i: tensor<3xi64>) {
  // expected-error @+1 {{result shape must be [3, 4]}}
  %0 = tsr.one_hot %i {depth = 4 : i64, axis = -1 : i64, on_value = 1.0 : f64, off_value = 0.0 : f64} : (tensor<3xi64>) -> tensor<4x3xf32>
  return
}

// -----

func.func @f48(%x: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{ratio must be in [0, 1), got 1}}
  %0:2 = tsr.dropout %x {ratio = 1.0 : f64, seed = 1 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

func.func @dropout_offset(%x: tensor<4xf32>, %o: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{seed_offset must be a scalar, got 'tensor<2xi64>'}}
  %0:2 = tsr.dropout %x, %o {ratio = 0.5 : f64, seed = 1 : i64} : (tensor<4xf32>, tensor<2xi64>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

func.func @stop_gradient_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tsr.stop_gradient"(%x) : (tensor<4xf32>) -> tensor<4xf64>
  return
}

// -----

func.func @f49(%x: tensor<4x10xf32>, %t: tensor<5xi64>) {
  // expected-error @+1 {{target must have shape [4], got 'tensor<5xi64>'}}
  %0 = tsr.softmax_cross_entropy_loss %x, %t : (tensor<4x10xf32>, tensor<5xi64>) -> tensor<f32>
  return
}

// -----

func.func @f50(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+2 {{expected ::mlir::tsr::LossReduction to be one of: none, sum, mean}}
  // expected-error @+1 {{failed to parse Tsr_LossReductionAttr}}
  %0 = tsr.nll_loss %x, %t {reduction = #tsr.loss_reduction<max>} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @f51(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{loss must be 'tensor<4xf32>'}}
  %0 = tsr.nll_loss %x, %t {reduction = #tsr.loss_reduction<none>} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @moe_assign_rank(%e: tensor<6x2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{experts must be [groups, tokens, k], not 'tensor<6x2xi64>'}}
  %0:2 = tsr.moe_assign %e {num_experts = 4 : i64, capacity = 3 : i64} : (tensor<6x2xi64>) -> (tensor<6x2xi64>, tensor<4x1x3xi64>)
  return
}

// -----

func.func @moe_assign_k(%e: tensor<1x6x5xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{k = 5 choices per token exceed num_experts = 4}}
  %0:2 = tsr.moe_assign %e {num_experts = 4 : i64, capacity = 3 : i64} : (tensor<1x6x5xi64>) -> (tensor<1x6x5xi64>, tensor<4x1x3xi64>)
  return
}

// -----

func.func @moe_assign_capacity(%e: tensor<1x6x2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{num_experts (4) and capacity (0) must be positive}}
  %0:2 = tsr.moe_assign %e {num_experts = 4 : i64, capacity = 0 : i64} : (tensor<1x6x2xi64>) -> (tensor<1x6x2xi64>, tensor<4x1x0xi64>)
  return
}

// -----

func.func @moe_dispatch_sources(%x: tensor<2x6x8xf32>, %e: tensor<2x6x2xi64>, %src: tensor<4x2x2xi64>) {
  // expected-error @+1 {{sources must be [4, 2, 3] (experts, groups, capacity), not 'tensor<4x2x2xi64>'}}
  %0 = tsr.moe_dispatch %x, %e, %e, %src : (tensor<2x6x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<4x2x2xi64>) -> tensor<4x2x3x8xf32>
  return
}

// -----

func.func @moe_dispatch_hidden(%x: tensor<2x6x8xf32>, %e: tensor<2x6x2xi64>, %src: tensor<4x2x3xi64>) {
  // expected-error @+1 {{must agree on groups, hidden size and element type}}
  %0 = tsr.moe_dispatch %x, %e, %e, %src : (tensor<2x6x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<4x2x3xi64>) -> tensor<4x2x3x7xf32>
  return
}

// -----

func.func @moe_combine_slots(%b: tensor<4x2x3x8xf32>, %e: tensor<2x6x2xi64>, %s: tensor<2x6x1xi64>, %src: tensor<4x2x3xi64>) {
  // expected-error @+1 {{slots must have the type of experts}}
  %0 = tsr.moe_combine %b, %e, %s, %src : (tensor<4x2x3x8xf32>, tensor<2x6x2xi64>, tensor<2x6x1xi64>, tensor<4x2x3xi64>) -> tensor<2x6x8xf32>
  return
}

// -----

func.func @moe_combine_experts(%b: tensor<4x2x3x8xf32>, %e: tensor<2x5x2xi64>, %src: tensor<4x2x3xi64>) {
  // expected-error @+1 {{experts must be [2, 6, k], not 'tensor<2x5x2xi64>'}}
  %0 = tsr.moe_combine %b, %e, %e, %src : (tensor<4x2x3x8xf32>, tensor<2x5x2xi64>, tensor<2x5x2xi64>, tensor<4x2x3xi64>) -> tensor<2x6x8xf32>
  return
}

// -----

func.func @moe_combine_weights(%b: tensor<4x2x3x8xf32>, %e: tensor<2x6x2xi64>, %src: tensor<4x2x3xi64>, %w: tensor<2x6x2xf64>) {
  // expected-error @+1 {{weights must be 'tensor<2x6x2xf32>', not 'tensor<2x6x2xf64>'}}
  %0 = tsr.moe_combine %b, %e, %e, %src weights %w : (tensor<4x2x3x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<4x2x3xi64>, tensor<2x6x2xf64>) -> tensor<2x6x8xf32>
  return
}

// -----

func.func @moe_combine_buffer_rank(%b: tensor<4x3x8xf32>, %e: tensor<2x6x2xi64>, %src: tensor<4x2x3xi64>) {
  // expected-error @+1 {{the buffer must be [experts, groups, capacity, hidden], not 'tensor<4x3x8xf32>'}}
  %0 = tsr.moe_combine %b, %e, %e, %src : (tensor<4x3x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<4x2x3xi64>) -> tensor<2x6x8xf32>
  return
}
