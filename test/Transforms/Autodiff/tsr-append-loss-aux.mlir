// RUN: tessera-opt %s "--tsr-append-loss=loss=cross_entropy logits=y labels=t" | FileCheck %s
// RUN: tessera-opt %s --tsr-append-loss | FileCheck %s --check-prefix=OWN

// Results marked tsr.aux_loss (a MoE layer's load-balancing loss from
// import with --moe-aux-loss) are added to the loss, appended or the
// model's own, and are results no more; they do not count as outputs when
// the pass looks for the logits or the loss. Results with role metric (a
// MoE layer's routing statistics) stay, after the loss, and do not count as
// outputs either.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<i64> {tsr.name = "moe0.dropped", tsr.role = #tsr.role<metric>})
// CHECK: %[[L:.*]] = tsr.softmax_cross_entropy_loss
// CHECK: %[[A:.*]] = tsr.add %[[L]], %{{.*}} : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK: %[[B:.*]] = tsr.add %[[A]], %{{.*}} : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK: return %[[B]], %arg1 : tensor<f32>, tensor<i64>
// OWN-LABEL: func.func @main(
// OWN: %[[S:.*]] = tsr.reduce_sum %{{.*}} {axes = array<i64: 0, 1>
// OWN: %[[A:.*]] = tsr.add %[[S]], %{{.*}} : tensor<f32>, tensor<f32> -> tensor<f32>
// OWN: return %{{.*}}, %arg1 : tensor<f32>, tensor<i64>
func.func @main(%x: tensor<4x10xf32> {tsr.name = "x"}, %d: tensor<i64> {tsr.name = "d"}) -> (tensor<4x10xf32> {tsr.name = "y"}, tensor<f32> {tsr.name = "s"}, tensor<f32> {tsr.name = "aux_loss.moe0", tsr.aux_loss}, tensor<i64> {tsr.name = "moe0.dropped", tsr.role = #tsr.role<metric>}, tensor<f32> {tsr.name = "aux_loss.moe1", tsr.aux_loss}) {
  %s = tsr.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x10xf32>) -> tensor<f32>
  %a = tsr.reduce_max %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x10xf32>) -> tensor<f32>
  %b = tsr.reduce_min %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x10xf32>) -> tensor<f32>
  return %x, %s, %a, %d, %b : tensor<4x10xf32>, tensor<f32>, tensor<f32>, tensor<i64>, tensor<f32>
}
