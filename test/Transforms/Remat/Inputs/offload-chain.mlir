// Six MatMul + Tanh layers and their backward pass (tsr-remat-plan.mlir
// plans it under budgets that recomputation alone cannot meet).
func.func @chain(%x: tensor<512x64xf32>, %w: tensor<64x64xf32>, %dy: tensor<512x64xf32>) -> tensor<512x64xf32> {
  %a1 = tsr.matmul %x, %w : tensor<512x64xf32>, tensor<64x64xf32> -> tensor<512x64xf32>
  %h1 = tsr.tanh %a1 : tensor<512x64xf32>
  %a2 = tsr.matmul %h1, %w : tensor<512x64xf32>, tensor<64x64xf32> -> tensor<512x64xf32>
  %h2 = tsr.tanh %a2 : tensor<512x64xf32>
  %a3 = tsr.matmul %h2, %w : tensor<512x64xf32>, tensor<64x64xf32> -> tensor<512x64xf32>
  %h3 = tsr.tanh %a3 : tensor<512x64xf32>
  %a4 = tsr.matmul %h3, %w : tensor<512x64xf32>, tensor<64x64xf32> -> tensor<512x64xf32>
  %h4 = tsr.tanh %a4 : tensor<512x64xf32>
  %a5 = tsr.matmul %h4, %w : tensor<512x64xf32>, tensor<64x64xf32> -> tensor<512x64xf32>
  %h5 = tsr.tanh %a5 : tensor<512x64xf32>
  %a6 = tsr.matmul %h5, %w : tensor<512x64xf32>, tensor<64x64xf32> -> tensor<512x64xf32>
  %h6 = tsr.tanh %a6 : tensor<512x64xf32>
  %g6 = tsr.mul %h6, %dy {tsr.backward} : tensor<512x64xf32>, tensor<512x64xf32> -> tensor<512x64xf32>
  %d5 = tsr.matmul %g6, %w {tsr.backward} : tensor<512x64xf32>, tensor<64x64xf32> -> tensor<512x64xf32>
  %g5 = tsr.mul %h5, %d5 {tsr.backward} : tensor<512x64xf32>, tensor<512x64xf32> -> tensor<512x64xf32>
  %d4 = tsr.matmul %g5, %w {tsr.backward} : tensor<512x64xf32>, tensor<64x64xf32> -> tensor<512x64xf32>
  %g4 = tsr.mul %h4, %d4 {tsr.backward} : tensor<512x64xf32>, tensor<512x64xf32> -> tensor<512x64xf32>
  %d3 = tsr.matmul %g4, %w {tsr.backward} : tensor<512x64xf32>, tensor<64x64xf32> -> tensor<512x64xf32>
  %g3 = tsr.mul %h3, %d3 {tsr.backward} : tensor<512x64xf32>, tensor<512x64xf32> -> tensor<512x64xf32>
  %d2 = tsr.matmul %g3, %w {tsr.backward} : tensor<512x64xf32>, tensor<64x64xf32> -> tensor<512x64xf32>
  %g2 = tsr.mul %h2, %d2 {tsr.backward} : tensor<512x64xf32>, tensor<512x64xf32> -> tensor<512x64xf32>
  %d1 = tsr.matmul %g2, %w {tsr.backward} : tensor<512x64xf32>, tensor<64x64xf32> -> tensor<512x64xf32>
  %g1 = tsr.mul %h1, %d1 {tsr.backward} : tensor<512x64xf32>, tensor<512x64xf32> -> tensor<512x64xf32>
  return %g1 : tensor<512x64xf32>
}
