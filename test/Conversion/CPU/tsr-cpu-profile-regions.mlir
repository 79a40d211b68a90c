// RUN: tessera-opt %s -split-input-file --tsr-cpu-profile-regions | FileCheck %s

// Kernel calls, library calls and copies are bracketed; the calls of one
// kernel for one node share a region, a gradient op's location makes its
// region `backward`, and a call of another program is not a region (its
// own ops are).
// CHECK-LABEL: module attributes {tsr.profile_regions = [
// CHECK-SAME: {backward = false, callee = "cblas_sgemm", kind = "gemm", node = "fc/MatMul"},
// CHECK-SAME: {backward = false, callee = "step_kernel", kind = "kernel", node = "relu"},
// CHECK-SAME: {backward = true, callee = "step_kernel", kind = "kernel", node = "relu"},
// CHECK-SAME: {backward = false, callee = "", kind = "copy", node = ""},
// CHECK-SAME: {backward = false, callee = "tsrt_all_reduce", kind = "call", node = "adamw"}]}
// CHECK-LABEL: func.func @step
// CHECK: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @tsr_profile_begin(%[[C0]])
// CHECK-NEXT: call @cblas_sgemm
// CHECK-NEXT: call @tsr_profile_end(%[[C0]])
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @tsr_profile_begin(%[[C1]])
// CHECK-NEXT: call @step_kernel
// CHECK-NEXT: call @tsr_profile_end(%[[C1]])
// CHECK-NEXT: %[[C1B:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @tsr_profile_begin(%[[C1B]])
// CHECK-NEXT: call @step_kernel
// CHECK-NEXT: call @tsr_profile_end(%[[C1B]])
// CHECK-NEXT: %[[C2:.*]] = arith.constant 2 : i32
// CHECK-NEXT: call @tsr_profile_begin(%[[C2]])
// CHECK-NEXT: call @step_kernel
// CHECK-NEXT: call @tsr_profile_end(%[[C2]])
// CHECK-NEXT: %[[C3:.*]] = arith.constant 3 : i32
// CHECK-NEXT: call @tsr_profile_begin(%[[C3]])
// CHECK-NEXT: memref.copy
// CHECK-NEXT: call @tsr_profile_end(%[[C3]])
// CHECK-NEXT: call @micro
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @micro
// CHECK: %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT: call @tsr_profile_begin(%[[C4]])
// CHECK-NEXT: call @tsrt_all_reduce
// CHECK-NEXT: call @tsr_profile_end(%[[C4]])
// The kernel's body is not instrumented.
// CHECK-LABEL: func.func private @step_kernel
// CHECK-NOT: tsr_profile
// CHECK: return
// CHECK: func.func private @tsr_profile_begin(i32)
// CHECK: func.func private @tsr_profile_end(i32)
func.func private @cblas_sgemm(memref<4x4xf32>, memref<4x4xf32>)
func.func private @tsrt_all_reduce(memref<4x4xf32>)
func.func @step(%a: memref<4x4xf32>, %b: memref<4x4xf32>) {
  call @cblas_sgemm(%a, %b) : (memref<4x4xf32>, memref<4x4xf32>) -> () loc(#fc)
  call @step_kernel(%b) : (memref<4x4xf32>) -> () loc(#relu)
  call @step_kernel(%a) : (memref<4x4xf32>) -> () loc(#relu)
  call @step_kernel(%a) : (memref<4x4xf32>) -> () loc(#relu_grad)
  memref.copy %a, %b : memref<4x4xf32> to memref<4x4xf32>
  call @micro(%a) : (memref<4x4xf32>) -> ()
  return
}
func.func private @micro(%a: memref<4x4xf32>) {
  call @tsrt_all_reduce(%a) : (memref<4x4xf32>) -> () loc(#adamw)
  return
}
func.func private @step_kernel(%x: memref<4x4xf32>) attributes {tsr.kernel} {
  %cst = arith.constant 0.0 : f32
  linalg.fill ins(%cst : f32) outs(%x : memref<4x4xf32>) loc(#relu)
  return
}
#fc = loc("fc/MatMul"("model.onnx":0:0))
#relu = loc("relu"("model.onnx":0:0))
#relu_grad = loc(fused<"tsr.grad">[#relu])
#adamw = loc("adamw"(unknown))

// -----

// A module without kernels, library calls or copies is left alone.
// CHECK-LABEL: module {
// CHECK-NOT: tsr_profile
func.func @empty(%a: memref<4xf32>) -> memref<4xf32> {
  return %a : memref<4xf32>
}

// -----

// A pipeline stage's call of a cell is an action of its schedule: a region
// of kind "action" named by the call's location, around the cell's own
// regions.
// CHECK-LABEL: module attributes {tsr.profile_regions = [
// CHECK-SAME: {backward = false, callee = "stage0.forward", kind = "action", node = "F0"},
// CHECK-SAME: {backward = false, callee = "stage0.forward", kind = "action", node = "F1"},
// CHECK-SAME: {backward = false, callee = "stage0.forward_kernel", kind = "kernel", node = "relu"}]}
// CHECK-LABEL: func.func @stage0
// CHECK: call @tsr_profile_begin
// CHECK-NEXT: call @stage0.forward({{.*}}) : (memref<4xf32>) -> ()
// CHECK-NEXT: call @tsr_profile_end
// CHECK: call @tsr_profile_begin
// CHECK-NEXT: call @stage0.forward({{.*}}) : (memref<4xf32>) -> ()
// CHECK-NEXT: call @tsr_profile_end
// CHECK-LABEL: func.func private @stage0.forward
// CHECK: call @tsr_profile_begin
// CHECK-NEXT: call @stage0.forward_kernel
// CHECK-NEXT: call @tsr_profile_end
func.func @stage0(%a: memref<4xf32>) {
  call @stage0.forward(%a) : (memref<4xf32>) -> () loc("F0"("pipeline stage 0"))
  call @stage0.forward(%a) : (memref<4xf32>) -> () loc("F1"("pipeline stage 0"))
  return
}
func.func private @stage0.forward(%a: memref<4xf32>) attributes {tsr.pipeline_cell} {
  call @stage0.forward_kernel(%a) : (memref<4xf32>) -> () loc("relu"(unknown))
  return
}
func.func private @stage0.forward_kernel(%x: memref<4xf32>) attributes {tsr.kernel} {
  %cst = arith.constant 0.0 : f32
  linalg.fill ins(%cst : f32) outs(%x : memref<4xf32>)
  return
}
