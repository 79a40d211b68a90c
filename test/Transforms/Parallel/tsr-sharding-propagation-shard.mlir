// RUN: tessera-opt %s "--tsr-sharding-propagation=shard=w1=tp:-" | FileCheck %s --check-prefix=ROWS
// RUN: tessera-opt %s "--tsr-sharding-propagation=shard=b*=-" -verify-diagnostics | FileCheck %s --check-prefix=WHOLE

// A pinned parameter keeps its layout and the propagation works around it:
// w1 pinned by rows makes the first matmul row-parallel (its input cut
// locally, its result a pending sum) and the second column-parallel.
// ROWS: {tsr.name = "w1", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\["tp"\], \[\]\]}}>}
// ROWS: {tsr.name = "w2", tsr.role = #tsr.role<param>, tsr.sharding = #tsr.sharding<{{\[\[\], \["tp"\]\]}}>}
// ROWS: tsr.matmul %{{.*}} tsr.sharding = [#tsr.sharding<{{\[\[\], \[\]\]}}, partial = ["tp"]>]

// Biases pinned whole: the add after the column-parallel matmul still runs
// on column blocks, so it takes b1's block, and says so.
// WHOLE: %[[B1:.*]]: tensor<16xf32> {tsr.name = "b1", tsr.role = #tsr.role<param>}
// WHOLE: tsr.add %{{.*}} {tsr.operand_shardings = [#tsr.sharding<{{\[\[\], \["tp"\]\]}}>, #tsr.sharding<{{\[\["tp"\]\]}}>]
module attributes {tsr.mesh = #tsr.mesh<["tp"=2]>} {
  func.func @mlp(%x: tensor<4x8xf32> {tsr.name = "x"},
                 %w1: tensor<8x16xf32> {tsr.name = "w1", tsr.role = #tsr.role<param>},
                 %b1: tensor<16xf32> {tsr.name = "b1", tsr.role = #tsr.role<param>},
                 %w2: tensor<16x8xf32> {tsr.name = "w2", tsr.role = #tsr.role<param>}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
    %h = tsr.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    // expected-warning @+1 {{uses 'b1' as #tsr.sharding<[["tp"]]> but it is pinned to #tsr.sharding<[[]]>: it is resharded here}}
    %hb = tsr.add %h, %b1 : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
    %a = tsr.relu %hb : tensor<4x16xf32>
    %y = tsr.matmul %a, %w2 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
    %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
