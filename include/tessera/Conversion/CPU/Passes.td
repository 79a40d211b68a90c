//===- Passes.td - CPU code generation passes ---------------*- tablegen -*-===//
#ifndef TESSERA_CONVERSION_CPU_PASSES_TD
#define TESSERA_CONVERSION_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrLinalgToBlas : Pass<"tsr-linalg-to-blas", "ModuleOp"> {
  let summary = "Replace matmuls on contiguous buffers by oneDNN or OpenBLAS GEMM calls";
  let description = [{
    After bufferization, every `linalg.matmul` and `linalg.batch_matmul` on
    f32 memrefs with the identity layout (contiguous, row-major) becomes one
    GEMM call per batch (beta = 1: linalg accumulates into its output;
    beta = 0 where the output is a fresh allocation whose only earlier
    user is a `linalg.fill` of zeros, and the fill goes (the rule of the
    CUDA target's GEMMs, `tessera/Conversion/ZeroFill.h`): it was
    a pass over every GEMM's output, 72 ms of a GPT-2-shaped training
    step): of the runtime's `tsr_gemm_f32` (oneDNN's
    sgemm, whose failure fails the call with its status) by default
    (`library=onednn`), of OpenBLAS's `cblas_sgemm` with
    `library=openblas`. oneDNN's AVX-512 sgemm took 0.5-0.9x OpenBLAS's time
    on every shape of the BERT- and GPT-2-shaped models measured on this
    machine (128 x 768 x 768 to 128 x 50257 x 768, the attention's 128 x 128
    x 64; 2 threads; docs/pipeline.md has the table). One with bf16 operands
    and an f32 output (what tsr-to-linalg makes of a bf16 `tsr.matmul`: f32
    accumulation) becomes a call of the runtime's `tsr_gemm_bf16` (oneDNN's
    matmul; Debian's OpenBLAS has no bf16 GEMM), one with f16 operands a
    call of `tsr_gemm_f16` (widened to f32 for oneDNN's sgemm: no CPU
    library here multiplies f16 without AVX512-FP16). Matmuls on other
    element types or on strided views keep their loops. The libraries run at
    the machine's peak on every shape the models use, which generated loops
    do not; that is why GEMM is a library call (see docs/pipeline.md). Any
    other `library` is an error.

    Before:

    ```mlir
    linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>)
                  outs(%c : memref<4x16xf32>)
    ```

    After (`library=onednn`; M, N, K, A and its row stride, B and its row
    stride, C and its row stride, beta):

    ```mlir
    %pa = memref.extract_aligned_pointer_as_index %a : memref<4x8xf32> -> index
    ...
    func.call @tsr_gemm_f32(%c4, %c16, %c8, %a_ptr, %c8, %b_ptr, %c16,
        %c_ptr, %c16, %one) : (...) -> ()
    ```

    With `library=openblas`: `func.call @cblas_sgemm(%row_major, %no_trans,
    %no_trans, %c4, %c16, %c8, %one, %a_ptr, %c8, %b_ptr, %c16, %one,
    %c_ptr, %c16) : (...) -> ()`.
  }];
  let options = [
    Option<"library", "library", "std::string", /*default=*/"\"onednn\"",
           "The f32 GEMM's library: onednn (the runtime's tsr_gemm_f32) or "
           "openblas (cblas_sgemm)">
  ];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def TsrCpuFuseElementwise : Pass<"tsr-cpu-fuse-elementwise", "func::FuncOp"> {
  let summary = "Fuse elementwise linalg ops and propagate reshapes, keeping GEMMs named";
  let description = [{
    Upstream's elementwise fusion and reshape-by-expansion propagation (the
    patterns of `linalg-fuse-elementwise-ops`) with one control: nothing is
    fused or folded into or out of `linalg.matmul` and `linalg.batch_matmul`.
    Upstream's pass folds the `tensor.collapse_shape`/`expand_shape` that
    tsr-to-linalg puts around a rank-3 or rank-4 matmul into the op itself,
    which turns it into a `linalg.generic` that `tsr-linalg-to-blas` cannot
    hand to `cblas_sgemm`; every GEMM of a transformer block was lost that way.

    Before:

    ```mlir
    %c = tensor.collapse_shape %a [[0, 1], [2]] : tensor<2x16x64xf32> into tensor<32x64xf32>
    %m = linalg.matmul ins(%c, %w : tensor<32x64xf32>, tensor<64x64xf32>)
                       outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>
    %e = tensor.expand_shape %m [[0, 1], [2]] output_shape [2, 16, 64] : ...
    ```

    After: unchanged (`linalg-fuse-elementwise-ops` would make `%m` a 4-loop
    `linalg.generic` on `tensor<2x16x64xf32>`). Elementwise producers and
    consumers of other ops still fuse as upstream does.

    A second round, after the first has settled, fuses a producer whose
    results are read by one all-parallel `linalg.generic` (element for
    element) and otherwise only returned, the fused op yielding the returned
    results too (upstream fuses a producer with other uses by recomputing it
    in the consumer and keeping it). An optimizer's new moments are returned
    and read by the parameter update:

    ```mlir
    %m2 = linalg.generic ... ins(%m, %g : ...) outs(%e0 : tensor<768xf32>)
    %p2 = linalg.generic ... ins(%p, %m2, ... : ...) outs(%e1 : tensor<768xf32>)
    return %p2, %m2 : ...
    ```

    After: one loop nest reads `%p`, `%m` and `%g` and writes both.

    ```mlir
    %f:2 = linalg.generic ... ins(%p, %m, %g, ... : ...) outs(%e0, %e1 : ...)
    return %f#1, %f#0 : ...
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::affine::AffineDialect"];
}

def TsrCpuVectorize : Pass<"tsr-cpu-vectorize", "func::FuncOp"> {
  let summary = "Tile static linalg ops on buffers into small vectors and vectorize them";
  let description = [{
    Runs on buffers, right after `tsr-linalg-to-blas`: the f32 GEMMs are
    BLAS calls by then, so every linalg op left is this pass's to take, and
    on final buffers tiling needs no bufferization and an accumulator can be
    kept in registers without alias analysis. Each linalg op with static
    shapes and a body the upstream vectorizer accepts (elementwise generics,
    reductions as tsr-to-linalg builds them for ReduceSum/Mean/Max, softmax
    and layer norm, contractions that elementwise fusion turned into
    generics, fill, copy, transpose) is tiled with `scf::tileUsingSCF` and
    each tile is vectorized with `linalg::vectorize`:

    - The vector covers the loops that index the innermost dimensions of the
      largest operand (the output on a tie), innermost first, each taking the
      largest divisor of its range that keeps the vector at most
      `vector-size` elements, as long as the loops before it are covered
      whole and all share one iterator type. Every other loop steps by one,
      so every tile is static; reduction loops go innermost.
    - A reduction's accumulator is read before its reduction loops and
      written after them (a loop-carried vector), unless the output shares a
      buffer with an input.
    - Convolution and pooling generics (window accesses such as
      `d2 * 2 + d4`) step their window loops by one; in a tile the access
      becomes a strided view and the window loops carry the accumulator.
    - Copies into or out of strided views (padding) become `linalg.copy` and
      are vectorized the same way.
    - A transpose (one input and one output whose innermost dimensions are
      indexed by different loops) is tiled by a square of those two loops,
      side the largest power of two whose square is at most `vector-size`/4
      (8 by default): each tile is read from the input by rows, transposed
      in registers (`vector.transpose`) and written to the output by rows.
      The tile above would read the input one element per row, a cache line
      for each: transposing a 3072x768 matrix took 16 ms, now 3 ms. A loop
      whose range the side does not divide (a vocabulary of 50257) is split
      (`linalg::splitOp`) and its remainder takes the tile above.

    The vector ops are then brought down with the upstream patterns
    (transfer permutation maps, leading unit dimensions, broadcasts sunk
    below elementwise ops, `vector.multi_reduction` to `vector.reduction`),
    ready for `convert-vector-to-scf` and `convert-vector-to-llvm`. Ops with
    dynamic shapes, gathers (`memref.load` in the body), index results, i1,
    f16 or bf16 operands keep their linalg form and the loop lowering.
    `vector.shape_cast`'s canonicalizations are left out: in MLIR 22 they
    fold `shape_cast(broadcast(vector<3x3x1xf32> to vector<3x3x3x1xf32>))`
    into a broadcast that stretches the wrong dimension.

    `tessera-compile --cpu-vector-size=N` sets `vector-size` in the CPU
    pipeline; `--cpu-vector-size=0` turns the pass off (scalar loops, as
    before the pass existed), which is how
    `bench/forward.py --vectorize-gain` measures its gain.

    Before:

    ```mlir
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                     affine_map<(d0, d1) -> (d0)>],
                    iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<8x64xf32>) outs(%y : memref<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.addf %in, %out : f32
      linalg.yield %0 : f32
    }
    ```

    After:

    ```mlir
    scf.for %i = %c0 to %c8 step %c1 {
      %row = memref.subview %x[%i, 0] [1, 64] [1, 1]
          : memref<8x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
      %acc = memref.subview %y[%i] [1] [1]
          : memref<8xf32> to memref<1xf32, strided<[1], offset: ?>>
      %v = vector.transfer_read %row[%c0, %c0], %poison {in_bounds = [true]}
          : memref<1x64xf32, strided<[64, 1], offset: ?>>, vector<64xf32>
      %a = vector.transfer_read %acc[%c0], %poison {in_bounds = [true]}
          : memref<1xf32, strided<[1], offset: ?>>, vector<1xf32>
      %a0 = vector.extract %a[0] : f32 from vector<1xf32>
      %s = vector.reduction <add>, %v, %a0 : vector<64xf32> into f32
      %b = vector.broadcast %s : f32 to vector<1xf32>
      vector.transfer_write %b, %acc[%c0] {in_bounds = [true]}
          : vector<1xf32>, memref<1xf32, strided<[1], offset: ?>>
    }
    ```
  }];
  let options = [
    Option<"vectorSize", "vector-size", "int64_t", /*default=*/"64",
           "Most elements in the vector of one tile (64 f32 = four AVX-512 "
           "registers); 0 or 1 turns the pass off">,
  ];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect",
                           "mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect", "mlir::linalg::LinalgDialect",
                           "mlir::ub::UBDialect"];
}

def TsrCpuEarlyDealloc : Pass<"tsr-cpu-early-dealloc", "func::FuncOp"> {
  let summary = "Free every buffer right after its last use";
  let description = [{
    Ownership-based buffer deallocation frees a block's buffers at the end of
    the block, so every buffer of a training step lived until the step
    returned: the peak was the sum of all of them. This pass moves each
    `memref.dealloc` of a `memref.alloc` of the same block up to just after
    the last op of the block that uses the buffer or anything derived from
    it: views (subview, reshapes, casts), and every value computed from one,
    transitively, including the integer addresses that runtime calls take
    (a collective's result buffer: `tsrt_*_start` and `tsrt_wait` both take
    its address, so it stays allocated while the collective is in flight). Uses inside nested
    regions count at the op that holds the region. Buffers whose dealloc is
    in another block, or that are passed to `func.return`, stay where they
    are.

    Before:

    ```mlir
    %a = memref.alloc() : memref<4xf32>
    linalg.fill ins(%c : f32) outs(%a : memref<4xf32>)
    linalg.copy ins(%a : memref<4xf32>) outs(%out : memref<4xf32>)
    %b = memref.alloc() : memref<8xf32>
    ...
    memref.dealloc %a : memref<4xf32>
    memref.dealloc %b : memref<8xf32>
    ```

    After: `memref.dealloc %a` directly follows the `linalg.copy`, before `%b`
    is allocated.
  }];
}

def TsrCpuMemoryPlan : Pass<"tsr-cpu-memory-plan", "ModuleOp"> {
  let summary = "Record the peak bytes of the buffers each program allocates";
  let description = [{
    Runs on buffers, after deallocation was made explicit: walks every public
    function (each a program of the artifact) in program order, adding the
    size of every `memref.alloc` and subtracting it at its `memref.dealloc`,
    descending into loops (one iteration) and into calls (whose own peak adds
    to the caller's live bytes), and records the largest total as the
    function's attribute `tsr.peak_alloc_bytes`. This is what one call
    requests from the runtime's allocator at its worst moment (the caller's
    input and output buffers are not included); `tessera-compile --report`
    prints it and the manifest records it per program.

    Before:

    ```mlir
    func.func @step(%x: memref<4xf32>, %y: memref<4xf32>) {
      %a = memref.alloc() : memref<4xf32>
      %b = memref.alloc() : memref<8xf32>
      memref.dealloc %a : memref<4xf32>
      memref.dealloc %b : memref<8xf32>
      return
    }
    ```

    After: the same function with `attributes {tsr.peak_alloc_bytes = 48 :
    i64}`.
  }];
}

def TsrCpuOutlineKernels : Pass<"tsr-cpu-outline-kernels", "ModuleOp"> {
  let summary = "Move each linalg op into a function of its own, one per distinct kernel";
  let description = [{
    Runs on buffers, after `tsr-linalg-to-blas` and before vectorization.
    Every linalg op of a function becomes a call of a private function
    that takes the op's buffers (and any value its region uses from above)
    as arguments, each value once; constants are cloned into the function.
    Ops that print the same once their values are arguments call the same
    function, so the layers of a model share their kernels: everything
    after this pass (vectorization, the lowering to LLVM, LLVM's -O3 and
    machine code) compiles each kernel once, however deep the model is: the
    2623 loop nests of a GPT-2-shaped training step of 12 layers are 137
    distinct kernels. The functions have internal linkage and are never
    inlined (`passthrough = ["noinline"]`) and carry `tsr.kernel` (what
    `tsr-cpu-profile-regions` times as one kernel). Ops with a value that does not
    lower to a bare pointer (a dynamic shape or stride) stay in place.

    Before:

    ```mlir
    func.func @step(%a: memref<4xf32>, %b: memref<4xf32>) {
      linalg.generic {...} ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {
        ^bb0(%x: f32, %y: f32):
          %r = arith.mulf %x, %x : f32
          linalg.yield %r : f32
      }
      linalg.generic {...} ins(%b : memref<4xf32>) outs(%b : memref<4xf32>) {
        ...the same body...
      }
      return
    }
    ```

    After:

    ```mlir
    func.func @step(%a: memref<4xf32>, %b: memref<4xf32>) {
      call @step_kernel(%a) : (memref<4xf32>) -> ()
      call @step_kernel(%b) : (memref<4xf32>) -> ()
      return
    }
    func.func private @step_kernel(%arg0: memref<4xf32>) attributes {
        llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"],
        tsr.kernel} {
      linalg.generic {...} ins(%arg0 : memref<4xf32>) outs(%arg0 : memref<4xf32>) {...}
      return
    }
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def TsrCpuProfileRegions : Pass<"tsr-cpu-profile-regions", "ModuleOp"> {
  let summary = "Time every kernel, library call and copy of a program for tessera-run --profile";
  let description = [{
    Runs after `tsr-cpu-outline-kernels`, on the programs (functions that
    are neither declarations nor `tsr.kernel`s). Every call of a kernel,
    every call of a library function (`cblas_sgemm`, the collectives'
    `tsrt_*`, ...), every `memref.copy` and every linalg op left in place
    gets a call of `tsr_profile_begin(id)` before it and of
    `tsr_profile_end(id)` after it, two functions of the Tessera runtime
    that return at once unless `tessera-run --profile` or `--trace` asked
    for a profile. `id` names the op's region: its kind (`gemm`, `call`,
    `kernel` or `copy`), its callee and the model node its location names,
    with `backward` set when the location is autodiff's `tsr.grad` fused
    location (the op computes part of that node's gradient). The calls of
    one callee for one node in one direction share a region. A call of a
    pipeline cell (`tsr.pipeline_cell`, tsr-pipeline) is an action of the
    schedule: it gets a region of kind `action` named by its location
    (`F3.1`), around the regions inside the cell, so that `--trace` shows
    the measured schedule. The regions
    go on the module as `tsr.profile_regions`, indexed by id; the artifact's
    manifest carries them as `profile_regions`. What runs between regions
    (allocation, views, scalar arithmetic) is the step's remainder.

    Before:

    ```mlir
    func.func @main(%a: memref<4x4xf32>, %c: memref<4x4xf32>) {
      call @cblas_sgemm(...) : (...) -> ()  loc("fc/MatMul")
      call @main_kernel(%c) : (memref<4x4xf32>) -> ()  loc("relu")
      return
    }
    ```

    After:

    ```mlir
    module attributes {tsr.profile_regions = [
        {backward = false, callee = "cblas_sgemm", kind = "gemm", node = "fc/MatMul"},
        {backward = false, callee = "main_kernel", kind = "kernel", node = "relu"} ]} {
      func.func @main(%a: memref<4x4xf32>, %c: memref<4x4xf32>) {
        %c0_i32 = arith.constant 0 : i32
        call @tsr_profile_begin(%c0_i32) : (i32) -> ()
        call @cblas_sgemm(...) : (...) -> ()
        call @tsr_profile_end(%c0_i32) : (i32) -> ()
        %c1_i32 = arith.constant 1 : i32
        call @tsr_profile_begin(%c1_i32) : (i32) -> ()
        call @main_kernel(%c) : (memref<4x4xf32>) -> ()
        call @tsr_profile_end(%c1_i32) : (i32) -> ()
        return
      }
      func.func private @tsr_profile_begin(i32)
      func.func private @tsr_profile_end(i32)
    }
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect"];
}

def TsrCpuApproximateMath : Pass<"tsr-cpu-approximate-math", "func::FuncOp"> {
  let summary = "Rewrite f32 exp, log, tanh and erf into vectorizable polynomial approximations";
  let description = [{
    Runs after `tsr-cpu-vectorize` and `convert-linalg-to-loops`, on vector
    and scalar code alike. LLVM has no vector `expf`, `logf`, `tanhf` or
    `erff` on Linux without a vector math library, so `math.exp` on
    `vector<8xf32>` became eight libm calls: on a GPT-2-shaped training
    step the softmax cross-entropy over the vocabulary and its gradient
    took 138 ms of a 2.0 s step (47 ms with this pass), and the exact GELU
    of the GPT block example 41% of its inference (34 us; 4.6 us with it). This pass applies upstream MLIR's polynomial
    approximations (`populateMathPolynomialApproximationPatterns`; the
    Cephes and Eigen approximations that XLA's CPU backend also uses) to
    f32 `math.exp`, `expm1`, `log`, `log1p`, `log2`, `tanh` and `erf`, which
    become arithmetic that stays in vector registers. They are accurate to
    a few ulp (the tolerance of the ONNX backend tests and of the gradient
    checks covers it; see docs/pipeline.md); f64 ops keep libm's calls.

    Before:

    ```mlir
    %e = math.exp %x : vector<8xf32>
    ```

    After (abridged): range reduction `x = k ln2 + r`, a polynomial in `r`,
    and `2^k` built from the exponent bits, all on `vector<8xf32>`:

    ```mlir
    %k = math.floor ... : vector<8xf32>
    %p = math.fma %r, %c5, %c4 : vector<8xf32>
    ...
    %e = arith.mulf %p, %two_k : vector<8xf32>
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

def TsrCpuEntryPoint : Pass<"tsr-cpu-entry-point", "ModuleOp"> {
  let summary = "Make each program `tessera_entry_<name>(void **args)`";
  let description = [{
    Runs on the LLVM dialect, after the programs (the public functions) were
    lowered with the bare-pointer calling convention. Each program `NAME`
    becomes `tessera_entry_NAME`, which takes one array of buffer pointers
    (inputs, then outputs): a new entry block loads each and branches to the
    program's first block with them. These are the C symbols the manifest
    names and the runtime looks up in `model.so`. The program is left a
    declaration holding its attributes (`tsr.in_place`, its peak), which
    the artifact writer reads and then erases. A wrapper that called the
    program instead passed every buffer as an argument: 2300 for a 24-layer
    GPT-2-shaped training step, whose call and prologue cost machine code
    time in proportion to the depth.

    Before:

    ```mlir
    llvm.func @step(%x: !llvm.ptr, %y: !llvm.ptr) {
      ... uses of %x, %y ...
    }
    ```

    After:

    ```mlir
    llvm.func @step(!llvm.ptr, !llvm.ptr)
    llvm.func @tessera_entry_step(%args: !llvm.ptr) {
      %p0 = llvm.load %args : !llvm.ptr -> !llvm.ptr
      %a1 = llvm.getelementptr %args[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
      %p1 = llvm.load %a1 : !llvm.ptr -> !llvm.ptr
      llvm.br ^bb1(%p0, %p1 : !llvm.ptr, !llvm.ptr)
    ^bb1(%x: !llvm.ptr, %y: !llvm.ptr):
      ... uses of %x, %y ...
    }
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // TESSERA_CONVERSION_CPU_PASSES_TD
