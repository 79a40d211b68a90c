// RUN: tessera-opt %s --pass-pipeline="builtin.module(tsr-gpu-library-calls)" | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline="builtin.module(tsr-gpu-library-calls,gpu-to-llvm,reconcile-unrealized-casts)" | FileCheck %s --check-prefix=LLVM

// After gpu-async-region the product is queued after the work before it:
// it becomes a call of the runtime on that work's stream (the dependency
// token, cast to a pointer), with the buffers' addresses, the shape (K from
// a transposed a), the runtime's dtype code (16: bfloat16), transpose_a (1),
// transpose_b (0) and accumulate (0), no bias (null), no epilogue (0,
// TSR_GEMM_EPILOGUE_NONE) and no mask (null), and what waited on its token
// waits on its dependency.
// CHECK-LABEL: func.func @gemm
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK: %[[S:.*]] = builtin.unrealized_conversion_cast %[[T0]] : !gpu.async.token to !llvm.ptr
// CHECK-DAG: %[[BATCH:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[M:.*]] = arith.constant 8 : i64
// CHECK-DAG: %[[N:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[K:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[DTYPE:.*]] = arith.constant 16 : i32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: memref.extract_aligned_pointer_as_index %arg0
// CHECK-DAG: memref.extract_aligned_pointer_as_index %arg2
// CHECK-DAG: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-DAG: %[[NOMASK:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @tsrt_gpu_gemm(%[[S]], %[[BATCH]], %[[M]], %[[N]], %[[K]], %{{.*}}, %{{.*}}, %{{.*}}, %[[DTYPE]], %[[ONE]], %[[ZERO]], %{{.*}}, %[[NULL]], %{{.*}}, %[[NOMASK]]) : (!llvm.ptr, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32, i32, !llvm.ptr, i32, !llvm.ptr) -> ()
// CHECK-NOT: tsrt.gpu_gemm
// CHECK: gpu.wait [%[[T0]]]

// gpu-to-llvm then makes the token the stream it created, and the call
// runs on it before the host synchronizes that stream.
// LLVM-LABEL: llvm.func @gemm
// LLVM: %[[STREAM:.*]] = llvm.call @mgpuStreamCreate()
// LLVM: call @tsrt_gpu_gemm(%[[STREAM]],
// LLVM: llvm.call @mgpuStreamSynchronize(%[[STREAM]])
func.func @gemm(%a: memref<3x16x8xbf16>, %b: memref<3x16x4xbf16>, %c: memref<3x8x4xf32>) {
  %t0 = gpu.wait async
  %t1 = tsrt.gpu_gemm async [%t0] ins(%a, %b : memref<3x16x8xbf16>, memref<3x16x4xbf16>) outs(%c : memref<3x8x4xf32>) {transpose_a = true}
  gpu.wait [%t1]
  return
}

// A bias epilogue passes the bias buffer's address and the runtime's code
// for the epilogue (3: TSR_GEMM_EPILOGUE_RELU_BIAS); one with a mask also
// the mask's address (7: TSR_GEMM_EPILOGUE_RELU_AUX_BIAS, 8:
// TSR_GEMM_EPILOGUE_DRELU).
// CHECK-LABEL: func.func @epilogue
// CHECK: %[[BIAS:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK-NEXT: %[[BIAS64:.*]] = arith.index_cast %[[BIAS]]
// CHECK-NEXT: %[[BIASPTR:.*]] = llvm.inttoptr %[[BIAS64]]
// CHECK: %[[CODE:.*]] = arith.constant 3 : i32
// CHECK: call @tsrt_gpu_gemm({{.*}}, %[[BIASPTR]], %[[CODE]], %{{.*}})
// CHECK: %[[CODE7:.*]] = arith.constant 7 : i32
// CHECK: %[[MASK:.*]] = memref.extract_aligned_pointer_as_index %arg4
// CHECK-NEXT: %[[MASK64:.*]] = arith.index_cast %[[MASK]]
// CHECK-NEXT: %[[MASKPTR:.*]] = llvm.inttoptr %[[MASK64]]
// CHECK-NEXT: call @tsrt_gpu_gemm({{.*}}, %[[CODE7]], %[[MASKPTR]])
// CHECK: %[[CODE8:.*]] = arith.constant 8 : i32
// CHECK: call @tsrt_gpu_gemm({{.*}}, %[[CODE8]], %{{.*}})
func.func @epilogue(%x: memref<8x16xf32>, %w: memref<16x4xf32>, %b: memref<4xf32>, %y: memref<8x4xf32>, %mask: memref<8x16xi8>) {
  %t0 = gpu.wait async
  %t1 = tsrt.gpu_gemm async [%t0] ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%y : memref<8x4xf32>) bias(%b : memref<4xf32>) {epilogue = "relu_bias"}
  %t2 = tsrt.gpu_gemm async [%t1] ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%y : memref<8x4xf32>) bias(%b : memref<4xf32>) aux(%mask : memref<8x16xi8>) {epilogue = "relu_aux_bias"}
  %t3 = tsrt.gpu_gemm async [%t2] ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%y : memref<8x4xf32>) aux(%mask : memref<8x16xi8>) {epilogue = "drelu"}
  gpu.wait [%t3]
  return
}

// Attention passes the logical sizes (B 2, H 4, Sq 16, Skv 32, D 16), the
// runtime's dtype code (16: bfloat16), each operand with its layout code
// (the stored order of its logical dimensions as hex digits: 0x0213 = 531
// for [B, S, H, D], 0x0123 = 291 for [B, H, S, D]), the stats (null
// without), the scale, the bias (null without) and its broadcast bits, and
// the causal flag (1, TSR_ATTENTION_CAUSAL).
// CHECK-LABEL: func.func @attention
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK: %[[S:.*]] = builtin.unrealized_conversion_cast %[[T0]] : !gpu.async.token to !llvm.ptr
// CHECK-NEXT: %c2_i64 = arith.constant 2 : i64
// CHECK-NEXT: %c4_i64 = arith.constant 4 : i64
// CHECK-NEXT: %c16_i64 = arith.constant 16 : i64
// CHECK-NEXT: %c32_i64 = arith.constant 32 : i64
// CHECK-NEXT: %[[D:.*]] = arith.constant 16 : i64
// CHECK-NEXT: %[[DTYPE:.*]] = arith.constant 16 : i32
// CHECK: %[[QL:.*]] = arith.constant 531 : i32
// CHECK: %[[KL:.*]] = arith.constant 531 : i32
// CHECK: %[[VL:.*]] = arith.constant 291 : i32
// CHECK: %[[OL:.*]] = arith.constant 531 : i32
// CHECK-NEXT: %[[NOSTATS:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[NOBIAS:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[NONE:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[CAUSAL:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @tsrt_gpu_attention(%[[S]], %c2_i64, %c4_i64, %c16_i64, %c32_i64, %[[D]], %[[DTYPE]], %{{.*}}, %[[QL]], %{{.*}}, %[[KL]], %{{.*}}, %[[VL]], %{{.*}}, %[[OL]], %[[NOSTATS]], %{{.*}}, %[[NOBIAS]], %[[NONE]], %[[CAUSAL]]) : (!llvm.ptr, i64, i64, i64, i64, i64, i32, !llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CHECK-NOT: tsrt.gpu_attention
// CHECK: gpu.wait [%[[T0]]]
func.func @attention(%q: memref<2x16x4x16xbf16>, %k: memref<2x32x4x16xbf16>, %v: memref<2x4x32x16xbf16>, %scale: memref<f32>, %o: memref<2x16x4x16xbf16>) {
  %t0 = gpu.wait async
  %t1 = tsrt.gpu_attention [%t0] ins(%q, %k, %v, %scale : memref<2x16x4x16xbf16>, memref<2x32x4x16xbf16>, memref<2x4x32x16xbf16>, memref<f32>) outs(%o : memref<2x16x4x16xbf16>) {causal, q_layout = array<i64: 0, 2, 1, 3>, k_layout = array<i64: 0, 2, 1, 3>, v_layout = array<i64: 0, 1, 2, 3>, out_layout = array<i64: 0, 2, 1, 3>} -> !gpu.async.token
  gpu.wait [%t1]
  return
}

// With stats and a bias broadcast over batches (bit 0) but not heads.
// CHECK-LABEL: func.func @training
// CHECK: %[[STATS:.*]] = memref.extract_aligned_pointer_as_index %arg5
// CHECK: %[[BIAS:.*]] = memref.extract_aligned_pointer_as_index %arg4
// CHECK: %[[BITS:.*]] = arith.constant 1 : i32
// CHECK: %[[FLAGS:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @tsrt_gpu_attention({{.*}}, %[[BITS]], %[[FLAGS]])
func.func @training(%q: memref<2x4x8x8xf16>, %k: memref<2x4x8x8xf16>, %v: memref<2x4x8x8xf16>, %scale: memref<f32>, %bias: memref<1x4x8x8xf16>, %stats: memref<2x4x8xf32>, %o: memref<2x4x8x8xf16>) {
  %t0 = gpu.wait async
  %t1 = tsrt.gpu_attention [%t0] ins(%q, %k, %v, %scale : memref<2x4x8x8xf16>, memref<2x4x8x8xf16>, memref<2x4x8x8xf16>, memref<f32>) bias(%bias : memref<1x4x8x8xf16>) outs(%o, %stats : memref<2x4x8x8xf16>, memref<2x4x8xf32>) {q_layout = array<i64: 0, 1, 2, 3>, k_layout = array<i64: 0, 1, 2, 3>, v_layout = array<i64: 0, 1, 2, 3>, out_layout = array<i64: 0, 1, 2, 3>} -> !gpu.async.token
  gpu.wait [%t1]
  return
}

// The backward op passes the forward's sizes and operands, dO, the stats,
// the three gradients with their layouts, the scale, the bias and the
// flags, in the order of tsrt_gpu_attention_backward.
// CHECK-LABEL: func.func @attention_backward
// CHECK: %[[STATS:.*]] = memref.extract_aligned_pointer_as_index %arg5
// CHECK: %[[DQ:.*]] = memref.extract_aligned_pointer_as_index %arg6
// CHECK: %[[DK:.*]] = memref.extract_aligned_pointer_as_index %arg7
// CHECK: %[[DV:.*]] = memref.extract_aligned_pointer_as_index %arg8
// CHECK: call @tsrt_gpu_attention_backward({{.*}}) : (!llvm.ptr, i64, i64, i64, i64, i64, i32, !llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CHECK-NOT: tsrt.gpu_attention_backward
func.func @attention_backward(%q: memref<2x4x8x8xbf16>, %k: memref<2x4x8x8xbf16>, %v: memref<2x4x8x8xbf16>, %o: memref<2x4x8x8xbf16>, %do: memref<2x4x8x8xbf16>, %stats: memref<2x4x8xf32>, %dq: memref<2x4x8x8xbf16>, %dk: memref<2x4x8x8xbf16>, %dv: memref<2x4x8x8xbf16>, %scale: memref<f32>) {
  %t0 = gpu.wait async
  %t1 = tsrt.gpu_attention_backward [%t0] ins(%q, %k, %v, %o, %do, %stats, %scale : memref<2x4x8x8xbf16>, memref<2x4x8x8xbf16>, memref<2x4x8x8xbf16>, memref<2x4x8x8xbf16>, memref<2x4x8x8xbf16>, memref<2x4x8xf32>, memref<f32>) outs(%dq, %dk, %dv : memref<2x4x8x8xbf16>, memref<2x4x8x8xbf16>, memref<2x4x8x8xbf16>) {causal, q_layout = array<i64: 0, 1, 2, 3>, k_layout = array<i64: 0, 1, 2, 3>, v_layout = array<i64: 0, 1, 2, 3>, out_layout = array<i64: 0, 1, 2, 3>, d_out_layout = array<i64: 0, 1, 2, 3>, dq_layout = array<i64: 0, 1, 2, 3>, dk_layout = array<i64: 0, 1, 2, 3>, dv_layout = array<i64: 0, 1, 2, 3>} -> !gpu.async.token
  gpu.wait [%t1]
  return
}
