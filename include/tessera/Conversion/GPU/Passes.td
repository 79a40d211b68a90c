//===- Passes.td - GPU code generation passes ---------------*- tablegen -*-===//
#ifndef TESSERA_CONVERSION_GPU_PASSES_TD
#define TESSERA_CONVERSION_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrGpuLaunch : Pass<"tsr-gpu-launch", "func::FuncOp"> {
  let summary = "Run every linalg op on buffers as a gpu.launch, buffers in device memory";
  let description = [{
    The first mapping of the CUDA target (docs/gpu.md): after bufferization,
    each linalg op of a host function (a `memref.copy` counts as a
    `linalg.copy`) becomes its loop nest (`linalg::linalgOpToParallelLoops`:
    `scf.parallel` over the parallel dimensions, `scf.for` over the
    reductions) inside one `gpu.launch`. The outermost `scf.parallel` is
    linearized: one thread per point of its iteration space, 256 threads to
    a block, the index split back into the loop's induction variables with
    `affine.delinearize_index`, a guard for the last block. An op with no
    parallel dimension (a full reduction, a rank-0 op) runs on one thread.
    Reductions are therefore serial per output element; the tiled, fused and
    warp-reduced mapping is the next step.

    Host buffers become device buffers: `memref.alloc`/`memref.dealloc`
    become `gpu.alloc`/`gpu.dealloc`, and a constant (`memref.get_global`)
    is copied to a device buffer at its use, freed before the function
    returns. Loop bounds must be static. Any other host op that reads or
    writes a buffer is an error naming the op, since the host cannot touch
    device memory.

    Before:

    ```mlir
    func.func @f(%x: memref<1000xf32>, %y: memref<1000xf32>) {
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
          ins(%x : memref<1000xf32>) outs(%y : memref<1000xf32>) {
      ^bb0(%a: f32, %b: f32):
        %e = math.exp %a : f32
        linalg.yield %e : f32
      }
      return
    }
    ```

    After:

    ```mlir
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, ...) threads(%tx, %ty, %tz) in (%sx = %c256, ...) {
      %i = affine.apply affine_map<(d0, d1) -> (d0 * 256 + d1)>(%bx, %tx)
      %in = arith.cmpi ult, %i, %c1000 : index
      scf.if %in {
        %a = memref.load %x[%i] : memref<1000xf32>
        %e = math.exp %a : f32
        memref.store %e, %y[%i] : memref<1000xf32>
      }
      gpu.terminator
    }
    ```
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::linalg::LinalgDialect"];
}

#endif // TESSERA_CONVERSION_GPU_PASSES_TD
