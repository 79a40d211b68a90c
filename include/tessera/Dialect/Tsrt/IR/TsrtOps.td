//===- TsrtOps.td - Runtime-level collectives ---------------*- tablegen -*-===//
//
// One op per collective entry point of the runtime's C ABI, in
// destination-passing style on tensors or memrefs; tsrt.wait completes an
// asynchronous one; tsrt.axis_rank is this rank's place in a group.
// Verifiers in TsrtOps.cpp, bufferization in
// lib/Dialect/Tsrt/Transforms/BufferizableOpInterfaceImpl.cpp, lowering to
// calls in lib/Conversion/CollectivesToRuntime.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_DIALECT_TSRT_TSRTOPS_TD
#define TESSERA_DIALECT_TSRT_TSRTOPS_TD

include "tessera/Dialect/Tsrt/IR/TsrtBase.td"
include "tessera/Dialect/Tsrt/IR/TsrtAttrs.td"
include "mlir/Dialect/GPU/IR/GPUBase.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Tsrt_Buffer : AnyTypeOf<[AnyStaticShapeTensor, AnyStaticShapeMemRef],
                            "statically shaped tensor or memref">;

class Tsrt_Doc<string semantics, string call, string example> {
  string text = !strconcat(semantics, "\n\n`group` is the runtime's group: "
    "bit i set for axis i of the module's `tsr.mesh`, the group being the "
    "ranks that differ only in those axes (numbered row-major over them). "
    "`dtype` is the buffers' element type as the runtime names it, `id` the "
    "collective's number in the artifact's manifest (-1, the default, when "
    "the artifact writer has not numbered it). `ins` and `outs` are both "
    "tensors, and the op returns the written destination, or both memrefs, "
    "and the op returns nothing or, once `gpu-async-region` has put it on "
    "the CUDA target's stream, a `!gpu.async.token`: queued after the tokens "
    "`[deps]` it lists, the runtime runs it on its communication stream "
    "ordered by events, without blocking the host. `outs` is written whole "
    "and never read.\n\n"
    "Implements the runtime's `", call, "` "
    "(`runtime/include/tessera-runtime/Comm.h`), to which "
    "`tsr-collectives-to-runtime` lowers it.\n\nExample:\n\n```mlir\n",
    example, "\n```\n");
}

defvar Tsrt_AsyncTokenMethod = [{
    /// The token of the op's device work (AsyncOpInterface), or null.
    ::mlir::Value getAsyncToken() {
      auto results = getResult();
      return results.size() == 1 &&
                     ::mlir::isa<::mlir::gpu::AsyncTokenType>(
                         results[0].getType())
                 ? results[0]
                 : ::mlir::Value();
    }
}];

// The result is the written destination on tensors; on memrefs nothing, or
// the `!gpu.async.token` of the work when `gpu-async-region` has put the op
// on a stream (one variadic list: that pass rebuilds the op with one more
// result).
class Tsrt_CollectiveOp<string mnemonic, string asyncFormat = "">
    : Tsrt_Op<mnemonic, [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
                         DestinationStyleOpInterface, GPU_AsyncOpInterface]> {
  let results = (outs Variadic<AnyType>:$result);
  let assemblyFormat = !strconcat(asyncFormat, [{
    (`[` $asyncDependencies^ `]`)?
    `ins` `(` $input `:` type($input) `)` `outs` `(` $init `:` type($init) `)`
    attr-dict (`->` type($result)^)?
  }]);
  let hasVerifier = 1;
  let extraClassDeclaration = !strconcat([{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getInitMutable();
    }
  }], Tsrt_AsyncTokenMethod);
}

defvar Tsrt_CommAttrs = (ins Variadic<GPU_AsyncToken>:$asyncDependencies,
    Tsrt_Buffer:$input, Tsrt_Buffer:$init,
    I64Attr:$group, Tsrt_DTypeAttr:$dtype,
    DefaultValuedAttr<I64Attr, "-1">:$id);
defvar Tsrt_AsyncFormat = "(`async` $async^)?";
defvar Tsrt_AsyncDoc = " With `async` the collective only starts here (the "
  "runtime copies what it sends before the op returns): its result's one use "
  "is the `tsrt.wait` that completes it, and nothing may read or write the "
  "destination before then.";

def Tsrt_AllReduceOp : Tsrt_CollectiveOp<"all_reduce", Tsrt_AsyncFormat> {
  let summary = "reduces a buffer over the ranks of a group";
  let description = Tsrt_Doc<!strconcat("Writes the elementwise "
    "`reduction` of every rank's `ins` into `outs`, which has the same type. "
    "`ins` and `outs` may be one buffer: bufferization reuses the operand's "
    "buffer when nothing reads it afterwards.", Tsrt_AsyncDoc),
    "tsrt_all_reduce` or `tsrt_all_reduce_start",
    "%g = tsrt.all_reduce async ins(%x : tensor<6xf32>) outs(%x : tensor<6xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, id = 0 : i64, reduction = #tsrt.reduction<mean>} -> tensor<6xf32>\n"
    "%r = tsrt.wait outs(%g : tensor<6xf32>) -> tensor<6xf32>\n"
    "tsrt.all_reduce ins(%a : memref<6xf32>) outs(%a : memref<6xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}">.text;
  let arguments = !con(Tsrt_CommAttrs, (ins Tsrt_ReductionAttr:$reduction,
                                            UnitAttr:$async));
}

def Tsrt_ReduceScatterOp
    : Tsrt_CollectiveOp<"reduce_scatter", Tsrt_AsyncFormat> {
  let summary = "reduces over a group and keeps one block per rank";
  let description = Tsrt_Doc<!strconcat("Dimension 0 of `ins` holds N "
    "blocks of the shape of `outs` for a group of N ranks; rank r gets the "
    "`reduction` of every rank's block r.", Tsrt_AsyncDoc),
    "tsrt_reduce_scatter` or `tsrt_reduce_scatter_start",
    "%s = tsrt.reduce_scatter ins(%x : tensor<8x3xf32>) outs(%e : tensor<2x3xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>} -> tensor<2x3xf32>">.text;
  let arguments = !con(Tsrt_CommAttrs, (ins Tsrt_ReductionAttr:$reduction,
                                            UnitAttr:$async));
}

def Tsrt_AllGatherOp : Tsrt_CollectiveOp<"all_gather", Tsrt_AsyncFormat> {
  let summary = "concatenates every rank's buffer along dimension 0";
  let description = Tsrt_Doc<!strconcat("Block r of dimension 0 of `outs` "
    "(N blocks of the shape of `ins` for a group of N ranks) is rank r's "
    "`ins`.", Tsrt_AsyncDoc),
    "tsrt_all_gather` or `tsrt_all_gather_start",
    "%p = tsrt.all_gather ins(%s : tensor<2x3xf32>) outs(%e : tensor<8x3xf32>) {dtype = #tsrt.dtype<float32>, group = 3 : i64} -> tensor<8x3xf32>">.text;
  let arguments = !con(Tsrt_CommAttrs, (ins UnitAttr:$async));
}

def Tsrt_AllToAllOp : Tsrt_CollectiveOp<"all_to_all"> {
  let summary = "exchanges blocks of dimension 0 between all ranks";
  let description = Tsrt_Doc<"Dimension 0 of `ins` holds N equal blocks for "
    "a group of N ranks: block p goes to rank p, and block p of `outs` (same "
    "type) comes from rank p.",
    "tsrt_all_to_all",
    "%y = tsrt.all_to_all ins(%x : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {dtype = #tsrt.dtype<float32>, group = 4 : i64} -> tensor<8x4xf32>">.text;
  let arguments = Tsrt_CommAttrs;
}

def Tsrt_BroadcastOp : Tsrt_CollectiveOp<"broadcast"> {
  let summary = "copies rank `root`'s buffer to every rank of a group";
  let description = Tsrt_Doc<"Every rank's `outs` (same type as `ins`) gets "
    "`ins` of rank `root` of the group. `ins` and `outs` may be one buffer.",
    "tsrt_broadcast",
    "%y = tsrt.broadcast ins(%x : tensor<5xi64>) outs(%x : tensor<5xi64>) {dtype = #tsrt.dtype<int64>, group = 1 : i64, root = 3 : i64} -> tensor<5xi64>">.text;
  let arguments = !con(Tsrt_CommAttrs, (ins ConfinedAttr<I64Attr,
                                            [IntNonNegative]>:$root));
}

def Tsrt_PermuteOp : Tsrt_CollectiveOp<"permute"> {
  let summary = "sends a buffer to one rank and receives one from another";
  let description = Tsrt_Doc<"Sends `ins` to rank `send_to` of the group and "
    "receives `outs` from rank `recv_from` (-1: no message that way; at least "
    "one is a rank). The send does not wait for its receive: the runtime "
    "copies `ins` and sends it in the background. With no send `ins` has no "
    "elements, with no receive `outs` has none; with both, `ins` and `outs` "
    "have one shape.",
    "tsrt_permute",
    "%y = tsrt.permute ins(%x : tensor<4x8xf32>) outs(%e : tensor<0xf32>) {dtype = #tsrt.dtype<float32>, group = 4 : i64, recv_from = -1 : i64, send_to = 1 : i64} -> tensor<0xf32>">.text;
  let arguments = !con(Tsrt_CommAttrs, (ins I64Attr:$send_to,
                                            I64Attr:$recv_from));
}

def Tsrt_WaitOp : Tsrt_Op<"wait", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DestinationStyleOpInterface, GPU_AsyncOpInterface]> {
  let summary = "completes an asynchronous collective";
  let description = [{
    Blocks until the `async` collective writing `outs` has completed. On
    tensors `outs` is that collective's result and the op returns it, now
    complete (bufferization keeps it in the same buffer); on memrefs `outs`
    is the collective's destination buffer, and on the CUDA target's stream
    (`[deps]`, returning a token) the stream, not the host, waits.

    Implements the runtime's `tsrt_wait`
    (`runtime/include/tessera-runtime/Comm.h`), to which
    `tsr-collectives-to-runtime` lowers it; the runtime finds the
    collective by the destination's address.

    Example:

    ```mlir
    %p = tsrt.reduce_scatter async ins(%g : tensor<6xf32>) outs(%e : tensor<3xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<mean>} -> tensor<3xf32>
    %r = tsrt.wait outs(%p : tensor<3xf32>) -> tensor<3xf32>
    ```
  }];
  let arguments = (ins Variadic<GPU_AsyncToken>:$asyncDependencies,
                       Tsrt_Buffer:$pending);
  let results = (outs Variadic<AnyType>:$result);
  let assemblyFormat = [{
    (`[` $asyncDependencies^ `]`)?
    `outs` `(` $pending `:` type($pending) `)` attr-dict (`->` type($result)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = !strconcat([{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getPendingMutable();
    }
  }], Tsrt_AsyncTokenMethod);
}

def Tsrt_AxisRankOp : Tsrt_Op<"axis_rank", [Pure]> {
  let summary = "this rank's number in a group";
  let description = [{
    The rank of this process within the group of mesh axes `group` (a bit
    mask as for the collectives), numbered row-major over the group's axes:
    0 to N - 1 for a group of N ranks.

    Implements the runtime's `tsrt_axis_rank`
    (`runtime/include/tessera-runtime/Comm.h`).

    Example:

    ```mlir
    %r = tsrt.axis_rank group 1
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntPositive]>:$group);
  let results = (outs I64:$rank);
  let assemblyFormat = "`group` $group attr-dict";
}

def Tsrt_GpuGemmOp : Tsrt_Op<"gpu_gemm", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    GPU_AsyncOpInterface, AttrSizedOperandSegments]> {
  let summary = "a (batched) matrix product on the GPU through cuBLASLt";
  let description = [{
    `c = op(a) · op(b)`, or `c += op(a) · op(b)` with `accumulate`, for
    row-major, contiguous buffers in device memory: `op(a)` is `[M, K]`,
    `op(b)` `[K, N]` and `c` `[M, N]`, or all three with a leading batch
    dimension; `op(x)` is `x`, or with `transpose_a` (`transpose_b`) `x`
    with its last two dimensions swapped (cuBLASLt reads it transposed). `a`
    and `b` are f32, bf16 or f16 (both the same), `c` is f32; the products
    are summed in f32.

    `epilogue` is what cuBLASLt's epilogue applies to the product before it
    writes `c`: `none`, `relu` (`max(x, 0)`), `bias` (`x + bias[j]` in every
    row, `bias` an f32 `[N]` buffer), `relu_bias` (the bias, then ReLU),
    `gelu` (GELU's tanh approximation,
    `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`) or `gelu_bias` (the bias,
    then GELU).
    A bias needs a rank-2 product without `accumulate`. Or it also writes
    a bias gradient into `bias`, cuBLASLt's BGRAD epilogues (a rank-2
    product, `accumulate` allowed): `bias_grad_a` writes the f32 `[M]`
    `bias[i] = sum_k op(a)[i, k]`, `bias_grad_b` the f32 `[N]`
    `bias[j] = sum_k op(b)[k, j]` (the bias gradient of `y = x·W + b`
    beside the weight gradient `dW = xᵀ·dy` is `bias_grad_b`).

    ReLU's backward form needs which elements the forward's ReLU kept:
    `relu_aux` and `relu_aux_bias` are `relu` and `relu_bias` that also
    write that bit mask (`x > 0` of each element before the ReLU) into
    `aux`, and `drelu` multiplies the product by a mask written so:
    `c = (op(a) · op(b)) * (mask ? 1 : 0)`, the input gradient of a ReLU
    from the output gradient. The mask is cuBLASLt's own (its
    `EPILOGUE_AUX` bit matrix, a row of the result padded to a multiple of
    128 bits): `aux` is an i8 `[M, ceil(N / 128) * 16]` buffer that only
    these epilogues read and write, all three rank-2 products without
    `accumulate`. GELU's likewise: `gelu_aux` and `gelu_aux_bias` are
    `gelu` and `gelu_bias` that also write GELU's input (the product, after
    the bias) into `aux`, and `dgelu` multiplies the product by GELU's
    derivative at such an input:
    `c = (op(a) · op(b)) * gelu'(aux)`, with `aux` an f32
    `[M, ceil(N / 8) * 8]` buffer (rows padded to 8 elements, as cuBLASLt
    requires of its leading dimension).

    Like a `gpu` op it runs asynchronously on the device: with
    `async [deps]` it is queued after its dependencies and returns a token
    (what `gpu-async-region` makes of it), without, the host waits for it.
    `tsr-gpu-library-calls` lowers it to the runtime's `tsrt_gpu_gemm`
    (`runtime/lib/GpuGemm.cpp`) on the dependency's stream;
    `tsr-gpu-gemm` makes it from `linalg.matmul` and `linalg.batch_matmul`.

    Example:

    ```mlir
    %t1 = tsrt.gpu_gemm async [%t0] ins(%a, %b : memref<8x16xbf16>, memref<4x16xbf16>) outs(%c : memref<8x4xf32>) {transpose_b = true}
    %t2 = tsrt.gpu_gemm async [%t1] ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%y : memref<8x4xf32>) bias(%bias : memref<4xf32>) {epilogue = "relu_bias"}
    %t3 = tsrt.gpu_gemm async [%t2] ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%y : memref<8x4xf32>) bias(%bias : memref<4xf32>) aux(%mask : memref<8x16xi8>) {epilogue = "relu_aux_bias"}
    ```
  }];
  let arguments = (ins Variadic<GPU_AsyncToken>:$asyncDependencies,
                       AnyStaticShapeMemRef:$a, AnyStaticShapeMemRef:$b,
                       AnyStaticShapeMemRef:$c,
                       Optional<AnyStaticShapeMemRef>:$bias,
                       Optional<AnyStaticShapeMemRef>:$aux,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b,
                       DefaultValuedAttr<BoolAttr, "false">:$accumulate,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$epilogue);
  let results = (outs Optional<GPU_AsyncToken>:$asyncToken);
  let assemblyFormat = [{
    custom<AsyncDependencies>(type($asyncToken), $asyncDependencies)
    `ins` `(` $a `,` $b `:` type($a) `,` type($b) `)`
    `outs` `(` $c `:` type($c) `)`
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`aux` `(` $aux^ `:` type($aux) `)`)? attr-dict
  }];
  let extraClassDeclaration = [{
    /// The `aux` buffer `epilogue` needs beside a result of type `c`:
    /// ReLU's i8 bit mask (rows padded to 128 bits) for relu_aux,
    /// relu_aux_bias and drelu, GELU's f32 input (rows padded to 8
    /// elements) for gelu_aux, gelu_aux_bias and dgelu; null for the rest.
    static ::mlir::MemRefType getAuxType(::llvm::StringRef epilogue,
                                         ::mlir::MemRefType c);
  }];
  let hasVerifier = 1;
}

def Tsrt_GpuAttentionOp : Tsrt_Op<"gpu_attention", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DestinationStyleOpInterface, GPU_AsyncOpInterface,
    AttrSizedOperandSegments]> {
  let summary = "fused scaled-dot-product attention on the GPU through cuDNN";
  let description = [{
    `out = softmax(scale · q·kᵀ + bias) · v` per batch and head, the scores
    masked causally (a key after the query gets -inf) with `causal`; with a
    second destination, `stats` (f32 `[B, H, Sq]`) gets each row's
    `max + log(sum(exp))` of the masked, scaled scores, which the backward
    pass reads instead of the probabilities.

    `q`, `out` are logically `[B, H, Sq, D]`, `k`, `v` `[B, H, Skv, D]`, all
    of one type, bf16 or f16 (cuDNN's fused attention has no f32 kernels).
    Each is a dense buffer whose dimensions hold the logical dimensions in
    the order its layout attribute lists (0 batch, 1 head, 2 sequence, 3
    head dim): `[0, 2, 1, 3]` is the `[B, S, H, D]` of a projection before
    its heads are transposed, which cuDNN reads and writes through strides,
    so the transposes around attention are never copied. `scale` is a
    rank-0 f32; `bias`, if any, is `[B or 1, H or 1, Sq, Skv]` of the
    operands' type.

    On tensors the op returns its destinations; on memrefs it returns
    nothing, or a `!gpu.async.token` (what `gpu-async-region` makes of it):
    it runs on the device, queued after the tokens `[deps]` it lists.
    `tsr-gpu-attention` makes it from the attention pattern of tsr ops;
    `tsr-gpu-library-calls` lowers it to the runtime's `tsrt_gpu_attention`
    (`runtime/lib/GpuAttention.cpp`) on the dependency's stream.

    Example:

    ```mlir
    %o, %stats = tsrt.gpu_attention ins(%q, %k, %v, %scale : tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<f32>) outs(%o0, %s0 : tensor<2x16x4x16xbf16>, tensor<2x4x16xf32>) {causal, q_layout = array<i64: 0, 2, 1, 3>, k_layout = array<i64: 0, 2, 1, 3>, v_layout = array<i64: 0, 2, 1, 3>, out_layout = array<i64: 0, 2, 1, 3>} -> tensor<2x16x4x16xbf16>, tensor<2x4x16xf32>
    ```
  }];
  let arguments = (ins Variadic<GPU_AsyncToken>:$asyncDependencies,
                       Tsrt_Buffer:$q, Tsrt_Buffer:$k, Tsrt_Buffer:$v,
                       Tsrt_Buffer:$scale, Optional<Tsrt_Buffer>:$bias,
                       Variadic<Tsrt_Buffer>:$inits,
                       DenseI64ArrayAttr:$q_layout, DenseI64ArrayAttr:$k_layout,
                       DenseI64ArrayAttr:$v_layout,
                       DenseI64ArrayAttr:$out_layout, UnitAttr:$causal);
  // One list of results, the destinations on tensors or the token on
  // memrefs: gpu-async-region adds the token by rebuilding the op with one
  // more result, which result segments would not follow.
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    (`[` $asyncDependencies^ `]`)?
    `ins` `(` $q `,` $k `,` $v `,` $scale `:` type($q) `,` type($k) `,`
        type($v) `,` type($scale) `)`
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    `outs` `(` $inits `:` type($inits) `)` attr-dict
    (`->` type($results)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getInitsMutable();
    }
    /// The first destination, the attention's output.
    ::mlir::Value getOut() { return getInits()[0]; }
    /// The second destination, the rows' statistics, or null.
    ::mlir::Value getStats() {
      return getInits().size() > 1 ? getInits()[1] : ::mlir::Value();
    }
    /// The token of the op's device work (AsyncOpInterface), or null.
    ::mlir::Value getAsyncToken() {
      auto results = getResults();
      return results.size() == 1 &&
                     ::mlir::isa<::mlir::gpu::AsyncTokenType>(
                         results[0].getType())
                 ? results[0]
                 : ::mlir::Value();
    }
  }];
}

def Tsrt_GpuAttentionBackwardOp : Tsrt_Op<"gpu_attention_backward", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DestinationStyleOpInterface, GPU_AsyncOpInterface,
    AttrSizedOperandSegments]> {
  let summary = "the gradients of tsrt.gpu_attention through cuDNN";
  let description = [{
    Writes `dq`, `dk` and `dv`, the gradients of `tsrt.gpu_attention`'s
    output with respect to its `q`, `k` and `v` given the output's gradient
    `d_out`, from the forward's operands, output and `stats` (same scale,
    bias and mask). It never reads the probabilities (there are none in
    memory): cuDNN recomputes them from `stats`, and the softmax's
    backward uses `rowsum(dO ⊙ O)`, which equals the `rowsum(dP ⊙ P)` of
    the chain rule. Every operand and destination but `stats` and `scale`
    has a layout attribute as in `tsrt.gpu_attention`; the gradients have
    their operand's logical shape and type. Tensors or memrefs, async on
    memrefs, like the forward op; `tsr-gpu-attention` makes it from the
    backward pass autodiff derives, `tsr-gpu-library-calls` lowers it to
    the runtime's `tsrt_gpu_attention_backward`.

    Example:

    ```mlir
    %dq, %dk, %dv = tsrt.gpu_attention_backward ins(%q, %k, %v, %o, %do, %stats, %scale : tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x4x16xf32>, tensor<f32>) outs(%q0, %k0, %v0 : tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>) {causal, d_out_layout = array<i64: 0, 2, 1, 3>, dk_layout = array<i64: 0, 2, 1, 3>, dq_layout = array<i64: 0, 2, 1, 3>, dv_layout = array<i64: 0, 2, 1, 3>, k_layout = array<i64: 0, 2, 1, 3>, out_layout = array<i64: 0, 2, 1, 3>, q_layout = array<i64: 0, 2, 1, 3>, v_layout = array<i64: 0, 2, 1, 3>} -> tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>
    ```
  }];
  let arguments = (ins Variadic<GPU_AsyncToken>:$asyncDependencies,
                       Tsrt_Buffer:$q, Tsrt_Buffer:$k, Tsrt_Buffer:$v,
                       Tsrt_Buffer:$out, Tsrt_Buffer:$d_out,
                       Tsrt_Buffer:$stats, Tsrt_Buffer:$scale,
                       Optional<Tsrt_Buffer>:$bias,
                       Variadic<Tsrt_Buffer>:$inits,
                       DenseI64ArrayAttr:$q_layout, DenseI64ArrayAttr:$k_layout,
                       DenseI64ArrayAttr:$v_layout,
                       DenseI64ArrayAttr:$out_layout,
                       DenseI64ArrayAttr:$d_out_layout,
                       DenseI64ArrayAttr:$dq_layout,
                       DenseI64ArrayAttr:$dk_layout,
                       DenseI64ArrayAttr:$dv_layout, UnitAttr:$causal);
  // As tsrt.gpu_attention's: the gradients on tensors, the token on memrefs.
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    (`[` $asyncDependencies^ `]`)?
    `ins` `(` $q `,` $k `,` $v `,` $out `,` $d_out `,` $stats `,` $scale `:`
        type($q) `,` type($k) `,` type($v) `,` type($out) `,` type($d_out)
        `,` type($stats) `,` type($scale) `)`
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    `outs` `(` $inits `:` type($inits) `)` attr-dict
    (`->` type($results)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getInitsMutable();
    }
    /// The token of the op's device work (AsyncOpInterface), or null.
    ::mlir::Value getAsyncToken() {
      auto results = getResults();
      return results.size() == 1 &&
                     ::mlir::isa<::mlir::gpu::AsyncTokenType>(
                         results[0].getType())
                 ? results[0]
                 : ::mlir::Value();
    }
  }];
}

#endif // TESSERA_DIALECT_TSRT_TSRTOPS_TD
