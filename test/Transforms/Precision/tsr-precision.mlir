// RUN: tessera-opt %s --tsr-precision | FileCheck %s

// Each planned op gets results of its type and casts of its operands; a
// value is cast once per type, right after its definition (the parameter at
// the top); the return sees the loss in its own type again.

// CHECK-LABEL: func.func @main
// CHECK-SAME: -> tensor<4x3xf32>
func.func @main(%x: tensor<4x8xf32>,
                %w1: tensor<8x8xf32> {tsr.name = "w1", tsr.role = #tsr.role<param>},
                %b1: tensor<8xf32> {tsr.name = "b1", tsr.role = #tsr.role<param>})
    -> tensor<4x3xf32> {
  // CHECK-DAG: %[[XL:.*]] = tsr.cast %arg0 : tensor<4x8xf32> to tensor<4x8xbf16>
  // CHECK-DAG: %[[BL:.*]] = tsr.cast %arg2 : tensor<8xf32> to tensor<8xbf16>
  // CHECK-DAG: %[[WL:.*]] = tsr.cast %arg1 : tensor<8x8xf32> to tensor<8x8xbf16>
  // CHECK: %[[H:.*]] = tsr.matmul %[[XL]], %[[WL]] {{.*}} : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  %h = tsr.matmul %x, %w1 {tsr.precision = "bf16", tsr.reason = "r"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  // CHECK: %[[A:.*]] = tsr.add %[[H]], %[[BL]] {{.*}} : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
  // The f32 copy the model's cast below reads, made once, after %a.
  // CHECK: %[[AF:.*]] = tsr.cast %[[A]] : tensor<4x8xbf16> to tensor<4x8xf32>
  %a = tsr.add %h, %b1 {tsr.precision = "bf16", tsr.reason = "r"} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // The same parameter used again: the same working copy.
  // CHECK: %[[H2:.*]] = tsr.matmul %[[A]], %[[WL]]
  %h2 = tsr.matmul %a, %w1 {tsr.precision = "bf16", tsr.reason = "r"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  // CHECK: %[[H2F:.*]] = tsr.cast %[[H2]] : tensor<4x8xbf16> to tensor<4x8xf32>
  // CHECK: %[[P:.*]] = tsr.softmax %[[H2F]] {{.*}} : tensor<4x8xf32>
  %p = tsr.softmax %h2 {axis = 1 : i64, tsr.precision = "f32", tsr.reason = "r"} : tensor<4x8xf32>
  // An op outside the plan (the model's own cast) reads f32 again.
  // CHECK: %[[PL:.*]] = tsr.cast %[[P]] : tensor<4x8xf32> to tensor<4x8xbf16>
  // CHECK: tsr.cast %[[AF]] : tensor<4x8xf32> to tensor<4x8xf64>
  %d = tsr.cast %a : tensor<4x8xf32> to tensor<4x8xf64>
  %s = tsr.slice %p {starts = array<i64: 0, 0>, limits = array<i64: 4, 3>, steps = array<i64: 1, 1>, tsr.precision = "bf16", tsr.reason = "r"} : (tensor<4x8xf32>) -> tensor<4x3xf32>
  // CHECK: %[[S:.*]] = tsr.slice %[[PL]] {{.*}} -> tensor<4x3xbf16>
  // CHECK: %[[R:.*]] = tsr.cast %[[S]] : tensor<4x3xbf16> to tensor<4x3xf32>
  // CHECK: return %[[R]] : tensor<4x3xf32>
  return %s : tensor<4x3xf32>
}
