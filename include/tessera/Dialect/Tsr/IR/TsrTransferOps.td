//===- TsrTransferOps.td - Transfers to and from host memory -*- tablegen -*-===//
//
// Activation offload: a saved activation is copied to host memory after the
// forward pass has read it and copied back before the backward pass reads
// it, each copy started by one op and completed by another, so that the
// ops between them overlap the transfer. A transfer is named by a number
// (`transfer`), unique in the module, that links its four ops; the runtime
// holds the host copy under it. Verifiers in TsrCommOps.cpp, bufferization
// in lib/Dialect/Tsr/Transforms/BufferizableOpInterfaceImpl.cpp, lowering to
// the runtime's calls in lib/Conversion/CollectivesToRuntime, placement in
// lib/Transforms/Remat/Offload.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_DIALECT_TSR_TSRTRANSFEROPS_TD
#define TESSERA_DIALECT_TSR_TSRTRANSFEROPS_TD

include "mlir/Dialect/GPU/IR/GPUBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// What the transfer ops order themselves by: the runtime's copy queue and
/// host blocks.
def Tsr_TransferResource : Resource<"::mlir::tsr::TransferResource">;

/// A tensor before bufferization, a memref after.
def Tsr_Buffer : AnyTypeOf<[Tsr_Tensor, AnyStaticShapeMemRef],
                           "statically shaped tensor or memref">;

/// Like a `gpu` op, a transfer op on memrefs of the CUDA target is queued
/// on the program's stream: `gpu-async-region` gives it the tokens `[deps]`
/// of the work before it and a `!gpu.async.token` result, and the runtime
/// orders its copy on the transfer stream by events, never blocking the
/// host. Off the GPU it has neither.
class Tsr_TransferOp<string mnemonic, list<Trait> traits = []>
    : Tsr_Op<mnemonic, !listconcat(traits, [
        MemoryEffects<[MemRead<Tsr_TransferResource>,
                       MemWrite<Tsr_TransferResource>]>,
        GPU_AsyncOpInterface])>;

defvar Tsr_TransferTokenMethod = [{
    /// The token of the op's device work (AsyncOpInterface), or null.
    ::mlir::Value getAsyncToken() {
      ::mlir::Value result = getResult();
      return result && ::mlir::isa<::mlir::gpu::AsyncTokenType>(
                           result.getType())
                 ? result
                 : ::mlir::Value();
    }
}];

defvar Tsr_TransferDoc = "\n\nImplements the runtime's `tsrt_offload_start`, "
  "`tsrt_offload_wait`, `tsrt_prefetch_start` and `tsrt_prefetch_wait` "
  "(`runtime/include/tessera-runtime/Runtime.h`), to which "
  "`tsr-collectives-to-runtime` lowers the four ops; the runtime copies on "
  "its transfer thread, or on the CUDA target (with `[deps]` and a token) "
  "on its transfer stream. `tsr-offload` places them.\n\n"
  "Example (a transfer's four ops):\n\n```mlir\n"
  "tsr.offload_start %x {transfer = 0 : i64} : tensor<8x64xf32>\n"
  "...\n"
  "tsr.offload_wait %x {transfer = 0 : i64} : tensor<8x64xf32>\n"
  "...\n"
  "%p = tsr.prefetch_start {transfer = 0 : i64} -> tensor<8x64xf32>\n"
  "...\n"
  "%y = tsr.prefetch_wait %p {transfer = 0 : i64} : tensor<8x64xf32> -> tensor<8x64xf32>\n"
  "```\n";

def Tsr_OffloadStartOp : Tsr_TransferOp<"offload_start"> {
  let summary = "starts copying a value to host memory";
  let description = !strconcat([{
    Starts copying `x` into a new block of host memory held under
    `transfer`, and returns at once. `x` must not change until
    `tsr.offload_wait` of the same transfer, which also reads `x` so that
    its buffer lives until then.

    `tsr-offload` records what it expects of the transfer: `copy_seconds`,
    the time of one copy at the host link's bandwidth, and
    `exposed_seconds`, the time by the cost model the step will wait for
    its two copies (the rest overlaps compute).
  }], Tsr_TransferDoc);
  let arguments = (ins Variadic<GPU_AsyncToken>:$asyncDependencies,
                       Tsr_Buffer:$x,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$transfer,
                       OptionalAttr<F64Attr>:$copy_seconds,
                       OptionalAttr<F64Attr>:$exposed_seconds);
  let results = (outs Optional<GPU_AsyncToken>:$asyncToken);
  let assemblyFormat = [{
    (`[` $asyncDependencies^ `]`)? $x attr-dict `:` type($x)
    (`->` type($asyncToken)^)?
  }];
  let hasVerifier = 1;
}

def Tsr_OffloadWaitOp : Tsr_TransferOp<"offload_wait"> {
  let summary = "completes a copy to host memory";
  let description = !strconcat([{
    Blocks until the copy `tsr.offload_start` began of `transfer` has
    completed. `x` is the value copied: after this op the host holds it, and
    its buffer is free once nothing else reads it.
  }], Tsr_TransferDoc);
  let arguments = (ins Variadic<GPU_AsyncToken>:$asyncDependencies,
                       Tsr_Buffer:$x,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$transfer);
  let results = (outs Optional<GPU_AsyncToken>:$asyncToken);
  let assemblyFormat = [{
    (`[` $asyncDependencies^ `]`)? $x attr-dict `:` type($x)
    (`->` type($asyncToken)^)?
  }];
  let hasVerifier = 1;
}

def Tsr_PrefetchStartOp : Tsr_TransferOp<"prefetch_start",
                                          [AttrSizedOperandSegments]> {
  let summary = "starts copying an offloaded value back from host memory";
  let description = !strconcat([{
    Starts copying the host block of `transfer` (offloaded and waited for
    earlier) into a new buffer, and returns at once. On tensors the result
    is that buffer, to be read only through `tsr.prefetch_wait`; on memrefs
    (after bufferization) `into` is the buffer and there is no result, or
    an async token on the CUDA target.
  }], Tsr_TransferDoc);
  let arguments = (ins Variadic<GPU_AsyncToken>:$asyncDependencies,
                       Optional<AnyStaticShapeMemRef>:$buffer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$transfer);
  let results = (outs Optional<AnyType>:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    (`[` $asyncDependencies^ `]`)? attr-dict
    (`into` $buffer^ `:` type($buffer))? (`->` type($result)^)?
  }];
  let extraClassDeclaration = Tsr_TransferTokenMethod;
}

def Tsr_PrefetchWaitOp : Tsr_TransferOp<"prefetch_wait"> {
  let summary = "completes a copy back from host memory";
  let description = !strconcat([{
    Blocks until the copy `tsr.prefetch_start` began of `transfer` has
    completed, and frees the host block. On tensors `pending` is
    `tsr.prefetch_start`'s result and the op returns it, now complete (one
    buffer: bufferization keeps it in place); on memrefs `pending` is the
    buffer and there is no result, or an async token on the CUDA target.
  }], Tsr_TransferDoc);
  let arguments = (ins Variadic<GPU_AsyncToken>:$asyncDependencies,
                       Tsr_Buffer:$pending,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$transfer);
  let results = (outs Optional<AnyType>:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    (`[` $asyncDependencies^ `]`)? $pending attr-dict `:` type($pending)
    (`->` type($result)^)?
  }];
  let extraClassDeclaration = Tsr_TransferTokenMethod;
}

#endif // TESSERA_DIALECT_TSR_TSRTRANSFEROPS_TD
