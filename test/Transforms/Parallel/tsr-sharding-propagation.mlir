// RUN: tessera-opt %s -split-input-file --tsr-sharding-propagation -verify-diagnostics | FileCheck %s

// Megatron's MLP from the costs: the first matmul's input is whole, so its
// weight splits by columns (no communication); the second's input arrives
// split along its contracted dimension, so its weight splits by rows and its
// result is a pending sum, summed where the bias add (not linear in it)
// needs it whole. The biases follow their activations.
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {tsr.name = "x"}
// CHECK-SAME: {tsr.name = "w1", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\[\], \["tp"\]\]}}>}
// CHECK-SAME: {tsr.name = "b1", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\["tp"\]\]}}>}
// CHECK-SAME: {tsr.name = "w2", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\["tp"\], \[\]\]}}>}
// CHECK-SAME: %{{[^:]*}}: tensor<8xf32> {tsr.name = "b2", tsr.role = #tsr.role<param>}
// CHECK: tsr.matmul %{{.*}} {tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \[\]\]}}>, #tsr.sharding<{{\[\[\], \["tp"\]\]}}>], tsr.sharding = [#tsr.sharding<{{\[\[\], \["tp"\]\]}}>]}
// CHECK: tsr.add %{{.*}} {tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \["tp"\]\]}}>, #tsr.sharding<{{\[\["tp"\]\]}}>], tsr.sharding = [#tsr.sharding<{{\[\[\], \["tp"\]\]}}>]}
// CHECK: tsr.relu %{{.*}} {tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \["tp"\]\]}}>], tsr.sharding = [#tsr.sharding<{{\[\[\], \["tp"\]\]}}>]}
// CHECK: tsr.matmul %{{.*}} {tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \["tp"\]\]}}>, #tsr.sharding<{{\[\["tp"\], \[\]\]}}>], tsr.sharding = [#tsr.sharding<{{\[\[\], \[\]\]}}, partial = ["tp"]>]}
// CHECK: tsr.add %{{.*}} {tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \[\]\]}}>, #tsr.sharding<{{\[\[\]\]}}>], tsr.sharding = [#tsr.sharding<{{\[\[\], \[\]\]}}>]}
// The rest runs whole and says nothing.
// CHECK: tsr.sub %{{[^{]*}} :
// CHECK: tsr.reduce_mean %{{.*}} {axes = array<i64: 0, 1>, keepdims = false} :
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @mlp(%x: tensor<4x8xf32> {tsr.name = "x"},
                 %w1: tensor<8x16xf32> {tsr.name = "w1", tsr.role = #tsr.role<param>},
                 %b1: tensor<16xf32> {tsr.name = "b1", tsr.role = #tsr.role<param>},
                 %w2: tensor<16x8xf32> {tsr.name = "w2", tsr.role = #tsr.role<param>},
                 %b2: tensor<8xf32> {tsr.name = "b2", tsr.role = #tsr.role<param>},
                 %t: tensor<4x8xf32> {tsr.name = "t", tsr.role = #tsr.role<label>}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
    %h = tsr.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    %hb = tsr.add %h, %b1 : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
    %a = tsr.relu %hb : tensor<4x16xf32>
    %y = tsr.matmul %a, %w2 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
    %yb = tsr.add %y, %b2 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %d = tsr.sub %yb, %t : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %sq = tsr.mul %d, %d : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %l = tsr.reduce_mean %sq {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Attention heads: the column-split projection [b, s, 8] reshapes into
// [b, s, 2 heads, 4] with the split on the heads factor (the major factor
// of the compound dimension), the transpose moves it, the batched matmul
// keeps it (a parallel batch factor) and softmax runs on its unsplit last
// axis; back to [b, s, 8] the output projection splits by rows.
// CHECK-LABEL: func.func @heads(
// CHECK: tsr.reshape %{{.*}} {tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \[\], \["tp"\]\]}}>], tsr.sharding = [#tsr.sharding<{{\[\[\], \[\], \["tp"\], \[\]\]}}>]}
// CHECK: tsr.transpose %{{.*}} tsr.sharding = [#tsr.sharding<{{\[\[\], \["tp"\], \[\], \[\]\]}}>]
// CHECK: tsr.matmul %{{.*}} tsr.sharding = [#tsr.sharding<{{\[\[\], \["tp"\], \[\], \[\]\]}}>]
// CHECK: tsr.softmax %{{.*}} tsr.sharding = [#tsr.sharding<{{\[\[\], \["tp"\], \[\], \[\]\]}}>]
// CHECK: tsr.reshape %{{.*}} tsr.sharding = [#tsr.sharding<{{\[\[\], \[\], \["tp"\]\]}}>]
// CHECK: tsr.matmul %{{.*}} tsr.sharding = [#tsr.sharding<{{\[\[\], \[\], \[\]\]}}, partial = ["tp"]>]
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @heads(%x: tensor<1x3x8xf32> {tsr.name = "x"},
                   %wq: tensor<8x8xf32> {tsr.name = "wq", tsr.role = #tsr.role<param>},
                   %wo: tensor<8x8xf32> {tsr.name = "wo", tsr.role = #tsr.role<param>}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
    %q = tsr.matmul %x, %wq : tensor<1x3x8xf32>, tensor<8x8xf32> -> tensor<1x3x8xf32>
    %h = tsr.reshape %q : tensor<1x3x8xf32> to tensor<1x3x2x4xf32>
    %t = tsr.transpose %h {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
    %kt = tsr.transpose %h {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x4x3xf32>
    %s = tsr.matmul %t, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
    %p = tsr.softmax %s {axis = 3 : i64} : tensor<1x2x3x3xf32>
    %c = tsr.matmul %p, %t : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
    %ct = tsr.transpose %c {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
    %m = tsr.reshape %ct : tensor<1x3x2x4xf32> to tensor<1x3x8xf32>
    %o = tsr.matmul %m, %wo : tensor<1x3x8xf32>, tensor<8x8xf32> -> tensor<1x3x8xf32>
    %l = tsr.reduce_sum %o {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<1x3x8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// An op without a sharding rule runs on whole values, and says so when
// that gathers a split operand.
// CHECK-LABEL: func.func @no_rule(
// CHECK: tsr.cumsum %{{.*}} {axis = 1 : i64, exclusive = false, reverse = false, tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \[\]\]}}>], tsr.sharding = [#tsr.sharding<{{\[\[\], \[\]\]}}>]}
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @no_rule(%x: tensor<4x8xf32> {tsr.name = "x"},
                     %w: tensor<8x8xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
    %h = tsr.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    // expected-warning @+1 {{has no sharding rule: it runs replicated, on operands gathered over 'tp'}}
    %c = tsr.cumsum %h {axis = 1 : i64, exclusive = false, reverse = false} : tensor<4x8xf32>
    %l = tsr.reduce_sum %c {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A lookup table splits by its rows, the vocabulary (its result a pending
// sum); the LM head splits by vocabulary columns, and the loss takes its
// classes split (its result a share of the loss): the logits are never
// gathered.
// CHECK-LABEL: func.func @vocabulary(
// CHECK-SAME: {tsr.name = "embed", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\["tp"\], \[\]\]}}>}
// CHECK-SAME: {tsr.name = "head", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\[\], \["tp"\]\]}}>}
// CHECK: tsr.gather %{{.*}} tsr.sharding = [#tsr.sharding<{{\[\[\], \[\], \[\]\]}}, partial = ["tp"]>]
// CHECK: tsr.softmax_cross_entropy_loss %{{.*}} {ignore_index = -1 : i64, tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \["tp"\], \[\]\]}}>, #tsr.sharding<{{\[\[\], \[\]\]}}>], tsr.sharding = [#tsr.sharding<[], partial = ["tp"]>]}
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @vocabulary(%tok: tensor<2x3xi64> {tsr.name = "tokens"},
                        %emb: tensor<8x4xf32> {tsr.name = "embed", tsr.role = #tsr.role<param>},
                        %head: tensor<4x8xf32> {tsr.name = "head", tsr.role = #tsr.role<param>},
                        %t: tensor<2x3xi64> {tsr.name = "labels", tsr.role = #tsr.role<label>}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
    %h = tsr.gather %emb, %tok {axis = 0 : i64} : (tensor<8x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    %a = tsr.tanh %h : tensor<2x3x4xf32>
    %z = tsr.matmul %a, %head : tensor<2x3x4xf32>, tensor<4x8xf32> -> tensor<2x3x8xf32>
    %zt = tsr.transpose %z {perm = array<i64: 0, 2, 1>} : (tensor<2x3x8xf32>) -> tensor<2x8x3xf32>
    %l = tsr.softmax_cross_entropy_loss %zt, %t {ignore_index = -1 : i64, reduction = #tsr.loss_reduction<mean>} : (tensor<2x8x3xf32>, tensor<2x3xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
