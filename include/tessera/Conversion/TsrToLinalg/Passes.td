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

#endif // TESSERA_CONVERSION_TSRTOLINALG_PASSES_TD
