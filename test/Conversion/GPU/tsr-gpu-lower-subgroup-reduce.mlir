// RUN: tessera-opt %s --pass-pipeline="builtin.module(gpu.module(tsr-gpu-lower-subgroup-reduce))" --split-input-file | FileCheck %s

// f32: one 32-bit xor shuffle per step, offsets 1 to 16, each step
// `mine (+) theirs` (what tsr-gpu-emulate reproduces on the CPU). The NVVM
// conversion would otherwise fail on it (MLIR 22 has redux.sync for i32
// only, f32 on sm_100a).
// CHECK-LABEL: gpu.func @f32
// CHECK-NOT: gpu.subgroup_reduce
// CHECK: %[[S1:.*]], %{{.*}} = gpu.shuffle xor %[[V:.*]], %c1_i32, %c32_i32 : f32
// CHECK-NEXT: %[[A1:.*]] = arith.maximumf %[[V]], %[[S1]] : f32
// CHECK-NEXT: %[[S2:.*]], %{{.*}} = gpu.shuffle xor %[[A1]], %c2_i32, %c32_i32 : f32
// CHECK-NEXT: %[[A2:.*]] = arith.maximumf %[[A1]], %[[S2]] : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CHECK-NOT: gpu.shuffle
gpu.module @kernels {
  gpu.func @f32(%x: memref<32xf32>) kernel {
    %t = gpu.thread_id x
    %v = memref.load %x[%t] : memref<32xf32>
    %m = gpu.subgroup_reduce maximumf %v uniform : (f32) -> f32
    memref.store %m, %x[%t] : memref<32xf32>
    gpu.return
  }
}

// -----

// f64 takes 64-bit shuffles (the NVVM conversion splits each in two
// 32-bit ones); f16 is widened into a 32-bit one.
// CHECK-LABEL: gpu.func @wide_and_narrow
// CHECK-NOT: gpu.subgroup_reduce
// CHECK-COUNT-5: gpu.shuffle xor %{{.*}} : f64
// CHECK: arith.bitcast %{{.*}} : f16 to i16
// CHECK: arith.extui
// CHECK: gpu.shuffle xor %{{.*}} : i32
gpu.module @kernels {
  gpu.func @wide_and_narrow(%x: memref<32xf64>, %y: memref<32xf16>) kernel {
    %t = gpu.thread_id x
    %v = memref.load %x[%t] : memref<32xf64>
    %s = gpu.subgroup_reduce add %v uniform : (f64) -> f64
    memref.store %s, %x[%t] : memref<32xf64>
    %w = memref.load %y[%t] : memref<32xf16>
    %h = gpu.subgroup_reduce add %w uniform : (f16) -> f16
    memref.store %h, %y[%t] : memref<32xf16>
    gpu.return
  }
}
