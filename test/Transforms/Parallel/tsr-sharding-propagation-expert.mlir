// RUN: tessera-opt %s -split-input-file "--tsr-sharding-propagation=axis=ep expert-parallel=true" | FileCheck %s
// RUN: tessera-opt %s -split-input-file "--tsr-sharding-propagation=axis=ep expert-parallel=true" "--tsr-sharding-partition=all-to-all=ep" | FileCheck %s --check-prefix=PART

// Expert parallelism from the costs (GShard): the batch is split over ep
// (dimension 0 of the data, followed through the router, softmax, top-k and
// the routing ops), the dense router weight stays whole, the experts'
// weights and bias split along the expert dimension through the transposes
// and the reshape before their first use, and the tokens' buffer moves from
// split by group (dimension 1) to split by expert (dimension 0) before the
// experts and back before the combine: one all-to-all each way. The
// routing statistics (a one-hot count of the choices) stay split by group
// until the return sums them over ep.
// CHECK-LABEL: func.func @moe(
// CHECK-SAME: tsr.name = "router", tsr.role = #tsr.role<param>}
// CHECK-SAME: tsr.name = "fc1", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\["ep"\], \[\], \[\]\]}}>}
// CHECK-SAME: tsr.name = "b1", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\["ep"\], \[\]\]}}>}
// CHECK-SAME: tsr.name = "fc2", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\["ep"\], \[\], \[\]\]}}>}
// CHECK: tsr.matmul %{{.*}} {tsr.operand_shardings = [#tsr.sharding<{{\[\["ep"\], \[\], \[\]\]}}>, #tsr.sharding<{{\[\[\], \[\]\]}}>]
// CHECK: tsr.moe_assign {{.*}}tsr.sharding = [#tsr.sharding<{{\[\["ep"\], \[\], \[\]\]}}>, #tsr.sharding<{{\[\[\], \["ep"\], \[\]\]}}>]
// CHECK: tsr.moe_dispatch {{.*}}tsr.sharding = [#tsr.sharding<{{\[\[\], \["ep"\], \[\], \[\]\]}}>]
// CHECK: tsr.transpose %{{.*}} {perm = array<i64: 0, 2, 1>, tsr.operand_shardings = [#tsr.sharding<{{\[\["ep"\], \[\], \[\]\]}}>]
// CHECK: tsr.matmul %{{.*}} {tsr.operand_shardings = [#tsr.sharding<{{\[\["ep"\], \[\], \[\]\]}}>, #tsr.sharding<{{\[\["ep"\], \[\], \[\]\]}}>]
// CHECK: tsr.moe_combine {{.*}}tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \["ep"\], \[\], \[\]\]}}>
// CHECK: tsr.one_hot {{.*}}tsr.sharding = [#tsr.sharding<{{\[\["ep"\], \[\], \[\], \[\]\]}}>]
// CHECK: tsr.reduce_sum {{.*}}tsr.sharding = [#tsr.sharding<{{\[\[\]\]}}, partial = ["ep"]>]

// PART-LABEL: func.func @moe(
// PART-SAME: %{{.*}}: tensor<2x16x8xf32> {tsr.name = "fc1"
// PART-SAME: %{{.*}}: tensor<2x16xf32> {tsr.name = "b1"
// PART: tsr.local_shard %{{.*}} {mesh_axes = ["ep"]} : (tensor<4x6x8xf32>) -> tensor<2x6x8xf32>
// PART: tsr.moe_assign %{{.*}} : (tensor<2x6x2xi64>) -> (tensor<2x6x2xi64>, tensor<4x2x6xi64>)
// PART: tsr.moe_dispatch {{.*}} -> tensor<4x2x6x8xf32>
// PART: %[[A:.*]] = tsr.all_to_all %{{.*}} {mesh_axes = ["ep"], tsr.reason = "'tsr.matmul' needs 'tsr.reshape' split along dimension 0 rather than 1"} : (tensor<4x12x8xf32>) -> tensor<4x12x8xf32>
// PART: %[[R:.*]] = tsr.reshape %[[A]] : tensor<4x12x8xf32> to tensor<2x2x12x8xf32>
// PART: %[[T:.*]] = tsr.transpose %[[R]] {perm = array<i64: 1, 0, 2, 3>}
// PART: %[[M:.*]] = tsr.reshape %[[T]] : tensor<2x2x12x8xf32> to tensor<2x24x8xf32>
// PART: tsr.matmul %[[M]], %{{.*}} : tensor<2x24x8xf32>, tensor<2x8x16xf32> -> tensor<2x24x16xf32>
// PART: tsr.add %{{.*}} : tensor<2x24x16xf32>, tensor<2x1x16xf32> -> tensor<2x24x16xf32>
// PART: %[[B:.*]] = tsr.all_to_all %{{.*}} {dim = 1 : i64, mesh_axes = ["ep"], tsr.reason = "'tsr.moe_combine' needs 'tsr.reshape' split along dimension 1 rather than 0"} : (tensor<2x4x6x8xf32>) -> tensor<2x4x6x8xf32>
// PART: tsr.transpose %{{.*}} {perm = array<i64: 1, 0, 2, 3, 4>}
// PART: tsr.moe_combine {{.*}} : (tensor<4x2x6x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<4x2x6xi64>, tensor<2x6x2xf32>) -> tensor<2x6x8xf32>
// PART-NOT: tsr.all_gather
// PART: tsr.all_reduce %{{.*}} : (tensor<f32>) -> tensor<f32>
// PART: tsr.all_reduce %{{.*}} : (tensor<4xi64>) -> tensor<4xi64>
module attributes {tsr.mesh = #tsr.mesh<["ep"=2]>} {
  func.func @moe(%x: tensor<4x6x8xf32> {tsr.name = "x", tsr.role = #tsr.role<data>},
                 %wr: tensor<8x4xf32> {tsr.name = "router", tsr.role = #tsr.role<param>},
                 %w1: tensor<4x16x8xf32> {tsr.name = "fc1", tsr.role = #tsr.role<param>},
                 %b1: tensor<4x16xf32> {tsr.name = "b1", tsr.role = #tsr.role<param>},
                 %w2: tensor<4x8x16xf32> {tsr.name = "fc2", tsr.role = #tsr.role<param>}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<4xi64> {tsr.name = "moe.tokens_per_expert", tsr.role = #tsr.role<metric>}) {
    %logits = tsr.matmul %x, %wr : tensor<4x6x8xf32>, tensor<8x4xf32> -> tensor<4x6x4xf32>
    %p = tsr.softmax %logits {axis = 2 : i64} : tensor<4x6x4xf32>
    %g, %e = tsr.topk %p {axis = 2 : i64, k = 2 : i64, largest = true} : (tensor<4x6x4xf32>) -> (tensor<4x6x2xf32>, tensor<4x6x2xi64>)
    %slots, %sources = tsr.moe_assign %e {capacity = 6 : i64, num_experts = 4 : i64} : (tensor<4x6x2xi64>) -> (tensor<4x6x2xi64>, tensor<4x4x6xi64>)
    %buf = tsr.moe_dispatch %x, %e, %slots, %sources : (tensor<4x6x8xf32>, tensor<4x6x2xi64>, tensor<4x6x2xi64>, tensor<4x4x6xi64>) -> tensor<4x4x6x8xf32>
    %rows = tsr.reshape %buf : tensor<4x4x6x8xf32> to tensor<4x24x8xf32>
    %w1t = tsr.transpose %w1 {perm = array<i64: 0, 2, 1>} : (tensor<4x16x8xf32>) -> tensor<4x8x16xf32>
    %h = tsr.matmul %rows, %w1t : tensor<4x24x8xf32>, tensor<4x8x16xf32> -> tensor<4x24x16xf32>
    %b1r = tsr.reshape %b1 : tensor<4x16xf32> to tensor<4x1x16xf32>
    %hb = tsr.add %h, %b1r : tensor<4x24x16xf32>, tensor<4x1x16xf32> -> tensor<4x24x16xf32>
    %a = tsr.relu %hb : tensor<4x24x16xf32>
    %w2t = tsr.transpose %w2 {perm = array<i64: 0, 2, 1>} : (tensor<4x8x16xf32>) -> tensor<4x16x8xf32>
    %o = tsr.matmul %a, %w2t : tensor<4x24x16xf32>, tensor<4x16x8xf32> -> tensor<4x24x8xf32>
    %o4 = tsr.reshape %o : tensor<4x24x8xf32> to tensor<4x4x6x8xf32>
    %y = tsr.moe_combine %o4, %e, %slots, %sources weights %g : (tensor<4x4x6x8xf32>, tensor<4x6x2xi64>, tensor<4x6x2xi64>, tensor<4x4x6xi64>, tensor<4x6x2xf32>) -> tensor<4x6x8xf32>
    %t = tsr.tanh %y : tensor<4x6x8xf32>
    %l = tsr.reduce_sum %t {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<4x6x8xf32>) -> tensor<f32>
    %hot = tsr.one_hot %e {depth = 4 : i64, axis = -1 : i64, on_value = 1.0 : f64, off_value = 0.0 : f64} : (tensor<4x6x2xi64>) -> tensor<4x6x2x4xi64>
    %load = tsr.reduce_sum %hot {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<4x6x2x4xi64>) -> tensor<4xi64>
    return %l, %load : tensor<f32>, tensor<4xi64>
  }
}

// -----

// A loss needs its samples whole. The logits arrive split along the batch
// and are gathered; the labels arrive whole, and their reshape to one row
// per sample stays whole (splitting it would be free, but the loss would
// gather it straight back): only the logits are gathered.
// CHECK-LABEL: func.func @loss_rows(
// CHECK: tsr.reshape %{{.*}} {tsr.operand_shardings = [#tsr.sharding<{{\[\["ep"\], \[\], \[\]\]}}>], tsr.sharding = [#tsr.sharding<{{\[\["ep"\], \[\]\]}}>]} : tensor<4x6x8xf32> to tensor<24x8xf32>
// CHECK: tsr.reshape %{{[^{]*}} : tensor<4x6xi64> to tensor<24xi64>
// PART-LABEL: func.func @loss_rows(
// PART: tsr.all_gather
// PART-SAME: (tensor<12x8xf32>) -> tensor<24x8xf32>
// PART-NOT: tsr.all_gather
// PART: tsr.softmax_cross_entropy_loss
module attributes {tsr.mesh = #tsr.mesh<["ep"=2]>} {
  func.func @loss_rows(%x: tensor<4x6x8xf32> {tsr.name = "x", tsr.role = #tsr.role<data>},
                       %t: tensor<4x6xi64> {tsr.name = "labels", tsr.role = #tsr.role<label>}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
    %y = tsr.tanh %x : tensor<4x6x8xf32>
    %rows = tsr.reshape %y : tensor<4x6x8xf32> to tensor<24x8xf32>
    %labels = tsr.reshape %t : tensor<4x6xi64> to tensor<24xi64>
    %l = tsr.softmax_cross_entropy_loss %rows, %labels {reduction = #tsr.loss_reduction<mean>} : (tensor<24x8xf32>, tensor<24xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
