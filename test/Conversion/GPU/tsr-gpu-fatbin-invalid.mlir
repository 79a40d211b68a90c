// REQUIRES: cuda-toolkit
// RUN: tessera-opt %s --tsr-gpu-fatbin --split-input-file --verify-diagnostics

// The objects must be PTX of NVVM targets.
module attributes {gpu.container_module} {
  // expected-error @+1 {{tsr-gpu-fatbin: expected PTX objects of NVVM targets (gpu-module-to-binary format=isa), not #gpu.object<#nvvm.target, bin = "x">}}
  gpu.binary @kernels [#gpu.object<#nvvm.target, bin = "x">]
}

// -----

// ptxas's own message, for PTX it rejects.
module attributes {gpu.container_module} {
  // expected-error-re @+1 {{tsr-gpu-fatbin: {{.*}}ptxas failed{{.*}}syntax error}}
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\0A.target sm_90a\0A.address_size 64\0Anot ptx\0A">]
}
