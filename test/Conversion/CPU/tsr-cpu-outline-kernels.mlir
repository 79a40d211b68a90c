// RUN: tessera-opt %s -split-input-file --tsr-cpu-outline-kernels | FileCheck %s

// Two ops that differ only in their buffers share one kernel; a third with
// another body gets its own. A value used as the op's operand twice is one
// argument.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>)
// CHECK-NEXT: call @step_kernel(%[[A]]) : (memref<4xf32>) -> ()
// CHECK-NEXT: call @step_kernel(%[[B]]) : (memref<4xf32>) -> ()
// CHECK-NEXT: call @step_kernel_0(%[[A]], %[[B]]) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT: return
// CHECK: func.func private @step_kernel(%[[X:.*]]: memref<4xf32>)
// CHECK-SAME: attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"], tsr.kernel}
// CHECK-NEXT: linalg.generic
// CHECK-SAME: ins(%[[X]] : memref<4xf32>) outs(%[[X]] : memref<4xf32>)
// CHECK: arith.mulf
// CHECK: func.func private @step_kernel_0(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>)
// CHECK: arith.addf
// CHECK-NOT: func.func
#id = affine_map<(d0) -> (d0)>
func.func @step(%a: memref<4xf32>, %b: memref<4xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.mulf %x, %x : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.mulf %x, %x : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Constants are cloned into the kernel, so fills of different values are
// different kernels; a scalar computed at run time is an argument. Strided
// views with static offsets are passed as they are.
// CHECK-LABEL: func.func @fills
// CHECK-SAME: (%[[M:.*]]: memref<8xf32>, %[[S:.*]]: f32)
// CHECK: %[[V:.*]] = memref.subview %[[M]][4] [4] [1]
// CHECK-NEXT: call @fills_kernel(%[[M]]) : (memref<8xf32>) -> ()
// CHECK-NEXT: call @fills_kernel_0(%[[M]]) : (memref<8xf32>) -> ()
// CHECK-NEXT: call @fills_kernel_1(%[[S]], %[[V]]) : (f32, memref<4xf32, strided<[1], offset: 4>>) -> ()
// CHECK: func.func private @fills_kernel(%[[K:.*]]: memref<8xf32>)
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: linalg.fill ins(%[[ZERO]] : f32) outs(%[[K]] : memref<8xf32>)
// CHECK: func.func private @fills_kernel_0
// CHECK-NEXT: arith.constant 1.000000e+00 : f32
// CHECK: func.func private @fills_kernel_1(%{{.*}}: f32, %{{.*}}: memref<4xf32, strided<[1], offset: 4>>)
func.func @fills(%m: memref<8xf32>, %s: f32) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %v = memref.subview %m[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  linalg.fill ins(%zero : f32) outs(%m : memref<8xf32>)
  linalg.fill ins(%one : f32) outs(%m : memref<8xf32>)
  linalg.fill ins(%s : f32) outs(%v : memref<4xf32, strided<[1], offset: 4>>)
  return
}

// -----

// A dynamically shaped buffer does not lower to a bare pointer: the op
// stays where it is.
// CHECK-LABEL: func.func @dynamic
// CHECK-NEXT: arith.constant
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: return
// CHECK-NOT: func.func private
func.func @dynamic(%m: memref<?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%m : memref<?xf32>)
  return
}
