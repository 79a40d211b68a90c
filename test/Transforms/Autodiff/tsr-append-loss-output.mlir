// RUN: tessera-opt %s --tsr-append-loss | FileCheck %s --check-prefix=LOSS
// RUN: tessera-opt %s "--tsr-append-loss=output=s" | FileCheck %s --check-prefix=LOSS
// RUN: tessera-opt %s "--tsr-append-loss=loss=cross_entropy logits=y labels=t" | FileCheck %s --check-prefix=LOGITS

// A model that computes its own loss: the only floating-point scalar result,
// or the one --output names, becomes the only result. With --loss, --logits
// picks the result the appended loss reads.

// LOSS-LABEL: func.func @main(
// LOSS-SAME: %{{.*}}: tensor<4x10xf32> {tsr.name = "x"})
// LOSS-SAME: -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>})
// LOSS: %[[S:.*]] = tsr.reduce_sum
// LOSS: return %[[S]] : tensor<f32>
// LOGITS-LABEL: func.func @main(
// LOGITS-SAME: %[[Y:arg0]]: tensor<4x10xf32> {tsr.name = "x"}, %[[T:arg1]]: tensor<4xi64> {tsr.name = "t", tsr.role = #tsr.role<label>})
// LOGITS-SAME: -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>})
// LOGITS: %[[L:.*]] = tsr.softmax_cross_entropy_loss %[[Y]], %[[T]]
// LOGITS: return %[[L]] : tensor<f32>
func.func @main(%y: tensor<4x10xf32> {tsr.name = "x"}) -> (tensor<4x10xf32> {tsr.name = "y"}, tensor<f32> {tsr.name = "s"}, tensor<4xi64> {tsr.name = "idx"}) {
  %s = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x10xf32>) -> tensor<f32>
  %i = tsr.argmax %y {axis = 1 : i64, keepdims = false, select_last_index = false} : (tensor<4x10xf32>) -> tensor<4xi64>
  return %y, %s, %i : tensor<4x10xf32>, tensor<f32>, tensor<4xi64>
}
