// RUN: tessera-opt %s -split-input-file -verify-diagnostics

// Elementwise ops: an operand of an element type the op does not take,
// a result type that differs from the operand's, or shapes that do not
// broadcast. Complements invalid.mlir, which covers the other families.
func.func @log_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.log %x : tensor<4xi32>
  return
}

// -----

func.func @sqrt_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.sqrt %x : tensor<4xi32>
  return
}

// -----

func.func @reciprocal_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.reciprocal %x : tensor<4xi32>
  return
}

// -----

func.func @tanh_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.tanh %x : tensor<4xi32>
  return
}

// -----

func.func @sigmoid_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.sigmoid %x : tensor<4xi32>
  return
}

// -----

func.func @erf_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.erf %x : tensor<4xi32>
  return
}

// -----

func.func @sin_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.sin %x : tensor<4xi32>
  return
}

// -----

func.func @cos_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.cos %x : tensor<4xi32>
  return
}

// -----

func.func @tan_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.tan %x : tensor<4xi32>
  return
}

// -----

func.func @atan_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.atan %x : tensor<4xi32>
  return
}

// -----

func.func @floor_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.floor %x : tensor<4xi32>
  return
}

// -----

func.func @ceil_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.ceil %x : tensor<4xi32>
  return
}

// -----

func.func @round_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.round %x : tensor<4xi32>
  return
}

// -----

func.func @softplus_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.softplus %x : tensor<4xi32>
  return
}

// -----

func.func @softsign_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.softsign %x : tensor<4xi32>
  return
}

// -----

func.func @abs_result(%x: tensor<4xi32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tsr.abs"(%x) : (tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

func.func @sign_result(%x: tensor<4xi32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tsr.sign"(%x) : (tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

func.func @relu_result(%x: tensor<4xi32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tsr.relu"(%x) : (tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

func.func @identity_result(%x: tensor<4xi32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tsr.identity"(%x) : (tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

func.func @elu_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.elu %x {alpha = 1.0 : f64} : tensor<4xi32>
  return
}

// -----

func.func @selu_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.selu %x {alpha = 1.67 : f64, gamma = 1.05 : f64} : tensor<4xi32>
  return
}

// -----

func.func @hard_sigmoid_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.hard_sigmoid %x {alpha = 0.2 : f64, beta = 0.5 : f64} : tensor<4xi32>
  return
}

// -----

func.func @is_nan_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tsr.is_nan %x : tensor<4xi32> -> tensor<4xi1>
  return
}

// -----

func.func @clip_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tsr.clip"(%x) {min = 0.0 : f64} : (tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @sub_broadcast(%x: tensor<2x3xf32>, %y: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand shapes do not broadcast}}
  %0 = tsr.sub %x, %y : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @div_broadcast(%x: tensor<2x3xf32>, %y: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand shapes do not broadcast}}
  %0 = tsr.div %x, %y : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @pow_broadcast(%x: tensor<2x3xf32>, %y: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand shapes do not broadcast}}
  %0 = tsr.pow %x, %y : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @max_broadcast(%x: tensor<2x3xf32>, %y: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand shapes do not broadcast}}
  %0 = tsr.max %x, %y : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @min_broadcast(%x: tensor<2x3xf32>, %y: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand shapes do not broadcast}}
  %0 = tsr.min %x, %y : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @mod_broadcast(%x: tensor<2x3xf32>, %y: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand shapes do not broadcast}}
  %0 = tsr.mod %x, %y : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @prelu_broadcast(%x: tensor<2x3xf32>, %y: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand shapes do not broadcast}}
  %0 = tsr.prelu %x, %y : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @and_float(%x: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = tsr.and %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @or_float(%x: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = tsr.or %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @xor_float(%x: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = tsr.xor %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @equal_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = tsr.equal %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @less_equal_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = tsr.less_equal %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @greater_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = tsr.greater %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @greater_equal_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = tsr.greater_equal %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}
