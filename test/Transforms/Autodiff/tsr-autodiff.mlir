// RUN: tessera-opt %s -split-input-file --tsr-autodiff | FileCheck %s
// RUN: tessera-opt %s -split-input-file --tsr-autodiff -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// The seed, the result attributes and the matmul rule: dw = xᵀ·dy. Every
// op a gradient rule builds is marked tsr.backward; the forward ops are not.
// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: %[[W:arg0]]: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, %[[X:arg1]]: tensor<4x3xf32> {tsr.name = "x"})
// CHECK-SAME: -> (tensor<f32>, tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>})
// CHECK: tsr.matmul %[[X]], %[[W]] : tensor<4x3xf32>
// CHECK: %[[L:.*]] = tsr.reduce_sum %{{.*}} {axes = array<i64: 0, 1>, keepdims = false} :
// CHECK: %[[ONE:.*]] = tsr.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[R:.*]] = tsr.reshape %[[ONE]] {tsr.backward} : tensor<f32> to tensor<1x1xf32>
// CHECK: %[[DY:.*]] = tsr.broadcast %[[R]] {tsr.backward} : tensor<1x1xf32> to tensor<4x2xf32>
// CHECK: %[[XT:.*]] = tsr.transpose %[[X]] {perm = array<i64: 1, 0>, tsr.backward}
// CHECK: %[[DW:.*]] = tsr.matmul %[[XT]], %[[DY]] {tsr.backward} : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
// CHECK: return %[[L]], %[[DW]] : tensor<f32>, tensor<3x2xf32>
// Gradient ops carry the forward op's location, fused under "tsr.grad".
// LOC-LABEL: func.func @matmul(
// LOC: tsr.matmul %{{.*}}, %{{.*}} {tsr.backward} : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32> loc(#[[GRAD:loc[0-9]+]])
// LOC: #[[FWD:loc[0-9]+]] = loc("{{.*}}tsr-autodiff.mlir":[[@LINE+3]]:8)
// LOC: #[[GRAD]] = loc(fused<"tsr.grad">[#[[FWD]]])
func.func @matmul(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, %x: tensor<4x3xf32> {tsr.name = "x"}) -> tensor<f32> {
  %y = tsr.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Fan-out sums the adjoints of %a; the broadcast %b gets its adjoint summed
// back to [3]; stop_gradient passes nothing; %u, which does not reach the
// loss, gets zeros.
// CHECK-LABEL: func.func @fan_out(
// CHECK-SAME: %[[A:arg0]]: tensor<2x3xf32> {{.*}}, %[[B:arg1]]: tensor<3xf32>
// CHECK: %[[S:.*]] = tsr.add
// CHECK: %[[T:.*]] = tsr.stop_gradient %[[S]]
// CHECK: %[[DY:.*]] = tsr.broadcast
// CHECK: %[[DS:.*]] = tsr.mul %[[DY]], %[[T]]
// CHECK: %[[DMA:.*]] = tsr.mul %[[DS]], %[[B]]
// CHECK: %[[DMB:.*]] = tsr.mul %[[DS]], %[[A]]
// CHECK: %[[DB:.*]] = tsr.reduce_sum %[[DMB]] {axes = array<i64: 0>, keepdims = false, tsr.backward} : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK: %[[DA:.*]] = tsr.add %[[DS]], %[[DMA]]
// CHECK: %[[DU:.*]] = tsr.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: return %{{.*}}, %[[DA]], %[[DB]], %[[DU]]
func.func @fan_out(%a: tensor<2x3xf32> {tsr.name = "a", tsr.role = #tsr.role<param>}, %b: tensor<3xf32> {tsr.name = "b", tsr.role = #tsr.role<param>}, %u: tensor<2xf32> {tsr.name = "u", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  %m = tsr.mul %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %s = tsr.add %m, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %t = tsr.stop_gradient %s : tensor<2x3xf32>
  %p = tsr.mul %s, %t : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %l = tsr.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// conv: the backward ops take the forward attributes; the bias sums dy over
// all but the channels.
// CHECK-LABEL: func.func @conv(
// CHECK-SAME: %[[X:arg0]]: tensor<1x2x5x5xf32> {{.*}}, %[[W:arg1]]: tensor<4x1x3x3xf32>
// CHECK: %[[DY:.*]] = tsr.broadcast {{.*}} to tensor<1x4x2x2xf32>
// CHECK: %[[DX:.*]] = tsr.conv_backward_data %[[DY]], %[[W]] {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 2, 2>, tsr.backward} : (tensor<1x4x2x2xf32>, tensor<4x1x3x3xf32>) -> tensor<1x2x5x5xf32>
// CHECK: %[[DW:.*]] = tsr.conv_backward_filter %[[X]], %[[DY]] {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 2, 2>, tsr.backward} : (tensor<1x2x5x5xf32>, tensor<1x4x2x2xf32>) -> tensor<4x1x3x3xf32>
// CHECK: %[[DB:.*]] = tsr.reduce_sum %[[DY]] {axes = array<i64: 0, 2, 3>, keepdims = false, tsr.backward} : (tensor<1x4x2x2xf32>) -> tensor<4xf32>
// CHECK: return %{{.*}}, %[[DX]], %[[DW]], %[[DB]]
func.func @conv(%x: tensor<1x2x5x5xf32> {tsr.name = "x", tsr.role = #tsr.role<param>}, %w: tensor<4x1x3x3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, %b: tensor<4xf32> {tsr.name = "b", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  %y = tsr.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x2x5x5xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x4x2x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// avg_pool: dy divided by each window's count (2, 2, then 1 for the ceil_mode
// window that holds only x[4]), spread by a depthwise transposed convolution
// with a kernel of ones whose end pad reaches the last window. max_pool routes
// through max_pool_grad.
// CHECK-LABEL: func.func @pools(
// CHECK-SAME: %[[X:arg0]]: tensor<1x2x5xf32>
// CHECK: %[[DY:.*]] = tsr.broadcast {{.*}} to tensor<1x2x3xf32>
// CHECK: %[[INV:.*]] = tsr.constant {tsr.backward} dense<[5.000000e-01, 5.000000e-01, 1.000000e+00]> : tensor<3xf32>
// CHECK: %[[ONES:.*]] = tsr.constant {tsr.backward} dense<1.000000e+00> : tensor<2x1x2xf32>
// CHECK: %[[SCALED:.*]] = tsr.mul %[[DY]], %[[INV]]
// CHECK: %[[DA:.*]] = tsr.conv_backward_data %[[SCALED]], %[[ONES]] {dilations = array<i64: 1>, group = 2 : i64, pads = array<i64: 0, 1>, strides = array<i64: 2>, tsr.backward} : (tensor<1x2x3xf32>, tensor<2x1x2xf32>) -> tensor<1x2x5xf32>
// CHECK: %[[DM:.*]] = tsr.max_pool_grad %[[X]], %[[DY]] {dilations = array<i64: 1>, kernel_shape = array<i64: 2>, pads = array<i64: 1, 0>, strides = array<i64: 2>, tsr.backward} : (tensor<1x2x5xf32>, tensor<1x2x3xf32>) -> tensor<1x2x5xf32>
// CHECK: %[[DX:.*]] = tsr.add %[[DA]], %[[DM]]
// CHECK: return %{{.*}}, %[[DX]]
func.func @pools(%x: tensor<1x2x5xf32> {tsr.name = "x", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  %m = tsr.max_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 1, 0>, dilations = array<i64: 1>} : (tensor<1x2x5xf32>) -> tensor<1x2x3xf32>
  %a = tsr.avg_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, ceil_mode = true, count_include_pad = false} : (tensor<1x2x5xf32>) -> tensor<1x2x3xf32>
  %s = tsr.add %m, %a : tensor<1x2x3xf32>, tensor<1x2x3xf32> -> tensor<1x2x3xf32>
  %l = tsr.reduce_sum %s {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<1x2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// batch_norm with r = 1/√(var + ε): dx = dy·scale·r, dscale = Σdy·(x − mean)·r,
// dbias = Σdy, dmean = −Σdy·scale·r, dvar = −½·Σdy·(x − mean)·scale·r³.
// CHECK-LABEL: func.func @batch_norm(
// CHECK-SAME: %[[X:arg0]]: tensor<2x3x4xf32> {{.*}}, %[[S:arg1]]: tensor<3xf32> {{.*}}, %[[M:arg3]]: tensor<3xf32> {{.*}}, %[[V:arg4]]: tensor<3xf32>
// CHECK: %[[DY:.*]] = tsr.broadcast {{.*}} to tensor<2x3x4xf32>
// CHECK: %[[EPS:.*]] = tsr.constant {tsr.backward} dense<9.99999974E-6> : tensor<f32>
// CHECK: %[[VE:.*]] = tsr.add %[[V]], %[[EPS]]
// CHECK: %[[SQ:.*]] = tsr.sqrt %[[VE]]
// CHECK: %[[R:.*]] = tsr.reciprocal %[[SQ]]
// CHECK: %[[SR:.*]] = tsr.mul %[[S]], %[[R]]
// CHECK: %[[MC:.*]] = tsr.reshape %[[M]] {tsr.backward} : tensor<3xf32> to tensor<1x3x1xf32>
// CHECK: %[[XC:.*]] = tsr.sub %[[X]], %[[MC]]
// CHECK: %[[SUMDY:.*]] = tsr.reduce_sum %[[DY]] {axes = array<i64: 0, 2>, keepdims = false, tsr.backward}
// CHECK: %[[DYXC:.*]] = tsr.mul %[[DY]], %[[XC]]
// CHECK: %[[SUMDYXC:.*]] = tsr.reduce_sum %[[DYXC]] {axes = array<i64: 0, 2>, keepdims = false, tsr.backward}
// CHECK: %[[SRC:.*]] = tsr.reshape %[[SR]] {tsr.backward} : tensor<3xf32> to tensor<1x3x1xf32>
// CHECK: %[[DX:.*]] = tsr.mul %[[DY]], %[[SRC]]
// CHECK: %[[DS:.*]] = tsr.mul %[[SUMDYXC]], %[[R]]
// CHECK: %[[T:.*]] = tsr.mul %[[SUMDY]], %[[SR]]
// CHECK: %[[DM:.*]] = tsr.neg %[[T]]
// CHECK: %[[U:.*]] = tsr.mul %[[SUMDYXC]], %[[SR]]
// CHECK: %[[R2:.*]] = tsr.mul %[[R]], %[[R]]
// CHECK: %[[HALF:.*]] = tsr.constant {tsr.backward} dense<-5.000000e-01> : tensor<f32>
// CHECK: %[[K:.*]] = tsr.mul %[[R2]], %[[HALF]]
// CHECK: %[[DV:.*]] = tsr.mul %[[U]], %[[K]]
// CHECK: return %{{.*}}, %[[DX]], %[[DS]], %[[SUMDY]], %[[DM]], %[[DV]]
func.func @batch_norm(%x: tensor<2x3x4xf32> {tsr.name = "x", tsr.role = #tsr.role<param>}, %s: tensor<3xf32> {tsr.name = "s", tsr.role = #tsr.role<param>}, %b: tensor<3xf32> {tsr.name = "b", tsr.role = #tsr.role<param>}, %m: tensor<3xf32> {tsr.name = "m", tsr.role = #tsr.role<param>}, %v: tensor<3xf32> {tsr.name = "v", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  %y = tsr.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// einsum: each operand's adjoint is the einsum of dy with the others; the
// diagonal "ii" gets a fresh label tied to i by an identity matrix; "ik->i"
// broadcasts dy along the summed k.
// CHECK-LABEL: func.func @einsum(
// CHECK-SAME: %[[A:arg0]]: tensor<2x3xf32> {{.*}}, %[[B:arg1]]: tensor<3x4xf32>
// CHECK: %[[DQ:.*]] = tsr.broadcast {{.*}} to tensor<3xf32>
// CHECK: %[[DR:.*]] = tsr.reshape %{{.*}} {tsr.backward} : tensor<2xf32> to tensor<2x1xf32>
// CHECK: %[[DP:.*]] = tsr.broadcast %[[DR]] {tsr.backward} : tensor<2x1xf32> to tensor<2x4xf32>
// CHECK: %[[EYE:.*]] = tsr.constant {tsr.backward} dense<{{\[\[}}1.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00]]> : tensor<3x3xf32>
// CHECK: %[[DD:.*]] = tsr.einsum %[[DQ]], %[[EYE]] {equation = "i,ia->ia", tsr.backward} : (tensor<3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK: %[[DA:.*]] = tsr.einsum %[[DP]], %[[B]] {equation = "ik,jk->ij", tsr.backward} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
// CHECK: %[[DB:.*]] = tsr.einsum %[[DP]], %[[A]] {equation = "ik,ij->jk", tsr.backward} : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<3x4xf32>
// CHECK: return %{{.*}}, %[[DA]], %[[DB]], %[[DD]]
func.func @einsum(%a: tensor<2x3xf32> {tsr.name = "a", tsr.role = #tsr.role<param>}, %b: tensor<3x4xf32> {tsr.name = "b", tsr.role = #tsr.role<param>}, %d: tensor<3x3xf32> {tsr.name = "d", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  %p = tsr.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %q = tsr.einsum %d {equation = "ii->i"} : (tensor<3x3xf32>) -> tensor<3xf32>
  %r = tsr.einsum %p {equation = "ik->i"} : (tensor<2x4xf32>) -> tensor<2xf32>
  %l1 = tsr.reduce_sum %q {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  %l2 = tsr.reduce_sum %r {axes = array<i64: 0>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  %l = tsr.add %l1, %l2 : tensor<f32>, tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// topk scatters the values' adjoint back to their indices; an exclusive
// forward cumsum's adjoint is the exclusive reverse cumsum.
// CHECK-LABEL: func.func @scans(
// CHECK: %[[VALUES:.*]], %[[INDICES:.*]] = tsr.topk
// CHECK: %[[DV:.*]] = tsr.broadcast {{.*}} to tensor<3x2xf32>
// CHECK: %[[Z:.*]] = tsr.constant {tsr.backward} dense<0.000000e+00> : tensor<3x4xf32>
// CHECK: %[[DC:.*]] = tsr.scatter_elements %[[Z]], %[[INDICES]], %[[DV]] {axis = 1 : i64, reduction = #tsr.scatter_reduction<add>, tsr.backward}
// CHECK: %[[DX:.*]] = tsr.cumsum %[[DC]] {axis = 1 : i64, exclusive = true, reverse = true, tsr.backward} : tensor<3x4xf32>
// CHECK: return %{{.*}}, %[[DX]]
func.func @scans(%x: tensor<3x4xf32> {tsr.name = "x", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  %c = tsr.cumsum %x {axis = 1 : i64, exclusive = true, reverse = false} : tensor<3x4xf32>
  %v, %i = tsr.topk %c {k = 2 : i64, axis = 1 : i64, largest = true} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %l = tsr.reduce_sum %v {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// scatter_elements without reduction zeroes the overwritten positions of dy
// for data and gathers dy for the updates. With runtime indices an update's
// adjoint is masked to the updates no later one overwrote: the winner of every
// position is found by scattering the updates' own positions. Constant indices
// without repeats need no mask. gather_elements scatter-adds.
// CHECK-LABEL: func.func @gather_scatter(
// CHECK-SAME: %[[X:arg0]]: tensor<3x4xf32> {{.*}}, %[[I:arg2]]: tensor<3x2xi64>
// CHECK: %[[C:.*]] = tsr.constant dense<{{\[\[}}0, 2], [3, 1], [1, 0]]> : tensor<3x2xi64>
// CHECK: %[[DY:.*]] = tsr.broadcast {{.*}} to tensor<3x4xf32>
// CHECK: %[[Z:.*]] = tsr.constant {tsr.backward} dense<0.000000e+00> : tensor<3x2xf32>
// CHECK: %[[DS:.*]] = tsr.scatter_elements %[[DY]], %[[I]], %[[Z]] {axis = 1 : i64, tsr.backward}
// CHECK: %[[DG:.*]] = tsr.gather_elements %[[DY]], %[[I]] {axis = 1 : i64, tsr.backward}
// CHECK: %[[POS:.*]] = tsr.constant {tsr.backward} dense<{{\[\[}}0, 1], [2, 3], [4, 5]]> : tensor<3x2xi64>
// CHECK: %[[NONE:.*]] = tsr.constant {tsr.backward} dense<-1> : tensor<3x4xi64>
// CHECK: %[[WIN:.*]] = tsr.scatter_elements %[[NONE]], %[[I]], %[[POS]] {axis = 1 : i64, tsr.backward}
// CHECK: %[[GOT:.*]] = tsr.gather_elements %[[WIN]], %[[I]] {axis = 1 : i64, tsr.backward}
// CHECK: %[[WON:.*]] = tsr.equal %[[GOT]], %[[POS]]
// CHECK: %[[DGM:.*]] = tsr.where %[[WON]], %[[DG]], %{{.*}} {tsr.backward} : tensor<3x2xi1>, tensor<3x2xf32>, tensor<f32> -> tensor<3x2xf32>
// CHECK: %[[DX1:.*]] = tsr.scatter_elements %[[DS]], %[[C]], %{{.*}} {axis = 1 : i64, tsr.backward}
// CHECK: %[[DU:.*]] = tsr.gather_elements %[[DS]], %[[C]] {axis = 1 : i64, tsr.backward}
// CHECK-NOT: tsr.equal
// CHECK: %[[Z2:.*]] = tsr.constant {tsr.backward} dense<0.000000e+00> : tensor<3x4xf32>
// CHECK: %[[DX2:.*]] = tsr.scatter_elements %[[Z2]], %[[C]], %[[DGM]] {axis = 1 : i64, reduction = #tsr.scatter_reduction<add>, tsr.backward}
// CHECK: %[[DX:.*]] = tsr.add %[[DX1]], %[[DX2]]
// CHECK: return %{{.*}}, %[[DX]], %[[DU]]
func.func @gather_scatter(%x: tensor<3x4xf32> {tsr.name = "x", tsr.role = #tsr.role<param>}, %u: tensor<3x2xf32> {tsr.name = "u", tsr.role = #tsr.role<param>}, %i: tensor<3x2xi64> {tsr.name = "i"}) -> tensor<f32> {
  %c = tsr.constant dense<[[0, 2], [3, 1], [1, 0]]> : tensor<3x2xi64>
  %g = tsr.gather_elements %x, %c {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  %s = tsr.scatter_elements %x, %c, %u {axis = 1 : i64, reduction = #tsr.scatter_reduction<none>} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %t = tsr.scatter_elements %s, %i, %g {axis = 1 : i64, reduction = #tsr.scatter_reduction<none>} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %l = tsr.reduce_sum %t {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// slice rows 7, 4, 1 and columns 0, 2, 4: dy reversed along the rows,
// interleaved with zeros (a unit dimension padded to the step), then padded
// to [8, 5] (cropping the zeros past the last column); tile sums its two
// copies; trilu masks dy like x.
// CHECK-LABEL: func.func @shapes(
// CHECK: %[[DY:.*]] = tsr.broadcast {{.*}} to tensor<3x3xf32>
// CHECK: %[[REV:.*]] = tsr.slice %[[DY]] {limits = array<i64: -1, 3>, starts = array<i64: 2, 0>, steps = array<i64: -1, 1>, tsr.backward}
// CHECK: %[[UNITS:.*]] = tsr.reshape %[[REV]] {tsr.backward} : tensor<3x3xf32> to tensor<3x1x3x1xf32>
// CHECK: %[[SPREAD:.*]] = tsr.pad %[[UNITS]] {pads = array<i64: 0, 0, 0, 0, 0, 2, 0, 1>, tsr.backward} : (tensor<3x1x3x1xf32>) -> tensor<3x3x3x2xf32>
// CHECK: %[[FLAT:.*]] = tsr.reshape %[[SPREAD]] {tsr.backward} : tensor<3x3x3x2xf32> to tensor<9x6xf32>
// CHECK: %[[DR:.*]] = tsr.pad %[[FLAT]] {pads = array<i64: 1, 0, -2, -1>, tsr.backward} : (tensor<9x6xf32>) -> tensor<8x5xf32>
// CHECK: %[[COPIES:.*]] = tsr.reshape %[[DR]] {tsr.backward} : tensor<8x5xf32> to tensor<2x4x5xf32>
// CHECK: %[[DT:.*]] = tsr.reduce_sum %[[COPIES]] {axes = array<i64: 0>, keepdims = false, tsr.backward} : (tensor<2x4x5xf32>) -> tensor<4x5xf32>
// CHECK: %[[DX:.*]] = tsr.trilu %[[DT]] {k = 1 : i64, tsr.backward, upper = true} : tensor<4x5xf32>
// CHECK: return %{{.*}}, %[[DX]]
func.func @shapes(%x: tensor<4x5xf32> {tsr.name = "x", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  %t = tsr.trilu %x {upper = true, k = 1 : i64} : tensor<4x5xf32>
  %r = tsr.tile %t {repeats = array<i64: 2, 1>} : (tensor<4x5xf32>) -> tensor<8x5xf32>
  %s = tsr.slice %r {starts = array<i64: 7, 0>, limits = array<i64: -1, 5>, steps = array<i64: -3, 2>} : (tensor<8x5xf32>) -> tensor<3x3xf32>
  %l = tsr.reduce_sum %s {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// pad: reflect adds the reversed borders onto columns 1..2 and 2; edge sums the
// first three rows onto row 0; constant padding is undone by the opposite pads
// (the cropped column comes back as zeros).
// CHECK-LABEL: func.func @pads(
// CHECK: %[[DR:.*]] = tsr.broadcast {{.*}} to tensor<3x7xf32>
// CHECK: %[[DE:.*]] = tsr.broadcast {{.*}} to tensor<5x4xf32>
// CHECK: %[[DC:.*]] = tsr.broadcast {{.*}} to tensor<4x5xf32>
// CHECK: %[[MID:.*]] = tsr.slice %[[DR]] {limits = array<i64: 3, 6>, starts = array<i64: 0, 2>, steps = array<i64: 1, 1>, tsr.backward}
// CHECK: %[[FRONT:.*]] = tsr.slice %[[DR]] {limits = array<i64: 3, -1>, starts = array<i64: 0, 1>, steps = array<i64: 1, -1>, tsr.backward}
// CHECK: %[[FRONTP:.*]] = tsr.pad %[[FRONT]] {pads = array<i64: 0, 1, 0, 1>, tsr.backward} : (tensor<3x2xf32>) -> tensor<3x4xf32>
// CHECK: %[[R1:.*]] = tsr.add %[[MID]], %[[FRONTP]]
// CHECK: %[[BACK:.*]] = tsr.slice %[[DR]] {limits = array<i64: 3, 5>, starts = array<i64: 0, 6>, steps = array<i64: 1, -1>, tsr.backward}
// CHECK: %[[BACKP:.*]] = tsr.pad %[[BACK]] {pads = array<i64: 0, 2, 0, 1>, tsr.backward} : (tensor<3x1xf32>) -> tensor<3x4xf32>
// CHECK: %[[R2:.*]] = tsr.add %[[R1]], %[[BACKP]]
// CHECK: %[[TOP:.*]] = tsr.slice %[[DE]] {limits = array<i64: 3, 4>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>, tsr.backward}
// CHECK: %[[ROW0:.*]] = tsr.reduce_sum %[[TOP]] {axes = array<i64: 0>, keepdims = true, tsr.backward} : (tensor<3x4xf32>) -> tensor<1x4xf32>
// CHECK: %[[ROW1:.*]] = tsr.slice %[[DE]] {limits = array<i64: 4, 4>, starts = array<i64: 3, 0>
// CHECK: %[[ROW2:.*]] = tsr.slice %[[DE]] {limits = array<i64: 5, 4>, starts = array<i64: 4, 0>
// CHECK: %[[E:.*]] = tsr.concat %[[ROW0]], %[[ROW1]], %[[ROW2]] {axis = 0 : i64, tsr.backward}
// CHECK: %[[SUM:.*]] = tsr.add %[[R2]], %[[E]]
// CHECK: %[[C:.*]] = tsr.pad %[[DC]] {pads = array<i64: -1, 1, 0, -2>, tsr.backward} : (tensor<4x5xf32>) -> tensor<3x4xf32>
// CHECK: %[[DX:.*]] = tsr.add %[[SUM]], %[[C]]
// CHECK: return %{{.*}}, %[[DX]]
func.func @pads(%x: tensor<3x4xf32> {tsr.name = "x", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  %c = tsr.pad %x {pads = array<i64: 1, -1, 0, 2>, mode = #tsr.pad_mode<constant>, value = 0.0 : f64} : (tensor<3x4xf32>) -> tensor<4x5xf32>
  %e = tsr.pad %x {pads = array<i64: 2, 0, 0, 0>, mode = #tsr.pad_mode<edge>} : (tensor<3x4xf32>) -> tensor<5x4xf32>
  %r = tsr.pad %x {pads = array<i64: 0, 2, 0, 1>, mode = #tsr.pad_mode<reflect>} : (tensor<3x4xf32>) -> tensor<3x7xf32>
  %l1 = tsr.reduce_sum %c {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<f32>
  %l2 = tsr.reduce_sum %e {axes = array<i64: 0, 1>, keepdims = false} : (tensor<5x4xf32>) -> tensor<f32>
  %l3 = tsr.reduce_sum %r {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x7xf32>) -> tensor<f32>
  %l4 = tsr.add %l1, %l2 : tensor<f32>, tensor<f32> -> tensor<f32>
  %l = tsr.add %l4, %l3 : tensor<f32>, tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A metric result is carried after the gradients, not differentiated.
// CHECK-LABEL: func.func @metric(
// CHECK-SAME: -> (tensor<f32>, tensor<2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}, tensor<i64> {tsr.name = "hits", tsr.role = #tsr.role<metric>})
// CHECK: %[[H:.*]] = tsr.reduce_sum %arg1
// CHECK: return %{{.*}}, %{{.*}}, %[[H]] : tensor<f32>, tensor<2xf32>, tensor<i64>
func.func @metric(%w: tensor<2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                  %i: tensor<2xi64> {tsr.name = "i"})
    -> (tensor<f32>, tensor<i64> {tsr.name = "hits", tsr.role = #tsr.role<metric>}) {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  %h = tsr.reduce_sum %i {axes = array<i64: 0>, keepdims = false} : (tensor<2xi64>) -> tensor<i64>
  return %l, %h : tensor<f32>, tensor<i64>
}

// -----

// A forward op's repeated layer (tsr.layer, tsr-layer-plan) carries over to
// the ops of its gradient, as its pipeline stage does.
// CHECK-LABEL: func.func @layer(
// CHECK: tsr.tanh %{{.*}} {tsr.layer = 2 : i64}
// CHECK: tsr.mul %{{.*}}, %{{.*}} {tsr.backward, tsr.layer = 2 : i64}
// CHECK: tsr.sub %{{.*}}, %{{.*}} {tsr.backward, tsr.layer = 2 : i64}
func.func @layer(%w: tensor<4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}) -> tensor<f32> {
  %t = tsr.tanh %w {tsr.layer = 2 : i64} : tensor<4xf32>
  %l = tsr.reduce_sum %t {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A bf16 working copy's embedding gradient: the gather's rule sums the rows
// in f32 (updates extended, f32 zeros) and rounds once to bf16; the cast's
// rule takes the f32 sum before that rounding, so the f32 table's gradient is
// never rounded to bf16.
// CHECK-LABEL: func.func @bf16_embedding(
// CHECK: %[[DY:.*]] = tsr.cast %{{.*}} {tsr.backward} : tensor<1x3x2xbf16> to tensor<1x3x2xf32>
// CHECK: %[[Z:.*]] = tsr.constant {tsr.backward} dense<0.000000e+00> : tensor<1x5x2xf32>
// CHECK: %[[S:.*]] = tsr.scatter_elements %[[Z]], %{{.*}}, %[[DY]] {axis = 1 : i64, reduction = #tsr.scatter_reduction<add>, tsr.backward} : (tensor<1x5x2xf32>, tensor<1x3x2xi64>, tensor<1x3x2xf32>) -> tensor<1x5x2xf32>
// CHECK: %[[G:.*]] = tsr.reshape %[[S]] {tsr.backward} : tensor<1x5x2xf32> to tensor<5x2xf32>
// CHECK-NOT: tensor<5x2xbf16> to tensor<5x2xf32>
// CHECK: return %{{.*}}, %[[G]]
func.func @bf16_embedding(%w: tensor<5x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, %i: tensor<3xi64> {tsr.name = "i", tsr.role = #tsr.role<data>}) -> tensor<f32> {
  %w16 = tsr.cast %w : tensor<5x2xf32> to tensor<5x2xbf16>
  %e = tsr.gather %w16, %i {axis = 0 : i64} : (tensor<5x2xbf16>, tensor<3xi64>) -> tensor<3x2xbf16>
  %e32 = tsr.cast %e : tensor<3x2xbf16> to tensor<3x2xf32>
  %l = tsr.reduce_sum %e32 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A tied bf16 table (the lookup and the head read one working copy): the
// head's bf16 gradient is extended and added to the lookup's f32 sum in f32.
// CHECK-LABEL: func.func @bf16_tied_embedding(
// CHECK: %[[S:.*]] = tsr.scatter_elements {{.*}} -> tensor<1x5x2xf32>
// CHECK: %[[E:.*]] = tsr.reshape %[[S]] {tsr.backward} : tensor<1x5x2xf32> to tensor<5x2xf32>
// CHECK: %[[H:.*]] = tsr.cast %{{.*}} {tsr.backward} : tensor<5x2xbf16> to tensor<5x2xf32>
// CHECK: %[[G:.*]] = tsr.add %[[H]], %[[E]] {tsr.backward} : tensor<5x2xf32>, tensor<5x2xf32> -> tensor<5x2xf32>
// CHECK-NOT: tensor<5x2xbf16> to tensor<5x2xf32>
// CHECK: return %{{.*}}, %[[G]]
func.func @bf16_tied_embedding(%w: tensor<5x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, %i: tensor<3xi64> {tsr.name = "i", tsr.role = #tsr.role<data>}) -> tensor<f32> {
  %w16 = tsr.cast %w : tensor<5x2xf32> to tensor<5x2xbf16>
  %e = tsr.gather %w16, %i {axis = 0 : i64} : (tensor<5x2xbf16>, tensor<3xi64>) -> tensor<3x2xbf16>
  %wt = tsr.transpose %w16 {perm = array<i64: 1, 0>} : (tensor<5x2xbf16>) -> tensor<2x5xbf16>
  %logits = tsr.matmul %e, %wt : tensor<3x2xbf16>, tensor<2x5xbf16> -> tensor<3x5xbf16>
  %l32 = tsr.cast %logits : tensor<3x5xbf16> to tensor<3x5xf32>
  %l = tsr.reduce_sum %l32 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
