// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-split-reductions))" --split-input-file | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-split-reductions),one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},func.func(tsr-gpu-map))" --split-input-file | FileCheck %s --check-prefix=MAP

// The sum of squares of a 1024 x 1024 matrix, which tsr-gpu-map alone runs
// on one warp: its two reduction dimensions collapse into one of 2^20
// iterations, split into 512 chunks of 2048 (at most 4096 warps, at least
// 2048 iterations each); then one warp combines the 512 partials, from
// the original init.
// CHECK-LABEL: func.func @full
// CHECK-SAME: (%[[X:.*]]: tensor<1024x1024xf32>, %[[INIT:.*]]: tensor<f32>)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1]] : tensor<1024x1024xf32> into tensor<1048576xf32>
// CHECK: %[[CHUNKS:.*]] = tensor.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [512, 2048]
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<512xf32>)
// CHECK: %[[PART:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[CHUNKS]] : tensor<512x2048xf32>) outs(%[[ZERO]] : tensor<512xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%[[PART]] : tensor<512xf32>) outs(%[[INIT]] : tensor<f32>)
// MAP-LABEL: func.func @full
// 64 blocks of 8 warps: a warp per chunk.
// MAP: scf.forall (%{{.*}}) in (64)
// MAP: gpu.subgroup_reduce add
// MAP: {mapping = [#gpu.block<x>]}
// One block: one warp over the partials.
// MAP: scf.forall (%{{.*}}) in (1)
// MAP: gpu.subgroup_reduce add
func.func @full(%x: tensor<1024x1024xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                       iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<1024x1024xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %sum = arith.addf %acc, %sq : f32
    linalg.yield %sum : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A column reduction (a bias gradient over 32 x 512 positions, 64
// features): 2 blocks of 8 warps. The rows split into 64 chunks of 256, the
// partials' dimension outermost, so that both ops are column reductions:
// 64 x 2 blocks, then 2 blocks over the 64 partials of each feature.
// CHECK-LABEL: func.func @column
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<32x512x64xf32> into tensor<16384x64xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [64, 256, 64]
// CHECK: %[[PART:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}} : tensor<64x256x64xf32>) outs(%{{.*}} : tensor<64x64xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]} ins(%[[PART]] : tensor<64x64xf32>) outs(%{{.*}} : tensor<64xf32>)
// MAP-LABEL: func.func @column
// MAP: scf.forall (%{{.*}}) in (128)
// MAP: gpu.barrier
// MAP: {mapping = [#gpu.block<x>]}
// MAP: scf.forall (%{{.*}}) in (2)
// MAP: gpu.barrier
func.func @column(%x: tensor<32x512x64xf32>, %init: tensor<64xf32>) -> tensor<64xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>],
                       iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x : tensor<32x512x64xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sum = arith.addf %acc, %a : f32
    linalg.yield %sum : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

// Row reductions with few rows (a softmax's denominators over 131072
// classes, its maximum broadcast): 8 rows of 64 chunks of 2048, the
// partials of a row adjacent; the broadcast input keeps its map.
// CHECK-LABEL: func.func @rows
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [8, 64, 2048]
// CHECK: %[[PART:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<8x64x2048xf32>, tensor<8xf32>) outs(%{{.*}} : tensor<8x64xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[PART]] : tensor<8x64xf32>) outs(%{{.*}} : tensor<8xf32>)
// The maximum's partials start from its identity, -inf.
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x64xf32>)
// CHECK: linalg.generic {{.*}}ins(%{{.*}} : tensor<8x64x2048xf32>) outs(%{{.*}} : tensor<8x64xf32>)
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}}ins(%{{.*}} : tensor<8x64xf32>) outs(%{{.*}} : tensor<8xf32>)
// CHECK: arith.maximumf
func.func @rows(%x: tensor<8x131072xf32>, %m: tensor<8xf32>, %init: tensor<8xf32>,
                %big: tensor<8x131072xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<8x131072xf32>, tensor<8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %sum = arith.addf %acc, %e : f32
    linalg.yield %sum : f32
  } -> tensor<8xf32>
  // A maximum splits alike.
  %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                        iterator_types = ["parallel", "reduction"]}
      ins(%big : tensor<8x131072xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %v = arith.maximumf %acc, %a : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  return %r, %mx : tensor<8xf32>, tensor<8xf32>
}

// -----

// Left alone: enough warps already (4096 rows), rows too short for four
// chunks of 2048 (512 rows of 2048), too few elements to be worth a second
// kernel (4 rows of 65536, 2^18 elements), a length with no divisor from 4
// to the bound (a prime), an integer sum (tsr-gpu-map's warps take floats),
// a reduction whose two reduction dimensions are not contiguous in its
// input (they cannot collapse into one), and one whose body reads its
// reduction index (a cross-entropy's pick of the label's logit; the split
// would renumber the loops under linalg.index).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: tensor.expand_shape
// CHECK-NOT: tensor.collapse_shape
// CHECK: return
func.func @kept(%many: tensor<4096x4096xf32>, %short: tensor<512x2048xf32>,
                %small: tensor<4x65536xf32>,
                %prime: tensor<1048573xf32>, %ints: tensor<1048576xi32>,
                %strided: tensor<1024x8x1024xf32>,
                %rows: tensor<4096xf32>, %some: tensor<512xf32>,
                %few: tensor<4xf32>, %one: tensor<f32>, %int: tensor<i32>,
                %mid: tensor<8xf32>, %logits: tensor<8x131072xf32>,
                %labels: tensor<8xindex>, %picked: tensor<8xf32>)
    -> (tensor<4096xf32>, tensor<512xf32>, tensor<4xf32>, tensor<f32>,
        tensor<i32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%many : tensor<4096x4096xf32>) outs(%rows : tensor<4096xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4096xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%short : tensor<512x2048xf32>) outs(%some : tensor<512xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<512xf32>
  %5 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%small : tensor<4x65536xf32>) outs(%few : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                       iterator_types = ["reduction"]}
      ins(%prime : tensor<1048573xf32>) outs(%one : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %3 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                       iterator_types = ["reduction"]}
      ins(%ints : tensor<1048576xi32>) outs(%int : tensor<i32>) {
  ^bb0(%a: i32, %acc: i32):
    %s = arith.addi %acc, %a : i32
    linalg.yield %s : i32
  } -> tensor<i32>
  %4 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>, affine_map<(d0, d1, d2) -> (d2)>],
                       iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%strided : tensor<1024x8x1024xf32>) outs(%mid : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %6 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%logits, %labels : tensor<8x131072xf32>, tensor<8xindex>) outs(%picked : tensor<8xf32>) {
  ^bb0(%a: f32, %label: index, %acc: f32):
    %j = linalg.index 1 : index
    %hit = arith.cmpi eq, %j, %label : index
    %zero = arith.constant 0.0 : f32
    %v = arith.select %hit, %a, %zero : f32
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %0, %1, %5, %2, %3, %4, %6 : tensor<4096xf32>, tensor<512xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>, tensor<8xf32>, tensor<8xf32>
}
