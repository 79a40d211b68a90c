// RUN: tessera-opt %s -split-input-file --tsr-sharding-partition | FileCheck %s

// Each reshard the layouts ask for, on blocks of a ["dp"=2, "tp"=2] mesh:
// a split parameter becomes its block (its sharding says which), a pending
// sum is reduce-scattered where the next op wants it split and all-reduced
// where it wants it whole, a split value is all-gathered, a whole one cut
// locally; two uses of one layout share one reshard; the results are whole.
// CHECK-LABEL: func.func @reshards(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32> {tsr.name = "x"}
// CHECK-SAME: %[[W:.*]]: tensor<8x4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\[\], \["tp"\]\]}}>}
// CHECK-SAME: %[[V:.*]]: tensor<4x8xf32> {tsr.name = "v", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\["tp"\], \[\]\]}}>}
// CHECK-SAME: attributes {tsr.partitioned = ["dp", "tp"]}
// CHECK: %[[H:.*]] = tsr.matmul %[[X]], %[[W]] : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK: %[[P:.*]] = tsr.matmul %[[H]], %[[V]] : tensor<4x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[RS:.*]] = tsr.reduce_scatter %[[P]] {dim = 1 : i64, mesh_axes = ["tp"], tsr.reason = "'tsr.relu' takes the pending sum of 'tsr.matmul' split along dimension 1"} : (tensor<4x8xf32>) -> tensor<4x4xf32>
// CHECK: %[[R:.*]] = tsr.relu %[[RS]] : tensor<4x4xf32>
// CHECK: %[[AR:.*]] = tsr.all_reduce %[[P]] {mesh_axes = ["tp"]{{.*}}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[E:.*]] = tsr.exp %[[AR]] : tensor<4x8xf32>
// CHECK: %[[G:.*]] = tsr.all_gather %[[R]] {dim = 1 : i64, mesh_axes = ["tp"]{{.*}}} : (tensor<4x4xf32>) -> tensor<4x8xf32>
// CHECK: %[[S:.*]] = tsr.add %[[G]], %[[E]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[C:.*]] = tsr.local_shard %[[S]] {mesh_axes = ["dp", "tp"]} : (tensor<4x8xf32>) -> tensor<1x8xf32>
// CHECK: %[[T:.*]] = tsr.tanh %[[C]] : tensor<1x8xf32>
// CHECK: %[[U:.*]] = tsr.sigmoid %[[C]] : tensor<1x8xf32>
// CHECK: %[[TG:.*]] = tsr.all_gather %[[T]] {mesh_axes = ["dp", "tp"]{{.*}}} : (tensor<1x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[UG:.*]] = tsr.all_gather %[[U]] {mesh_axes = ["dp", "tp"]{{.*}}} : (tensor<1x8xf32>) -> tensor<4x8xf32>
// CHECK: return %[[TG]], %[[UG]] : tensor<4x8xf32>, tensor<4x8xf32>
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>} {
  func.func @reshards(%x: tensor<4x8xf32> {tsr.name = "x"},
                      %w: tensor<8x8xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<[[], ["tp"]]>},
                      %v: tensor<8x8xf32> {tsr.name = "v", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<[["tp"], []]>}) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %h = tsr.matmul %x, %w {tsr.operand_shardings = [#tsr.sharding<[[], []]>, #tsr.sharding<[[], ["tp"]]>], tsr.sharding = [#tsr.sharding<[[], ["tp"]]>]} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %p = tsr.matmul %h, %v {tsr.operand_shardings = [#tsr.sharding<[[], ["tp"]]>, #tsr.sharding<[["tp"], []]>], tsr.sharding = [#tsr.sharding<[[], []], partial = ["tp"]>]} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %r = tsr.relu %p {tsr.operand_shardings = [#tsr.sharding<[[], ["tp"]]>], tsr.sharding = [#tsr.sharding<[[], ["tp"]]>]} : tensor<4x8xf32>
    %e = tsr.exp %p {tsr.operand_shardings = [#tsr.sharding<[[], []]>], tsr.sharding = [#tsr.sharding<[[], []]>]} : tensor<4x8xf32>
    %s = tsr.add %r, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %t = tsr.tanh %s {tsr.operand_shardings = [#tsr.sharding<[["dp", "tp"], []]>], tsr.sharding = [#tsr.sharding<[["dp", "tp"], []]>]} : tensor<4x8xf32>
    %u = tsr.sigmoid %s {tsr.operand_shardings = [#tsr.sharding<[["dp", "tp"], []]>], tsr.sharding = [#tsr.sharding<[["dp", "tp"], []]>]} : tensor<4x8xf32>
    return %t, %u : tensor<4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// A function without sharding decisions is left as it is.
// CHECK-LABEL: func.func @untouched(
// CHECK-NOT: tsr.partitioned
// CHECK: tsr.relu
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @untouched(%x: tensor<4xf32> {tsr.name = "x"}) -> tensor<4xf32> {
    %r = tsr.relu %x : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

// A gather from a table split by rows looks up the rows this rank holds
// (this rank's first row from its block of a constant 0..7) and zeros the
// others; the loss over split classes all-reduces the maximum (without a
// gradient) and the sum of exponentials, and takes the target's score where
// this rank holds it: each rank's result is its share of the loss.
// CHECK-LABEL: func.func @vocabulary(
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<2x3xi64>
// CHECK-SAME: %[[EMB:[^:]*]]: tensor<4x4xf32> {tsr.name = "embed"
// CHECK: %[[RANGE:.*]] = tsr.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
// CHECK: %[[MINE:.*]] = tsr.local_shard %[[RANGE]] {mesh_axes = ["tp"]} : (tensor<8xi64>) -> tensor<4xi64>
// CHECK: %[[LOCAL:.*]] = tsr.sub %[[TOK]], %{{.*}} : tensor<2x3xi64>, tensor<i64> -> tensor<2x3xi64>
// CHECK: %[[HELD:.*]] = tsr.and
// CHECK: %[[IDX:.*]] = tsr.where %[[HELD]], %[[LOCAL]]
// CHECK: %[[ROWS:.*]] = tsr.gather %[[EMB]], %[[IDX]] {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK: %[[MASK:.*]] = tsr.reshape %[[HELD]] : tensor<2x3xi1> to tensor<2x3x1xi1>
// CHECK: %[[SHARE:.*]] = tsr.where %[[MASK]], %[[ROWS]]
// CHECK: tsr.all_reduce %[[SHARE]] {mesh_axes = ["tp"]{{.*}}} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[LMAX:.*]] = tsr.reduce_max %{{.*}} {axes = array<i64: 1>, keepdims = true} : (tensor<2x4x3xf32>) -> tensor<2x1x3xf32>
// CHECK: %[[GMAX:.*]] = tsr.all_reduce %[[LMAX]] {mesh_axes = ["tp"], reduction = #tsr.reduction<max>, tsr.reason = "vocabulary-parallel cross-entropy: each sample's largest score, over the classes every rank holds a block of"}
// CHECK: tsr.stop_gradient %[[GMAX]]
// CHECK: %[[LSUM:.*]] = tsr.reduce_sum %{{.*}} {axes = array<i64: 1>, keepdims = false} : (tensor<2x4x3xf32>) -> tensor<2x3xf32>
// CHECK: tsr.all_reduce %[[LSUM]] {mesh_axes = ["tp"]{{.*}}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: tsr.gather_elements %{{.*}} {axis = 1 : i64} : (tensor<2x4x3xf32>, tensor<2x1x3xi64>) -> tensor<2x1x3xf32>
// CHECK: tsr.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[LOSS:.*]] = tsr.div
// CHECK: %[[TOTAL:.*]] = tsr.all_reduce %[[LOSS]] {mesh_axes = ["tp"]{{.*}}} : (tensor<f32>) -> tensor<f32>
// CHECK: return %[[TOTAL]]
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @vocabulary(%tok: tensor<2x3xi64> {tsr.name = "tokens"}, %emb: tensor<8x4xf32> {tsr.name = "embed", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<[["tp"], []]>}, %head: tensor<4x8xf32> {tsr.name = "head", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<[[], ["tp"]]>}, %t: tensor<2x3xi64> {tsr.name = "labels", tsr.role = #tsr.role<label>}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
    %0 = tsr.gather %emb, %tok {axis = 0 : i64, tsr.operand_shardings = [#tsr.sharding<[["tp"], []]>, #tsr.sharding<[[], []]>], tsr.sharding = [#tsr.sharding<[[], [], []], partial = ["tp"]>]} : (tensor<8x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    %1 = tsr.tanh %0 {tsr.operand_shardings = [#tsr.sharding<[[], [], []]>], tsr.sharding = [#tsr.sharding<[[], [], []]>]} : tensor<2x3x4xf32>
    %2 = tsr.matmul %1, %head {tsr.operand_shardings = [#tsr.sharding<[[], [], []]>, #tsr.sharding<[[], ["tp"]]>], tsr.sharding = [#tsr.sharding<[[], [], ["tp"]]>]} : tensor<2x3x4xf32>, tensor<4x8xf32> -> tensor<2x3x8xf32>
    %3 = tsr.transpose %2 {perm = array<i64: 0, 2, 1>, tsr.operand_shardings = [#tsr.sharding<[[], [], ["tp"]]>], tsr.sharding = [#tsr.sharding<[[], ["tp"], []]>]} : (tensor<2x3x8xf32>) -> tensor<2x8x3xf32>
    %4 = tsr.softmax_cross_entropy_loss %3, %t {ignore_index = -1 : i64, tsr.operand_shardings = [#tsr.sharding<[[], ["tp"], []]>, #tsr.sharding<[[], []]>], tsr.sharding = [#tsr.sharding<[], partial = ["tp"]>]} : (tensor<2x8x3xf32>, tensor<2x3xi64>) -> tensor<f32>
    return %4 : tensor<f32>
  }
}

// -----

// An axis that moves from one dimension to another (here tp, from the
// hidden dimension of an embedding split by columns to the sequence, as
// sequence parallelism wants) stops splitting the first before it splits
// the second: a cut of the sequence first would leave each rank a
// different sequence block to gather hidden columns from.
// CHECK-LABEL: func.func @moves_axis(
// CHECK: %[[E:.*]] = tsr.exp %{{.*}} : tensor<2x8x2xf32>
// CHECK: %[[G:.*]] = tsr.all_gather %[[E]] {dim = 2 : i64, mesh_axes = ["tp"]{{.*}}} : (tensor<2x8x2xf32>) -> tensor<2x8x4xf32>
// CHECK: %[[C:.*]] = tsr.local_shard %[[G]] {dim = 1 : i64, mesh_axes = ["tp"]} : (tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
// CHECK: tsr.tanh %[[C]] : tensor<2x4x4xf32>
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @moves_axis(%x: tensor<2x8x4xf32> {tsr.name = "x"}) -> tensor<2x8x4xf32> {
    %e = tsr.exp %x {tsr.operand_shardings = [#tsr.sharding<[[], [], ["tp"]]>], tsr.sharding = [#tsr.sharding<[[], [], ["tp"]]>]} : tensor<2x8x4xf32>
    %t = tsr.tanh %e {tsr.operand_shardings = [#tsr.sharding<[[], ["tp"], []]>], tsr.sharding = [#tsr.sharding<[[], ["tp"], []]>]} : tensor<2x8x4xf32>
    return %t : tensor<2x8x4xf32>
  }
}
