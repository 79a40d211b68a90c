// A loss-and-gradient function under dynamic loss scaling: the loss_scale
// state that tsr-loss-scale adds (input of
// tsr-data-parallel-plan-invalid.mlir).
func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %s: tensor<f32> {tsr.init = 6.553600e+04 : f64, tsr.name = "loss_scale", tsr.role = #tsr.role<state>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}) {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}
