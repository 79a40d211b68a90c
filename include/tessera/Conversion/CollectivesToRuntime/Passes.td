//===- Passes.td - Collectives to runtime calls -------------*- tablegen -*-===//
#ifndef TESSERA_CONVERSION_COLLECTIVESTORUNTIME_PASSES_TD
#define TESSERA_CONVERSION_COLLECTIVESTORUNTIME_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrCollectivesToRuntime : Pass<"tsr-collectives-to-runtime", "ModuleOp"> {
  let summary = "Lower the bufferized tsrt collectives to calls of the runtime's C ABI";
  let description = [{
    Runs after bufferization, on `tsrt` ops over memrefs. Each collective
    becomes one call of its entry point in
    `runtime/include/tessera-runtime/Comm.h` with the addresses of its
    buffers (the aligned pointer advanced by the view's offset), the element
    count the entry point takes, the runtime's dtype and reduction codes
    (the enums' values, checked against the header at compile time) and,
    last, the stream the target orders collectives on (a null pointer on
    the CPU and when the pass runs alone):

    | op | call |
    |---|---|
    | `tsrt.all_reduce` | `tsrt_all_reduce[_start](id, group, send, recv, count, dtype, op, stream)` |
    | `tsrt.reduce_scatter` | `tsrt_reduce_scatter[_start](id, group, send, recv, recv_count, dtype, op, stream)` |
    | `tsrt.all_gather` | `tsrt_all_gather[_start](id, group, send, recv, send_count, dtype, stream)` |
    | `tsrt.all_to_all` | `tsrt_all_to_all(id, group, send, recv, count, dtype, stream)` |
    | `tsrt.broadcast` | `tsrt_broadcast(id, group, send, recv, count, dtype, root, stream)` |
    | `tsrt.wait` | `tsrt_wait(recv, stream)` |
    | `tsrt.axis_rank` | `tsrt_axis_rank(group)` |

    `async` collectives call the `_start` entry points. The functions are
    declared in the module on first use. The runtime reads and writes
    contiguous memory: a strided operand is copied into a temporary buffer
    before the call, a strided destination receives into one that is copied
    back after the call (after the wait, for an async collective). A
    collective still on tensors, or an async collective on a strided
    destination with no tsrt.wait of it later in its block, is an error.

    Before:

    ```mlir
    func.func @step(%g: memref<6xf32>) {
      tsrt.all_reduce async ins(%g : memref<6xf32>) outs(%g : memref<6xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, id = 0 : i64, reduction = #tsrt.reduction<mean>}
      tsrt.wait outs(%g : memref<6xf32>)
      return
    }
    ```

    After (id 0, group 1, 6 elements, float32 = 1, mean = 1, null stream;
    the in-place all-reduce passes one address as send and recv):

    ```mlir
    func.func private @tsrt_wait(!llvm.ptr, !llvm.ptr)
    func.func private @tsrt_all_reduce_start(i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr)
    func.func @step(%arg0: memref<6xf32>) {
      %intptr = memref.extract_aligned_pointer_as_index %arg0 : memref<6xf32> -> index
      %0 = arith.index_cast %intptr : index to i64
      %1 = llvm.inttoptr %0 : i64 to !llvm.ptr
      %c0_i64 = arith.constant 0 : i64
      %c1_i64 = arith.constant 1 : i64
      %c6_i64 = arith.constant 6 : i64
      %c1_i64_0 = arith.constant 1 : i64
      %c1_i64_1 = arith.constant 1 : i64
      %2 = llvm.mlir.zero : !llvm.ptr
      call @tsrt_all_reduce_start(%c0_i64, %c1_i64, %1, %1, %c6_i64, %c1_i64_0, %c1_i64_1, %2) : (i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr) -> ()
      %intptr_2 = memref.extract_aligned_pointer_as_index %arg0 : memref<6xf32> -> index
      %3 = arith.index_cast %intptr_2 : index to i64
      %4 = llvm.inttoptr %3 : i64 to !llvm.ptr
      %5 = llvm.mlir.zero : !llvm.ptr
      call @tsrt_wait(%4, %5) : (!llvm.ptr, !llvm.ptr) -> ()
      return
    }
    ```
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

#endif // TESSERA_CONVERSION_COLLECTIVESTORUNTIME_PASSES_TD
