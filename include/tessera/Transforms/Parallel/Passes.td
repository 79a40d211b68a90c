//===- Passes.td - Partitioning a training step -------------*- tablegen -*-===//
#ifndef TESSERA_TRANSFORMS_PARALLEL_PASSES_TD
#define TESSERA_TRANSFORMS_PARALLEL_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrDataParallelPlan : Pass<"tsr-data-parallel-plan", "ModuleOp"> {
  let summary = "Decide the data-parallel layout of a loss-and-gradient "
                "function: the axis, the ZeRO stage and the gradient buckets";
  let description = [{
    The decision half of data parallelism; it writes attributes only, and
    `tsr-data-parallel` applies them. Runs between `tsr-autodiff` (or
    `tsr-accumulate-gradients`) and `tsr-data-parallel`. Data parallelism
    runs over the mesh axis `axis` (default `dp`): of the module's
    `tsr.mesh` if it has one (the driver's `--mesh`), otherwise the pass
    declares a one-axis mesh of size `dp`. It records:

    - on the function, the ZeRO layout: `tsr.zero = #tsr.zero<stage = K,
      axes = ["dp"]>`;
    - on every gradient result, `tsr.bucket = k`: the gradients fill
      buckets in backward order (the order the backward pass computes them),
      each holding at most `bucket-bytes` (a larger gradient alone; ZeRO 2
      and 3 count a gradient padded to N·ceil(n/N) elements), one element
      type per bucket.

    Refused with an error for N > 1: running-statistics updates
    (batch-norm batch statistics would differ per rank), and a
    label-ignoring loss that is not the step's own mean (class weights,
    another reduction, or inside a `--micro-batches` micro-step).

    Before (`dp=2 zero=2 bucket-bytes=24`):

    ```mlir
    func.func @main(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, ...)
        -> (tensor<f32>, tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.role = #tsr.role<grad>},
            tensor<2xf32> {tsr.grad_of = 1 : i64, tsr.role = #tsr.role<grad>})
    ```

    After:

    ```mlir
    module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
    func.func @main(...) -> (tensor<f32>,
        tensor<3x2xf32> {tsr.bucket = 1 : i64, tsr.grad_of = 0 : i64, ...},
        tensor<2xf32> {tsr.bucket = 0 : i64, tsr.grad_of = 1 : i64, ...})
        attributes {tsr.zero = #tsr.zero<stage = 2, axes = ["dp"]>}
    ```
  }];
  let options = [
    Option<"axis", "axis", "std::string", /*default=*/"\"dp\"",
           "The mesh axis that carries data parallelism">,
    Option<"dp", "dp", "int64_t", /*default=*/"0",
           "Number N of data-parallel ranks (0: the size of `axis` in the "
           "module's tsr.mesh)">,
    Option<"zero", "zero", "int64_t", /*default=*/"0",
           "ZeRO stage: 0 replicates everything, 1 shards optimizer state, 2 "
           "also gradients, 3 also parameters">,
    Option<"bucketBytes", "bucket-bytes", "int64_t",
           /*default=*/"25 * 1024 * 1024",
           "Most gradient bytes per bucket (one collective each)">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
}

def TsrDataParallel : Pass<"tsr-data-parallel", "ModuleOp"> {
  let summary = "Make a loss-and-gradient function one rank's part of a "
                "data-parallel step, as tsr-data-parallel-plan decided";
  let description = [{
    The rewrite half of data parallelism: it reads the function's
    `tsr.zero` and every gradient's `tsr.bucket` (an error without them)
    and, for the N ranks of the ZeRO axes:

    - the loss becomes its mean over the ranks (`tsr.all_reduce`, mean), so
      every rank reports the loss of the global batch;
    - every bucket is the gradients flattened and concatenated, started
      (`async`) right after its last gradient, so it overlaps the rest of
      the backward pass, and waited for (`tsr.wait`) before the return,
      where the optimizer update goes. ZeRO 0 and 1 all-reduce it; ZeRO 2
      and 3 reduce-scatter it so that each rank keeps only its shard of
      every gradient (flattened, zero-padded to N·c elements, c = ceil(n/N);
      rank r owns elements [r·c, (r+1)·c)); the result then carries
      `tsr.shards = N`. The `tsr.bucket` result attributes are dropped: the
      collectives carry `bucket`;
    - ZeRO 3 also shards every trained parameter the same way: its argument
      becomes the local shard (`tsr.shards`, `tsr.global_shape`), and a
      `tsr.all_gather` rebuilds it right before its first use in the forward
      pass and again before its first use in the backward pass, so the whole
      parameter is live only while those need it.

    `tsr-optimizer` then updates only the local shard for ZeRO >= 1 (its
    state is sharded) and all-gathers the new parameters for ZeRO 1 and 2.
    Every collective names the parameters it serves (`serves`). A loss that
    ignores a label is a mean over a different number of labels on every
    rank: each rank counts its labels, the counts are all-reduced, and the
    rank's loss and gradients are weighted by N·count/total before the mean
    over ranks, which gives exactly the mean over the global batch's counted
    labels.

    Before (the plan above):

    ```mlir
    func.func @main(...) -> (tensor<f32>, tensor<3x2xf32> {tsr.bucket = 1 : i64, tsr.grad_of = 0 : i64, ...}, ...)
        attributes {tsr.zero = #tsr.zero<stage = 2, axes = ["dp"]>}
    ```

    After:

    ```mlir
    func.func @main(...) -> (tensor<f32>, tensor<3xf32> {tsr.grad_of = 0 : i64, tsr.role = #tsr.role<grad>, tsr.shards = 2 : i64}, ...)
        attributes {tsr.zero = #tsr.zero<stage = 2, axes = ["dp"]>} {
      ...
      %f = tsr.reshape %gw : tensor<3x2xf32> to tensor<6xf32>
      %s = tsr.reduce_scatter %f {async, bucket = 1 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w"]} : (tensor<6xf32>) -> tensor<3xf32>
      %l = tsr.all_reduce %loss {mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["loss"]} : (tensor<f32>) -> tensor<f32>
      %r = tsr.wait %s : (tensor<3xf32>) -> tensor<3xf32>
      return %l, %r, ...
    }
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
}

#endif // TESSERA_TRANSFORMS_PARALLEL_PASSES_TD
