// One rank's training step of Inputs/mlp-step.mlir (global batch 4) on the
// mesh dp=2, tp=2, written by hand: a rank takes the 2 rows of the batch at
// its dp coordinate (ranks that differ only in tp take the same rows and
// hold the same params), averages its gradients over dp before the SGD
// update, and its loss over the whole mesh (the tp replicas hold equal
// losses, so that is the dp mean).
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>} {
  func.func @step(%x: tensor<2x4xf32> {tsr.name = "x"}, %w: tensor<4x3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, %b: tensor<3xf32> {tsr.name = "b", tsr.role = #tsr.role<param>}, %t: tensor<2x3xf32> {tsr.name = "t", tsr.role = #tsr.role<label>}, %step: tensor<i64> {tsr.init = 0.000000e+00 : f64, tsr.name = "step", tsr.role = #tsr.role<state>}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<4x3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.updates = 1 : i64}, tensor<3xf32> {tsr.name = "b", tsr.role = #tsr.role<param>, tsr.updates = 2 : i64}, tensor<i64> {tsr.name = "step", tsr.role = #tsr.role<state>, tsr.updates = 4 : i64}) {
    %lr = tsr.constant dense<1.000000e-02> : tensor<f64>
    %one = tsr.constant dense<1> : tensor<i64>
    %scale = tsr.constant dense<0.166666672> : tensor<2x3xf32>
    %zero = tsr.constant dense<0.000000e+00> : tensor<f32>
    %count = tsr.constant dense<6.000000e+00> : tensor<f32>
    %0 = tsr.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
    %pre = tsr.add %0, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    %1 = tsr.relu %pre : tensor<2x3xf32>
    %err = tsr.sub %1, %t : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %2 = tsr.mul %err, %err : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %3 = tsr.reduce_sum %2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
    %local = tsr.div %3, %count : tensor<f32>, tensor<f32> -> tensor<f32>
    %loss = tsr.all_reduce %local {mesh_axes = ["dp", "tp"], reduction = #tsr.reduction<mean>, serves = ["loss"]} : (tensor<f32>) -> tensor<f32>
    %4 = tsr.mul %err, %scale : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %5 = tsr.add %4, %4 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %6 = tsr.greater %pre, %zero : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xi1>
    %7 = tsr.where %6, %5, %zero : tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
    %8 = tsr.reduce_sum %7 {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<3xf32>
    %9 = tsr.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
    %10 = tsr.matmul %9, %7 : tensor<4x2xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
    %gw = tsr.all_reduce %10 {mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w"]} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %gb = tsr.all_reduce %8 {mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["b"]} : (tensor<3xf32>) -> tensor<3xf32>
    %next = tsr.add %step, %one : tensor<i64>, tensor<i64> -> tensor<i64>
    %11 = tsr.cast %lr : tensor<f64> to tensor<f32>
    %12 = tsr.mul %11, %gw : tensor<f32>, tensor<4x3xf32> -> tensor<4x3xf32>
    %w2 = tsr.sub %w, %12 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
    %13 = tsr.mul %11, %gb : tensor<f32>, tensor<3xf32> -> tensor<3xf32>
    %b2 = tsr.sub %b, %13 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    return %loss, %w2, %b2, %next : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>, tensor<i64>
  }
}
