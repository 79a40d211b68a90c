// RUN: tessera-opt %s -split-input-file -verify-diagnostics --tsr-batch-norm-statistics
// RUN: not tessera-opt %s -split-input-file --tsr-batch-norm-statistics=momentum=1.5 2>&1 | FileCheck %s --check-prefix=MOMENTUM
// MOMENTUM: error: batch-norm momentum must lie in [0, 1], got 1.5

// One set of running statistics shared by two batch_norms is refused.
func.func @shared(%x: tensor<2x3xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>,
                  %m: tensor<3xf32> {tsr.name = "m", tsr.statistics},
                  %v: tensor<3xf32> {tsr.name = "v", tsr.statistics}) -> tensor<2x3xf32> {
  %y = tsr.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // expected-error @+1 {{shares running statistics 'm' with another batch_norm; each needs its own}}
  %z = tsr.batch_norm %y, %s, %b, %m, %v {epsilon = 1.0e-05 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %z : tensor<2x3xf32>
}
