//===- TsrtBase.td - The tsrt dialect -----------------------*- tablegen -*-===//
#ifndef TESSERA_DIALECT_TSRT_TSRTBASE_TD
#define TESSERA_DIALECT_TSRT_TSRTBASE_TD

include "mlir/IR/OpBase.td"

def Tsrt_Dialect : Dialect {
  let name = "tsrt";
  let cppNamespace = "::mlir::tsrt";
  let summary = "Runtime-level collectives in destination-passing style";
  let description = [{
    `tsrt` holds the collectives of a per-rank program in the form the
    runtime executes them (`tsrt_*`, `runtime/include/tessera-runtime/Comm.h`):
    the group is a bit mask of mesh axes (bit i for axis i of the module's
    `tsr.mesh`), the element type is the runtime's `tsr_dtype_t` (decided while
    the `tsr` element type still says whether an integer is unsigned), the
    reduction its `tsr_reduce_op_t`, and blocks are exchanged along dimension
    0 only. Each collective reads `ins` and writes its whole destination
    `outs`, like a linalg op: on tensors (what `tsr-to-linalg` emits, which
    one-shot bufferization turns into buffers, reusing a destination in place
    where that is legal) and on memrefs (what `tsr-collectives-to-runtime`
    lowers to calls with the buffers' addresses). The ops are not pure: every
    rank must issue its collectives in the same order, so no pass may drop,
    merge or reorder them.

    It also holds the runtime's GPU library calls (`tsrt.gpu_gemm`), which
    run asynchronously on a stream like the `gpu` dialect's ops.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Tsrt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tsrt_Dialect, mnemonic, traits>;

#endif // TESSERA_DIALECT_TSRT_TSRTBASE_TD
