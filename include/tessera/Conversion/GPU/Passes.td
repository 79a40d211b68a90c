//===- Passes.td - GPU code generation passes ---------------*- tablegen -*-===//
#ifndef TESSERA_CONVERSION_GPU_PASSES_TD
#define TESSERA_CONVERSION_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrGpuMap : Pass<"tsr-gpu-map", "func::FuncOp"> {
  let summary = "Map every linalg op on buffers to a kernel: a loop over blocks of a loop over threads";
  let description = [{
    The first GPU mapping of Tessera (docs/gpu.md), target-independent so
    that the same kernels run on the GPU (tsr-gpu-launch) and, as a check,
    on the CPU (tsr-gpu-emulate). After bufferization, each linalg op of a
    host function (a `memref.copy` counts as a `linalg.copy`) has its
    parallel dimensions moved before its reductions
    (`linalg::interchangeGenericOp`, a named op generalized first; each
    output element's reduction keeps its order) and becomes its loop nest
    (`linalg::linalgOpToParallelLoops`: `scf.parallel` over the parallel
    dimensions, `scf.for` over the reductions inside it), and the nest
    becomes a kernel: an `scf.forall` over blocks (`#gpu.block<x>`) whose
    body is one `scf.forall` over 256 threads (`#gpu.thread<x>`). The
    outermost `scf.parallel` is linearized: one thread per point of its
    iteration space, the index split back into the loop's induction
    variables with `affine.delinearize_index`, a guard for the last block.
    An op with no parallel dimension (a full reduction, a rank-0 op) runs on
    one thread of one block, as do the loops that tsr-to-linalg emits
    directly, each run of consecutive ones in one kernel; but a scatter's
    loop (`tsr.scatter_shape`) runs one thread per position of its updates
    outside the axis, each thread the updates along the axis in order
    (different threads write different elements; an embedding gradient gets
    a thread per column). Library ops that queue their own device work
    (`tsrt.gpu_gemm`, from tsr-gpu-gemm) stay on the host.

    An op whose loops are all parallel runs 16 bytes of its innermost
    dimension per thread instead (4 f32, 8 bf16; the narrowest element
    decides, halved until the width divides the innermost extent and the
    layouts) where every operand read along that dimension is read through
    its own innermost, unit-stride dimension, its offset and other strides
    multiples of the width, and the body is elementwise arith and math ops
    (and `linalg.index`: of an outer dimension a scalar, of the vectorized
    one, cast to an integer as a one-hot's class comparison does, the
    thread's first position plus `[0, 1, ..., width - 1]`): such an operand is one
    `vector.load` aligned to `min(16, width * element bytes)`, another one
    a scalar load, each output one aligned `vector.store`; body ops on
    values that differ within the vector take vectors, the others stay
    scalar and are broadcast where a vector op uses them. Every element gets
    the scalar kernel's ops, so the results are the same bits. An `i1`
    buffer (a `vector<Nxi1>` in memory is packed bits), an index that
    differs within the vector, a transposed read or a dynamic layout keep a
    thread per element.

    Reductions run on warps instead: an op with one output written along
    parallel dimensions, static bounds, at least 32 reduction iterations, a
    body yielding `combine(out, element)` with `combine` one of addf, mulf,
    maximumf, minimumf, maxnumf, minnumf (it may load from buffers other
    than its output: a loss's gather at each label), and an input read
    innermost along a reduction dimension or the last parallel one. A row reduction
    (softmax, LayerNorm, a loss, a full reduction) gets a warp per output
    element, eight to a block: lane `l` folds iterations `l, l + 32, ...`
    of the linearized reduction space from the combiner's identity (where
    the inputs read along the innermost reduced dimension allow it, as for
    the elementwise vectors, 16 bytes at a time: iterations `w·l` to
    `w·l + w - 1`, then `w·(l + 32)` on, from one vector.load per input,
    combined in order),
    `gpu.subgroup_reduce` combines the 32 partial values, and lane 0
    combines the result into the output; the last block's surplus warps
    recompute the last row and store nothing, so that every lane reaches
    the subgroup reduction. A column reduction (a bias gradient, a softmax
    over a middle axis) gets a block per 32 consecutive output elements:
    thread (w, c) of its 8 x 32 folds iterations `w, w + 8, ...` of element
    `c` (a warp reads 32 consecutive elements of a row) into workgroup
    memory, an `memref.alloca` in `#gpu.address_space<workgroup>` in the
    block loop (tsr-gpu-launch makes it the launch's attribution); after a
    `gpu.barrier` the first warp combines the 8 values of its column in
    order; where a `linalg.fill` of its output comes right before it (only
    allocations, deallocations and ops without memory effects between) and
    it writes each output element once, it combines the fill's value into
    each element itself and the fill goes; consecutive column reductions
    over the same extents, none touching a buffer another writes (a
    LayerNorm's weight and bias gradients), share one kernel, each with its
    own workgroup buffer and barrier. Other reductions keep a thread per
    output element.

    A row reduction and the ops before and after it on the same rows run as
    one kernel (a row chain; `fuse-rows=false` maps each op alone): ops
    over the reduction's parallel dimensions only (the fill of its output,
    a mean's division), elementwise ops over those and its reduced
    extents, and row reductions over them, consecutive but for
    allocations, deallocations and ops without memory effects. A warp runs
    each op in turn for its row: lane `l` the elements `w·l` to
    `w·l + w - 1`, then `w·(l + 32)` on, of the linearized row in every
    elementwise op and reduction (one width `w` for the chain, so that a
    lane reads back only what it wrote itself), an op over the row
    dimensions on every lane, its result stored by lane 0 and passed on in
    registers. A softmax (its fill, maximum, exponentials, fill, sum and
    division) or a LayerNorm becomes one kernel. A chain stops at an op
    that would read an element another lane wrote: a buffer the chain
    writes must be indexed alike (at the row's element, or at the
    iteration's) through one view by every op of the chain; in a private
    function, whose callers may pass a buffer twice, the arguments count as
    one buffer. An elementwise result that only the chain reads is computed
    again where it is read rather than stored, and a buffer that no kernel
    touches any more then is not allocated (memref.alloc's
    canonicalization: only deallocations use it).

    Loop bounds must be static. A value such a loop computes that the host
    then uses is an error naming the op: on the GPU the host cannot read
    device memory.

    Before (an elementwise op on a 40x49 tensor: no width divides 49, a
    thread per element; a row sum below):

    ```mlir
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : memref<40x49xf32>) outs(%y : memref<40x49xf32>) {
    ^bb0(%a: f32, %b: f32):
      %e = math.exp %a : f32
      linalg.yield %e : f32
    }
    ```

    After:

    ```mlir
    scf.forall (%b) in (8) {
      scf.forall (%t) in (256) {
        %i = affine.apply affine_map<(d0, d1) -> (d0 * 256 + d1)>(%b, %t)
        %in = arith.cmpi ult, %i, %c1960 : index
        scf.if %in {
          %ij:2 = affine.delinearize_index %i into (40, 49) : index, index
          %a = memref.load %x[%ij#0, %ij#1] : memref<40x49xf32>
          %e = math.exp %a : f32
          memref.store %e, %y[%ij#0, %ij#1] : memref<40x49xf32>
        }
      } {mapping = [#gpu.thread<x>]}
    } {mapping = [#gpu.block<x>]}
    ```

    The sum of each row of `%x` into `%s : memref<40xf32>` (40 rows: five
    blocks of eight warps):

    ```mlir
    scf.forall (%b) in (5) {
      scf.forall (%t) in (256) {
        %wl:2 = affine.delinearize_index %t into (8, 32) : index, index
        %row = affine.apply affine_map<(d0, d1) -> (d0 * 8 + d1)>(%b, %wl#0)
        %r = arith.minui %row, %c39 : index
        %part = scf.for %k = %wl#1 to %c50 step %c32 iter_args(%acc = %cst) -> (f32) {
          %a = memref.load %x[%r, %k] : memref<40x50xf32>
          %sum = arith.addf %acc, %a : f32
          scf.yield %sum : f32
        }
        %all = gpu.subgroup_reduce add %part uniform : (f32) -> f32
        ...
        scf.if %row_and_lane_0 {
          %o = memref.load %s[%r] : memref<40xf32>
          %n = arith.addf %o, %all : f32
          memref.store %n, %s[%r] : memref<40xf32>
        }
      } {mapping = [#gpu.thread<x>]}
    } {mapping = [#gpu.block<x>]}
    ```
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::vector::VectorDialect"];
  let options = [
    Option<"fuseRows", "fuse-rows", "bool", /*default=*/"true",
           "Run a row reduction and the ops around it on the same rows as "
           "one kernel with a warp per row">,
  ];
}

def TsrGpuSplitReductions : Pass<"tsr-gpu-split-reductions", "func::FuncOp"> {
  let summary = "Split a long reduction with few outputs in two: partial results over contiguous chunks, then their combination";
  let description = [{
    tsr-gpu-map runs a row reduction on a warp per output element and a
    column reduction on a block per 32 output elements. A reduction with
    few outputs and many iterations (the squared norm of a weight matrix
    for gradient clipping or LAMB, a full-batch loss, LayerNorm's weight
    gradient summed over batch and sequence) then occupies a handful of
    warps of the GPU's thousands. This pass, on tensors before
    bufferization (the CUDA target's tensor pipeline, and the CPU target's
    with `--gpu-mapping` so that the emulation runs the same kernels),
    splits such a reduction with upstream's `linalg::splitReduction`: its
    one reduction dimension of R iterations becomes S parallel chunks of
    R / S contiguous iterations, each reduced from the combiner's identity
    into a partial result, then a second reduction combines the S partials
    of each output element in order into the original init. Several
    consecutive reduction dimensions that every operand reads contiguously
    are collapsed into one first (`linalg::collapseOpIterationDims`).

    The reduction qualifies as tsr-gpu-map's warp reductions do (one
    output, static bounds, projected-permutation maps, a float combiner of
    addf, mulf, maximumf, minimumf, maxnumf or minnumf), and its shape
    decides: read innermost along the reduction (a row reduction: one warp
    per output), S is inserted after the output's dimensions, so that the
    first op is a row reduction of a warp per (output, chunk) and the second
    one of a warp per output over S adjacent partials; read innermost along
    the last parallel dimension (a column reduction: 8 warps per 32
    outputs), S becomes the partials' outermost dimension, so that both ops
    are column reductions. It splits a reduction of at least
    `min-elements` iterations in all (outputs times R: below that, one
    block or a few reads their megabytes in microseconds, and the second
    kernel's launch would cost as much as it saves) where the mapping would
    run fewer than `target-warps` / 2 warps, choosing S as the largest
    divisor of R with
    at most `target-warps` warps in all and at least `min-row-chunk`
    iterations per warp (row) or `min-column-chunk` rows per block (column),
    and S >= 4 (otherwise the second kernel costs more than it gains).
    The defaults: 2^20 elements (4 MiB of f32); 4096 warps, about 32 on
    each of an H100's 132 SMs; 2048 iterations, 64 per lane; 256 rows, 32
    per warp.

    Each output's sum runs in another order (chunks, then their partials),
    as tsr-gpu-map's warp and block reductions already do: results differ
    from the CPU target's by rounding.

    Before (the sum of squares of a 1024 x 1024 matrix: one warp):

    ```mlir
    %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                         iterator_types = ["reduction", "reduction"]}
        ins(%x : tensor<1024x1024xf32>) outs(%init : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %sum = arith.addf %acc, %sq : f32
      linalg.yield %sum : f32
    } -> tensor<f32>
    ```

    After (512 warps of 2048 elements, then one warp over the 512 partials):

    ```mlir
    %flat = tensor.collapse_shape %x [[0, 1]] : tensor<1024x1024xf32> into tensor<1048576xf32>
    %chunks = tensor.expand_shape %flat [[0, 1]] output_shape [512, 2048] : tensor<1048576xf32> into tensor<512x2048xf32>
    %zero = linalg.fill ins(%cst : f32) outs(%empty : tensor<512xf32>) -> tensor<512xf32>
    %part = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                            iterator_types = ["parallel", "reduction"]}
        ins(%chunks : tensor<512x2048xf32>) outs(%zero : tensor<512xf32>) { ... }
    %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                         iterator_types = ["reduction"]}
        ins(%part : tensor<512xf32>) outs(%init : tensor<f32>) { ... }
    ```
  }];
  let options = [
    Option<"targetWarps", "target-warps", "int64_t", /*default=*/"4096",
           "Warps that keep the GPU busy: reductions mapped to fewer than half as many are split">,
    Option<"minRowChunk", "min-row-chunk", "int64_t", /*default=*/"2048",
           "The fewest iterations a warp of a split row reduction folds">,
    Option<"minColumnChunk", "min-column-chunk", "int64_t", /*default=*/"256",
           "The fewest rows a block of a split column reduction folds">,
    Option<"minElements", "min-elements", "int64_t", /*default=*/"1048576",
           "The fewest iterations in all (outputs times reduction length) of a reduction worth splitting">
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect"];
}

def TsrGpuGemm : Pass<"tsr-gpu-gemm", "func::FuncOp"> {
  let summary = "Run matrix products through cuBLASLt: linalg.matmul and linalg.batch_matmul on buffers become tsrt.gpu_gemm";
  let description = [{
    The CUDA target's library path for matrix products, before tsr-gpu-map
    (whose kernels reduce serially per output element). A `linalg.matmul`
    or `linalg.batch_matmul` without user-defined indexing maps whose
    buffers are static, non-empty and contiguous row-major, `f32 x f32`,
    `bf16 x bf16` or `f16 x f16` into `f32`, becomes a `tsrt.gpu_gemm`,
    which the runtime runs with cuBLASLt (`runtime/lib/GpuGemm.cpp`). Where
    the product's destination is a fresh buffer whose only earlier use is a
    `linalg.fill` of zero, the fill goes and the product overwrites the
    buffer (`accumulate = false`, cuBLASLt's beta 0); otherwise it adds to
    it. Where an operand is a fresh buffer that only a `linalg.transpose` of
    its last two dimensions writes and only the product reads, and nothing
    writes or frees the transpose's source in between, the product reads
    the source transposed (`transpose_a`, `transpose_b`: cuBLASLt's
    transpose flags) and the copy and its buffer go. Any other matmul (an
    empty one, other types, strided views) stays for tsr-gpu-map.

    Then cuBLASLt's epilogues take the elementwise work they compute: a
    fresh product whose only other reader is an elementwise
    `c + bias[j]`, `max(c + bias[j], 0)`, `max(c, 0)` or GELU's tanh
    approximation of `c` or `c + bias[j]` is written straight to that op's
    output (`bias`, `relu_bias`, `relu`, `gelu`, `gelu_bias`), and a sum of an
    operand over the product's k dimension into a zero-filled fresh f32
    vector (the bias gradient beside a weight gradient, `out[j] += dy[i, j]`
    with `dW = xᵀ·dy`) is written by the product (`bias_grad_b`, or
    `bias_grad_a` for op(a)), with nothing between the two writing the
    operand or touching the vector; the consumer or the reduction, and the
    buffers only they used, go. A hidden ReLU of a training step, whose
    input `pre` (a product's result) only the ReLU `max(pre, 0)` and its
    gradient `select(pre > 0, dh, 0)` read, with `dh` a later fresh
    product only the gradient reads, all in one block, becomes
    `relu_aux_bias` (or `relu_aux`) on the forward product, writing the
    ReLU's output and a new i8 bit mask (`aux`), and `drelu` on the
    backward one, reading it; the two kernels and `pre`'s buffer go. A
    hidden GELU of tanh likewise, whose gradient is autodiff's
    `dh · gelu'(pre)` (matched term by term, products and sums in either
    order), becomes `gelu_aux_bias` (or `gelu_aux`), writing GELU's output
    and its input into a new f32 buffer with rows padded to 8 elements,
    and `dgelu`, reading it.

    Before:

    ```mlir
    %c = memref.alloc() : memref<8x4xf32>
    linalg.fill ins(%zero : f32) outs(%c : memref<8x4xf32>)
    linalg.matmul ins(%a, %b : memref<8x16xbf16>, memref<16x4xbf16>)
                  outs(%c : memref<8x4xf32>)
    ```

    After:

    ```mlir
    %c = memref.alloc() : memref<8x4xf32>
    tsrt.gpu_gemm ins(%a, %b : memref<8x16xbf16>, memref<16x4xbf16>) outs(%c : memref<8x4xf32>) {accumulate = false}
    ```
  }];
  let dependentDialects = ["mlir::tsrt::TsrtDialect"];
}

def TsrGpuAttention : Pass<"tsr-gpu-attention", "func::FuncOp"> {
  let summary = "Run scaled-dot-product attention through cuDNN: its tsr ops become one tsrt.gpu_attention";
  let description = [{
    The CUDA target's library path for attention, on tsr before it is
    lowered (where attention is still recognizable). The pattern

    `O = tsr.matmul(tsr.softmax(tsr.matmul(Q, Kᵀ) · scale + bias, axis 3), V)`

    in bf16 or f16 (cuDNN's fused attention has no f32 kernels), with `Q`
    `[B, H, Sq, D]`, `Kᵀ` `[B, H, D, Skv]`, `V` `[B, H, Skv, D]` (no
    broadcasting), `D` a multiple of 8 and at most 256, the scale a
    one-element tensor that multiplies or divides (or none), the bias
    (or none) broadcast along batch and heads only, and each intermediate
    used once, becomes one `tsrt.gpu_attention`: cuDNN's fused
    FlashAttention-2 kernel, which never writes the `[Sq, Skv]` scores or
    probabilities to memory. A constant bias that is 0 where the key is at
    or before the query and -inf (or at most -1e9, whose exponential
    underflows to 0 as -inf's does) after it becomes cuDNN's causal mask;
    another bias is passed as `[B or 1, H or 1, Sq, Skv]`. Where `Q`, `Kᵀ`
    or `V` is a `tsr.transpose` (the heads split off a projection), cuDNN
    reads its source through strides (the operand's layout); where `O`'s one
    use is a transpose (the heads merged back), cuDNN writes that layout
    and the transpose goes.

    In a training step the probabilities are read by the backward pass that
    autodiff derived: `dP = dO·Vᵀ`, `dV = Pᵀ·dO`, the softmax's
    `P ⊙ (dP − rowsum(dP ⊙ P))`, the scale (cast from the same parameter,
    through rematerialization barriers), `dQ = dS·K` and `dKᵀ = Qᵀ·dS`.
    Where that is all that reads them, the forward op also writes each
    row's statistics (`max + log(sum(exp))`, f32 `[B, H, Sq]`) and the
    backward pass becomes one `tsrt.gpu_attention_backward` that reads
    them, the forward's output and dO (through its transpose), and writes
    the gradients in the layouts of the transposes that merge their heads:
    neither pass keeps the `[Sq, Skv]` probabilities. A trainable scale or
    bias, whose gradients read the scores too, keeps both passes' ops. The
    new ops carry the layer and backward marks of the ops they replace, so
    that the training pipeline runs this pass before tsr-outline-layers
    (for the CUDA target) and each layer cell holds its fused attention.

    Before:

    ```mlir
    %q = tsr.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x16xbf16>) -> tensor<2x4x16x16xbf16>
    %kt = tsr.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x16x4x16xbf16>) -> tensor<2x4x16x16xbf16>
    %v = tsr.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x16xbf16>) -> tensor<2x4x16x16xbf16>
    %s = tsr.matmul %q, %kt : tensor<2x4x16x16xbf16>, tensor<2x4x16x16xbf16> -> tensor<2x4x16x16xbf16>
    %t = tsr.mul %s, %scale : tensor<2x4x16x16xbf16>, tensor<bf16> -> tensor<2x4x16x16xbf16>
    %u = tsr.add %t, %causal : tensor<2x4x16x16xbf16>, tensor<16x16xbf16> -> tensor<2x4x16x16xbf16>
    %p = tsr.softmax %u {axis = 3 : i64} : tensor<2x4x16x16xbf16>
    %o = tsr.matmul %p, %v : tensor<2x4x16x16xbf16>, tensor<2x4x16x16xbf16> -> tensor<2x4x16x16xbf16>
    %y = tsr.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x16x16xbf16>) -> tensor<2x16x4x16xbf16>
    ```

    After:

    ```mlir
    %0 = tsr.reshape %scale : tensor<bf16> to tensor<bf16>
    %1 = tsr.cast %0 : tensor<bf16> to tensor<f32>
    %2 = tensor.empty() : tensor<2x16x4x16xbf16>
    %y = tsrt.gpu_attention ins(%q4, %k4, %v4, %1 : tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<f32>) outs(%2 : tensor<2x16x4x16xbf16>) {causal, k_layout = array<i64: 0, 2, 1, 3>, out_layout = array<i64: 0, 2, 1, 3>, q_layout = array<i64: 0, 2, 1, 3>, v_layout = array<i64: 0, 2, 1, 3>} -> tensor<2x16x4x16xbf16>
    ```
  }];
  let dependentDialects = ["mlir::tsrt::TsrtDialect",
                           "mlir::tensor::TensorDialect"];
}

def TsrGpuLibraryCalls : Pass<"tsr-gpu-library-calls", "ModuleOp"> {
  let summary = "Lower the GPU library ops (tsrt.gpu_gemm, tsrt.gpu_attention) to runtime calls on their stream";
  let description = [{
    After `gpu-async-region`, each `tsrt.gpu_gemm` is asynchronous with one
    dependency, the token of the work queued before it on the stream. It
    becomes a call of the runtime's
    `tsrt_gpu_gemm(stream, batch, m, n, k, a, b, c, dtype, transpose_a,
    transpose_b, accumulate, bias, epilogue)` (declared once in the module:
    a module pass, as function passes run concurrently)
    with the buffers' addresses, `dtype` the runtime's code of the
    operands' element type (`tsr_dtype_t`). The stream is the dependency
    token itself, cast to `!llvm.ptr`: `gpu-to-llvm` lowers tokens to the
    streams their work runs on, and the cast resolves there. The runtime
    queues the product on that stream, so the op's own token is replaced by
    its dependency. An op that is not asynchronous with one dependency is an
    error, but with `synchronous` (the CPU emulation of the CUDA target's
    program, where there is no stream and "device" memory is host memory),
    where every op is synchronous and calls with a null stream.
    `tsrt.gpu_attention` and `tsrt.gpu_attention_backward` become calls of
    `tsrt_gpu_attention` and `tsrt_gpu_attention_backward` likewise, each
    operand with its layout's code (its four dimensions' logical indices as
    hex digits, outermost first).

    Before:

    ```mlir
    %t1 = tsrt.gpu_gemm async [%t0] ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
    %t2 = gpu.launch_func async [%t1] @tessera_kernels::@main_kernel ...
    ```

    After:

    ```mlir
    %s = builtin.unrealized_conversion_cast %t0 : !gpu.async.token to !llvm.ptr
    call @tsrt_gpu_gemm(%s, %c1_i64, %c8_i64, %c4_i64, %c16_i64, %pa, %pb, %pc, %c1_i32, %c1_i32) : (...) -> ()
    %t2 = gpu.launch_func async [%t0] @tessera_kernels::@main_kernel ...
    ```
  }];
  let options = [
    Option<"synchronous", "synchronous", "bool", /*default=*/"false",
           "The ops are synchronous (no gpu-async-region ran): call them with "
           "a null stream">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def TsrGpuHorizontalFuse : Pass<"tsr-gpu-horizontal-fuse", "ModuleOp"> {
  let summary = "Launch each run of consecutive independent kernels as one (multi-tensor kernels)";
  let description = [{
    A training step's optimizer update is one elementwise kernel per
    parameter, consecutive, none reading what another writes; launched one
    by one each waits for the last. Like the multi-tensor kernels of apex
    and of PyTorch's fused optimizers, this pass gives such a run one grid:
    the blocks of the first kernel, then those of the second, and so on,
    each running its kernel's thread body with its own block index (the
    fused block index minus the kernel's offset), as many threads as the
    widest kernel and the others' surplus threads idle.

    It works on tsr-gpu-map's kernels (so the CPU emulation runs the fused
    kernels too), at the top level of each function. Two kernels are
    independent when neither writes a buffer the other reads or writes,
    buffers compared by their root (the function argument or allocation a
    view comes from). A public function's arguments are distinct buffers; a
    private function's (a folded layer cell) are when every call passes
    distinct ones, else they count as one buffer. Between two kernels of a
    run may sit allocations, deallocations and pure ops (what a later kernel
    uses of them moves before the run); anything else, a kernel with
    workgroup memory or a barrier, or an op with effects on an unknown
    resource ends it.

    Kernels whose warps meet in `gpu.subgroup_reduce` (full reductions of
    one block: a loss, each parameter's squared norm for the gradient norm)
    form runs of their own: a subgroup reduction must stay at the top of
    the thread body, reached by every thread, so each piece of such a
    kernel's body between its reductions goes in a branch on the block
    being the kernel's, whose results carry what later pieces use (zero on
    the other kernels' threads), and every block runs every kernel's
    reductions (on zeros but in its own). Such a kernel must have one
    block and whole warps; a larger one ends a run.

    Before (two updates of different parameters):

    ```mlir
    scf.forall (%b) in (4) {
      scf.forall (%t) in (256) { ... %p0, %g0 ... }
        {mapping = [#gpu.thread<x>]}
    } {mapping = [#gpu.block<x>]}
    scf.forall (%b) in (1) {
      scf.forall (%t) in (16) { ... %p1, %g1 ... }
        {mapping = [#gpu.thread<x>]}
    } {mapping = [#gpu.block<x>]}
    ```

    After:

    ```mlir
    scf.forall (%b) in (5) {
      scf.forall (%t) in (256) {
        %first = arith.cmpi ult, %b, %c4 : index
        scf.if %first { ... %p0, %g0 (block %b) ... }
        %in = arith.cmpi ult, %b, %c5 : index
        %from = arith.cmpi uge, %b, %c4 : index
        %mine = arith.andi %in, %from : i1
        %lane = arith.cmpi ult, %t, %c16 : index
        %second = arith.andi %mine, %lane : i1
        scf.if %second {
          %b1 = affine.apply affine_map<(d0) -> (d0 - 4)>(%b)
          ... %p1, %g1 (block %b1) ...
        }
      } {mapping = [#gpu.thread<x>]}
    } {mapping = [#gpu.block<x>]}
    ```
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::affine::AffineDialect"];
}

def TsrGpuLaunch : Pass<"tsr-gpu-launch", "func::FuncOp"> {
  let summary = "Turn tsr-gpu-map's kernels into gpu.launch and put the buffers in device memory";
  let description = [{
    The CUDA target's step after tsr-gpu-map: each kernel (a loop over
    `#gpu.block<x>` holding one over `#gpu.thread<x>`) becomes a `gpu.launch`
    with as many blocks and threads, its induction variables the block and
    thread ids. Host buffers become device buffers: `memref.alloc` and
    `memref.dealloc` become `gpu.alloc` and `gpu.dealloc`, and a constant
    (`memref.get_global`) is copied to a device buffer at its use, freed
    before the function returns. Any host op left that reads or writes a
    buffer is an error naming it.

    Before:

    ```mlir
    %t = memref.alloc() : memref<2000xf32>
    scf.forall (%b) in (8) {
      scf.forall (%th) in (256) {
        ...
      } {mapping = [#gpu.thread<x>]}
    } {mapping = [#gpu.block<x>]}
    memref.dealloc %t : memref<2000xf32>
    ```

    After:

    ```mlir
    %t = gpu.alloc () : memref<2000xf32>
    gpu.launch blocks(%b, %by, %bz) in (%gx = %c8, %gy = %c1, %gz = %c1)
               threads(%th, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      ...
      gpu.terminator
    }
    gpu.dealloc %t : memref<2000xf32>
    ```
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect"];
}

def TsrGpuMergeKernels : Pass<"tsr-gpu-merge-kernels", "ModuleOp"> {
  let summary = "Put every outlined kernel in one gpu.module";
  let description = [{
    `gpu-kernel-outlining` makes one `gpu.module` per kernel, and
    `gpu-module-to-binary` runs ptxas and fatbinary once per module: 95% of
    the character LM's training-step compile went there (334 modules). This
    pass moves every kernel into one module, `tessera_kernels`, each function
    renamed after its old module (the outliner names every kernel function
    after its host function, so those collide) as a PTX identifier (`-` and
    `.` of a layer cell's `layers0-3.update` become `_`; NVPTX aborts on
    them), made unique where two names sanitize alike, and points the
    launches at it: one ptxas run and one fatbin per program, loaded once.
    A single module is merged and renamed too.

    Before:

    ```mlir
    gpu.module @main_kernel { gpu.func @main_kernel(...) kernel { ... } }
    gpu.module @main_kernel_0 { gpu.func @main_kernel(...) kernel { ... } }
    gpu.launch_func @main_kernel::@main_kernel ...
    gpu.launch_func @main_kernel_0::@main_kernel ...
    ```

    After:

    ```mlir
    gpu.module @tessera_kernels {
      gpu.func @main_kernel(...) kernel { ... }
      gpu.func @main_kernel_0(...) kernel { ... }
    }
    gpu.launch_func @tessera_kernels::@main_kernel ...
    gpu.launch_func @tessera_kernels::@main_kernel_0 ...
    ```
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

def TsrGpuEmulate : Pass<"tsr-gpu-emulate", "func::FuncOp"> {
  let summary = "Run tsr-gpu-map's kernels on the CPU: blocks and threads as loops, in a chosen order";
  let description = [{
    The check of the GPU mapping without a GPU (`tessera-compile
    --target=cpu --gpu-mapping=ORDER`, docs/gpu.md): each kernel becomes
    two nested `scf.for` loops, every block in turn and every thread of it
    in turn, and the program continues through the CPU target's pipeline
    with its buffers in host memory. The order of the blocks and of the
    threads is `forward`, `reverse`, or `shuffle` (i -> i * m mod n with m
    coprime to n). The kernels use no barriers or shared memory, so a thread
    run to completion before the next is a legal schedule; results that
    differ between orders reveal a race between threads. The one collective
    operation, a `gpu.subgroup_reduce` at the top of a thread body (a warp
    reduction of tsr-gpu-map), splits each block's run in three: every
    thread up to the reduction, storing its value in a buffer of one
    element per thread; the reduction of each warp's 32 elements with the
    butterfly of upstream's shuffle lowering (offsets 1, 2, ..., 16; lane i
    combines `mine (+) lane i ^ offset's`), so that the CPU combines in the
    GPU's order; every thread from the reduction on, recomputing the pure
    values it uses from before. A reduction in a branch or a loop, a second
    one, or a block of a partial warp is an error.

    Before: a kernel of tsr-gpu-map (`scf.forall (%b) in (8) { scf.forall
    (%t) in (256) { ... } }`). After, with order=reverse:

    ```mlir
    scf.for %i = %c0 to %c8 step %c1 {
      %b = arith.subi %c7, %i : index
      scf.for %j = %c0 to %c256 step %c1 {
        %t = arith.subi %c255, %j : index
        ...
      }
    }
    ```
  }];
  let options = [
    Option<"order", "order", "std::string", /*default=*/"\"forward\"",
           "The order of blocks and threads: forward, reverse or shuffle">
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def TsrGpuFatbin : Pass<"tsr-gpu-fatbin", "ModuleOp"> {
  let summary = "Bundle a gpu.binary's PTX objects into one fatbin: SASS for the first target, PTX of the last for the driver's JIT";
  let description = [{
    `gpu-module-to-binary` with `format=fatbin` embeds the PTX of the
    SASS's own chip: for `sm_90a` that PTX is arch-specific and JITs on
    sm_90a only, so an artifact would not run on a later GPU. The CUDA
    target therefore attaches two NVVM targets to its kernels (the chosen
    `sm_90a`, then the family's `sm_90`), has `gpu-module-to-binary` emit PTX
    for each (`format=isa`), and this pass makes each `gpu.binary` one
    fatbin: the first object's PTX through `ptxas -arch=CHIP -O3` as SASS,
    and the last object's PTX as the JIT fallback (`fatbinary
    --image3=kind=elf,sm=90a --image3=kind=ptx,sm=90`). With one object
    (`--gpu-arch=sm_80`, whose PTX is portable already) both come from it.
    A failing tool is an error carrying its output (ptxas's message for an
    architecture it does not know).

    Before:

    ```mlir
    gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = "...">,
                         #gpu.object<#nvvm.target<chip = "sm_90">, assembly = "...">]
    ```

    After:

    ```mlir
    gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90a">, bin = "P\EDU\BA...">]
    ```
  }];
  let options = [
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"/usr/local/cuda\"",
           "The CUDA toolkit whose bin/ holds ptxas and fatbinary">
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::NVVM::NVVMDialect"];
}

def TsrGpuLowerSubgroupReduce : Pass<"tsr-gpu-lower-subgroup-reduce", "gpu::GPUModuleOp"> {
  let summary = "Lower gpu.subgroup_reduce to butterfly shuffles of 32-bit lanes (64-bit for f64)";
  let description = [{
    MLIR 22's `convert-gpu-to-nvvm` lowers `gpu.subgroup_reduce` only where
    NVVM has a `redux.sync` for it (32-bit integers; f32 needs sm_100a), and
    otherwise fails to legalize it; upstream's shuffle lowering is exposed
    as patterns and a test pass only. This pass applies those patterns to
    the kernels of a `gpu.module` before the NVVM conversion: a warp of 32
    lanes, values of up to 32 bits packed into one `gpu.shuffle xor` per
    step (f16 and bf16 widened), f64 in 64-bit shuffles, which the NVVM
    conversion splits into two `shfl.sync.bfly.b32`. A reduction left (a
    type the patterns do not take) is an error naming it.

    Before:

    ```mlir
    %all = gpu.subgroup_reduce add %part uniform : (f32) -> f32
    ```

    After (offsets 1, 2, 4, 8 and 16):

    ```mlir
    %s1, %v1 = gpu.shuffle xor %part, %c1_i32, %c32_i32 : f32
    %a1 = arith.addf %part, %s1 : f32
    %s2, %v2 = gpu.shuffle xor %a1, %c2_i32, %c32_i32 : f32
    %a2 = arith.addf %a1, %s2 : f32
    ...
    ```
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect"];
}

#endif // TESSERA_CONVERSION_GPU_PASSES_TD
