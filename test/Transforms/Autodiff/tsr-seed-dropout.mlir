// RUN: tessera-opt %s -split-input-file --tsr-seed-dropout | FileCheck %s

// Every dropout without a seed offset reads the new rng.step argument.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<4x8xf32> {tsr.name = "x"}
// CHECK-SAME: %[[STEP:arg[0-9]+]]: tensor<i64> {tsr.name = "rng.step", tsr.role = #tsr.role<rng>})
// CHECK: tsr.dropout %[[X]], %[[STEP]] {ratio = 1.000000e-01 : f64, seed = 7 : i64}
// CHECK: tsr.dropout %{{.*}}, %[[STEP]] {ratio = 2.000000e-01 : f64, seed = 8 : i64}
func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"}) -> tensor<4x8xf32> {
  %y, %m = tsr.dropout %x {ratio = 0.1 : f64, seed = 7 : i64} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  %z, %n = tsr.dropout %y {ratio = 0.2 : f64, seed = 8 : i64} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  return %z : tensor<4x8xf32>
}

// -----

// Without dropout the function is unchanged.
// CHECK-LABEL: func.func @no_dropout(
// CHECK-SAME: %{{.*}}: tensor<4xf32>) -> tensor<4xf32>
func.func @no_dropout(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tsr.relu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
