// RUN: tessera-opt %s | tessera-opt | FileCheck %s

// Every collective prints and parses back with its axis, reduction and the
// values it serves; the mesh is the module's.
module attributes {tsr.mesh = #tsr.mesh<["dp"=4]>} {
  // CHECK-LABEL: func.func @collectives(
  func.func @collectives(%x: tensor<8x3xf32>, %s: tensor<2x3xf32>, %i: tensor<8xi64>) -> (tensor<8x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8xi64>, tensor<2x3xf32>) {
    // CHECK: tsr.all_reduce %{{.*}} {bucket = 0 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w", "b"]} : (tensor<8x3xf32>) -> tensor<8x3xf32>
    %a = tsr.all_reduce %x {mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w", "b"], bucket = 0 : i64} : (tensor<8x3xf32>) -> tensor<8x3xf32>
    // The default reduction, sum, is not printed.
    // CHECK: tsr.reduce_scatter %{{.*}} {mesh_axes = ["dp"], serves = ["w"]} : (tensor<8x3xf32>) -> tensor<2x3xf32>
    %r = tsr.reduce_scatter %x {mesh_axes = ["dp"], reduction = #tsr.reduction<sum>, serves = ["w"]} : (tensor<8x3xf32>) -> tensor<2x3xf32>
    // CHECK: tsr.all_gather %{{.*}} {id = 3 : i64, mesh_axes = ["dp"], serves = ["w"]} : (tensor<2x3xf32>) -> tensor<8x3xf32>
    %g = tsr.all_gather %s {mesh_axes = ["dp"], serves = ["w"], id = 3 : i64} : (tensor<2x3xf32>) -> tensor<8x3xf32>
    // CHECK: tsr.all_to_all %{{.*}} {mesh_axes = ["dp"]} : (tensor<8x3xf32>) -> tensor<8x3xf32>
    %t = tsr.all_to_all %x {mesh_axes = ["dp"]} : (tensor<8x3xf32>) -> tensor<8x3xf32>
    // CHECK: tsr.broadcast_from %{{.*}} {mesh_axes = ["dp"], root = 2 : i64, serves = ["ids"]} : (tensor<8xi64>) -> tensor<8xi64>
    %b = tsr.broadcast_from %i {mesh_axes = ["dp"], root = 2 : i64, serves = ["ids"]} : (tensor<8xi64>) -> tensor<8xi64>
    // CHECK: tsr.local_shard %{{.*}} {mesh_axes = ["dp"]} : (tensor<8x3xf32>) -> tensor<2x3xf32>
    %l = tsr.local_shard %x {mesh_axes = ["dp"]} : (tensor<8x3xf32>) -> tensor<2x3xf32>
    return %a, %r, %g, %t, %b, %l : tensor<8x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8xi64>, tensor<2x3xf32>
  }
}

// An async collective and the wait that completes it.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  // CHECK-LABEL: func.func @async(
  func.func @async(%g: tensor<6xf32>) -> tensor<3xf32> {
    // CHECK: %[[P:.*]] = tsr.reduce_scatter %{{.*}} {async, bucket = 1 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w"]} : (tensor<6xf32>) -> tensor<3xf32>
    %p = tsr.reduce_scatter %g {async, bucket = 1 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w"]} : (tensor<6xf32>) -> tensor<3xf32>
    // CHECK: tsr.wait %[[P]] : (tensor<3xf32>) -> tensor<3xf32>
    %r = tsr.wait %p : (tensor<3xf32>) -> tensor<3xf32>
    return %r : tensor<3xf32>
  }
}

// A mesh with three axes keeps their order (dp outermost, tp innermost: the
// rank layout is row-major in that order); a collective may span several
// axes, listed in the mesh's order, and work along any dimension.
// CHECK: module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "pp"=3, "tp"=4]>}
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "pp"=3, "tp"=4]>} {
  // CHECK-LABEL: func.func @groups(
  func.func @groups(%x: tensor<4x16xf32>, %s: tensor<4x2xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x2xf32>) {
    // CHECK: tsr.all_reduce %{{.*}} {mesh_axes = ["dp", "tp"], reduction = #tsr.reduction<max>} : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %a = tsr.all_reduce %x {mesh_axes = ["dp", "tp"], reduction = #tsr.reduction<max>} : (tensor<4x16xf32>) -> tensor<4x16xf32>
    // CHECK: tsr.all_gather %{{.*}} {dim = 1 : i64, mesh_axes = ["dp", "tp"]} : (tensor<4x2xf32>) -> tensor<4x16xf32>
    %g = tsr.all_gather %s {dim = 1 : i64, mesh_axes = ["dp", "tp"]} : (tensor<4x2xf32>) -> tensor<4x16xf32>
    // CHECK: tsr.reduce_scatter %{{.*}} {dim = 1 : i64, mesh_axes = ["dp", "tp"]} : (tensor<4x16xf32>) -> tensor<4x2xf32>
    %r = tsr.reduce_scatter %x {dim = 1 : i64, mesh_axes = ["dp", "tp"]} : (tensor<4x16xf32>) -> tensor<4x2xf32>
    return %a, %g, %r : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x2xf32>
  }
}

// Point-to-point messages of a pipeline's per-rank programs.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "pp"=4]>} {
  // CHECK-LABEL: func.func @messages(
  func.func @messages(%h: tensor<4x8xf32>) -> tensor<4x8xbf16> {
    // CHECK: tsr.send %{{.*}} {mesh_axes = ["pp"], peer = 3 : i64, serves = ["micro-batch 0 of stage1.forward"]} : tensor<4x8xf32>
    tsr.send %h {mesh_axes = ["pp"], peer = 3 : i64, serves = ["micro-batch 0 of stage1.forward"]} : tensor<4x8xf32>
    // CHECK: tsr.recv {id = 4 : i64, mesh_axes = ["pp"], peer = 0 : i64} : tensor<4x8xbf16>
    %r = tsr.recv {mesh_axes = ["pp"], peer = 0 : i64, id = 4 : i64} : tensor<4x8xbf16>
    return %r : tensor<4x8xbf16>
  }
}

// The transfers of an offloaded value to host memory and back, on tensors
// and on memrefs (after bufferization).
// CHECK-LABEL: func.func @transfers(
// CHECK: tsr.offload_start %arg0 {copy_seconds = 2.500000e-01 : f64, exposed_seconds = 0.000000e+00 : f64, transfer = 3 : i64} : tensor<8x64xf32>
// CHECK: tsr.offload_wait %arg0 {transfer = 3 : i64} : tensor<8x64xf32>
// CHECK: %[[P:.*]] = tsr.prefetch_start {transfer = 3 : i64} -> tensor<8x64xf32>
// CHECK: %{{.*}} = tsr.prefetch_wait %[[P]] {transfer = 3 : i64} : tensor<8x64xf32> -> tensor<8x64xf32>
// CHECK: tsr.offload_start %arg1 {transfer = 4 : i64} : memref<8x64xf32>
// CHECK: tsr.prefetch_start {transfer = 4 : i64} into %arg1 : memref<8x64xf32>
// CHECK: tsr.prefetch_wait %arg1 {transfer = 4 : i64} : memref<8x64xf32>
func.func @transfers(%x: tensor<8x64xf32>, %b: memref<8x64xf32>) -> tensor<8x64xf32> {
  tsr.offload_start %x {copy_seconds = 2.5e-01 : f64, exposed_seconds = 0.0 : f64, transfer = 3 : i64} : tensor<8x64xf32>
  tsr.offload_wait %x {transfer = 3 : i64} : tensor<8x64xf32>
  %p = tsr.prefetch_start {transfer = 3 : i64} -> tensor<8x64xf32>
  %y = tsr.prefetch_wait %p {transfer = 3 : i64} : tensor<8x64xf32> -> tensor<8x64xf32>
  tsr.offload_start %b {transfer = 4 : i64} : memref<8x64xf32>
  tsr.offload_wait %b {transfer = 4 : i64} : memref<8x64xf32>
  tsr.prefetch_start {transfer = 4 : i64} into %b : memref<8x64xf32>
  tsr.prefetch_wait %b {transfer = 4 : i64} : memref<8x64xf32>
  return %y : tensor<8x64xf32>
}

// Queued on the CUDA target's stream (gpu-async-region): the tokens of the
// work before and a token of their own.
// CHECK-LABEL: func.func @queued_transfers(
// CHECK: %[[T1:.*]] = tsr.offload_start[%{{.*}}] %arg0 {transfer = 4 : i64} : memref<8x64xf32> -> !gpu.async.token
// CHECK: %[[T2:.*]] = tsr.offload_wait[%[[T1]]] %arg0 {transfer = 4 : i64} : memref<8x64xf32> -> !gpu.async.token
// CHECK: %[[T3:.*]] = tsr.prefetch_start[%[[T2]]] {transfer = 4 : i64} into %arg0 : memref<8x64xf32> -> !gpu.async.token
// CHECK: tsr.prefetch_wait[%[[T3]]] %arg0 {transfer = 4 : i64} : memref<8x64xf32> -> !gpu.async.token
func.func @queued_transfers(%b: memref<8x64xf32>) {
  %t0 = gpu.wait async
  %t1 = tsr.offload_start [%t0] %b {transfer = 4 : i64} : memref<8x64xf32> -> !gpu.async.token
  %t2 = tsr.offload_wait [%t1] %b {transfer = 4 : i64} : memref<8x64xf32> -> !gpu.async.token
  %t3 = tsr.prefetch_start [%t2] {transfer = 4 : i64} into %b : memref<8x64xf32> -> !gpu.async.token
  %t4 = tsr.prefetch_wait [%t3] %b {transfer = 4 : i64} : memref<8x64xf32> -> !gpu.async.token
  gpu.wait [%t4]
  return
}
