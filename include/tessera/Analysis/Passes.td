//===- Passes.td - Passes that print the plan layer's analyses -*- tablegen -*-===//
#ifndef TESSERA_ANALYSIS_PASSES_TD
#define TESSERA_ANALYSIS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrPrintCost : Pass<"tsr-print-cost", "ModuleOp"> {
  let summary = "Report the estimated time of every function, split into "
                "compute and communication, with a note per collective";
  let description = [{
    Runs the cost model (`CostModel`, include/tessera/Analysis/CostModel.h)
    on every function with a body and reports, as a remark on the function,
    its estimated time for one call: the sum of the roofline times of its
    compute ops (max of FLOPs at the peak and bytes at the memory bandwidth)
    and the alpha-beta times of its collectives (ring algorithms after
    Thakur, Rabenseifner and Gropp 2005), with the FLOPs and bytes of each
    part, and a note per collective: its kind, its mesh axes, the bytes one
    rank sends and its time. Changes nothing.

    The figures come from the cluster file `cluster` (JSON, see
    include/tessera/Analysis/ClusterSpec.h and docs/analysis.md): the
    device's where it gives them, else `peak-flops` and `bandwidth`; the
    link of each mesh axis from its entry in `links`, field by field, else
    from `default_link`. There is no other default link: every mesh axis a
    collective of more than one rank spans needs one from the file. A file
    that cannot be read or parsed, or that gives an axis a latency but no
    bandwidth (or the reverse), is an error.

    Example (`tessera-opt --tsr-print-cost=cluster=c.json f.mlir`, c.json
    being `{"default_link": {"latency_us": 5, "bandwidth_gb_per_s": 1}}`)
    on

    ```mlir
    module attributes {tsr.mesh = #tsr.mesh<["dp"=4]>} {
      func.func @step(%x: tensor<64x256xf32>, %w: tensor<256x256xf32>) -> tensor<64x256xf32> {
        %y = tsr.matmul %x, %w : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
        %r = tsr.all_reduce %y {mesh_axes = ["dp"], reduction = #tsr.reduction<sum>} : (tensor<64x256xf32>) -> tensor<64x256xf32>
        return %r : tensor<64x256xf32>
      }
    }
    ```

    prints

    ```
    f.mlir:2:3: remark: estimated 0.0001736 s: compute 4.534e-05 s (8388608 flops, 393216 bytes), communication 0.0001283 s (98304 bytes)
    f.mlir:4:10: note: all_reduce over ["dp"]: 98304 bytes, 0.0001283 s
    ```
  }];
  let options = [
    Option<"peakFlops", "peak-flops", "double", "185e9",
           "Peak FLOP/s of one device where the cluster file gives none "
           "(default: the CPU target's)">,
    Option<"bandwidth", "bandwidth", "double", "25e9",
           "Memory bandwidth of one device in bytes/s where the cluster "
           "file gives none (default: the CPU target's)">,
    Option<"cluster", "cluster", "std::string", "\"\"",
           "A cluster file (JSON): the device's figures and the link of each "
           "mesh axis">,
  ];
}

def TsrPrintPeakMemory : Pass<"tsr-print-peak-memory", "ModuleOp"> {
  let summary = "Report the predicted peak memory of every function, with "
                "the buffers live at the peak";
  let description = [{
    Runs the tsr-level liveness analysis (`predictPeakMemory`,
    include/tessera/Analysis/PeakMemory.h) on every function with a body and
    reports, as a remark on the function, the most bytes it holds in
    buffers it allocates itself (each with the `buffer-padding` bytes the
    allocator adds to it), the op during whose lowering that peak is
    reached, and a note per buffer live there (largest first): a value, or
    a scratch buffer of an op's lowering (a convolution's im2col columns
    and GEMM result, the transposed operands of its gradients, a softmax's
    exponentials). Changes nothing; the artifact writer runs the same
    analysis and records the prediction in the manifest
    (`predicted_peak_alloc_bytes`) beside the allocator's plan. A negative
    `buffer-padding` is an error.

    Example: a matmul whose result a reshape views and a neg reads (the
    exp's 128 bytes died at the matmul):

    ```mlir
    func.func @views(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<64xf32> {
      %e = tsr.exp %x : tensor<4x8xf32>
      %m = tsr.matmul %e, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
      %r = tsr.reshape %m : tensor<4x16xf32> to tensor<64xf32>
      %n = tsr.neg %r : tensor<64xf32>
      return %n : tensor<64xf32>
    }
    ```

    prints

    ```
    pk.mlir:1:1: remark: predicted peak 640 bytes at 'tsr.neg' (2 buffers live, 128 bytes of allocator padding)
    pk.mlir:3:8: note: 256 bytes: tsr.matmul
    pk.mlir:5:8: note: 256 bytes: tsr.neg
    ```
  }];
  let options = [
    Option<"bufferPadding", "buffer-padding", "int64_t", "64",
           "Bytes the allocator adds to every buffer (default 64: the "
           "lowering aligns buffers to 64 bytes and finalize-memref-to-llvm "
           "allocates that much more to align the pointer)">,
  ];
}

#endif // TESSERA_ANALYSIS_PASSES_TD
