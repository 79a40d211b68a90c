// RUN: tessera-opt %s -split-input-file | tessera-opt | FileCheck %s

// CHECK-LABEL: func @elementwise
func.func @elementwise(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: tsr.add %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %0 = tsr.add %x, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: tsr.exp
  %1 = tsr.exp %0 : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
