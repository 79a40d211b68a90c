// RUN: tessera-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tsr-cpu-fuse-elementwise))' | FileCheck %s

// The reshapes around a GEMM stay outside it: the matmul keeps its name so
// tsr-linalg-to-blas can call sgemm. (linalg-fuse-elementwise-ops would make
// it a 4-loop linalg.generic.)
// CHECK-LABEL: func.func @gemm_keeps_its_reshapes
// CHECK: %[[C:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]]
// CHECK: %[[M:.*]] = linalg.matmul ins(%[[C]], %{{.*}} : tensor<32x64xf32>, tensor<64x64xf32>)
// CHECK: tensor.expand_shape %[[M]]
// CHECK-NOT: linalg.generic
func.func @gemm_keeps_its_reshapes(%a: tensor<2x16x64xf32>, %w: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  %c = tensor.collapse_shape %a [[0, 1], [2]] : tensor<2x16x64xf32> into tensor<32x64xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %m = linalg.matmul ins(%c, %w : tensor<32x64xf32>, tensor<64x64xf32>) outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>
  %r = tensor.expand_shape %m [[0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xf32> into tensor<2x16x64xf32>
  return %r : tensor<2x16x64xf32>
}

// -----

// Elementwise chains still fuse into one generic.
// CHECK-LABEL: func.func @elementwise_chain_fuses
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
#id = affine_map<(d0) -> (d0)>
func.func @elementwise_chain_fuses(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%0, %x : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// An optimizer's moment is returned and read by the update: the second round
// fuses it into the update, which yields both (no recomputation, one loop).
// CHECK-LABEL: func.func @returned_producer_joins_its_reader
// CHECK: %[[F:.*]]:2 = linalg.generic
// CHECK-SAME: ins(%arg0, %arg1 : tensor<8xf32>, tensor<8xf32>)
// CHECK: arith.mulf
// CHECK: arith.subf
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[F]]#1, %[[F]]#0
#id1 = affine_map<(d0) -> (d0)>
func.func @returned_producer_joins_its_reader(%p: tensor<8xf32>, %m: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %m2 = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%m : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %p2 = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]}
      ins(%p, %m2 : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  return %p2, %m2 : tensor<8xf32>, tensor<8xf32>
}

// -----

// A returned result read by two loop nests, or by a reduction, stays its own
// loop nest: fusing it would compute it twice.
// CHECK-LABEL: func.func @returned_producer_with_two_readers_stays
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
#id2 = affine_map<(d0) -> (d0)>
#sum2 = affine_map<(d0) -> ()>
func.func @returned_producer_with_two_readers_stays(%m: tensor<8xf32>, %acc: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<f32>) {
  %e = tensor.empty() : tensor<8xf32>
  %m2 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel"]}
      ins(%m : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id2, #sum2], iterator_types = ["reduction"]}
      ins(%m2 : tensor<8xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %a, %o : f32
    linalg.yield %v : f32
  } -> tensor<f32>
  %n = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel"]}
      ins(%m2 : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  return %m2, %n, %s : tensor<8xf32>, tensor<8xf32>, tensor<f32>
}

// -----

// Nor does one read only by a reduction (whose loop nest would write the
// kept result once per reduced element).
// CHECK-LABEL: func.func @returned_producer_read_by_a_reduction_stays
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: linalg.generic
#id3 = affine_map<(d0) -> (d0)>
#sum3 = affine_map<(d0) -> ()>
func.func @returned_producer_read_by_a_reduction_stays(%m: tensor<8xf32>, %acc: tensor<f32>) -> (tensor<8xf32>, tensor<f32>) {
  %e = tensor.empty() : tensor<8xf32>
  %m2 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel"]}
      ins(%m : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id3, #sum3], iterator_types = ["reduction"]}
      ins(%m2 : tensor<8xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %a, %o : f32
    linalg.yield %v : f32
  } -> tensor<f32>
  return %m2, %s : tensor<8xf32>, tensor<f32>
}
