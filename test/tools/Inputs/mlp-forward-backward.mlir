// mlp-step.mlir's training step as two programs called in turn: @forward
// computes the loss and the activations the gradient needs (pre, err), and
// @backward takes them by name and updates the params and the step count.
module attributes {tsr.schedule = [@forward, @backward]} {
  func.func @forward(%x: tensor<4x4xf32> {tsr.name = "x"}, %w: tensor<4x3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, %b: tensor<3xf32> {tsr.name = "b", tsr.role = #tsr.role<param>}, %t: tensor<4x3xf32> {tsr.name = "t", tsr.role = #tsr.role<label>}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<4x3xf32> {tsr.name = "pre"}, tensor<4x3xf32> {tsr.name = "err"}) {
    %count = tsr.constant dense<1.200000e+01> : tensor<f32>
    %0 = tsr.matmul %x, %w : tensor<4x4xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
    %pre = tsr.add %0, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
    %1 = tsr.relu %pre : tensor<4x3xf32>
    %err = tsr.sub %1, %t : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
    %2 = tsr.mul %err, %err : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
    %3 = tsr.reduce_sum %2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
    %loss = tsr.div %3, %count : tensor<f32>, tensor<f32> -> tensor<f32>
    return %loss, %pre, %err : tensor<f32>, tensor<4x3xf32>, tensor<4x3xf32>
  }
  func.func @backward(%x: tensor<4x4xf32> {tsr.name = "x"}, %w: tensor<4x3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, %b: tensor<3xf32> {tsr.name = "b", tsr.role = #tsr.role<param>}, %step: tensor<i64> {tsr.init = 0.000000e+00 : f64, tsr.name = "step", tsr.role = #tsr.role<state>}, %pre: tensor<4x3xf32> {tsr.name = "pre"}, %err: tensor<4x3xf32> {tsr.name = "err"}) -> (tensor<4x3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.updates = 1 : i64}, tensor<3xf32> {tsr.name = "b", tsr.role = #tsr.role<param>, tsr.updates = 2 : i64}, tensor<i64> {tsr.name = "step", tsr.role = #tsr.role<state>, tsr.updates = 3 : i64}) {
    %lr = tsr.constant dense<1.000000e-02> : tensor<f64>
    %one = tsr.constant dense<1> : tensor<i64>
    %scale = tsr.constant dense<0.0833333358> : tensor<4x3xf32>
    %zero = tsr.constant dense<0.000000e+00> : tensor<f32>
    %4 = tsr.mul %err, %scale : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
    %5 = tsr.add %4, %4 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
    %6 = tsr.greater %pre, %zero : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xi1>
    %7 = tsr.where %6, %5, %zero : tensor<4x3xi1>, tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
    %8 = tsr.reduce_sum %7 {axes = array<i64: 0>, keepdims = false} : (tensor<4x3xf32>) -> tensor<3xf32>
    %9 = tsr.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %10 = tsr.matmul %9, %7 : tensor<4x4xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
    %next = tsr.add %step, %one : tensor<i64>, tensor<i64> -> tensor<i64>
    %11 = tsr.cast %lr : tensor<f64> to tensor<f32>
    %12 = tsr.mul %11, %10 : tensor<f32>, tensor<4x3xf32> -> tensor<4x3xf32>
    %w2 = tsr.sub %w, %12 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
    %13 = tsr.mul %11, %8 : tensor<f32>, tensor<3xf32> -> tensor<3xf32>
    %b2 = tsr.sub %b, %13 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    return %w2, %b2, %next : tensor<4x3xf32>, tensor<3xf32>, tensor<i64>
  }
}
