// RUN: tessera-opt %s --tsr-lower-to-linalg --tsr-bufferize | FileCheck %s
// RUN: tessera-opt %s --tsr-cpu-codegen | FileCheck %s --check-prefix=LLVM

// A gradient bucket as tsr-data-parallel builds it: the concatenated
// gradients are all-reduced asynchronously, the exp runs while the
// collective is in flight, the slices read the result after the wait. The
// collectives reach bufferization as tsrt ops on tensors, so one-shot
// bufferization chooses their buffers: the bucket is reduced in place in
// the concatenation's buffer (no buffer of its own, no copy), while the
// all-reduce of an input, which the program must not overwrite, receives
// into a buffer of its own: here the result's out-parameter, which the
// caller passes (as the add writes its own). tsr-collectives-to-runtime,
// after bufferization, makes them runtime calls.

// CHECK-LABEL: func.func @grads(
// CHECK-SAME: %[[W:[a-z0-9]+]]: memref<6xf32>, %[[B:[a-z0-9]+]]: memref<2xf32>, %[[T:[a-z0-9]+]]: memref<6xf32>, %[[SB:[a-z0-9]+]]: memref<2xf32>, %[[A:[a-z0-9]+]]: memref<6xf32>
// CHECK: %[[CAT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<2xf32> to memref<2xf32, strided<[1]>>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<6xf32> to memref<6xf32, strided<[1], offset: 2>>
// CHECK-NEXT: tsrt.all_reduce async ins(%[[CAT]] : memref<8xf32>) outs(%[[CAT]] : memref<8xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<mean>}
// CHECK-NEXT: %[[E:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[E]] : memref<6xf32>)
// CHECK: tsrt.wait outs(%[[CAT]] : memref<8xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[E]] : memref<6xf32, strided<[1], offset: 2>>, memref<6xf32>) outs(%[[T]] : memref<6xf32>)
// CHECK: tsrt.all_reduce ins(%[[W]] : memref<6xf32>) outs(%[[A]] : memref<6xf32>)
// CHECK: memref.dealloc %[[CAT]]

// LLVM-LABEL: llvm.func @tessera_entry_grads(
// LLVM: llvm.call @tsrt_all_reduce_start(%{{.*}}, %{{.*}}, %[[P:[0-9]+]], %[[P]], %{{.*}}, %{{.*}}, %{{.*}}, %[[NULL:[0-9]+]]) : (i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr) -> ()
// The start and the wait are timed apart (tsr-cpu-profile-regions).
// LLVM-NEXT: llvm.call @tsr_profile_end(
// LLVM-NEXT: llvm.call @tsr_profile_begin(
// LLVM-NEXT: llvm.call @tsrt_wait(%[[P]], %[[NULL]]) : (!llvm.ptr, !llvm.ptr) -> ()
// LLVM: llvm.call @tsrt_all_reduce(
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @grads(%w: tensor<6xf32>, %b: tensor<2xf32>) -> (tensor<6xf32>, tensor<2xf32>, tensor<6xf32>) {
    %gw = tsr.mul %w, %w : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
    %gb = tsr.mul %b, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    %cat = tsr.concat %gb, %gw {axis = 0 : i64} : (tensor<2xf32>, tensor<6xf32>) -> tensor<8xf32>
    %p = tsr.all_reduce %cat {async, bucket = 0 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["b", "w"]} : (tensor<8xf32>) -> tensor<8xf32>
    %e = tsr.exp %gw : tensor<6xf32>
    %r = tsr.wait %p : (tensor<8xf32>) -> tensor<8xf32>
    %sb = tsr.slice %r {starts = array<i64: 0>, limits = array<i64: 2>, steps = array<i64: 1>} : (tensor<8xf32>) -> tensor<2xf32>
    %sw = tsr.slice %r {starts = array<i64: 2>, limits = array<i64: 8>, steps = array<i64: 1>} : (tensor<8xf32>) -> tensor<6xf32>
    %t = tsr.add %sw, %e : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
    %a = tsr.all_reduce %w {mesh_axes = ["dp"]} : (tensor<6xf32>) -> tensor<6xf32>
    return %t, %sb, %a : tensor<6xf32>, tensor<2xf32>, tensor<6xf32>
  }
}
