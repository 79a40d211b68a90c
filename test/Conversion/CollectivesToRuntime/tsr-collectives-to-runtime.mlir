// RUN: tessera-opt %s -split-input-file --tsr-collectives-to-runtime | FileCheck %s

// Every collective on buffers becomes one call of the runtime's C ABI:
// (id, group, send, recv, count, dtype, [reduction | root,] stream), with
// the runtime's codes (float32 1, int64 7, bool 9, uint32 12, bfloat16 16;
// sum 0, mean 1, max 2), the count its entry point takes, the buffers'
// addresses and a null stream (no target: the CPU's).
// CHECK-DAG: func.func private @tsrt_all_reduce(i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr)
// CHECK-DAG: func.func private @tsrt_reduce_scatter(i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr)
// CHECK-DAG: func.func private @tsrt_all_gather(i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr)
// CHECK-DAG: func.func private @tsrt_all_to_all(i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr)
// CHECK-DAG: func.func private @tsrt_broadcast(i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr)
// CHECK-DAG: func.func private @tsrt_axis_rank(i64) -> i64
// CHECK-LABEL: func.func @collectives(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<8x3xf32>, %[[S:[a-z0-9]+]]: memref<2x3xf32>, %[[G:[a-z0-9]+]]: memref<8x3xf32>, %[[U:[a-z0-9]+]]: memref<5xi32>, %[[B:[a-z0-9]+]]: memref<4xi1>, %[[H:[a-z0-9]+]]: memref<4xbf16>
func.func @collectives(%x: memref<8x3xf32>, %s: memref<2x3xf32>, %g: memref<8x3xf32>,
                       %u: memref<5xi32>, %b: memref<4xi1>, %h: memref<4xbf16>) -> i64 {
  // In place: one address, passed twice.
  // CHECK: %[[XI:.*]] = memref.extract_aligned_pointer_as_index %[[X]] : memref<8x3xf32> -> index
  // CHECK-NEXT: %[[XL:.*]] = arith.index_cast %[[XI]] : index to i64
  // CHECK-NEXT: %[[XP:.*]] = llvm.inttoptr %[[XL]] : i64 to !llvm.ptr
  // CHECK-DAG: %[[C7:.*]] = arith.constant 7 : i64
  // CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i64
  // CHECK-DAG: %[[C24:.*]] = arith.constant 24 : i64
  // CHECK-DAG: %[[F32:.*]] = arith.constant 1 : i64
  // CHECK-DAG: %[[MEAN:.*]] = arith.constant 1 : i64
  // CHECK-DAG: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
  // CHECK: call @tsrt_all_reduce(%[[C7]], %[[C2]], %[[XP]], %[[XP]], %[[C24]], %[[F32]], %[[MEAN]], %[[NULL]]) : (i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr) -> ()
  tsrt.all_reduce ins(%x : memref<8x3xf32>) outs(%x : memref<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 2 : i64, id = 7 : i64, reduction = #tsrt.reduction<mean>}
  // Reduce-scatter counts the elements of one block (6), all-gather those
  // each rank sends (6), all-to-all the whole operand (24); an unnumbered
  // collective passes id -1; dp and tp together are group 3.
  // CHECK-DAG: %[[M1:.*]] = arith.constant -1 : i64
  // CHECK-DAG: %[[C6:.*]] = arith.constant 6 : i64
  // CHECK: call @tsrt_reduce_scatter(%[[M1]], %{{.*}}, %{{.*}}, %{{.*}}, %[[C6]], %{{.*}}, %{{.*}}, %{{.*}})
  tsrt.reduce_scatter ins(%x : memref<8x3xf32>) outs(%s : memref<2x3xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  // CHECK-DAG: %[[G3:.*]] = arith.constant 3 : i64
  // CHECK-DAG: %[[C6B:.*]] = arith.constant 6 : i64
  // CHECK: call @tsrt_all_gather(%{{.*}}, %[[G3]], %{{.*}}, %{{.*}}, %[[C6B]], %{{.*}}, %{{.*}}) : (i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr) -> ()
  tsrt.all_gather ins(%s : memref<2x3xf32>) outs(%g : memref<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 3 : i64}
  // CHECK-DAG: %[[C24B:.*]] = arith.constant 24 : i64
  // CHECK: call @tsrt_all_to_all(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[C24B]], %{{.*}}, %{{.*}})
  tsrt.all_to_all ins(%g : memref<8x3xf32>) outs(%x : memref<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 4 : i64}
  // An unsigned dtype keeps its code on signless buffers.
  // CHECK-DAG: %[[UINT32:.*]] = arith.constant 12 : i64
  // CHECK-DAG: %[[ROOT:.*]] = arith.constant 3 : i64
  // CHECK: call @tsrt_broadcast(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[UINT32]], %[[ROOT]], %{{.*}})
  tsrt.broadcast ins(%u : memref<5xi32>) outs(%u : memref<5xi32>) {dtype = #tsrt.dtype<uint32>, group = 1 : i64, root = 3 : i64}
  // CHECK-DAG: %[[BOOL:.*]] = arith.constant 9 : i64
  // CHECK-DAG: %[[MAX:.*]] = arith.constant 2 : i64
  // CHECK: call @tsrt_all_reduce(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BOOL]], %[[MAX]], %{{.*}})
  tsrt.all_reduce ins(%b : memref<4xi1>) outs(%b : memref<4xi1>) {dtype = #tsrt.dtype<bool>, group = 1 : i64, reduction = #tsrt.reduction<max>}
  // CHECK-DAG: %[[BF16:.*]] = arith.constant 16 : i64
  // CHECK: call @tsrt_all_reduce(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BF16]],
  tsrt.all_reduce ins(%h : memref<4xbf16>) outs(%h : memref<4xbf16>) {dtype = #tsrt.dtype<bfloat16>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  // CHECK-DAG: %[[G6:.*]] = arith.constant 6 : i64
  // CHECK: %[[RANK:.*]] = call @tsrt_axis_rank(%[[G6]]) : (i64) -> i64
  // CHECK-NEXT: return %[[RANK]]
  %r = tsrt.axis_rank group 6
  return %r : i64
}

// -----

// An async collective calls the _start entry point; its wait becomes
// tsrt_wait on the destination's address.
// CHECK-LABEL: func.func @async(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<6xf32>, %[[Y:[a-z0-9]+]]: memref<3xf32>
func.func @async(%x: memref<6xf32>, %y: memref<3xf32>) {
  // CHECK: %[[YI:.*]] = memref.extract_aligned_pointer_as_index %[[Y]]
  // CHECK: call @tsrt_reduce_scatter_start(
  tsrt.reduce_scatter async ins(%x : memref<6xf32>) outs(%y : memref<3xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, id = 0 : i64, reduction = #tsrt.reduction<mean>}
  // CHECK: linalg.fill
  %c = arith.constant 1.0 : f32
  linalg.fill ins(%c : f32) outs(%x : memref<6xf32>)
  // CHECK: %[[WI:.*]] = memref.extract_aligned_pointer_as_index %[[Y]]
  // CHECK-NEXT: %[[WL:.*]] = arith.index_cast %[[WI]] : index to i64
  // CHECK-NEXT: %[[WP:.*]] = llvm.inttoptr %[[WL]] : i64 to !llvm.ptr
  // CHECK-NEXT: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
  // CHECK-NEXT: call @tsrt_wait(%[[WP]], %[[NULL]]) : (!llvm.ptr, !llvm.ptr) -> ()
  tsrt.wait outs(%y : memref<3xf32>)
  return
}

// -----

// A contiguous view at an offset passes the address of its first element:
// the aligned pointer advanced by the offset, in elements of its type.
// CHECK-LABEL: func.func @offsets(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<8xf32>, %[[Y:[a-z0-9]+]]: memref<2x3xf32, strided<[3, 1], offset: ?>>
func.func @offsets(%x: memref<8xf32>, %y: memref<2x3xf32, strided<[3, 1], offset: ?>>) {
  // CHECK: %[[V:.*]] = memref.subview %[[X]][2] [6] [1]
  // CHECK: %[[P:.*]] = llvm.inttoptr
  // CHECK-NEXT: %[[C2:.*]] = arith.constant 2 : i64
  // CHECK-NEXT: %[[A:.*]] = llvm.getelementptr %[[P]][%[[C2]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  // CHECK: call @tsrt_all_reduce(%{{.*}}, %{{.*}}, %[[A]], %[[A]],
  %v = memref.subview %x[2] [6] [1] : memref<8xf32> to memref<6xf32, strided<[1], offset: 2>>
  tsrt.all_reduce ins(%v : memref<6xf32, strided<[1], offset: 2>>) outs(%v : memref<6xf32, strided<[1], offset: 2>>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  // CHECK: %[[Q:.*]] = llvm.inttoptr
  // CHECK-NEXT: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[Y]]
  // CHECK-NEXT: %[[OL:.*]] = arith.index_cast %[[OFF]] : index to i64
  // CHECK-NEXT: %[[B:.*]] = llvm.getelementptr %[[Q]][%[[OL]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  // CHECK: call @tsrt_all_reduce(%{{.*}}, %{{.*}}, %[[B]], %[[B]],
  tsrt.all_reduce ins(%y : memref<2x3xf32, strided<[3, 1], offset: ?>>) outs(%y : memref<2x3xf32, strided<[3, 1], offset: ?>>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  return
}

// -----

// On the CUDA target gpu-async-region has queued the collectives on the
// compute stream: each call passes that stream (its dependency cast to a
// pointer, which gpu-to-llvm resolves) and its token becomes the
// dependency, so the work after it stays queued and no host
// synchronization comes between.
// CHECK-LABEL: func.func @on_stream(
// CHECK-SAME: %[[G:[a-z0-9]+]]: memref<6xf32>, %[[S:[a-z0-9]+]]: memref<f32>, %[[T:[a-z0-9]+]]: !gpu.async.token
func.func @on_stream(%g: memref<6xf32>, %s: memref<f32>, %t: !gpu.async.token) -> !gpu.async.token {
  // CHECK: %[[P0:.*]] = builtin.unrealized_conversion_cast %[[T]] : !gpu.async.token to !llvm.ptr
  // CHECK-NEXT: call @tsrt_all_reduce_start({{.*}}, %[[P0]])
  %0 = tsrt.all_reduce async [%t] ins(%g : memref<6xf32>) outs(%g : memref<6xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, id = 0 : i64, reduction = #tsrt.reduction<mean>} -> !gpu.async.token
  // CHECK: %[[P1:.*]] = builtin.unrealized_conversion_cast %[[T]] : !gpu.async.token to !llvm.ptr
  // CHECK-NEXT: call @tsrt_all_reduce({{.*}}, %[[P1]])
  %1 = tsrt.all_reduce [%0] ins(%s : memref<f32>) outs(%s : memref<f32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, id = 1 : i64, reduction = #tsrt.reduction<mean>} -> !gpu.async.token
  // CHECK: %[[P2:.*]] = builtin.unrealized_conversion_cast %[[T]] : !gpu.async.token to !llvm.ptr
  // CHECK-NEXT: call @tsrt_wait({{.*}}, %[[P2]])
  %2 = tsrt.wait [%1] outs(%g : memref<6xf32>) -> !gpu.async.token
  // CHECK: %[[D:.*]] = gpu.wait async [%[[T]]]
  %3 = gpu.wait async [%2]
  // CHECK-NEXT: return %[[D]]
  return %3 : !gpu.async.token
}

// -----

// A permute passes both counts and both peers: (id, group, send, recv,
// send_count, dtype, recv_count, send_to, recv_from, stream).
// CHECK-LABEL: func.func @permute(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<4x8xf32>, %[[E:[a-z0-9]+]]: memref<0xf32>
func.func @permute(%x: memref<4x8xf32>, %e: memref<0xf32>) {
  // CHECK-DAG: %[[ID:.*]] = arith.constant 3 : i64
  // CHECK-DAG: %[[GROUP:.*]] = arith.constant 2 : i64
  // CHECK-DAG: %[[SEND:.*]] = arith.constant 32 : i64
  // CHECK-DAG: %[[F32:.*]] = arith.constant 1 : i64
  // CHECK-DAG: %[[RECV:.*]] = arith.constant 0 : i64
  // CHECK-DAG: %[[TO:.*]] = arith.constant 1 : i64
  // CHECK-DAG: %[[FROM:.*]] = arith.constant -1 : i64
  // CHECK: call @tsrt_permute(%[[ID]], %[[GROUP]], %{{.*}}, %{{.*}}, %[[SEND]], %[[F32]], %[[RECV]], %[[TO]], %[[FROM]], %{{.*}}) : (i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, !llvm.ptr) -> ()
  tsrt.permute ins(%x : memref<4x8xf32>) outs(%e : memref<0xf32>) {dtype = #tsrt.dtype<float32>, group = 2 : i64, id = 3 : i64, recv_from = -1 : i64, send_to = 1 : i64}
  return
}

// -----

// The transfers of an offloaded value become the runtime's calls with the
// transfer's number, the buffer's address (the waits' too: the runtime
// checks it, and the buffer's deallocation stays after them), to start
// one its bytes (8x64 f32: 2048 bytes), and a null stream (the CPU).
// CHECK-DAG: func.func private @tsrt_offload_start(i64, !llvm.ptr, i64, !llvm.ptr)
// CHECK-DAG: func.func private @tsrt_offload_wait(i64, !llvm.ptr, !llvm.ptr)
// CHECK-DAG: func.func private @tsrt_prefetch_start(i64, !llvm.ptr, i64, !llvm.ptr)
// CHECK-DAG: func.func private @tsrt_prefetch_wait(i64, !llvm.ptr, !llvm.ptr)
// CHECK-LABEL: func.func @transfers(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<8x64xf32>, %[[Y:[a-z0-9]+]]: memref<8x64xf32>
// CHECK: %[[XI:.*]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: %[[XP:.*]] = llvm.inttoptr
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @tsrt_offload_start(%{{.*}}, %[[XP]], %{{.*}}, %[[NULL]]) : (i64, !llvm.ptr, i64, !llvm.ptr) -> ()
// CHECK: memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: call @tsrt_offload_wait(%{{.*}}, %{{.*}}, %{{.*}}) : (i64, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: %[[YI:.*]] = memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK: %[[YP:.*]] = llvm.inttoptr
// CHECK: call @tsrt_prefetch_start(%{{.*}}, %[[YP]], %{{.*}}, %{{.*}}) : (i64, !llvm.ptr, i64, !llvm.ptr) -> ()
// CHECK: memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK: call @tsrt_prefetch_wait(%{{.*}}, %{{.*}}, %{{.*}}) : (i64, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NOT: tsr.
// CHECK: return
func.func @transfers(%x: memref<8x64xf32>, %y: memref<8x64xf32>) {
  tsr.offload_start %x {transfer = 5 : i64} : memref<8x64xf32>
  tsr.offload_wait %x {transfer = 5 : i64} : memref<8x64xf32>
  tsr.prefetch_start {transfer = 5 : i64} into %y : memref<8x64xf32>
  tsr.prefetch_wait %y {transfer = 5 : i64} : memref<8x64xf32>
  return
}

// -----

// On the CUDA target gpu-async-region has queued the transfers on the
// program's stream: each call passes it (the dependency cast to a
// pointer), and what waited on a transfer's token waits on its dependency.
// CHECK-LABEL: func.func @queued_transfers
// CHECK: %[[T:.*]] = gpu.wait async
// CHECK: %[[S0:.*]] = builtin.unrealized_conversion_cast %[[T]] : !gpu.async.token to !llvm.ptr
// CHECK: call @tsrt_offload_start(%{{.*}}, %{{.*}}, %{{.*}}, %[[S0]])
// CHECK: %[[S1:.*]] = builtin.unrealized_conversion_cast %[[T]] : !gpu.async.token to !llvm.ptr
// CHECK: call @tsrt_offload_wait(%{{.*}}, %{{.*}}, %[[S1]])
// CHECK: %[[S2:.*]] = builtin.unrealized_conversion_cast %[[T]] : !gpu.async.token to !llvm.ptr
// CHECK: call @tsrt_prefetch_start(%{{.*}}, %{{.*}}, %{{.*}}, %[[S2]])
// CHECK: %[[S3:.*]] = builtin.unrealized_conversion_cast %[[T]] : !gpu.async.token to !llvm.ptr
// CHECK: call @tsrt_prefetch_wait(%{{.*}}, %{{.*}}, %[[S3]])
// CHECK: gpu.wait [%[[T]]]
func.func @queued_transfers(%x: memref<8x64xf32>, %y: memref<8x64xf32>) {
  %t0 = gpu.wait async
  %t1 = tsr.offload_start [%t0] %x {transfer = 5 : i64} : memref<8x64xf32> -> !gpu.async.token
  %t2 = tsr.offload_wait [%t1] %x {transfer = 5 : i64} : memref<8x64xf32> -> !gpu.async.token
  %t3 = tsr.prefetch_start [%t2] {transfer = 5 : i64} into %y : memref<8x64xf32> -> !gpu.async.token
  %t4 = tsr.prefetch_wait [%t3] %y {transfer = 5 : i64} : memref<8x64xf32> -> !gpu.async.token
  gpu.wait [%t4]
  return
}
