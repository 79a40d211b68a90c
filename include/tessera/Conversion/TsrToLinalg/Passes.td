//===- Passes.td - tsr to linalg conversion -----------------*- tablegen -*-===//
#ifndef TESSERA_CONVERSION_TSRTOLINALG_PASSES_TD
#define TESSERA_CONVERSION_TSRTOLINALG_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrToLinalg : Pass<"tsr-to-linalg", "ModuleOp"> {
  let summary = "Lower every tsr op to linalg, tensor, arith, math and scf";
  let description = [{
    Rewrites the whole `tsr` dialect into upstream ops on tensors, ready for
    one-shot bufferization. Elementwise ops become one `linalg.generic` each,
    with broadcasting indexing maps (no broadcast is materialized); matmuls
    and convolutions become `linalg.matmul`/`linalg.batch_matmul` (convolution
    through im2col) so that the CPU pipeline can hand them to BLAS;
    reductions, pooling and normalization become reduction generics; data
    movement uses `tensor` ops; TopK, CumSum and ScatterElements use `scf.for`
    over tensors. Collectives become the runtime-level `tsrt` ops on tensors
    (destination-passing style, lowered to calls after bufferization by
    `tsr-collectives-to-runtime`). Unsigned `uiN` element types become
    signless `iN` (function signatures included) and their ops pick unsigned
    arithmetic. Every tensor argument of a function gets
    `bufferization.writable = false`: a program's inputs are its caller's
    (the runtime may bind one to another program's output, and keeps
    parameters across steps), so bufferization never writes into them. Any
    tsr op left over is an error naming it.

    Before:

    ```mlir
    %z = tsr.add %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    ```

    After:

    ```mlir
    %e = tensor.empty() : tensor<2x3xf32>
    %z = linalg.generic {
        indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                         affine_map<(d0, d1) -> (d1)>,
                         affine_map<(d0, d1) -> (d0, d1)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%x, %y : tensor<2x3xf32>, tensor<3xf32>)
        outs(%e : tensor<2x3xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<2x3xf32>
    ```
  }];
  let dependentDialects = [
    "mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect", "mlir::math::MathDialect",
    "mlir::scf::SCFDialect", "mlir::tensor::TensorDialect",
    "mlir::func::FuncDialect", "mlir::bufferization::BufferizationDialect",
    "mlir::tsrt::TsrtDialect"];
}

def TsrUnshareInits : Pass<"tsr-unshare-inits", "func::FuncOp"> {
  let summary = "Give every op that writes into a tensor.empty (or a fill of one) an init of its own";
  let description = [{
    Runs on tensors, after CSE and before one-shot bufferization. CSE merges
    identical `tensor.empty` ops, and the identical `linalg.fill`s that zero
    the accumulators of matmuls and reductions, across the whole step
    (forward and backward). Bufferization then allocates the shared init
    once, where it first appears, keeps it alive until its last user, and
    gives every other user a fresh buffer (plus a copy of the zeros for a
    fill): buffers allocated long before they are written, and one extra
    copy per matmul. This pass clones a shared `tensor.empty`, or a shared
    fill together with its `tensor.empty`, right before every use but the
    first, so each op's output is allocated where it is written. (An
    unfused elementwise chain that wrote in place over a shared empty now
    gets a buffer per op; targets fuse such chains first.)

    Before:

    ```mlir
    %e = tensor.empty() : tensor<512x64xf32>
    %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<512x64xf32>) -> tensor<512x64xf32>
    %a = linalg.matmul ins(%x, %w : ...) outs(%z : tensor<512x64xf32>) -> tensor<512x64xf32>
    %b = linalg.matmul ins(%y, %v : ...) outs(%z : tensor<512x64xf32>) -> tensor<512x64xf32>
    ```

    After:

    ```mlir
    %e = tensor.empty() : tensor<512x64xf32>
    %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<512x64xf32>) -> tensor<512x64xf32>
    %a = linalg.matmul ins(%x, %w : ...) outs(%z : tensor<512x64xf32>) -> tensor<512x64xf32>
    %e1 = tensor.empty() : tensor<512x64xf32>
    %z1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<512x64xf32>) -> tensor<512x64xf32>
    %b = linalg.matmul ins(%y, %v : ...) outs(%z1 : tensor<512x64xf32>) -> tensor<512x64xf32>
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def TsrSplitDeallocs : Pass<"tsr-split-deallocs", "func::FuncOp"> {
  let summary = "Free distinct allocations one by one where ownership-based deallocation frees them together";
  let description = [{
    Runs on buffers, between `ownership-based-buffer-deallocation` and
    `buffer-deallocation-simplification`. A straight-line function gets one
    `bufferization.dealloc` at its end listing every buffer it allocated,
    each under the condition `true`, retaining nothing. The simplification
    pass splits such a dealloc by proving, for every buffer, that it
    aliases no other one: a query per pair of buffers, quadratic in the
    length of a training step (4.3 s of a 24-layer GPT-2-shaped step's
    compile). Distinct `memref.alloc` results never alias, so this pass
    splits the dealloc directly when every buffer it frees is one, each
    once, unconditionally, with nothing retained: one `memref.dealloc` per
    buffer, in the same order, which is what simplification and
    `lower-deallocations` make of it. Any other dealloc is left to them.

    Before:

    ```mlir
    %a = memref.alloc() : memref<4xf32>
    %b = memref.alloc() : memref<8xf32>
    ...
    bufferization.dealloc (%a, %b : memref<4xf32>, memref<8xf32>) if (%true, %true)
    ```

    After:

    ```mlir
    memref.dealloc %a : memref<4xf32>
    memref.dealloc %b : memref<8xf32>
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def TsrDonateUpdates : Pass<"tsr-donate-updates", "ModuleOp"> {
  let summary = "Write each updated parameter and state into the buffer of the argument it updates";
  let description = [{
    Runs on tensors, after `tsr-unshare-inits` and before one-shot
    bufferization, on public functions and on the private functions whose
    results `tsr.updates` marks (a repeated layer's update cell, which
    `tsr-outline-layers` marks), those first. A training step returns the next
    value of every parameter and optimizer state (`tsr.updates` on a
    result names the argument it replaces). Bufferized as written, each
    next value gets a buffer of its own, live until the step returns,
    beside the argument's, and the runtime keeps two copies of the whole
    state (the donation XLA's `donate_argnums` and DeepSpeed's in-place
    optimizers exist for). This pass makes the op that writes such a
    result write it into the argument instead: when that op is a linalg op
    of the function's body whose init is a `tensor.empty` of its own and
    whose payload never reads the init, the argument becomes its init and
    writable (`tsr-to-linalg` made every argument read-only). One-shot bufferization then writes the argument's buffer in place, or,
    where something reads the argument afterwards, a fresh buffer as before
    (its conflict analysis decides; the semantics never change).

    A result may also be that of a call whose callee returns it in the
    buffer of the argument the call passes this argument as (the callee's
    `tsr.in_place`), when the call is the last to read the argument: the
    callee writes it there, and `drop-equivalent-buffer-results` then makes
    the caller read the buffer it passed.

    The function gets `tsr.in_place`: per result, the argument whose buffer
    it is returned in (-1 for none). The caller passes that argument's
    buffer as the result's out-parameter (`tsr-results-to-out-params` then
    copies nothing), and the manifest marks the output `"in_place"`. A
    result is not donated when the argument is (a view of) another result,
    or its type differs. The pass consumes `tsr.updates` (the manifest has
    it already).

    Before:

    ```mlir
    func.func @step(%w: tensor<4xf32> {bufferization.writable = false},
                    %g: tensor<4xf32>)
        -> (tensor<4xf32> {tsr.updates = 0 : i64}) {
      %e = tensor.empty() : tensor<4xf32>
      %w2 = linalg.generic {...} ins(%w, %g : tensor<4xf32>, tensor<4xf32>)
          outs(%e : tensor<4xf32>) {...} -> tensor<4xf32>
      return %w2 : tensor<4xf32>
    }
    ```

    After:

    ```mlir
    func.func @step(%w: tensor<4xf32> {bufferization.writable = true},
                    %g: tensor<4xf32>) -> tensor<4xf32>
        attributes {tsr.in_place = array<i64: 0>} {
      %w2 = linalg.generic {...} ins(%w, %g : tensor<4xf32>, tensor<4xf32>)
          outs(%w : tensor<4xf32>) {...} -> tensor<4xf32>
      return %w2 : tensor<4xf32>
    }
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def TsrResultsToOutParams : Pass<"tsr-results-to-out-params", "ModuleOp"> {
  let summary = "Return buffers through out-parameters, copying nothing into a result the caller passes in its argument's buffer";
  let description = [{
    Runs on buffers, right after one-shot bufferization. It is upstream's
    `buffer-results-to-out-params` (public functions included: the runtime
    passes every output's buffer), except for the results that
    `tsr.in_place` on the function returns in an argument's buffer: the
    caller passes that buffer as the result's out-parameter too, so where
    bufferization wrote the result in place the copy into the
    out-parameter, a copy of the buffer onto itself, is left out. Where
    bufferization wrote the result elsewhere (something read the argument
    after it), the copy stays, at the end of the function, after every read
    of the argument.

    Any other result that is a static `memref.alloc` of the function,
    returned once, is its out-parameter from the start: the allocation is
    replaced by the out-parameter and nothing is copied (upstream's
    `hoist-static-allocs`, which would hoist an in-place result's
    allocation too, onto the argument the function still reads). So is a
    result that is a chain of `expand_shape`/`collapse_shape` views of such
    an allocation (a 3-D product computed as a 2-D one): the allocation
    becomes the inverse views of the out-parameter. The
    peak prediction (lib/Analysis/PeakMemory.cpp) counts those buffers as
    the caller's.

    Before:

    ```mlir
    func.func @step(%w: memref<4xf32>, %g: memref<4xf32>) -> memref<4xf32>
        attributes {tsr.in_place = array<i64: 0>} {
      linalg.generic {...} ins(%w, %g : ...) outs(%w : memref<4xf32>) {...}
      return %w : memref<4xf32>
    }
    ```

    After:

    ```mlir
    func.func @step(%w: memref<4xf32>, %g: memref<4xf32>, %out: memref<4xf32>)
        attributes {tsr.in_place = array<i64: 0>} {
      linalg.generic {...} ins(%w, %g : ...) outs(%w : memref<4xf32>) {...}
      return
    }
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

#endif // TESSERA_CONVERSION_TSRTOLINALG_PASSES_TD
