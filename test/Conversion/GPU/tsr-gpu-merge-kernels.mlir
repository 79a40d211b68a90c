// RUN: tessera-opt %s --tsr-gpu-merge-kernels --split-input-file --verify-diagnostics | FileCheck %s

// Two kernels outlined from @main, both named after it: one module, each
// function named after its old module, the launches pointing there.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.module @tessera_kernels {
// CHECK-NEXT: gpu.func @main_kernel(%{{.*}}: memref<4xf32>) kernel
// CHECK: gpu.func @main_kernel_0(%{{.*}}: memref<4xf32>) kernel
// CHECK-NOT: gpu.module
// CHECK: gpu.launch_func @tessera_kernels::@main_kernel blocks
// CHECK: gpu.launch_func @tessera_kernels::@main_kernel_0 blocks
module attributes {gpu.container_module} {
  gpu.module @main_kernel {
    gpu.func @main_kernel(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @main_kernel_0 {
    gpu.func @main_kernel(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @main(%x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @main_kernel::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @main_kernel_0::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
}

// -----

// Modules with a target already carry their own compilation options.
module attributes {gpu.container_module} {
  // expected-error @+1 {{tsr-gpu-merge-kernels: expected gpu.modules without targets (run it before attaching one)}}
  gpu.module @a [#nvvm.target] {
  }
  gpu.module @b {
  }
}

// -----

// A kernel outlined from a layer cell (`layers0-3.update`) is named as a
// PTX identifier (NVPTX aborts on `-` and `.`), unique where two names
// sanitize alike; a single module is merged (and renamed) too.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.module @tessera_kernels {
// CHECK-NEXT: gpu.func @layers0_3_update_kernel(
// CHECK: gpu.func @layers0_3_update_kernel_0(
// CHECK: gpu.launch_func @tessera_kernels::@layers0_3_update_kernel blocks
// CHECK: gpu.launch_func @tessera_kernels::@layers0_3_update_kernel_0 blocks
module attributes {gpu.container_module} {
  gpu.module @"layers0-3.update_kernel" {
    gpu.func @"layers0-3.update_kernel"(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @"layers0.3-update_kernel" {
    gpu.func @"layers0-3.update_kernel"(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @"layers0-3.update"(%x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @"layers0-3.update_kernel"::@"layers0-3.update_kernel" blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @"layers0.3-update_kernel"::@"layers0-3.update_kernel" blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
}

// -----

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.module @tessera_kernels {
// CHECK-NEXT: gpu.func @main_kernel(
// CHECK: gpu.launch_func @tessera_kernels::@main_kernel blocks
module attributes {gpu.container_module} {
  gpu.module @main_kernel {
    gpu.func @main_kernel(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @main(%x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @main_kernel::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
}
