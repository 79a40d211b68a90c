// RUN: tessera-opt %s "--tsr-sharding-propagation=axis=ep expert-parallel=true" --tsr-sharding-propagation=axis=tp | FileCheck %s
// RUN: tessera-opt %s "--tsr-sharding-propagation=axis=ep expert-parallel=true" --tsr-sharding-propagation=axis=tp "--tsr-sharding-partition=all-to-all=ep" | FileCheck %s --check-prefix=PART

// Expert and tensor parallelism compose, one decision per axis: the second
// run (tp) adds its axis to the layouts the first (ep) wrote, the earlier
// axis major. Inside each expert block tp splits like Megatron's MLP: the
// first expert weight by its output features (through the transpose the
// layer reads it by, which stands for the parameter until its first use),
// the second by its input features, whose product is a pending sum over
// tp; the experts' first bias stays whole over tp (sliced locally), as
// biases follow the activations.
// CHECK-LABEL: func.func @moe(
// CHECK-SAME: tsr.name = "fc1", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\["ep"\], \["tp"\], \[\]\]}}>}
// CHECK-SAME: tsr.name = "b1", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\["ep"\], \[\]\]}}>}
// CHECK-SAME: tsr.name = "fc2", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\["ep"\], \[\], \["tp"\]\]}}>}
// CHECK: tsr.moe_dispatch {{.*}}tsr.sharding = [#tsr.sharding<{{\[\[\], \["ep"\], \[\], \[\]\]}}>]
// CHECK: tsr.matmul {{.*}}tsr.sharding = [#tsr.sharding<{{\[\["ep"\], \[\], \["tp"\]\]}}>]
// CHECK: tsr.matmul {{.*}}tsr.sharding = [#tsr.sharding<{{\[\["ep"\], \[\], \[\]\]}}, partial = ["tp"]>]
// CHECK: tsr.moe_combine {{.*}}tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \["ep"\], \[\], \[\]\]}}>

// Each rank holds a quarter of every expert weight: 2 of the 4 experts
// (ep), half of their hidden features (tp). The pending sum of the second
// expert matmul is all-reduced over tp before the combine's all-to-all
// over ep.
// PART-LABEL: func.func @moe(
// PART-SAME: %{{.*}}: tensor<2x8x8xf32> {tsr.name = "fc1"
// PART-SAME: %{{.*}}: tensor<2x16xf32> {tsr.name = "b1"
// PART-SAME: %{{.*}}: tensor<2x8x8xf32> {tsr.name = "fc2"
// PART: tsr.all_to_all %{{.*}} {mesh_axes = ["ep"]
// PART: tsr.matmul %{{.*}} : tensor<2x24x8xf32>, tensor<2x8x8xf32> -> tensor<2x24x8xf32>
// PART: tsr.local_shard %{{.*}} {dim = 2 : i64, mesh_axes = ["tp"]} : (tensor<2x1x16xf32>) -> tensor<2x1x8xf32>
// PART: tsr.matmul %{{.*}} : tensor<2x24x8xf32>, tensor<2x8x8xf32> -> tensor<2x24x8xf32>
// PART: tsr.all_reduce %{{.*}} {mesh_axes = ["tp"]
// PART-NEXT: tsr.all_to_all %{{.*}} {dim = 1 : i64, mesh_axes = ["ep"]
// PART: tsr.moe_combine
module attributes {tsr.mesh = #tsr.mesh<["ep"=2, "tp"=2]>} {
  func.func @moe(%x: tensor<4x6x8xf32> {tsr.name = "x", tsr.role = #tsr.role<data>},
                 %wr: tensor<8x4xf32> {tsr.name = "router", tsr.role = #tsr.role<param>},
                 %w1: tensor<4x16x8xf32> {tsr.name = "fc1", tsr.role = #tsr.role<param>},
                 %b1: tensor<4x16xf32> {tsr.name = "b1", tsr.role = #tsr.role<param>},
                 %w2: tensor<4x8x16xf32> {tsr.name = "fc2", tsr.role = #tsr.role<param>}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
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
    return %l : tensor<f32>
  }
}
