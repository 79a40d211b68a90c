// RUN: tessera-opt %s --canonicalize | FileCheck %s

// The identity of a constant folds to the constant (ONNX exporters give each
// layer that shares a buffer its own Identity of it); of another value it
// stays (a named graph value).
// CHECK-LABEL: func.func @identity(
// CHECK-NEXT: %[[C:.*]] = tsr.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: %[[X:.*]] = tsr.identity %arg0 : tensor<2xf32>
// CHECK-NEXT: return %[[C]], %[[X]]
func.func @identity(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %c = tsr.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %a = tsr.identity %c : tensor<2xf32>
  %b = tsr.identity %x : tensor<2xf32>
  return %a, %b : tensor<2xf32>, tensor<2xf32>
}
