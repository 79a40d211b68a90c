// RUN: not tessera-opt %s -split-input-file --tsr-precision-plan=precision=fp8 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not tessera-opt %s -split-input-file "--tsr-precision-plan=precision=bf16 keep-fp32=[a" 2>&1 | FileCheck %s --check-prefix=GLOB
// RUN: not tessera-opt %s -split-input-file "--tsr-precision-plan=precision=bf16 function=nope" 2>&1 | FileCheck %s --check-prefix=FUNC
// RUN: tessera-opt %s -split-input-file -verify-diagnostics

// POLICY: error: unknown precision 'fp8' (expected fp32, bf16 or fp16)
// GLOB: error: --keep-fp32 '[a': invalid glob pattern, unmatched '['
// FUNC: error: {{.*}}nope
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tsr.relu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @bad_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'tsr.precision' must be one of f32, bf16, f16, got "fp8"}}
  %y = tsr.relu %x {tsr.precision = "fp8"} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{attribute 'tsr.precision' must be one of bf16, fp16, got "f32"}}
func.func @bad_policy(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tsr.precision = "f32"} {
  return %x : tensor<4xf32>
}
