// REQUIRES: cuda-toolkit
// RUN: tessera-opt %s --tsr-gpu-fatbin --split-input-file | FileCheck %s

// Two PTX objects (the chosen sm_90a, the family's sm_90) become one fatbin
// (magic 0xBA55ED50): the first one's SASS, the second one's PTX
// (test/tools/tessera-compile-cuda.test lists an artifact's images).
// CHECK: gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90a">, "P\EDU\BA
// CHECK-NOT: #gpu.object
module attributes {gpu.container_module} {
  gpu.binary @kernels [
    #gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\0A.target sm_90a\0A.address_size 64\0A.visible .entry k()\0A{\0A\09ret;\0A}\0A">,
    #gpu.object<#nvvm.target<chip = "sm_90">, assembly = ".version 8.0\0A.target sm_90\0A.address_size 64\0A.visible .entry k()\0A{\0A\09ret;\0A}\0A">
  ]
}

// -----

// One object (a chip whose PTX is portable): its SASS and its PTX.
// CHECK: gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_80">, "P\EDU\BA
// CHECK-NOT: #gpu.object
module attributes {gpu.container_module} {
  gpu.binary @kernels [
    #gpu.object<#nvvm.target<chip = "sm_80">, assembly = ".version 8.0\0A.target sm_80\0A.address_size 64\0A.visible .entry k()\0A{\0A\09ret;\0A}\0A">
  ]
}
