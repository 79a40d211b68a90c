// RUN: tessera-opt %s -split-input-file --tsr-sharding-partition | FileCheck %s

// Each reshard the layouts ask for, on blocks of a ["dp"=2, "tp"=2] mesh:
// a split parameter becomes its block (with its global shape), a pending
// sum is reduce-scattered where the next op wants it split and all-reduced
// where it wants it whole, a split value is all-gathered, a whole one cut
// locally; two uses of one layout share one reshard; the results are whole.
// CHECK-LABEL: func.func @reshards(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32> {tsr.name = "x"}
// CHECK-SAME: %[[W:.*]]: tensor<8x4xf32> {tsr.global_shape = array<i64: 8, 8>, tsr.name = "w", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\[\], \["tp"\]\]}}>}
// CHECK-SAME: %[[V:.*]]: tensor<4x8xf32> {tsr.global_shape = array<i64: 8, 8>, tsr.name = "v", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\["tp"\], \[\]\]}}>}
// CHECK-SAME: attributes {tsr.partitioned = ["dp", "tp"]}
// CHECK: %[[H:.*]] = tsr.matmul %[[X]], %[[W]] : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK: %[[P:.*]] = tsr.matmul %[[H]], %[[V]] : tensor<4x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[RS:.*]] = tsr.reduce_scatter %[[P]] {dim = 1 : i64, mesh_axes = ["tp"]} : (tensor<4x8xf32>) -> tensor<4x4xf32>
// CHECK: %[[R:.*]] = tsr.relu %[[RS]] : tensor<4x4xf32>
// CHECK: %[[AR:.*]] = tsr.all_reduce %[[P]] {mesh_axes = ["tp"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[E:.*]] = tsr.exp %[[AR]] : tensor<4x8xf32>
// CHECK: %[[G:.*]] = tsr.all_gather %[[R]] {dim = 1 : i64, mesh_axes = ["tp"]} : (tensor<4x4xf32>) -> tensor<4x8xf32>
// CHECK: %[[S:.*]] = tsr.add %[[G]], %[[E]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[C:.*]] = tsr.local_shard %[[S]] {mesh_axes = ["dp", "tp"]} : (tensor<4x8xf32>) -> tensor<1x8xf32>
// CHECK: %[[T:.*]] = tsr.tanh %[[C]] : tensor<1x8xf32>
// CHECK: %[[U:.*]] = tsr.sigmoid %[[C]] : tensor<1x8xf32>
// CHECK: %[[TG:.*]] = tsr.all_gather %[[T]] {mesh_axes = ["dp", "tp"]} : (tensor<1x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[UG:.*]] = tsr.all_gather %[[U]] {mesh_axes = ["dp", "tp"]} : (tensor<1x8xf32>) -> tensor<4x8xf32>
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
