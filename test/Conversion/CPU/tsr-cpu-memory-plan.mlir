// RUN: tessera-opt %s -split-input-file --tsr-cpu-memory-plan | FileCheck %s

// Two buffers live at once: 16 + 32 bytes, plus the 64-byte alignment
// padding finalize-memref-to-llvm adds to the aligned one.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: attributes {tsr.peak_alloc_bytes = 112 : i64}
func.func @step(%x: memref<4xf32>, %y: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<8xf32>
  %c = memref.alloc() : memref<2xf32>
  memref.dealloc %c : memref<2xf32>
  return
}

// -----

// A call adds the callee's own peak to what the caller holds; i1 takes a
// byte per element.
// CHECK-LABEL: func.func private @micro() {
// CHECK-LABEL: func.func @step() attributes {tsr.peak_alloc_bytes = 48 : i64}
func.func private @micro() {
  %t = memref.alloc() : memref<8xi1>
  memref.dealloc %t : memref<8xi1>
  return
}
func.func @step() {
  %a = memref.alloc() : memref<10xf32>
  call @micro() : () -> ()
  call @micro() : () -> ()
  memref.dealloc %a : memref<10xf32>
  return
}

// -----

// Each public function (a program of the artifact) gets its own peak.
// CHECK-LABEL: func.func @forward() attributes {tsr.peak_alloc_bytes = 16 : i64}
// CHECK-LABEL: func.func @backward() attributes {tsr.peak_alloc_bytes = 32 : i64}
func.func @forward() {
  %a = memref.alloc() : memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  return
}
func.func @backward() {
  %a = memref.alloc() : memref<8xf32>
  memref.dealloc %a : memref<8xf32>
  return
}
