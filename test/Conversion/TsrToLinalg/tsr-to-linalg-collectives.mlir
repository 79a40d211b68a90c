// RUN: tessera-opt %s --tsr-to-linalg | FileCheck %s

// Collectives become calls of the runtime's C ABI on the addresses of a
// read-only operand buffer and a fresh result buffer, with a null stream
// last (the CPU target has no streams); the group of ranks is
// the bit mask of its mesh axes (dp is axis 0: 1, tp axis 1: 2, both: 3),
// the dtype a tsr_dtype_t (float32 = 1, int64 = 7), the reduction a
// tsr_reduce_op_t (sum 0, mean 1), and the collective's number its `id` (-1
// when unnumbered).
module attributes {tsr.mesh = #tsr.mesh<["dp"=4, "tp"=2]>} {
  // CHECK-DAG: func.func private @tsrt_all_reduce(i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr)
  // CHECK-DAG: func.func private @tsrt_reduce_scatter(i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr)
  // CHECK-DAG: func.func private @tsrt_all_gather(i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr)
  // CHECK-DAG: func.func private @tsrt_broadcast(i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr)
  // CHECK-DAG: func.func private @tsrt_axis_rank(i64) -> i64
  // CHECK-LABEL: func.func @collectives(
  // CHECK-SAME: %[[X:arg[0-9]+]]: tensor<8x3xf32>
  func.func @collectives(%x: tensor<8x3xf32>, %s: tensor<2x3xf32>, %i: tensor<5xi64>)
      -> (tensor<8x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<5xi64>, tensor<2x3xf32>) {
    // CHECK: %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<8x3xf32> to memref<8x3xf32>
    // CHECK: %[[OUT:.*]] = memref.alloc() : memref<8x3xf32>
    // CHECK-DAG: %[[ID:.*]] = arith.constant 7 : i64
    // CHECK-DAG: %[[GROUP:.*]] = arith.constant 2 : i64
    // CHECK-DAG: %[[PIN:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
    // CHECK-DAG: %[[POUT:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
    // CHECK-DAG: %[[COUNT:.*]] = arith.constant 24 : i64
    // CHECK-DAG: %[[STREAM:.*]] = llvm.mlir.zero : !llvm.ptr
    // CHECK: call @tsrt_all_reduce(%[[ID]], %[[GROUP]], %[[PIN]], %[[POUT]], %[[COUNT]], %{{.*}}, %{{.*}}, %[[STREAM]])
    // CHECK: %[[A:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<8x3xf32> to tensor<8x3xf32>
    %a = tsr.all_reduce %x {mesh_axes = ["tp"], reduction = #tsr.reduction<mean>, serves = ["w"], id = 7 : i64} : (tensor<8x3xf32>) -> tensor<8x3xf32>
    // Reduce-scatter counts the elements of one block (6), all-gather those
    // each rank sends (6).
    // CHECK: memref.alloc() : memref<2x3xf32>
    // CHECK: %[[C6:.*]] = arith.constant 6 : i64
    // CHECK: call @tsrt_reduce_scatter(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[C6]],
    %r = tsr.reduce_scatter %x {mesh_axes = ["dp"], serves = ["w"]} : (tensor<8x3xf32>) -> tensor<2x3xf32>
    // CHECK: memref.alloc() : memref<8x3xf32>
    // CHECK: call @tsrt_all_gather(
    %g = tsr.all_gather %s {mesh_axes = ["dp"], serves = ["w"]} : (tensor<2x3xf32>) -> tensor<8x3xf32>
    // CHECK: %[[ROOT:.*]] = arith.constant 3 : i64
    // CHECK: call @tsrt_broadcast(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ROOT]], %{{.*}})
    %b = tsr.broadcast_from %i {mesh_axes = ["dp"], root = 3 : i64} : (tensor<5xi64>) -> tensor<5xi64>
    // The local shard is a slice at the rank's offset: no communication.
    // CHECK: %[[RANK:.*]] = call @tsrt_axis_rank(%{{.*}}) : (i64) -> i64
    // CHECK: %[[OFF:.*]] = arith.muli %[[RANK]], %{{.*}} : i64
    // CHECK: %[[IDX:.*]] = arith.index_cast %[[OFF]] : i64 to index
    // CHECK: tensor.extract_slice %[[X]][%[[IDX]], 0] [2, 3] [1, 1] : tensor<8x3xf32> to tensor<2x3xf32>
    %l = tsr.local_shard %x {mesh_axes = ["dp"]} : (tensor<8x3xf32>) -> tensor<2x3xf32>
    return %a, %r, %g, %b, %l : tensor<8x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<5xi64>, tensor<2x3xf32>
  }
}

// An async collective calls the *_start entry point (which copies the
// operand); its tsr.wait becomes tsrt_wait on the result's address.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  // CHECK-LABEL: func.func @async(
  // CHECK-SAME: %[[G:arg[0-9]+]]: tensor<6xf32>
  func.func @async(%g: tensor<6xf32>) -> tensor<3xf32> {
    // CHECK: %[[IN:.*]] = bufferization.to_buffer %[[G]] read_only
    // CHECK: %[[OUT:.*]] = memref.alloc() : memref<3xf32>
    // CHECK: call @tsrt_reduce_scatter_start(
    // CHECK: %[[P:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
    %p = tsr.reduce_scatter %g {async, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w"]} : (tensor<6xf32>) -> tensor<3xf32>
    // The exp in between runs while the collective is in flight.
    // CHECK: linalg.generic
    // CHECK: math.exp
    %e = tsr.exp %g : tensor<6xf32>
    // CHECK: bufferization.to_buffer %[[P]] read_only
    // CHECK-NOT: bufferization.to_buffer
    // CHECK: call @tsrt_wait(%{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr) -> ()
    // CHECK: linalg.generic {{.*}} ins(%[[P]], %{{.*}} : tensor<3xf32>, tensor<1xf32>)
    %r = tsr.wait %p : (tensor<3xf32>) -> tensor<3xf32>
    %s = tsr.reduce_sum %e {axes = array<i64: 0>, keepdims = true} : (tensor<6xf32>) -> tensor<1xf32>
    %t = tsr.add %r, %s : tensor<3xf32>, tensor<1xf32> -> tensor<3xf32>
    return %t : tensor<3xf32>
  }
}

// A collective over two axes names both in its group mask (dp and tp: 3);
// one along dimension 1 moves that dimension to the front for the runtime,
// which exchanges blocks of dimension 0, and back afterwards.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2, "pp"=3]>} {
  // CHECK-LABEL: func.func @gather_dim1(
  // CHECK-SAME: %[[S:arg[0-9]+]]: tensor<3x2xf32>
  func.func @gather_dim1(%s: tensor<3x2xf32>) -> tensor<3x8xf32> {
    // CHECK: %[[T:.*]] = linalg.transpose ins(%[[S]] : tensor<3x2xf32>) outs(%{{.*}} : tensor<2x3xf32>) permutation = [1, 0]
    // CHECK: %[[IN:.*]] = bufferization.to_buffer %[[T]] read_only : tensor<2x3xf32> to memref<2x3xf32>
    // CHECK: %[[OUT:.*]] = memref.alloc() : memref<8x3xf32>
    // CHECK-DAG: %[[GROUP:.*]] = arith.constant 3 : i64
    // CHECK-DAG: %[[COUNT:.*]] = arith.constant 6 : i64
    // CHECK: call @tsrt_all_gather(%{{.*}}, %[[GROUP]], %{{.*}}, %{{.*}}, %[[COUNT]], %{{.*}}, %{{.*}})
    // CHECK: %[[G:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<8x3xf32> to tensor<8x3xf32>
    // CHECK: linalg.transpose ins(%[[G]] : tensor<8x3xf32>) outs(%{{.*}} : tensor<3x8xf32>) permutation = [1, 0]
    %g = tsr.all_gather %s {dim = 1 : i64, mesh_axes = ["dp", "tp"]} : (tensor<3x2xf32>) -> tensor<3x8xf32>
    return %g : tensor<3x8xf32>
  }

  // CHECK-LABEL: func.func @shard_dim1(
  // CHECK-SAME: %[[X:arg[0-9]+]]: tensor<3x12xf32>
  func.func @shard_dim1(%x: tensor<3x12xf32>) -> tensor<3x2xf32> {
    // The group of tp and pp (mask 6) has 6 ranks; this rank's block starts
    // at rank * 2 along dimension 1.
    // CHECK: %[[RANK:.*]] = call @tsrt_axis_rank(%{{.*}}) : (i64) -> i64
    // CHECK: %[[OFF:.*]] = arith.muli %[[RANK]], %{{.*}} : i64
    // CHECK: %[[IDX:.*]] = arith.index_cast %[[OFF]] : i64 to index
    // CHECK: tensor.extract_slice %[[X]][0, %[[IDX]]] [3, 2] [1, 1] : tensor<3x12xf32> to tensor<3x2xf32>
    %l = tsr.local_shard %x {dim = 1 : i64, mesh_axes = ["tp", "pp"]} : (tensor<3x12xf32>) -> tensor<3x2xf32>
    return %l : tensor<3x2xf32>
  }
}
