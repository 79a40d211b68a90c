// A tensor-parallel matmul on a 2x2 mesh: each rank multiplies its slice of
// the contraction dimension, the partial sums are added over tp, and the
// result averaged over the whole mesh.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>} {
  func.func @f(%x: tensor<64x256xf32> {tsr.name = "x"}, %w: tensor<256x64xf32> {tsr.name = "w"}) -> (tensor<64x64xf32> {tsr.name = "y"}) {
    %y = tsr.matmul %x, %w : tensor<64x256xf32>, tensor<256x64xf32> -> tensor<64x64xf32>
    %r = tsr.all_reduce %y {mesh_axes = ["tp"], reduction = #tsr.reduction<sum>} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %g = tsr.all_reduce %r {mesh_axes = ["dp", "tp"], reduction = #tsr.reduction<mean>} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    return %g : tensor<64x64xf32>
  }
}
