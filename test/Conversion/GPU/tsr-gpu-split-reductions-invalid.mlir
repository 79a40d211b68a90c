// RUN: not tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-split-reductions{target-warps=0}))" 2>&1 | FileCheck %s

// CHECK: error: tsr-gpu-split-reductions: target-warps, min-row-chunk, min-column-chunk and min-elements must be at least 1
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
