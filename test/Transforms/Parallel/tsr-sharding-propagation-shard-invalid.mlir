// RUN: not tessera-opt %s "--tsr-sharding-propagation=shard=nothing=-" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not tessera-opt %s "--tsr-sharding-propagation=shard=w" 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not tessera-opt %s "--tsr-sharding-propagation=shard=w=tp" 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not tessera-opt %s "--tsr-sharding-propagation=shard=w=dp:-" 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not tessera-opt %s "--tsr-sharding-propagation=shard=w=-:tp" 2>&1 | FileCheck %s --check-prefix=BLOCKS

// NOMATCH: error: shard pin 'nothing=-' matches no parameter
// MALFORMED: error: malformed shard pin 'w' (expected GLOB=SPEC, e.g. fc1.weight=-:tp)
// RANK: error: shard pin 'w=tp' gives 1 dimensions to 'w' of rank 2
// AXIS: error: shard pin 'w=dp:-': each entry is '-' or the tensor-parallel axis 'tp', once
// BLOCKS: error: shard pin 'w=-:tp': dimension 1 of 'w' (size 3) does not split into 2 equal blocks
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>} {
  func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"},
                  %w: tensor<8x3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}) -> tensor<f32> {
    %y = tsr.matmul %x, %w : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
    %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
