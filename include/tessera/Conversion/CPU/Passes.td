//===- Passes.td - CPU code generation passes ---------------*- tablegen -*-===//
#ifndef TESSERA_CONVERSION_CPU_PASSES_TD
#define TESSERA_CONVERSION_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrLinalgToBlas : Pass<"tsr-linalg-to-blas", "ModuleOp"> {
  let summary = "Replace f32 matmuls on contiguous buffers by OpenBLAS sgemm calls";
  let description = [{
    After bufferization, every `linalg.matmul` and `linalg.batch_matmul` on
    f32 memrefs with the identity layout (contiguous, row-major) becomes one
    `cblas_sgemm` call per batch (beta = 1: linalg accumulates into its
    output, whose fill stays in place). Matmuls on other element types or on
    strided views keep their loops. OpenBLAS runs at the machine's peak on
    every shape the models use, which generated loops do not; that is why
    GEMM is a library call (see docs/pipeline.md).

    Before:

    ```mlir
    linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>)
                  outs(%c : memref<4x16xf32>)
    ```

    After:

    ```mlir
    %pa = memref.extract_aligned_pointer_as_index %a : memref<4x8xf32> -> index
    ...
    func.call @cblas_sgemm(%row_major, %no_trans, %no_trans, %c4, %c16, %c8,
        %one, %a_ptr, %c8, %b_ptr, %c16, %one, %c_ptr, %c16) : (...) -> ()
    ```
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def TsrCpuEntryPoint : Pass<"tsr-cpu-entry-point", "ModuleOp"> {
  let summary = "Add the artifact's `tessera_entry(void **args)` wrapper";
  let description = [{
    Runs on the LLVM dialect, after the model function was lowered with the
    bare-pointer calling convention. Adds `tessera_entry`, which takes one
    array of buffer pointers (inputs, then outputs), loads each and calls the
    model function; the model function becomes internal so LLVM can inline it.
    This is the one C symbol `tessera-run` looks up in `model.so`.

    Before:

    ```mlir
    llvm.func @tessera_model(%x: !llvm.ptr, %y: !llvm.ptr)
    ```

    After:

    ```mlir
    llvm.func internal @tessera_model(%x: !llvm.ptr, %y: !llvm.ptr)
    llvm.func @tessera_entry(%args: !llvm.ptr) {
      %p0 = llvm.load %args : !llvm.ptr -> !llvm.ptr
      %a1 = llvm.getelementptr %args[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
      %p1 = llvm.load %a1 : !llvm.ptr -> !llvm.ptr
      llvm.call @tessera_model(%p0, %p1) : (!llvm.ptr, !llvm.ptr) -> ()
      llvm.return
    }
    ```
  }];
  let options = [
    Option<"modelFunction", "model-function", "std::string",
           /*default=*/"\"tessera_model\"", "Name of the lowered model function">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // TESSERA_CONVERSION_CPU_PASSES_TD
