// RUN: tessera-opt %s -split-input-file "--tsr-layer-plan=min-ops=2 min-layers=2" | FileCheck %s
// RUN: tessera-opt %s -split-input-file --tsr-layer-plan=min-ops=2 | FileCheck %s --check-prefix=DEFAULT
// RUN: tessera-opt %s -split-input-file "--tsr-layer-plan=min-layers=2" | FileCheck %s --check-prefix=DEFAULT

// Three copies of (matmul, relu) between an input op and a head: each copy
// is a layer; what is before and after is in none. With the default
// min-layers=4 three copies are too few to fold, with the default min-ops=8
// a layer of two ops too short to look for.
// CHECK-LABEL: func.func @main(
// CHECK: tsr.tanh %arg0 : tensor<4x8xf32>
// CHECK-NEXT: tsr.matmul %{{.*}}, %arg1 {tsr.layer = 0 : i64}
// CHECK-NEXT: tsr.relu %{{.*}} {tsr.layer = 0 : i64}
// CHECK-NEXT: tsr.matmul %{{.*}}, %arg2 {tsr.layer = 1 : i64}
// CHECK-NEXT: tsr.relu %{{.*}} {tsr.layer = 1 : i64}
// CHECK-NEXT: tsr.matmul %{{.*}}, %arg3 {tsr.layer = 2 : i64}
// CHECK-NEXT: tsr.relu %{{.*}} {tsr.layer = 2 : i64}
// CHECK-NEXT: tsr.reduce_sum %{{.*}} {axes = array<i64: 0, 1>, keepdims = false}
// DEFAULT-LABEL: func.func @main(
// DEFAULT-NOT: tsr.layer
func.func @main(%x: tensor<4x8xf32>,
                %w0: tensor<8x8xf32> {tsr.role = #tsr.role<param>},
                %w1: tensor<8x8xf32> {tsr.role = #tsr.role<param>},
                %w2: tensor<8x8xf32> {tsr.role = #tsr.role<param>}) -> tensor<f32> {
  %in = tsr.tanh %x : tensor<4x8xf32>
  %h0 = tsr.matmul %in, %w0 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %a0 = tsr.relu %h0 : tensor<4x8xf32>
  %h1 = tsr.matmul %a0, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %a1 = tsr.relu %h1 : tensor<4x8xf32>
  %h2 = tsr.matmul %a1, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %a2 = tsr.relu %h2 : tensor<4x8xf32>
  %s = tsr.reduce_sum %a2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Copies must read their operands alike: the third (add, relu) adds its
// input to itself where the others add a bias, so only the first two are
// layers.
// CHECK-LABEL: func.func @alike(
// CHECK: tsr.add %arg0, %arg1 {tsr.layer = 0 : i64}
// CHECK-NEXT: tsr.relu %{{.*}} {tsr.layer = 0 : i64}
// CHECK-NEXT: tsr.add %{{.*}}, %arg2 {tsr.layer = 1 : i64}
// CHECK-NEXT: tsr.relu %{{.*}} {tsr.layer = 1 : i64}
// CHECK-NEXT: tsr.add %[[A:.*]], %[[A]] : tensor<4x8xf32>
// CHECK-NEXT: tsr.relu %{{.*}} : tensor<4x8xf32>
func.func @alike(%x: tensor<4x8xf32>,
                 %b0: tensor<4x8xf32> {tsr.role = #tsr.role<param>},
                 %b1: tensor<4x8xf32> {tsr.role = #tsr.role<param>}) -> tensor<4x8xf32> {
  %h0 = tsr.add %x, %b0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a0 = tsr.relu %h0 : tensor<4x8xf32>
  %h1 = tsr.add %a0, %b1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a1 = tsr.relu %h1 : tensor<4x8xf32>
  %h2 = tsr.add %a1, %a1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a2 = tsr.relu %h2 : tensor<4x8xf32>
  return %a2 : tensor<4x8xf32>
}

// -----

// A differentiated function is left as it is.
// CHECK-LABEL: func.func @differentiated(
// CHECK-NOT: tsr.layer
func.func @differentiated(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a0 = tsr.relu %x : tensor<4x8xf32>
  %a1 = tsr.relu %a0 : tensor<4x8xf32>
  %a2 = tsr.relu %a1 {tsr.backward} : tensor<4x8xf32>
  %a3 = tsr.relu %a2 {tsr.backward} : tensor<4x8xf32>
  return %a3 : tensor<4x8xf32>
}
