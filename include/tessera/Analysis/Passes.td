//===- Passes.td - Passes that print the plan layer's analyses -*- tablegen -*-===//
#ifndef TESSERA_ANALYSIS_PASSES_TD
#define TESSERA_ANALYSIS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrPrintPeakMemory : Pass<"tsr-print-peak-memory", "ModuleOp"> {
  let summary = "Report the predicted peak memory of every function, with "
                "the buffers live at the peak";
  let description = [{
    Runs the tsr-level liveness analysis (`predictPeakMemory`,
    include/tessera/Analysis/PeakMemory.h) on every function with a body and
    reports, as a remark on the function, the most bytes it holds in
    buffers it allocates itself, the op at which that peak is reached, and
    a note per buffer live there (largest first). Changes nothing; the
    artifact writer runs the same analysis and records the prediction in
    the manifest (`predicted_peak_alloc_bytes`) beside the allocator's plan.

    Example (`tessera-opt --tsr-print-peak-memory f.mlir`):

    ```
    f.mlir:3:3: remark: predicted peak 96 bytes at 'tsr.matmul' (2 buffers live)
    f.mlir:4:8: note: 64 bytes: tsr.exp
    f.mlir:5:8: note: 32 bytes: tsr.matmul
    ```
  }];
}

#endif // TESSERA_ANALYSIS_PASSES_TD
