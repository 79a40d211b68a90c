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
    the CPU; on the CUDA target, where `gpu-async-region` has put the op on
    the compute stream, that stream: the op's one async dependency, cast to
    a pointer, and the op's token is replaced by that dependency, so the
    work after it stays queued on the stream and the host never waits for
    a collective):

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
    contiguous memory, which `tsr-contiguous-collectives` arranges before
    codegen: a collective still on tensors or on a strided view, or one
    queued after several tokens, is an error.

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

def TsrContiguousCollectives
    : Pass<"tsr-contiguous-collectives", "mlir::func::FuncOp"> {
  let summary = "Give every bufferized tsrt collective contiguous buffers";
  let description = [{
    The runtime's collectives read and write contiguous memory. A strided
    operand of a collective on memrefs is copied into a fresh contiguous
    buffer before the op (freed after it: an async start has copied what it
    sends when it returns); a strided destination is received into one that
    is copied back after the op or, for an `async` collective, after the
    `tsrt.wait` that completes it, which then waits on the temporary. An
    in-place collective on a strided view gets one temporary for both.
    The copies are `memref.copy` ops, which each target's codegen lowers as
    it lowers any copy (a kernel on the CUDA target), so the pass runs
    before codegen and `tsr-collectives-to-runtime` may run after it (on
    the CUDA target after `gpu-async-region`). An async collective on a
    strided destination that no later `tsrt.wait` in its block completes,
    and a wait on a strided view that no collective writes, are errors.

    Before:

    ```mlir
    func.func @step(%x: memref<8x2xf32>, %z: memref<4x2xf32, strided<[4, 1]>>) {
      tsrt.reduce_scatter async ins(%x : memref<8x2xf32>) outs(%z : memref<4x2xf32, strided<[4, 1]>>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
      tsrt.wait outs(%z : memref<4x2xf32, strided<[4, 1]>>)
      return
    }
    ```

    After:

    ```mlir
    func.func @step(%arg0: memref<8x2xf32>, %arg1: memref<4x2xf32, strided<[4, 1]>>) {
      %alloc = memref.alloc() {alignment = 64 : i64} : memref<4x2xf32>
      tsrt.reduce_scatter async ins(%arg0 : memref<8x2xf32>) outs(%alloc : memref<4x2xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
      tsrt.wait outs(%alloc : memref<4x2xf32>)
      memref.copy %alloc, %arg1 : memref<4x2xf32> to memref<4x2xf32, strided<[4, 1]>>
      memref.dealloc %alloc : memref<4x2xf32>
      return
    }
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

#endif // TESSERA_CONVERSION_COLLECTIVESTORUNTIME_PASSES_TD
