// A step on a two-axis mesh (input of tsr-data-parallel-plan.mlir).
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>} {
  func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
      -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
          tensor<3xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}) {
    %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
    return %l, %w : tensor<f32>, tensor<3xf32>
  }
}
