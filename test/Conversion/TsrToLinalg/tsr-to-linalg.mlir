// RUN: tessera-opt %s -tsr-to-linalg -split-input-file | FileCheck %s

// Broadcasting binary op: one generic, the size-1 operand reads index 0.
// Function inputs are the caller's: bufferization must not write into them.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[BC:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3xf32> {bufferization.writable = false}, %[[Y:[a-z0-9]+]]: tensor<1x3xf32> {bufferization.writable = false}
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[BC]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[Y]] : tensor<2x3xf32>, tensor<1x3xf32>) outs(%[[E]] : tensor<2x3xf32>)
// CHECK: arith.addf
// CHECK-NOT: tsr.
func.func @add_broadcast(%x: tensor<2x3xf32>, %y: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %0 = tsr.add %x, %y : tensor<2x3xf32>, tensor<1x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Unsigned element types become signless, with unsigned arithmetic.
// CHECK-LABEL: func.func @unsigned
// CHECK-SAME: (%{{[a-z0-9]+}}: tensor<4xi8> {{{.*}}}, %{{[a-z0-9]+}}: tensor<4xi8> {{{.*}}}) -> (tensor<4xi8>, tensor<4xi1>, tensor<4xf32>)
// CHECK: arith.divui
// CHECK: arith.cmpi ult
// CHECK: arith.uitofp
func.func @unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xi1>, tensor<4xf32>) {
  %0 = tsr.div %a, %b : tensor<4xui8>, tensor<4xui8> -> tensor<4xui8>
  %1 = tsr.less %a, %b : tensor<4xui8>, tensor<4xui8> -> tensor<4xi1>
  %2 = tsr.cast %a : tensor<4xui8> to tensor<4xf32>
  return %0, %1, %2 : tensor<4xui8>, tensor<4xi1>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @signed_int
// CHECK: arith.divsi
// CHECK: arith.remsi
// CHECK: arith.select
// CHECK: arith.maxsi
func.func @signed_int(%a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  %0 = tsr.div %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %1 = tsr.mod %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %2 = tsr.max %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0, %1, %2 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
}

// -----

// f16 transcendentals compute in f32; max/min propagate NaN.
// CHECK-LABEL: func.func @half
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: math.erf %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.maximumf
// CHECK: math.roundeven
func.func @half(%x: tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) {
  %0 = tsr.erf %x : tensor<4xf16>
  %1 = tsr.max %x, %x : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  %2 = tsr.round %x : tensor<4xf16>
  return %0, %1, %2 : tensor<4xf16>, tensor<4xf16>, tensor<4xf16>
}

// -----

// CHECK-LABEL: func.func @where_and_constant
// CHECK: %[[C:.*]] = arith.constant dense<[1, 2]> : tensor<2xi8>
// CHECK: linalg.generic
// CHECK: arith.select
// CHECK: return %[[C]]
func.func @where_and_constant(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<f32>) -> (tensor<2xui8>, tensor<2xf32>) {
  %k = tsr.constant dense<[1, 2]> : tensor<2xui8>
  %0 = tsr.where %c, %a, %b : tensor<2xi1>, tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  return %k, %0 : tensor<2xui8>, tensor<2xf32>
}

// -----

// A batched lhs against a 2-D rhs folds the batch into the rows.
// CHECK-LABEL: func.func @matmul_fold_batch
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x3x4xf32> {{.*}}, %[[B:[a-z0-9]+]]: tensor<4x5xf32>
// CHECK: %[[AC:.*]] = tensor.collapse_shape %[[A]] {{\[}}[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: %[[M:.*]] = linalg.matmul ins(%[[AC]], %[[B]] : tensor<6x4xf32>, tensor<4x5xf32>) outs(%[[Z]] : tensor<6x5xf32>)
// CHECK: tensor.expand_shape %[[M]] {{\[}}[0, 1], [2]] output_shape [2, 3, 5]
func.func @matmul_fold_batch(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = tsr.matmul %a, %b : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// 16-bit float contractions and sums accumulate in f32 and round once.
// CHECK-LABEL: func.func @bf16_accumulates_in_f32
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x5xf32>)
// CHECK: %[[M:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x3xbf16>, tensor<3x5xbf16>) outs(%[[Z]] : tensor<4x5xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[M]] : tensor<4x5xf32>) outs(%{{.*}} : tensor<4x5xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%{{.*}} : tensor<4x5xbf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @bf16_accumulates_in_f32(%a: tensor<4x3xbf16>, %b: tensor<3x5xbf16>) -> tensor<4xbf16> {
  %0 = tsr.matmul %a, %b : tensor<4x3xbf16>, tensor<3x5xbf16> -> tensor<4x5xbf16>
  %1 = tsr.reduce_sum %0 {axes = array<i64: 1>, keepdims = false} : (tensor<4x5xbf16>) -> tensor<4xbf16>
  return %1 : tensor<4xbf16>
}

// -----

// A bf16 softmax computes in f32 inside: the input widened first, the
// result rounded once at the end.
// CHECK-LABEL: func.func @bf16_softmax_in_f32
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<2x8xbf16>) outs(%{{.*}} : tensor<2x8xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: linalg.generic {{.*}} ins(%[[W]] : tensor<2x8xf32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK: math.exp %{{.*}} : f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<2x8xf32>) outs(%{{.*}} : tensor<2x8xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @bf16_softmax_in_f32(%x: tensor<2x8xbf16>) -> tensor<2x8xbf16> {
  %0 = tsr.softmax %x {axis = 1 : i64} : tensor<2x8xbf16>
  return %0 : tensor<2x8xbf16>
}

// -----

// Broadcast batch dimensions use linalg.broadcast, then one batch_matmul.
// CHECK-LABEL: func.func @matmul_broadcast_batch
// CHECK: linalg.broadcast ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<2x5x3x4xf32>) dimensions = [1]
// CHECK: linalg.broadcast ins(%{{.*}} : tensor<5x4x2xf32>) outs(%{{.*}} : tensor<2x5x4x2xf32>) dimensions = [0]
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<10x3x4xf32>, tensor<10x4x2xf32>)
func.func @matmul_broadcast_batch(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x2xf32>) -> tensor<2x5x3x2xf32> {
  %0 = tsr.matmul %a, %b : tensor<2x1x3x4xf32>, tensor<5x4x2xf32> -> tensor<2x5x3x2xf32>
  return %0 : tensor<2x5x3x2xf32>
}

// -----

// CHECK-LABEL: func.func @matvec
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [4, 1]
// CHECK: linalg.matmul
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1]] : tensor<3x1xi32> into tensor<3xi32>
func.func @matvec(%a: tensor<3x4xi32>, %v: tensor<4xi32>) -> tensor<3xi32> {
  %0 = tsr.matmul %a, %v : tensor<3x4xi32>, tensor<4xi32> -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

// Conv: zero padding, im2col [G, C/G·K, N·O], batch_matmul with the weights
// [G, M/G, C/G·K], then transpose back with the bias add.
// CHECK-LABEL: func.func @conv_grouped
// CHECK: tensor.pad
// CHECK: %[[COL:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<1x4x7x7xf32>) outs(%{{.*}} : tensor<2x2x3x3x1x3x3xf32>)
// CHECK: tensor.collapse_shape %[[COL]] {{.*}} into tensor<2x18x9xf32>
// CHECK: tensor.expand_shape {{.*}} into tensor<2x3x18xf32>
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<2x3x18xf32>, tensor<2x18x9xf32>) outs(%{{.*}} : tensor<2x3x9xf32>)
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x6x3x3xf32>
func.func @conv_grouped(%x: tensor<1x4x5x5xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x3x3xf32> {
  %0 = tsr.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x3x3xf32>
  return %0 : tensor<1x6x3x3xf32>
}

// -----

// Einsum: one generic, a diagonal read for the repeated label.
// CHECK-DAG: #[[DIAG:.*]] = affine_map<(d0, d1) -> (d1, d1, d0)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @einsum_diag
// CHECK: linalg.generic {indexing_maps = [#[[DIAG]], #[[OUT]]], iterator_types = ["parallel", "reduction"]}
func.func @einsum_diag(%x: tensor<3x3x2xf32>) -> tensor<2xf32> {
  %0 = tsr.einsum %x {equation = "iij->j"} : (tensor<3x3x2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_max_keepdims
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NEG]] : f32)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: tensor.expand_shape {{.*}} into tensor<2x1xf32>
func.func @reduce_max_keepdims(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %0 = tsr.reduce_max %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// CHECK-LABEL: func.func @argmax
// CHECK: linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2xi64>)
// CHECK: linalg.index 1
func.func @argmax(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  %0 = tsr.argmax %x {axis = 1 : i64, keepdims = false, select_last_index = false} : (tensor<2x3xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @cumsum_topk
// CHECK: scf.for
// CHECK: tensor.extract_slice
// CHECK: tensor.insert_slice
// CHECK: scf.for {{.*}} -> (tensor<3x2xf32>, tensor<3x2xi64>, tensor<3x4xi1>)
func.func @cumsum_topk(%x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x2xf32>, tensor<3x2xi64>) {
  %0 = tsr.cumsum %x {axis = 1 : i64, exclusive = false, reverse = true} : tensor<3x4xf32>
  %v, %i = tsr.topk %x {k = 2 : i64, axis = 1 : i64, largest = true} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  return %0, %v, %i : tensor<3x4xf32>, tensor<3x2xf32>, tensor<3x2xi64>
}

// -----

// Softmax: the row maxima, the row sums of exp(x − max) (reading x, not a
// stored tensor of exponentials), then exp(x − max) / sum.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: %[[X:.*]]: tensor<2x8xf32>
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<2x8xf32>)
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]], %[[MAX]] : tensor<2x8xf32>, tensor<2xf32>)
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[X]], %[[MAX]], %[[SUM]] : tensor<2x8xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: arith.divf
func.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = tsr.softmax %x {axis = 1 : i64} : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// LayerNorm: mean and variance as two reductions over the trailing dims.
// CHECK-LABEL: func.func @layer_norm
// CHECK-COUNT-2: iterator_types = ["parallel", "reduction", "reduction"]
// CHECK: math.sqrt
func.func @layer_norm(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %0 = tsr.layer_norm %x, %s {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// MaxPool pads with -inf (including the extra ceil_mode end padding).
// CHECK-LABEL: func.func @max_pool
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[NEG]]
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
func.func @max_pool(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32> {
  %0 = tsr.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

// AvgPool divides by per-dimension constant counts of real elements.
// CHECK-LABEL: func.func @avg_pool
// CHECK: arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: arith.divf
func.func @avg_pool(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %0 = tsr.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// CHECK-LABEL: func.func @data_movement
// CHECK: tensor.collapse_shape
// CHECK: linalg.transpose
// CHECK: tensor.insert_slice
// CHECK: tensor.insert_slice
// CHECK: tensor.extract_slice %{{.*}}[0, 1] [2, 2] [1, 1]
func.func @data_movement(%x: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<3x2xf32>, tensor<4x3xf32>, tensor<2x2xf32>) {
  %0 = tsr.reshape %x : tensor<2x3xf32> to tensor<6xf32>
  %1 = tsr.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = tsr.concat %x, %x {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %3 = tsr.slice %x {starts = array<i64: 0, 1>, limits = array<i64: 2, 3>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0, %1, %2, %3 : tensor<6xf32>, tensor<3x2xf32>, tensor<4x3xf32>, tensor<2x2xf32>
}

// -----

// A reshape that is neither a collapse nor an expand goes through 1-D.
// CHECK-LABEL: func.func @reshape_general
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [3, 2]
func.func @reshape_general(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = tsr.reshape %x : tensor<2x3xf32> to tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<4xi64>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract
func.func @gather(%e: tensor<10x16xf32>, %i: tensor<4xi64>) -> tensor<4x16xf32> {
  %0 = tsr.gather %e, %i {axis = 0 : i64} : (tensor<10x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// The loop over the updates says which of its iterations may run in
// parallel: its axis and the updates' shape (tsr.scatter_shape).
// CHECK-LABEL: func.func @scatter
// CHECK: scf.for {{.*}} iter_args
// CHECK: tensor.extract
// CHECK: arith.addf
// CHECK: tensor.insert
// CHECK: } {tsr.scatter_shape = array<i64: 0, 2, 3>}
func.func @scatter(%d: tensor<3x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>) -> tensor<3x3xf32> {
  %0 = tsr.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = #tsr.scatter_reduction<add>} : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// Splat data (an embedding gradient's zeros) starts as a filled tensor, not
// a constant as large as the result that every call copies.
// CHECK-LABEL: func.func @scatter_into_zeros
// CHECK: %[[E:.*]] = tensor.empty() : tensor<50x8xf32>
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<50x8xf32>)
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[Z]])
func.func @scatter_into_zeros(%i: tensor<4x8xi64>, %u: tensor<4x8xf32>) -> tensor<50x8xf32> {
  %d = tsr.constant dense<0.0> : tensor<50x8xf32>
  %0 = tsr.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = #tsr.scatter_reduction<add>} : (tensor<50x8xf32>, tensor<4x8xi64>, tensor<4x8xf32>) -> tensor<50x8xf32>
  return %0 : tensor<50x8xf32>
}

// A bf16 sum runs on an f32 fill, each update extended, and the result is
// rounded to bf16 once after the loop.
// CHECK-LABEL: func.func @scatter_bf16_in_f32
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<50x8xf32>)
// CHECK: %[[L:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[Z]]) -> (tensor<50x8xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.addf %{{.*}} : f32
// CHECK: linalg.generic {{.*}} ins(%[[L]] : tensor<50x8xf32>) outs(%{{.*}} : tensor<50x8xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @scatter_bf16_in_f32(%i: tensor<4x8xi64>, %u: tensor<4x8xbf16>) -> tensor<50x8xbf16> {
  %d = tsr.constant dense<0.0> : tensor<50x8xbf16>
  %0 = tsr.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = #tsr.scatter_reduction<add>} : (tensor<50x8xbf16>, tensor<4x8xi64>, tensor<4x8xbf16>) -> tensor<50x8xbf16>
  return %0 : tensor<50x8xbf16>
}

// Broadcast indices (an embedding gradient's token ids along each row) are
// read from the broadcast's operand at column 0: the loop never reads the
// [4, 8] index tensor, which the canonicalizer then drops.
// CHECK-LABEL: func.func @scatter_broadcast_indices
// CHECK-SAME: %[[I:[^:]*]]: tensor<4x1xi64>
// CHECK: scf.for
// CHECK-NOT: tensor<4x8xi64>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: tensor.extract %[[I]][%{{.*}}, %[[C0]]] : tensor<4x1xi64>
// CHECK-NOT: tensor<4x8xi64>
// CHECK: return
func.func @scatter_broadcast_indices(%i: tensor<4x1xi64>, %u: tensor<4x8xf32>) -> tensor<50x8xf32> {
  %d = tsr.constant dense<0.0> : tensor<50x8xf32>
  %b = tsr.broadcast %i : tensor<4x1xi64> to tensor<4x8xi64>
  %0 = tsr.scatter_elements %d, %b, %u {axis = 0 : i64, reduction = #tsr.scatter_reduction<add>} : (tensor<50x8xf32>, tensor<4x8xi64>, tensor<4x8xf32>) -> tensor<50x8xf32>
  return %0 : tensor<50x8xf32>
}

// -----

// CHECK-DAG: #[[MOD:.*]] = affine_map<(d0, d1) -> (d0 mod 2, d1 mod 3)>
// CHECK-LABEL: func.func @pad_and_tile
// CHECK: tensor.extract_slice %{{.*}}[0, 1] [2, 2] [1, 1]
// CHECK: tensor.pad %{{.*}} low[1, 0] high[0, 0]
// CHECK: linalg.generic {indexing_maps = [#[[MOD]], 
func.func @pad_and_tile(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<4x6xf32>) {
  %0 = tsr.pad %x {pads = array<i64: 1, -1, 0, 0>, mode = #tsr.pad_mode<constant>, value = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = tsr.tile %x {repeats = array<i64: 2, 2>} : (tensor<2x3xf32>) -> tensor<4x6xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @dropout_ratio_zero
// CHECK-SAME: %[[X:.*]]: tensor<4xf32>
// CHECK: %[[M:.*]] = linalg.fill
// CHECK: return %[[X]], %[[M]]
func.func @dropout_ratio_zero(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>) {
  %0, %m = tsr.dropout %x {ratio = 0.0 : f64, seed = 1 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return %0, %m : tensor<4xf32>, tensor<4xi1>
}

// -----

// A seed offset is hashed and xor-ed into the seed before the generic.
// CHECK-LABEL: func.func @dropout_seed_offset
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<4xf32> {{.*}}, %[[O:[a-z0-9]+]]: tensor<i64>
// CHECK: %[[STEP:.*]] = tensor.extract %[[O]][] : tensor<i64>
// CHECK: arith.addi %[[STEP]]
// CHECK: arith.xori
// CHECK: linalg.generic
func.func @dropout_seed_offset(%x: tensor<4xf32>, %o: tensor<i64>) -> tensor<4xf32> {
  %0, %m = tsr.dropout %x, %o {ratio = 0.5 : f64, seed = 1 : i64} : (tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xi1>)
  return %0 : tensor<4xf32>
}

// -----

// stop_gradient lowers to its operand.
// CHECK-LABEL: func.func @stop_gradient
// CHECK-SAME: %[[X:.*]]: tensor<4xf32>
// CHECK-NEXT: return %[[X]]
func.func @stop_gradient(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tsr.stop_gradient %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A mean loss is two reductions of one output each: the weighted loss,
// then the weights of the samples that count (zero for an ignored label).
// Without class weights or an ignored label the count is the number of
// samples.
// CHECK-LABEL: func.func @nll_mean
// CHECK: %[[LOSS:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<f32>)
// CHECK: arith.negf
// CHECK: arith.mulf
// CHECK: %[[COUNT:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<f32>)
// CHECK: arith.cmpi eq, %{{.*}}, %c-100_i64
// CHECK: arith.select
// CHECK: linalg.generic {{.*}} ins(%[[LOSS]], %[[COUNT]] : tensor<f32>, tensor<f32>)
// CHECK: arith.divf
// CHECK-LABEL: func.func @nll_mean_unweighted
// CHECK: %[[LOSS:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK-NOT: arith.mulf
// CHECK: } -> tensor<f32>
// CHECK: %[[N:.*]] = arith.constant 4.000000e+00 : f32
// CHECK: %[[COUNT:.*]] = linalg.fill ins(%[[N]] : f32)
// CHECK: linalg.generic {{.*}} ins(%[[LOSS]], %[[COUNT]] : tensor<f32>, tensor<f32>)
// CHECK: arith.divf
func.func @nll_mean(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %w: tensor<10xf32>) -> tensor<f32> {
  %0 = tsr.nll_loss %x, %t, %w {reduction = #tsr.loss_reduction<mean>, ignore_index = -100 : i64} : (tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @nll_mean_unweighted(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %0 = tsr.nll_loss %x, %t {reduction = #tsr.loss_reduction<mean>} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A cross-entropy's log-probabilities are never stored: the maxima over the
// classes (axis 1) and the sums of exp(x − max), then the loss reads the
// scores, maximum and sum of each sample at its label: (x − max) − log(sum).
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: %[[S:.*]]: tensor<2x5x3xf32> {{.*}}, %[[T:.*]]: tensor<2x3xi64>
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[S]] : tensor<2x5x3xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[S]], %[[MAX]] : tensor<2x5x3xf32>, tensor<2x3xf32>)
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[T]] : tensor<2x3xi64>)
// CHECK: %[[N:.*]] = linalg.index 0 : index
// CHECK: %[[D:.*]] = linalg.index 1 : index
// CHECK: %[[X:.*]] = tensor.extract %[[S]][%[[N]], %{{.*}}, %[[D]]] : tensor<2x5x3xf32>
// CHECK: %[[M:.*]] = tensor.extract %[[MAX]][%[[N]], %[[D]]] : tensor<2x3xf32>
// CHECK: %[[E:.*]] = tensor.extract %[[SUM]][%[[N]], %[[D]]] : tensor<2x3xf32>
// CHECK: %[[SHIFTED:.*]] = arith.subf %[[X]], %[[M]]
// CHECK: %[[LOG:.*]] = math.log %[[E]]
// CHECK: %[[LP:.*]] = arith.subf %[[SHIFTED]], %[[LOG]]
// CHECK: arith.negf %[[LP]]
// CHECK-NOT: tensor<2x5x3xf32>
// CHECK: return
func.func @cross_entropy(%s: tensor<2x5x3xf32>, %t: tensor<2x3xi64>) -> tensor<f32> {
  %0 = tsr.softmax_cross_entropy_loss %s, %t {reduction = #tsr.loss_reduction<mean>} : (tensor<2x5x3xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Zero-element tensors lower without special cases.
// CHECK-LABEL: func.func @empty
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<0x4xf32>, tensor<4x5xf32>)
func.func @empty(%a: tensor<0x4xf32>, %b: tensor<4x5xf32>) -> (tensor<0x5xf32>, tensor<0x4xf32>) {
  %0 = tsr.matmul %a, %b : tensor<0x4xf32>, tensor<4x5xf32> -> tensor<0x5xf32>
  %1 = tsr.exp %a : tensor<0x4xf32>
  return %0, %1 : tensor<0x5xf32>, tensor<0x4xf32>
}

// -----

// The weight gradient of a padded convolution gathers its columns from x
// itself, reading zeros in the padding: a tensor.pad of x would be the same
// op as the forward convolution's, which CSE merges, keeping the padded copy
// alive from the forward pass to this op.
// CHECK-LABEL: func.func @conv_backward_filter_padded
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x2x4x4xf32>
// CHECK-NOT: tensor.pad
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1x4x4x2x3x3xf32>)
// CHECK: %[[V:.*]] = tensor.extract %[[X]]
// CHECK-NEXT: arith.select %{{.*}}, %[[V]], %{{.*}} : f32
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x3x16xf32>, tensor<1x16x18xf32>)
func.func @conv_backward_filter_padded(%x: tensor<1x2x4x4xf32>, %dy: tensor<1x3x4x4xf32>) -> tensor<3x2x3x3xf32> {
  %0 = tsr.conv_backward_filter %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<3x2x3x3xf32>
  return %0 : tensor<3x2x3x3xf32>
}

// -----

// MaxPoolGrad's argmax reads -inf in the padding without a padded copy of x
// (which CSE would share with the forward max_pool's); constant window
// tensors give the window loops their sizes.
// CHECK-LABEL: func.func @max_pool_grad_padded
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x1x4x4xf32>
// CHECK-DAG: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[WIN:.*]] = arith.constant dense<false> : tensor<3x3xi1>
// CHECK-NOT: tensor.pad
// CHECK: linalg.generic {{.*}} ins(%[[WIN]] : tensor<3x3xi1>) outs(%{{.*}}, %{{.*}} : tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>)
// CHECK: %[[V:.*]] = tensor.extract %[[X]]
// CHECK-NEXT: arith.select %{{.*}}, %[[V]], %[[NEG]] : f32
func.func @max_pool_grad_padded(%x: tensor<1x1x4x4xf32>, %dy: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  %0 = tsr.max_pool_grad %x, %dy {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}
