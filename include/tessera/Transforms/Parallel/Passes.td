//===- Passes.td - Partitioning a training step -------------*- tablegen -*-===//
#ifndef TESSERA_TRANSFORMS_PARALLEL_PASSES_TD
#define TESSERA_TRANSFORMS_PARALLEL_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrDataParallel : Pass<"tsr-data-parallel", "ModuleOp"> {
  let summary = "Make a loss-and-gradient function one rank's part of a "
                "data-parallel step, with ZeRO stages 0-3";
  let description = [{
    Runs between `tsr-autodiff` (or `tsr-accumulate-gradients`) and
    `tsr-optimizer`. The function it rewrites computes the mean loss and the
    gradients of one rank's slice of the global batch (the driver compiles
    the model at batch B/N). Data parallelism runs over the mesh axis
    `axis` (default `dp`): of the module's `tsr.mesh` if it has one (the
    driver's `--mesh`), otherwise the pass declares a one-axis mesh of size
    `dp`. It records the layout on the function (`tsr.zero = #tsr.zero<stage
    = K, axes = ["dp"]>`), then:

    - the loss becomes its mean over the ranks (`tsr.all_reduce`, mean), so
      every rank reports the loss of the global batch;
    - the gradients are averaged over the ranks in buckets of at most
      `bucket-bytes` (a bucket holding one larger gradient alone). Buckets
      fill in backward order, the order in which the gradients are computed,
      and each bucket's collective is placed right after its last gradient,
      so it can overlap the rest of the backward pass. A bucket is the
      gradients flattened and concatenated: ZeRO 0 and 1 all-reduce it;
      ZeRO 2 and 3 reduce-scatter it so that each rank keeps only its shard
      of every gradient (flattened, zero-padded to N·c elements, c =
      ceil(n/N); rank r owns elements [r·c, (r+1)·c)); the result then
      carries `tsr.shards = N`;
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
    labels. Refused with an error for N > 1: running-statistics updates
    (batch-norm batch statistics would differ per rank), and a label-ignoring
    loss that is not the step's own mean (class weights, another reduction,
    or inside a `--micro-batches` micro-step).

    Before (`dp=2 zero=2`):

    ```mlir
    func.func @main(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, %x: tensor<4x3xf32>)
        -> (tensor<f32>, tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.role = #tsr.role<grad>})
    ```

    After:

    ```mlir
    module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
    func.func @main(...) -> (tensor<f32>, tensor<3xf32> {tsr.grad_of = 0 : i64, tsr.role = #tsr.role<grad>, tsr.shards = 2 : i64})
        attributes {tsr.zero = #tsr.zero<stage = 2, axes = ["dp"]>} {
      ...
      %f = tsr.reshape %gw : tensor<3x2xf32> to tensor<6xf32>
      %b = tsr.reshape %f : tensor<6xf32> to tensor<2x3xf32>
      %s = tsr.reduce_scatter %fb {bucket = 0 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w"]} : (tensor<6xf32>) -> tensor<3xf32>
      %l = tsr.all_reduce %loss {mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["loss"]} : (tensor<f32>) -> tensor<f32>
      return %l, %s
    }
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

#endif // TESSERA_TRANSFORMS_PARALLEL_PASSES_TD
