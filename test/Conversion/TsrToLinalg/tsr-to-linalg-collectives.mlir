// RUN: tessera-opt %s -split-input-file --tsr-to-linalg | FileCheck %s

// Collectives become the runtime-level tsrt ops on tensors, in
// destination-passing style: the group is the bit mask of the mesh axes (dp
// is axis 0: 1, tp axis 1: 2, both: 3), the dtype the runtime's code of the
// tsr element type, the reduction the runtime's, the id the collective's
// number (not printed when unnumbered). all_reduce and broadcast_from write
// into their own operand, which bufferization reuses where the operand dies;
// the others into a tensor.empty. Bufferization decides the buffers,
// tsr-collectives-to-runtime makes the calls.
module attributes {tsr.mesh = #tsr.mesh<["dp"=4, "tp"=2]>} {
  // CHECK-LABEL: func.func @collectives(
  // CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<8x3xf32> {bufferization.writable = false}, %[[S:[a-z0-9]+]]: tensor<2x3xf32> {bufferization.writable = false}, %[[I:[a-z0-9]+]]: tensor<5xi64> {bufferization.writable = false}
  func.func @collectives(%x: tensor<8x3xf32>, %s: tensor<2x3xf32>, %i: tensor<5xi64>)
      -> (tensor<8x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<5xi64>, tensor<2x3xf32>) {
    // CHECK: %[[A:.*]] = tsrt.all_reduce ins(%[[X]] : tensor<8x3xf32>) outs(%[[X]] : tensor<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 2 : i64, id = 7 : i64, reduction = #tsrt.reduction<mean>} -> tensor<8x3xf32>
    %a = tsr.all_reduce %x {mesh_axes = ["tp"], reduction = #tsr.reduction<mean>, serves = ["w"], id = 7 : i64} : (tensor<8x3xf32>) -> tensor<8x3xf32>
    // CHECK: %[[E:.*]] = tensor.empty() : tensor<2x3xf32>
    // CHECK-NEXT: %[[R:.*]] = tsrt.reduce_scatter ins(%[[X]] : tensor<8x3xf32>) outs(%[[E]] : tensor<2x3xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>} -> tensor<2x3xf32>
    %r = tsr.reduce_scatter %x {mesh_axes = ["dp"], serves = ["w"]} : (tensor<8x3xf32>) -> tensor<2x3xf32>
    // CHECK: %[[F:.*]] = tensor.empty() : tensor<8x3xf32>
    // CHECK-NEXT: %[[G:.*]] = tsrt.all_gather ins(%[[S]] : tensor<2x3xf32>) outs(%[[F]] : tensor<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64} -> tensor<8x3xf32>
    %g = tsr.all_gather %s {mesh_axes = ["dp"], serves = ["w"]} : (tensor<2x3xf32>) -> tensor<8x3xf32>
    // CHECK: %[[B:.*]] = tsrt.broadcast ins(%[[I]] : tensor<5xi64>) outs(%[[I]] : tensor<5xi64>) {dtype = #tsrt.dtype<int64>, group = 1 : i64, root = 3 : i64} -> tensor<5xi64>
    %b = tsr.broadcast_from %i {mesh_axes = ["dp"], root = 3 : i64} : (tensor<5xi64>) -> tensor<5xi64>
    // The local shard is a slice at the rank's offset: no communication.
    // CHECK: %[[RANK:.*]] = tsrt.axis_rank group 1
    // CHECK: %[[OFF:.*]] = arith.muli %[[RANK]], %{{.*}} : i64
    // CHECK: %[[IDX:.*]] = arith.index_cast %[[OFF]] : i64 to index
    // CHECK: %[[L:.*]] = tensor.extract_slice %[[X]][%[[IDX]], 0] [2, 3] [1, 1] : tensor<8x3xf32> to tensor<2x3xf32>
    %l = tsr.local_shard %x {mesh_axes = ["dp"]} : (tensor<8x3xf32>) -> tensor<2x3xf32>
    // CHECK: return %[[A]], %[[R]], %[[G]], %[[B]], %[[L]]
    return %a, %r, %g, %b, %l : tensor<8x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<5xi64>, tensor<2x3xf32>
  }
}

// -----

// The dtype is decided before the element type becomes signless: a ui32
// all-reduce works on i32 tensors marked uint32 (which the runtime reduces
// as unsigned), an i8 one on i8 tensors marked int8.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  // CHECK-LABEL: func.func @unsigned(
  // CHECK-SAME: %[[U:[a-z0-9]+]]: tensor<4xi32> {{.*}}, %[[V:[a-z0-9]+]]: tensor<4xi8>
  func.func @unsigned(%u: tensor<4xui32>, %v: tensor<4xi8>) -> (tensor<4xui32>, tensor<4xi8>) {
    // CHECK: tsrt.all_reduce ins(%[[U]] : tensor<4xi32>) outs(%[[U]] : tensor<4xi32>) {dtype = #tsrt.dtype<uint32>, group = 1 : i64, reduction = #tsrt.reduction<max>} -> tensor<4xi32>
    %a = tsr.all_reduce %u {mesh_axes = ["dp"], reduction = #tsr.reduction<max>} : (tensor<4xui32>) -> tensor<4xui32>
    // CHECK: tsrt.all_reduce ins(%[[V]] : tensor<4xi8>) outs(%[[V]] : tensor<4xi8>) {dtype = #tsrt.dtype<int8>, group = 1 : i64, reduction = #tsrt.reduction<min>} -> tensor<4xi8>
    %b = tsr.all_reduce %v {mesh_axes = ["dp"], reduction = #tsr.reduction<min>} : (tensor<4xi8>) -> tensor<4xi8>
    return %a, %b : tensor<4xui32>, tensor<4xi8>
  }
}

// -----

// An async collective becomes the async tsrt op, and its tsr.wait a
// tsrt.wait on its result; the ops in between run while it is in flight.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  // CHECK-LABEL: func.func @async(
  // CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<6xf32>
  func.func @async(%g: tensor<6xf32>) -> tensor<3xf32> {
    // CHECK: %[[E:.*]] = tensor.empty() : tensor<3xf32>
    // CHECK-NEXT: %[[P:.*]] = tsrt.reduce_scatter async ins(%[[G]] : tensor<6xf32>) outs(%[[E]] : tensor<3xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<mean>} -> tensor<3xf32>
    %p = tsr.reduce_scatter %g {async, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w"]} : (tensor<6xf32>) -> tensor<3xf32>
    // CHECK: linalg.generic
    // CHECK: math.exp
    %e = tsr.exp %g : tensor<6xf32>
    // CHECK: %[[R:.*]] = tsrt.wait outs(%[[P]] : tensor<3xf32>) -> tensor<3xf32>
    %r = tsr.wait %p : (tensor<3xf32>) -> tensor<3xf32>
    // CHECK: linalg.generic {{.*}} ins(%[[R]], %{{.*}} : tensor<3xf32>, tensor<1xf32>)
    %s = tsr.reduce_sum %e {axes = array<i64: 0>, keepdims = true} : (tensor<6xf32>) -> tensor<1xf32>
    %t = tsr.add %r, %s : tensor<3xf32>, tensor<1xf32> -> tensor<3xf32>
    return %t : tensor<3xf32>
  }
}

// -----

// A collective over two axes names both in its group mask (dp and tp: 3);
// one along dimension 1 moves that dimension to the front for the runtime,
// which exchanges blocks of dimension 0, and back afterwards.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2, "pp"=3]>} {
  // CHECK-LABEL: func.func @gather_dim1(
  // CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<3x2xf32>
  func.func @gather_dim1(%s: tensor<3x2xf32>) -> tensor<3x8xf32> {
    // CHECK: %[[T:.*]] = linalg.transpose ins(%[[S]] : tensor<3x2xf32>) outs(%{{.*}} : tensor<2x3xf32>) permutation = [1, 0]
    // CHECK: %[[E:.*]] = tensor.empty() : tensor<8x3xf32>
    // CHECK-NEXT: %[[G:.*]] = tsrt.all_gather ins(%[[T]] : tensor<2x3xf32>) outs(%[[E]] : tensor<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 3 : i64} -> tensor<8x3xf32>
    // CHECK: linalg.transpose ins(%[[G]] : tensor<8x3xf32>) outs(%{{.*}} : tensor<3x8xf32>) permutation = [1, 0]
    %g = tsr.all_gather %s {dim = 1 : i64, mesh_axes = ["dp", "tp"]} : (tensor<3x2xf32>) -> tensor<3x8xf32>
    return %g : tensor<3x8xf32>
  }

  // CHECK-LABEL: func.func @shard_dim1(
  // CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<3x12xf32>
  func.func @shard_dim1(%x: tensor<3x12xf32>) -> tensor<3x2xf32> {
    // The group of tp and pp (mask 6) has 6 ranks; this rank's block starts
    // at rank * 2 along dimension 1.
    // CHECK: %[[RANK:.*]] = tsrt.axis_rank group 6
    // CHECK: %[[OFF:.*]] = arith.muli %[[RANK]], %{{.*}} : i64
    // CHECK: %[[IDX:.*]] = arith.index_cast %[[OFF]] : i64 to index
    // CHECK: tensor.extract_slice %[[X]][0, %[[IDX]]] [3, 2] [1, 1] : tensor<3x12xf32> to tensor<3x2xf32>
    %l = tsr.local_shard %x {dim = 1 : i64, mesh_axes = ["tp", "pp"]} : (tensor<3x12xf32>) -> tensor<3x2xf32>
    return %l : tensor<3x2xf32>
  }
}

// -----

// An async collective along dimension 1: its blocks move back after the
// wait, never before (the result is not there until then).
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  // CHECK-LABEL: func.func @async_dim1(
  // CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<3x4xf32>
  func.func @async_dim1(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
    // CHECK: %[[T:.*]] = linalg.transpose ins(%[[X]] : tensor<3x4xf32>) outs(%{{.*}} : tensor<4x3xf32>) permutation = [1, 0]
    // CHECK: %[[P:.*]] = tsrt.reduce_scatter async ins(%[[T]] : tensor<4x3xf32>) outs(%{{.*}} : tensor<2x3xf32>)
    // CHECK-NOT: linalg.transpose
    // CHECK: math.exp
    // CHECK: %[[W:.*]] = tsrt.wait outs(%[[P]] : tensor<2x3xf32>) -> tensor<2x3xf32>
    // CHECK: %[[B:.*]] = linalg.transpose ins(%[[W]] : tensor<2x3xf32>) outs(%{{.*}} : tensor<3x2xf32>) permutation = [1, 0]
    // CHECK: linalg.generic {{.*}} ins(%[[B]], %{{.*}} : tensor<3x2xf32>, tensor<3x2xf32>)
    %p = tsr.reduce_scatter %x {async, dim = 1 : i64, mesh_axes = ["dp"]} : (tensor<3x4xf32>) -> tensor<3x2xf32>
    %s = tsr.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 3, 2>, steps = array<i64: 1, 1>} : (tensor<3x4xf32>) -> tensor<3x2xf32>
    %e = tsr.exp %s : tensor<3x2xf32>
    %r = tsr.wait %p : (tensor<3x2xf32>) -> tensor<3x2xf32>
    %t = tsr.add %r, %e : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x2xf32>
    return %t : tensor<3x2xf32>
  }
}

// -----

// A send and a receive are each a tsrt.permute whose other side is an empty
// tensor: send_to or recv_from is the peer, the other -1 (pp is axis 1:
// group 2).
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "pp"=2]>} {
  // CHECK-LABEL: func.func @messages(
  // CHECK-SAME: %[[H:[a-z0-9]+]]: tensor<4x8xf32>
  func.func @messages(%h: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // CHECK: %[[N:.*]] = tensor.empty() : tensor<0xf32>
    // CHECK-NEXT: tsrt.permute ins(%[[H]] : tensor<4x8xf32>) outs(%[[N]] : tensor<0xf32>) {dtype = #tsrt.dtype<float32>, group = 2 : i64, id = 3 : i64, recv_from = -1 : i64, send_to = 1 : i64} -> tensor<0xf32>
    tsr.send %h {mesh_axes = ["pp"], peer = 1 : i64, id = 3 : i64} : tensor<4x8xf32>
    // CHECK: %[[M:.*]] = tensor.empty() : tensor<0xf32>
    // CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
    // CHECK-NEXT: %[[R:.*]] = tsrt.permute ins(%[[M]] : tensor<0xf32>) outs(%[[E]] : tensor<4x8xf32>) {dtype = #tsrt.dtype<float32>, group = 2 : i64, recv_from = 0 : i64, send_to = -1 : i64} -> tensor<4x8xf32>
    %r = tsr.recv {mesh_axes = ["pp"], peer = 0 : i64} : tensor<4x8xf32>
    // CHECK: return %[[R]]
    return %r : tensor<4x8xf32>
  }
}
