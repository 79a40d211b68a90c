// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// #tsr.sharding round-trips on arguments and ops.
// CHECK-LABEL: func.func @layouts(
// CHECK-SAME: tsr.sharding = #tsr.sharding<{{\[\[\], \["dp", "tp"\]\]}}>
// CHECK-SAME: tsr.sharding = #tsr.sharding<{{\[\["tp"\], \[\]\]}}>
// CHECK: tsr.sharding = [#tsr.sharding<{{\[\[\], \[\]\]}}, partial = ["tp"]>]
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>} {
  func.func @layouts(%x: tensor<4x8xf32> {tsr.sharding = #tsr.sharding<[[], ["dp", "tp"]]>},
                     %w: tensor<4x8xf32> {tsr.sharding = #tsr.sharding<[["tp"], []]>}) -> tensor<4x8xf32> {
    %y = tsr.add %x, %w {tsr.operand_shardings = [#tsr.sharding<[[], []]>, #tsr.sharding<[[], []]>], tsr.sharding = [#tsr.sharding<[[], []], partial = ["tp"]>]} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// -----

// In a partitioned function an argument is its block: 3 rows of the 6 a
// split over tp=2 makes, which a whole shape of 3 could not be.
// CHECK-LABEL: func.func @block(
// CHECK-SAME: attributes {tsr.partitioned = ["tp"]}
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @block(%x: tensor<3xf32> {tsr.sharding = #tsr.sharding<[["tp"]]>}) attributes {tsr.partitioned = ["tp"]} {
    return
  }
}

// -----

// A ZeRO shard (tsr.shards) is a flat piece of its tsr.global_shape, which
// the sharding describes: here of the block [3, 4] of a [6, 4] split over
// tp, sharded over dp.
// CHECK-LABEL: func.func @zero_shard_of_block(
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>} {
  func.func @zero_shard_of_block(%x: tensor<6xf32> {tsr.sharding = #tsr.sharding<[["tp"], []]>, tsr.shards = 2 : i64, tsr.global_shape = array<i64: 3, 4>}) -> (tensor<6xf32> {tsr.sharding = #tsr.sharding<[["tp"], []]>, tsr.shards = 2 : i64, tsr.global_shape = array<i64: 3, 4>}) attributes {tsr.partitioned = ["dp", "tp"]} {
    return %x : tensor<6xf32>
  }
}

// -----

// Outside a partitioned function the global shape is the whole tensor.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>} {
  // expected-error @+1 {{argument 0: dimension 1 (size 3) cannot be split into 2 equal blocks by #tsr.sharding<[[], ["tp"]]>}}
  func.func @zero_shard_misfit(%x: tensor<3xf32> {tsr.sharding = #tsr.sharding<[[], ["tp"]]>, tsr.shards = 2 : i64, tsr.global_shape = array<i64: 2, 3>}) {
    return
  }
}

// -----

// expected-error @+1 {{mesh axis 'tp' appears more than once in a sharding}}
func.func private @twice() attributes {x.s = #tsr.sharding<[["tp"], ["tp"]]>}

// -----

module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  // expected-error @+1 {{argument 0 has rank 2 but its sharding #tsr.sharding<[["tp"]]> has 1 dimensions}}
  func.func @rank(%x: tensor<4x8xf32> {tsr.sharding = #tsr.sharding<[["tp"]]>}) {
    return
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["tp"=4]>} {
  // expected-error @+1 {{argument 0: dimension 0 (size 6) cannot be split into 4 equal blocks by #tsr.sharding<[["tp"]]>}}
  func.func @blocks(%x: tensor<6xf32> {tsr.sharding = #tsr.sharding<[["tp"]]>}) {
    return
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  // expected-error @+1 {{argument 0: mesh axis "tp" of sharding #tsr.sharding<[["tp"]]> is not declared by #tsr.mesh<["dp"=2]>}}
  func.func @axis(%x: tensor<4xf32> {tsr.sharding = #tsr.sharding<[["tp"]]>}) {
    return
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @per_result(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{attribute 'tsr.sharding' must list one #tsr.sharding per result (1), got []}}
    %y = tsr.relu %x {tsr.sharding = []} : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @per_operand(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{attribute 'tsr.operand_shardings' must list one #tsr.sharding per operand (1), got [#tsr.sharding<[["tp"]]>, #tsr.sharding<[["tp"]]>]}}
    %y = tsr.relu %x {tsr.operand_shardings = [#tsr.sharding<[["tp"]]>, #tsr.sharding<[["tp"]]>]} : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
