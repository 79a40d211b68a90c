// RUN: not tessera-opt %s -split-input-file --tsr-append-loss 2>&1 | FileCheck %s --check-prefix=AMBIGUOUS
// RUN: not tessera-opt %s -split-input-file "--tsr-append-loss=output=nope" 2>&1 | FileCheck %s --check-prefix=NO-OUTPUT
// RUN: not tessera-opt %s -split-input-file "--tsr-append-loss=output=y" 2>&1 | FileCheck %s --check-prefix=NOT-SCALAR
// RUN: not tessera-opt %s -split-input-file "--tsr-append-loss=loss=hinge" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tessera-opt %s -split-input-file "--tsr-append-loss=loss=mse" 2>&1 | FileCheck %s --check-prefix=WHICH-LOGITS
// RUN: not tessera-opt %s -split-input-file "--tsr-append-loss=loss=mse logits=nope" 2>&1 | FileCheck %s --check-prefix=NO-LOGITS
// RUN: not tessera-opt %s -split-input-file "--tsr-append-loss=loss=mse logits=s" 2>&1 | FileCheck %s --check-prefix=SCALAR-LOGITS
// RUN: not tessera-opt %s -split-input-file "--tsr-append-loss=loss=cross_entropy logits=idx" 2>&1 | FileCheck %s --check-prefix=INT-LOGITS
// RUN: not tessera-opt %s -split-input-file "--tsr-append-loss=loss=cross_entropy logits=y labels=x" 2>&1 | FileCheck %s --check-prefix=TAKEN

// Every error of tsr-append-loss, each from its own options on this model
// (and on the module with two public functions, whatever the options).

// AMBIGUOUS: error: cannot tell which output is the loss: 2 outputs are floating-point scalars among 'y' tensor<4x10xf32>, 's' tensor<f32>, 's2' tensor<f32>, 'idx' tensor<4xi64>; name one (--loss-output) or append a loss (--loss=cross_entropy|mse --logits=NAME)
// NO-OUTPUT: error: the model has no output named 'nope' (the loss output); its outputs are 'y' tensor<4x10xf32>, 's' tensor<f32>, 's2' tensor<f32>, 'idx' tensor<4xi64>
// NOT-SCALAR: error: loss output 'y' is not a floating-point scalar: 'tensor<4x10xf32>'
// UNKNOWN: error: unknown loss 'hinge' (supported: cross_entropy, mse)
// WHICH-LOGITS: error: the model has 4 outputs ('y' tensor<4x10xf32>, 's' tensor<f32>, 's2' tensor<f32>, 'idx' tensor<4xi64>); name the one the loss reads with --logits
// NO-LOGITS: error: the model has no output named 'nope' (--logits)
// SCALAR-LOGITS: error: --logits output 's' must be a floating-point tensor of rank >= 1, got 'tensor<f32>'
// INT-LOGITS: error: --logits output 'idx' must be a floating-point tensor of rank >= 1, got 'tensor<4xi64>'
// TAKEN: error: labels name 'x' is already an input or parameter of the model; choose another with --labels
func.func @main(%x: tensor<4x10xf32> {tsr.name = "x"}) -> (tensor<4x10xf32> {tsr.name = "y"}, tensor<f32> {tsr.name = "s"}, tensor<f32> {tsr.name = "s2"}, tensor<4xi64> {tsr.name = "idx"}) {
  %s = tsr.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x10xf32>) -> tensor<f32>
  %m = tsr.reduce_mean %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x10xf32>) -> tensor<f32>
  %i = tsr.argmax %x {axis = 1 : i64, keepdims = false, select_last_index = false} : (tensor<4x10xf32>) -> tensor<4xi64>
  return %x, %s, %m, %i : tensor<4x10xf32>, tensor<f32>, tensor<f32>, tensor<4xi64>
}

// -----

// AMBIGUOUS: error: tsr-append-loss expects exactly one public function, found 2
func.func @a(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
func.func @b(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
