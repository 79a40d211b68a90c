// RUN: tessera-opt %s -split-input-file -tsr-cpu-entry-point -verify-diagnostics | FileCheck %s

// CHECK-LABEL: llvm.func internal @tessera_model
// CHECK: llvm.func @tessera_entry(%[[ARGV:.*]]: !llvm.ptr)
// CHECK:   %[[P0:.*]] = llvm.load %[[ARGV]] : !llvm.ptr -> !llvm.ptr
// CHECK:   %[[S1:.*]] = llvm.getelementptr %[[ARGV]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK:   %[[P1:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK:   llvm.call @tessera_model(%[[P0]], %[[P1]]) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK:   llvm.return
llvm.func @tessera_model(%x: !llvm.ptr, %y: !llvm.ptr) {
  llvm.return
}

// -----

// expected-error @+1 {{no lowered function 'tessera_model'}}
module {
  llvm.func @other(%x: !llvm.ptr) {
    llvm.return
  }
}

// -----

// expected-error @+1 {{expected the bare-pointer convention}}
llvm.func @tessera_model(%x: i64) {
  llvm.return
}
