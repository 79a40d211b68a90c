// RUN: tessera-opt %s --pass-pipeline="builtin.module(tsr-gpu-library-calls)" | FileCheck %s
// RUN: tessera-opt %s --pass-pipeline="builtin.module(tsr-gpu-library-calls,gpu-to-llvm,reconcile-unrealized-casts)" | FileCheck %s --check-prefix=LLVM

// After gpu-async-region the product is queued after the work before it:
// it becomes a call of the runtime on that work's stream (the dependency
// token, cast to a pointer), with the buffers' addresses, the shape (K from
// a transposed a), the runtime's dtype code (16: bfloat16), transpose_a (1),
// transpose_b (0) and accumulate (0), no bias (null) and no epilogue (0,
// TSR_GEMM_EPILOGUE_NONE), and what waited on its token waits on its
// dependency.
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
// CHECK: call @tsrt_gpu_gemm(%[[S]], %[[BATCH]], %[[M]], %[[N]], %[[K]], %{{.*}}, %{{.*}}, %{{.*}}, %[[DTYPE]], %[[ONE]], %[[ZERO]], %{{.*}}, %[[NULL]], %{{.*}}) : (!llvm.ptr, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32, i32, !llvm.ptr, i32) -> ()
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
// for the epilogue (3: TSR_GEMM_EPILOGUE_RELU_BIAS).
// CHECK-LABEL: func.func @epilogue
// CHECK: %[[BIAS:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK-NEXT: %[[BIAS64:.*]] = arith.index_cast %[[BIAS]]
// CHECK-NEXT: %[[BIASPTR:.*]] = llvm.inttoptr %[[BIAS64]]
// CHECK: %[[CODE:.*]] = arith.constant 3 : i32
// CHECK-NEXT: call @tsrt_gpu_gemm({{.*}}, %[[BIASPTR]], %[[CODE]])
func.func @epilogue(%x: memref<8x16xf32>, %w: memref<16x4xf32>, %b: memref<4xf32>, %y: memref<8x4xf32>) {
  %t0 = gpu.wait async
  %t1 = tsrt.gpu_gemm async [%t0] ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%y : memref<8x4xf32>) bias(%b : memref<4xf32>) {epilogue = "relu_bias"}
  gpu.wait [%t1]
  return
}
