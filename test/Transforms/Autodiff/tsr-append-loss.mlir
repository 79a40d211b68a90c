// RUN: tessera-opt %s -split-input-file "--tsr-append-loss=loss=cross_entropy" | FileCheck %s --check-prefix=CE
// RUN: tessera-opt %s -split-input-file "--tsr-append-loss=loss=mse labels=target" | FileCheck %s --check-prefix=MSE

// Appended losses on the only result. cross_entropy: i64 labels shaped like
// the logits without their last (class) axis, which moves to axis 1; the
// mean over all label positions. mse: labels of the logits' type, the mean
// of the squared differences.

// CE-LABEL: func.func @classifier(
// CE-SAME: %[[X:arg0]]: tensor<4x3xf32> {tsr.name = "x"}, %[[W:arg1]]: tensor<3x10xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, %[[T:arg2]]: tensor<4xi64> {tsr.name = "labels", tsr.role = #tsr.role<label>})
// CE-SAME: -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>})
// CE: %[[Y:.*]] = tsr.matmul %[[X]], %[[W]]
// CE: %[[L:.*]] = tsr.softmax_cross_entropy_loss %[[Y]], %[[T]] : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
// CE: return %[[L]] : tensor<f32>
// MSE-LABEL: func.func @classifier(
// MSE-SAME: %[[T:arg2]]: tensor<4x10xf32> {tsr.name = "target", tsr.role = #tsr.role<label>})
// MSE: %[[Y:.*]] = tsr.matmul
// MSE: %[[D:.*]] = tsr.sub %[[Y]], %[[T]]
// MSE: %[[SQ:.*]] = tsr.mul %[[D]], %[[D]]
// MSE: %[[S:.*]] = tsr.reduce_sum %[[SQ]] {axes = array<i64: 0, 1>, keepdims = false}
// MSE: %[[N:.*]] = tsr.constant dense<4.000000e+01> : tensor<f32>
// MSE: %[[L:.*]] = tsr.div %[[S]], %[[N]]
// MSE: return %[[L]] : tensor<f32>
func.func @classifier(%x: tensor<4x3xf32> {tsr.name = "x"}, %w: tensor<3x10xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}) -> (tensor<4x10xf32> {tsr.name = "y"}) {
  %y = tsr.matmul %x, %w : tensor<4x3xf32>, tensor<3x10xf32> -> tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}

// -----

// A language model's [batch, sequence, vocabulary] logits.
// CE-LABEL: func.func @lm(
// CE-SAME: %[[X:arg0]]: tensor<2x5x7xf32> {tsr.name = "x"}, %[[T:arg1]]: tensor<2x5xi64> {tsr.name = "labels", tsr.role = #tsr.role<label>})
// Each position is a row of scores, so the classes stay contiguous.
// CE: %[[S:.*]] = tsr.reshape %[[X]] : tensor<2x5x7xf32> to tensor<10x7xf32>
// CE: %[[L:.*]] = tsr.reshape %[[T]] : tensor<2x5xi64> to tensor<10xi64>
// CE: tsr.softmax_cross_entropy_loss %[[S]], %[[L]] : (tensor<10x7xf32>, tensor<10xi64>) -> tensor<f32>
// MSE-LABEL: func.func @lm(
// MSE: tsr.reduce_sum %{{.*}} {axes = array<i64: 0, 1, 2>, keepdims = false}
// MSE: tsr.constant dense<7.000000e+01> : tensor<f32>
func.func @lm(%x: tensor<2x5x7xf32> {tsr.name = "x"}) -> (tensor<2x5x7xf32> {tsr.name = "y"}) {
  return %x : tensor<2x5x7xf32>
}

// -----

// One unbatched vector of scores: a batch of one, a scalar label.
// CE-LABEL: func.func @vector(
// CE-SAME: %[[X:arg0]]: tensor<10xf32> {tsr.name = "x"}, %[[T:arg1]]: tensor<i64> {tsr.name = "labels", tsr.role = #tsr.role<label>})
// CE: %[[S:.*]] = tsr.reshape %[[X]] : tensor<10xf32> to tensor<1x10xf32>
// CE: %[[T1:.*]] = tsr.reshape %[[T]] : tensor<i64> to tensor<1xi64>
// CE: tsr.softmax_cross_entropy_loss %[[S]], %[[T1]] : (tensor<1x10xf32>, tensor<1xi64>) -> tensor<f32>
// MSE-LABEL: func.func @vector(
// MSE-SAME: tensor<10xf32> {tsr.name = "target", tsr.role = #tsr.role<label>})
// MSE: tsr.constant dense<1.000000e+01> : tensor<f32>
func.func @vector(%x: tensor<10xf32> {tsr.name = "x"}) -> (tensor<10xf32> {tsr.name = "y"}) {
  return %x : tensor<10xf32>
}
