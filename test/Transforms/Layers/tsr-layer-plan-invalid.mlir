// RUN: not tessera-opt %s --tsr-layer-plan=min-ops=0 2>&1 | FileCheck %s
// RUN: not tessera-opt %s --tsr-layer-plan=min-layers=1 2>&1 | FileCheck %s --check-prefix=LAYERS

// CHECK: error: tsr-layer-plan: min-ops must be at least 1 and min-layers at least 2, got 0 and 4
// LAYERS: error: tsr-layer-plan: min-ops must be at least 1 and min-layers at least 2, got 8 and 1
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}
