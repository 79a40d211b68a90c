// RUN: tessera-opt %s -split-input-file -tsr-cpu-entry-point -verify-diagnostics | FileCheck %s

// The program's body becomes the entry's, after a block that loads each
// buffer pointer from the array; the program is left a declaration with
// its attributes.
// CHECK-LABEL: llvm.func @step(!llvm.ptr, !llvm.ptr) attributes {tsr.in_place = array<i64: -1, 0>}
// CHECK: llvm.func @tessera_entry_step(%[[ARGV:.*]]: !llvm.ptr)
// CHECK:   %[[P0:.*]] = llvm.load %[[ARGV]] : !llvm.ptr -> !llvm.ptr
// CHECK:   %[[S1:.*]] = llvm.getelementptr %[[ARGV]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK:   %[[P1:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK:   llvm.br ^[[BODY:.*]](%[[P0]], %[[P1]] : !llvm.ptr, !llvm.ptr)
// CHECK: ^[[BODY]](%[[X:.*]]: !llvm.ptr, %[[Y:.*]]: !llvm.ptr):
// CHECK:   %[[V:.*]] = llvm.load %[[X]] : !llvm.ptr -> f32
// CHECK:   llvm.store %[[V]], %[[Y]] : f32, !llvm.ptr
// CHECK:   llvm.return
llvm.func @step(%x: !llvm.ptr, %y: !llvm.ptr) attributes {tsr.in_place = array<i64: -1, 0>} {
  %v = llvm.load %x : !llvm.ptr -> f32
  llvm.store %v, %y : f32, !llvm.ptr
  llvm.return
}

// -----

// Every public function is a program with its own entry; internal helpers
// and declarations are not.
// CHECK-LABEL: llvm.func internal @helper
// CHECK: llvm.func @forward(!llvm.ptr)
// CHECK: llvm.func @backward(!llvm.ptr, !llvm.ptr)
// CHECK: llvm.func @tessera_entry_forward(
// CHECK:   llvm.call @helper(
// CHECK: llvm.func @tessera_entry_backward(
// CHECK-NOT: tessera_entry_helper
// CHECK-NOT: tessera_entry_cblas
llvm.func internal @helper() {
  llvm.return
}
llvm.func @cblas_sgemm(!llvm.ptr)
llvm.func @forward(%x: !llvm.ptr) {
  llvm.call @helper() : () -> ()
  llvm.return
}
llvm.func @backward(%x: !llvm.ptr, %y: !llvm.ptr) {
  llvm.return
}

// -----

// expected-error @+1 {{no lowered public function to wrap}}
module {
  llvm.func @other(!llvm.ptr)
}

// -----

// expected-error @+1 {{expected the bare-pointer convention}}
llvm.func @step(%x: i64) {
  llvm.return
}
