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
      type per bucket;
    - with `compression=topk:R`, `qsgd:BITS[:BUCKET]` or `powersgd:RANK`,
      on every gradient of rank >= 2 (for PowerSGD: whose factors are
      smaller, RANK·(n + m) < n·m) also `tsr.compression = "topk:R"` (or
      `"qsgd:BITS:BUCKET"`, `"powersgd:RANK"`), and buckets of their own for those, filled
      the same way and numbered after the plain ones: `tsr-data-parallel`
      reduces them compressed (vectors, biases and norms stay in plain
      buckets: they are few bytes).
      With `onebit:W:B1` (1-bit Adam) every float gradient, vectors too,
      is marked and bucketed so, and ZeRO must be 0.
      Compression needs the data-parallel axis alone in the mesh, and
      error feedback (top-k, PowerSGD, 1-bit Adam) no dynamic loss scaling
      (a skipped step would still move the residuals).
    - with `local-steps=H` (H >= 1, local SGD), instead of buckets, on the
      function `tsr.local_steps = H`: the ranks reduce no gradient, each
      updates its own parameters, and `tsr-local-sgd` (after
      `tsr-optimizer`) averages the parameters and optimizer state every H
      steps. It needs the data-parallel axis alone, ZeRO-0 (ZeRO shards
      the state of an update that every rank applies alike), no gradient
      compression, and no dynamic loss scaling (ranks that skip steps on
      their own would disagree on the step count).

    - with `servers=S` (S >= 1, a parameter server), instead of buckets, on
      the function `tsr.parameter_server = {servers = S, staleness = K}`
      (`staleness` the option, -1: bulk-synchronous) and on every gradient
      `tsr.server = s`: the server that holds its parameter and optimizer
      state. Parameters go whole to servers, largest first, each to the
      server holding the fewest bytes so far (the lower number on a tie);
      `tsr-parameter-server` then builds each server's update. It needs the
      data-parallel axis alone, ZeRO-0, no compression or local SGD, no
      dynamic loss scaling, no label-ignoring loss (the servers average the
      workers' mean losses), and at least S trained parameters.

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
    Option<"compression", "compression", "std::string", /*default=*/"\"none\"",
           "How matrix gradients are reduced: none (in buckets), topk:R "
           "(the fraction R of largest magnitude, with error feedback), "
           "qsgd:BITS[:BUCKET] (unbiased stochastic quantization) or "
           "powersgd:RANK (low-rank, with error feedback)">,
    Option<"localSteps", "local-steps", "int64_t", /*default=*/"0",
           "Local SGD: reduce no gradient and average the parameters and "
           "optimizer state every H steps instead (0: all-reduce the "
           "gradients every step)">,
    Option<"servers", "servers", "int64_t", /*default=*/"0",
           "Parameter servers: S ranks apart from the N workers hold the "
           "parameters and apply the updates (0: none)">,
    Option<"staleness", "staleness", "int64_t", /*default=*/"-1",
           "With servers: how many steps a worker may run ahead of the "
           "slowest (asynchronous; -1: bulk-synchronous, the servers "
           "average every worker's gradient of a step)">,
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

    A bucket of gradients with `tsr.compression` is exchanged compressed:
    each gradient is compressed alone right after it is computed, the
    bucket's pieces are concatenated into two async `tsr.all_gather`s
    after its last gradient (they carry `bucket`, `tsr.compression` and, on
    the first, `tsr.dense_bytes`: what an all-reduce of the gradients would
    have carried), and before the return each rank's columns are cut apart
    again. With `topk:R` each rank adds its error-feedback residual (a new
    state argument `topk.residual.NAME`, zero at first, this rank's row of
    a [N, n] tensor sharded over the ranks) to the gradient, keeps the k =
    ceil(R·n) elements of largest magnitude (`tsr.topk` unsorted, a radix
    select) and sends them as (i32 index, value) pairs; the N·k pairs are
    scattered (added) into zeros and divided by N: every rank gets the same
    dense mean (its ZeRO 2/3 shard after a `tsr.local_shard`). The elements
    not sent are the next residual, a new state result (`tsr.updates`) that
    `tsr-optimizer` carries and checkpoints keep per rank.

    A gradient with `tsr.compression = "qsgd:BITS:BUCKET"` is quantized
    (QSGD, Alistarh et al. 2017): flattened, zero-padded to buckets of
    BUCKET elements, each bucket's norm kept, and each element v becomes
    sign(v)·l with l = floor(a) or floor(a) + 1, a = |v|/norm·s, s =
    2^(BITS-1) − 1, rounded up with probability a − floor(a)
    (`tsr.random_uniform` seeded by FNV-1a of the parameter's name, offset
    by the step's `rng` argument, added if the function has none): unbiased.
    The int8 levels and the norms travel; every rank sums levels·norm/s
    over the ranks and divides by N.

    A bucket with `tsr.compression = "powersgd:RANK"` (Vogels et al. 2019):
    each rank forms M = gradient + its residual (`powersgd.residual.NAME`,
    as top-k's) as a matrix [dim 0, the rest] and P = M·Q with Q
    (`powersgd.q.NAME` [m, RANK], a replicated state; while it is all zero,
    a `tsr.random_uniform` draw minus 0.5 that every rank makes alike); the
    bucket's P travel in one async all-reduce (mean), are orthonormalized
    (Gram-Schmidt), Q = Mᵀ·P̂ is averaged in a second all-reduce, and the
    gradient becomes P̂·Qᵀ, the residual M − P̂·Qᵀ and Q the next state.

    A bucket with `tsr.compression = "onebit:W:B1"` (1-bit Adam, Tang et
    al. 2021) adds the states `onebit.step`, per gradient a replicated copy
    M of Adam's momentum (`onebit.momentum.NAME`) and a worker error
    (`onebit.worker_error.NAME`, a row per rank), and per bucket a server
    error (`onebit.server_error.bucketK`, a chunk per rank), and builds an
    `scf.if` on the step count. For steps t <= W the gradients are
    all-reduced (the warm-up). After, each rank's momentum
    m = B1·M + (1 − B1)·g plus its worker error, x (flat, zero-padded to
    L = 8N·C elements), travels as its signs packed eight to an i8 and the
    scale ‖x‖/√n: an all-to-all gives rank k chunk k of every rank's signs
    and an all-gather the scales; rank k averages its chunk, adds its
    server error, and sends that as signs and a scale again (two
    all-gathers); every rank decodes the same momentum m_t and returns, as
    the gradient, ĝ = (m_t − B1·M)/(1 − B1), whose Adam momentum
    B1·M + (1 − B1)·ĝ is m_t; M becomes m_t and the errors what the signs
    missed. `tsr-optimizer` runs Adam with `freeze-variance-after=W`.

    A function with `tsr.local_steps` (local SGD) keeps every gradient
    as it is: only the loss and the metrics are reduced.

    With `reduce-type=bf16` (or `f16`) every bucket of wider float
    gradients is divided by N, cast to that type, summed over the ranks and
    cast back after the wait: half the bytes on the wire, one rounding of
    each gradient and of each partial sum; dividing first keeps the partial
    sums within the range of the mean, which matters for fp16 (what
    `tessera-compile --precision=bf16|fp16` does unless
    `--reduce-in-fp32`).

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
    Option<"reduceType", "reduce-type", "std::string", /*default=*/"\"\"",
           "Type the gradient buckets are reduced in: empty for the "
           "gradients' own, bf16 or f16">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TsrParameterServer : Pass<"tsr-parameter-server", "ModuleOp"> {
  let summary = "Split a loss-and-gradient step into the workers' program "
                "and one update function per parameter server";
  let description = [{
    The apply half of `tsr-data-parallel-plan servers=S`. Runs where
    `tsr-data-parallel` would, on a function with `tsr.parameter_server =
    {servers = S, staleness = K}` whose gradient results carry `tsr.server`.

    The step stays as it is, the workers' program: it returns the loss
    and every gradient of this worker's batch, reduced nowhere. For every
    server s the pass adds a public function `@server<s>`
    (`tsr.server = s`) taking the parameters placed on s (their argument
    attributes copied), a gradient input `<name>.grad` (role `grad`) for
    each, and the loss (role `loss`), and returning the loss and the
    gradients with `tsr.grad_of` naming its own parameters: a
    loss-and-gradient function, which `tsr-optimizer function=server<s>`
    turns into the server's update. The module's `tsr.schedule` is the step
    alone: the runtime runs the servers' functions on ranks N..N+S-1 and
    moves gradients and parameters between them (docs/parallel.md).

    Errors: a function without `tsr.parameter_server`, a gradient without
    `tsr.server` or on a server out of range, a server that holds no
    parameter, a name already taken.

    Before (`servers=2`):

    ```mlir
    func.func @main(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                    %b: tensor<2xf32> {tsr.name = "b", tsr.role = #tsr.role<param>}, ...)
        -> (tensor<f32>, tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.server = 0 : i64, ...},
            tensor<2xf32> {tsr.grad_of = 1 : i64, tsr.server = 1 : i64, ...})
        attributes {tsr.parameter_server = {servers = 2 : i64, staleness = -1 : i64}, ...}
    ```

    After (the step unchanged):

    ```mlir
    module attributes {tsr.schedule = [@main], ...} {
    func.func @server0(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                            %gw: tensor<3x2xf32> {tsr.name = "w.grad", tsr.role = #tsr.role<grad>},
                            %loss: tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>})
        -> (tensor<f32>, tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.role = #tsr.role<grad>})
        attributes {tsr.server = 0 : i64} {
      return %loss, %gw : tensor<f32>, tensor<3x2xf32>
    }
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to split (default: the module's one public "
           "function)">,
  ];
}

def TsrLocalSGD : Pass<"tsr-local-sgd", "ModuleOp"> {
  let summary = "Average the data-parallel ranks' parameters and optimizer "
                "state every H steps (local SGD)";
  let description = [{
    Local SGD, or periodic averaging (Stich 2019; Lin et al. 2020): the
    apply half of `tsr-data-parallel-plan local-steps=H`. Runs on a
    training step after `tsr-optimizer`, on a function with
    `tsr.local_steps = H` whose gradients `tsr-data-parallel` left
    unreduced, so that every rank has applied its own update.

    It adds an input `local_sgd.sync` (`tsr.role = #tsr.role<sync>`, an i64
    scalar that the runtime sets to 1 on the last step of a run), and
    wraps the average in an `scf.if` that is due when H divides the
    optimizer's new step count, or when `sync` is 1. Inside it, every
    float parameter and state the step updates is flattened into buckets
    of at most `bucket-bytes` (a larger tensor alone; one element type
    each), every bucket is all-reduced (mean, `async`) over the
    data-parallel axes, and the results are cut apart again after the
    waits. The collectives carry `tsr.local_steps = H` and a `tsr.reason`.
    The other H-1 steps send nothing; every rank leaves a due step with
    the same parameters and optimizer state, so a checkpoint taken then is
    the whole state. The integer step counter is the same on every rank
    and is not averaged.

    Errors: a function without `tsr.local_steps`, `tsr.zero` or the
    optimizer's `step` state, or one that already has a sync input.

    Before (`local-steps=4`, SGD with momentum, after `tsr-optimizer`):

    ```mlir
    func.func @main(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}, ...)
        attributes {tsr.local_steps = 4 : i64, tsr.zero = #tsr.zero<stage = 0, axes = ["dp"]>} {
      ...
      return %loss, %w1, %buf1, %step1 : ...
    }
    ```

    After:

    ```mlir
    func.func @main(..., %sync: tensor<i64> {tsr.name = "local_sgd.sync", tsr.role = #tsr.role<sync>}) ... {
      %r = tsr.mod %step1, %c4 : ...
      %due = tsr.or %a, %b : ...
      %c = tensor.extract %due[] : tensor<i1>
      %avg:2 = scf.if %c -> (tensor<3x2xf32>, tensor<3x2xf32>) {
        %f = tsr.concat ...
        %s = tsr.all_reduce %f {async, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w", "momentum.w"], tsr.local_steps = 4 : i64, tsr.reason = "..."} : (tensor<12xf32>) -> tensor<12xf32>
        %m = tsr.wait %s : (tensor<12xf32>) -> tensor<12xf32>
        ...
        scf.yield %w2, %buf2 : tensor<3x2xf32>, tensor<3x2xf32>
      } else {
        scf.yield %w1, %buf1 : tensor<3x2xf32>, tensor<3x2xf32>
      }
      return %loss, %avg#0, %avg#1, %step1 : ...
    }
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t",
           /*default=*/"25 * 1024 * 1024",
           "Most bytes per all-reduce of the average">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TsrShardingPropagation : Pass<"tsr-sharding-propagation", "ModuleOp"> {
  let summary = "Decide how every value of a loss function is split over a "
                "tensor-parallel mesh axis";
  let description = [{
    The decision half of tensor parallelism; it writes attributes only, and
    `tsr-sharding-partition` applies them. Runs on the loss function
    (after `tsr-append-loss`, before `tsr-autodiff`) of a module whose
    `tsr.mesh` has the axis `axis` (default `tp`).

    Walking the ops in program order, it gives each op with a sharding rule
    (ShardingRuleOpInterface; the elementwise rule for elementwise ops) the
    candidate layout whose operand reshards move the fewest bytes over the
    axis (the α-β model's β coefficient; ties: fewer messages, a result that
    is not a pending sum, splitting over not splitting). A result split
    along a dimension that a user's rule needs whole also costs the gather
    that user will do, so a free split that would be gathered straight
    back (a reshape of whole labels into the loss) is not taken. A weight (a
    parameter of rank >= 2 that a matmul, einsum, convolution or gather
    reads) is split by its first use; an activation is
    split only along a factor a weight operand has or an operand arrives
    split along (biases and norm scales follow the activations). A
    parameter pinned with `shard` keeps its layout; an op that wants it
    otherwise gets an explicit reshard, reported as a warning naming the
    parameter, its pinned layout and the one the op uses. With
    `sequence-parallel`, an activation may also be split along its sequence
    dimension (dimension `sequence-dim` of the data and label inputs,
    followed through every op's rule), so that a pending sum meets the
    residual stream as a reduce-scatter along the sequence and the norms
    and residual adds run on sequence blocks, gathered before the
    column-parallel matmuls (Megatron's sequence parallelism). A row-parallel matmul's result is a pending sum (`partial`)
    until an op that is not linear in it needs it whole. An op without a
    rule runs on whole values, and is named in a warning when that gathers a
    split or pending operand.

    With `expert-parallel` the axis carries expert parallelism (GShard):
    the batch (dimension 0 of the data and label inputs) is split over it
    and followed through the rules like the sequence above, dense weights
    stay whole (every rank runs the dense layers on its batch block), and a
    weight is split only along an expert dimension (dimension 0 of a
    `tsr.moe_dispatch` result, followed through the rules), looking through
    the transposes and reshapes between a parameter and its first use (so
    the experts' biases split with their weights). The tokens' buffer then
    moves from split by group to split by expert before the experts and
    back before the combine: a change of split dimension, which the
    partition does with one `tsr.all_to_all` (it moves 1/N of the bytes an
    all-gather would).

    Without `expert-parallel`, a transpose or reshape of a parameter that
    feeds a contraction over experts (a matmul whose other operand has an
    expert dimension) stands for the parameter the same way, so tensor
    parallelism splits inside the expert blocks as in Megatron's MLP.

    The decisions, on every op that splits, sums or reshards something:
    `tsr.operand_shardings` (the layout each operand is brought to) and
    `tsr.sharding` (each result's layout); on split parameters, the argument
    attribute `tsr.sharding`. The pass runs once per axis: where an earlier
    run over another axis wrote layouts, this one adds its axis to them (the
    earlier axis major within a dimension, pending sums over both), and one
    `tsr-sharding-partition` applies them all (expert parallelism over ep,
    then tensor parallelism over tp).

    Before (`axis=tp`, mesh `["tp"=2]`):

    ```mlir
    func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"},
                    %w1: tensor<8x16xf32> {tsr.name = "w1", tsr.role = #tsr.role<param>},
                    %w2: tensor<16x8xf32> {tsr.name = "w2", tsr.role = #tsr.role<param>}) -> tensor<f32> {
      %h = tsr.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
      %a = tsr.relu %h : tensor<4x16xf32>
      %y = tsr.matmul %a, %w2 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
      ...
    ```

    After (w1 split by columns, w2 by rows, y a pending sum):

    ```mlir
    func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"},
                    %w1: tensor<8x16xf32> {..., tsr.sharding = #tsr.sharding<[[], ["tp"]]>},
                    %w2: tensor<16x8xf32> {..., tsr.sharding = #tsr.sharding<[["tp"], []]>}) -> tensor<f32> {
      %h = tsr.matmul %x, %w1 {tsr.operand_shardings = [#tsr.sharding<[[], []]>, #tsr.sharding<[[], ["tp"]]>],
                               tsr.sharding = [#tsr.sharding<[[], ["tp"]]>]} : ...
      %a = tsr.relu %h {tsr.operand_shardings = [#tsr.sharding<[[], ["tp"]]>],
                        tsr.sharding = [#tsr.sharding<[[], ["tp"]]>]} : tensor<4x16xf32>
      %y = tsr.matmul %a, %w2 {tsr.operand_shardings = [#tsr.sharding<[[], ["tp"]]>, #tsr.sharding<[["tp"], []]>],
                               tsr.sharding = [#tsr.sharding<[[], []], partial = ["tp"]>]} : ...
    ```
  }];
  let options = [
    Option<"axis", "axis", "std::string", /*default=*/"\"tp\"",
           "The mesh axis that carries tensor parallelism">,
    Option<"sequenceParallel", "sequence-parallel", "bool",
           /*default=*/"false",
           "Also split activations along the sequence (Korthikanti et al. "
           "2022): the dimension `sequence-dim` of the data and label "
           "inputs, followed through the ops">,
    Option<"sequenceDim", "sequence-dim", "int64_t", /*default=*/"1",
           "The sequence dimension of the data and label inputs">,
    Option<"expertParallel", "expert-parallel", "bool", /*default=*/"false",
           "The axis carries expert parallelism: split the batch over it, "
           "the experts' weights along the expert dimension, and keep the "
           "dense weights whole">,
    ListOption<"shard", "shard", "std::string",
               "Pinned layouts, GLOB=SPEC: the parameters whose name matches "
               "the glob get SPEC, one entry per dimension separated by ':', "
               "'-' for whole or the axis (e.g. blocks.*.fc1.weight=-:tp)">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to plan (default: the module's one public "
           "function)">,
  ];
}

def TsrShardingPartition : Pass<"tsr-sharding-partition", "ModuleOp"> {
  let summary = "Rewrite a function to one rank's blocks with explicit "
                "collectives, as tsr-sharding-propagation decided";
  let description = [{
    The rewrite half of tensor parallelism. Every value takes the shape of
    its block; before each op its operands are brought to the layouts of
    its `tsr.operand_shardings` (pending sum to split: `tsr.reduce_scatter`;
    pending sum to whole: `tsr.all_reduce`; split to whole:
    `tsr.all_gather`; whole to split: `tsr.local_shard`, no communication),
    one reshard per value and layout; the results are brought to whole
    values. Every collective it inserts says why in `tsr.reason` (the op
    and model node that needs the value, and the layout it needs), which
    `tessera-compile --explain` prints. Two ops are not the same op on blocks when their summed-over
    dimension is split, and are rewritten: a `tsr.gather` from a table split
    by rows looks up the rows this rank holds and gives zeros for the
    others (Megatron's vocabulary-parallel embedding); a
    `tsr.softmax_cross_entropy_loss` whose classes are split all-reduces the
    maximum (under `tsr.stop_gradient`) and the sum of exponentials and
    takes the target's score where this rank holds it, each rank's result a
    share of the loss (vocabulary-parallel cross-entropy: the scores are
    never gathered). A split parameter's argument becomes this rank's block (its
    `tsr.sharding` says which); the function gets `tsr.partitioned` naming
    the axes (its values' types are now blocks), which `tsr-autodiff` reads: the loss
    is the same on every rank of them, so it seeds the backward pass with
    1/N of it, and sums over those axes the gradients of arguments that
    are not split over them. A function without sharding decisions is left
    as it is.

    Before: the output of `tsr-sharding-propagation` above. After:

    ```mlir
    func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"},
                    %w1: tensor<8x8xf32> {..., tsr.sharding = #tsr.sharding<[[], ["tp"]]>},
                    %w2: tensor<8x8xf32> {..., tsr.sharding = #tsr.sharding<[["tp"], []]>}) -> tensor<f32>
        attributes {tsr.partitioned = ["tp"]} {
      %h = tsr.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
      %a = tsr.relu %h : tensor<4x8xf32>
      %y = tsr.matmul %a, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
      %s = tsr.all_reduce %y {mesh_axes = ["tp"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
      ...
    ```
  }];
  let options = [
    ListOption<"allToAll", "all-to-all", "std::string",
               "Axes on which a split that moves from one dimension to "
               "another is an all_to_all (expert parallelism's token "
               "exchange); on the others it is an all_gather and a local "
               "cut">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
}

def TsrPipelinePlan : Pass<"tsr-pipeline-plan", "ModuleOp"> {
  let summary = "Decide the pipeline stage of every forward op of a loss "
                "function";
  let description = [{
    The decision half of pipeline parallelism; `tsr-autodiff` carries each
    stage over to the gradient's ops and `tsr-pipeline` applies it. Runs on
    the loss function (after `tsr-append-loss`, before `tsr-autodiff`). The
    function's ops, in program order (a topological order), are cut into
    `stages` x `virtual-stages` consecutive runs (chunks; with one virtual
    stage, one per rank of the mesh axis `axis`; `tsr-pipeline`'s schedule
    places several per rank). Each cut is either pinned (`split`: the first
    op of each named ONNX node starts a chunk) or chosen by the cost model:
    among the positions, the one that minimizes |compute before it - k/C of
    the total| + (bytes of
    the values crossing it) x `link-seconds-per-byte`, so a cut between two
    transformer blocks (one residual stream crosses) beats one inside
    attention (queries, keys and values cross). Constants get no stage
    (`tsr-pipeline` copies them where they are used).

    It records `tsr.stage = k` (the chunk) on every other op and, on the
    function, `tsr.pipeline = {axis, stages, virtual_stages, seconds = [...],
    cut_bytes = [...]}`: each chunk's estimated forward time and the bytes
    crossing each cut.

    Before (`stages=2`):

    ```mlir
    func.func @main(%x: tensor<4x8xf32>, %w1: ..., %w2: ...) -> tensor<f32> {
      %h = tsr.matmul %x, %w1 : ...
      %a = tsr.relu %h : tensor<4x8xf32>
      %y = tsr.matmul %a, %w2 : ...
      %l = tsr.reduce_mean %y ...
      return %l : tensor<f32>
    }
    ```

    After:

    ```mlir
    func.func @main(...) -> tensor<f32> attributes {tsr.pipeline = {axis = "pp", cut_bytes = [128], seconds = [...], stages = 2 : i64}} {
      %h = tsr.matmul %x, %w1 {tsr.stage = 0 : i64} : ...
      %a = tsr.relu %h {tsr.stage = 0 : i64} : tensor<4x8xf32>
      %y = tsr.matmul %a, %w2 {tsr.stage = 1 : i64} : ...
      %l = tsr.reduce_mean %y {tsr.stage = 1 : i64} ...
    ```
  }];
  let options = [
    Option<"axis", "axis", "std::string", /*default=*/"\"pp\"",
           "The mesh axis whose ranks run the stages">,
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "Number of stages (0: the size of `axis` in the module's "
           "tsr.mesh)">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "Model chunks per stage: the ops are cut into stages x "
           "virtual-stages chunks">,
    ListOption<"split", "split", "std::string",
               "Names of the ONNX nodes that start chunks 1, 2, ... "
               "(default: chosen by the cost model)">,
    Option<"peakFlops", "peak-flops", "double", "185e9",
           "The cost model's FLOP/s">,
    Option<"bandwidth", "bandwidth", "double", "25e9",
           "The cost model's memory bytes/s">,
    Option<"linkSecondsPerByte", "link-seconds-per-byte", "double", "1e-10",
           "Seconds to send a byte between stages (the cut's penalty)">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
}

def TsrPipeline : Pass<"tsr-pipeline", "ModuleOp"> {
  let summary = "Split a loss-and-gradient function into per-stage programs "
                "that run a static pipeline schedule";
  let description = [{
    The apply half of pipeline parallelism. Runs after `tsr-autodiff` on a
    function whose ops carry `tsr.stage` (`tsr-pipeline-plan`: C = P x V
    model chunks for P ranks). The `schedule` (PipelineSchedule.h: `gpipe`,
    `1f1b`, `interleaved`, `zb-h1`, `zb-v`, `v-half`, `dualpipev`,
    `pipedream`) places the chunks on the ranks (chunk c on rank c mod P,
    or V-shaped for `zb-v`, `v-half` and `dualpipev`:
    rank 0 holds the first and the last) and says whether the backward
    pass is split. Each op belongs to one cell: the forward pass of its
    chunk (ops without `tsr.backward`), its backward pass, and with a split
    backward (`zb-*`, `v-half`, `dualpipev`) its weight-gradient pass: the backward ops
    that no other cell's gradient needs (a weight's gradient, xᵀ·dy), which
    the schedule can run later to fill bubbles. An op without a stage (a
    canonicalization's product) goes to the latest cell among its operands'
    (else the earliest of its users'), and a constant is copied into every
    cell that uses it. Each cell becomes a private function
    (`@stage1.forward`, `@stage1.backward`, `@stage1.weight_gradient`,
    `@stage0.chunk1.forward` with several chunks per rank): its arguments
    the values it reads from other cells, its results the values other
    cells read.

    Each rank then gets a public function `@stageK` (its arguments: the
    parameters it owns and the whole batch, `micro-batches` times the
    micro-batch; its results: the mean loss and the mean gradients of its
    parameters), with `tsr.ranks = {pp = K}`: the ranks that run it. Its
    body is the rank's part of the schedule, generated with the cost
    model's estimate of every cell: for each action the call of its cell on
    that micro-batch's slice of the batch, followed by the `tsr.send` of
    the values other ranks need from it (all values from one cell to one
    rank travel together). A rank receives (`tsr.recv`) the messages from
    each other rank in the order that rank sends them, as late as the
    first call that needs one. Gradients and the loss are summed over the
    micro-batches and divided by their number; the rank that computes the
    loss sends it to every rank (`tsr.broadcast_from`), so every program
    returns it. A parameter used by several ranks lives on the first
    chunk's rank; the others receive it with each micro-batch and send
    their share of its gradient back, where the backward pass sums it. The
    original function is removed.

    It records on each rank's function `tsr.pipeline_schedule`: its
    actions (`"F0"`, `"B0"`, `"W0"`; `"F0.1"` on the rank's chunk 1), their
    simulated start and end, its estimated busy seconds and bubble
    fraction, and its peak number of chunk-micro-batches in flight. Then
    it checks the programs' messages as `tsr-verify-pipeline` does.

    Refused with an error: a schedule whose chunks per rank differ from the
    plan's, a gradient or loss computed on another rank than the
    parameter's, state updates (batch-norm statistics), a batch dimension
    that the micro-batches do not split.

    Before (`schedule=1f1b micro-batches=2`, stages from the plan above):
    the function of `tsr-autodiff`, returning the loss and both gradients.
    After:

    ```mlir
    func.func private @stage0.forward(%x: tensor<4x8xf32>, %w1: ...) -> tensor<4x8xf32>
    func.func private @stage1.forward(%a: tensor<4x8xf32>, %w2: ...) -> (tensor<f32>, ...)
    func.func private @stage1.backward(...) -> (tensor<4x8xf32>, tensor<8x8xf32>)
    func.func private @stage0.backward(...) -> tensor<8x8xf32>
    func.func @stage0(%w1: ..., %x: tensor<8x8xf32>) -> (tensor<f32>, tensor<8x8xf32> {tsr.grad_of = 0 : i64, ...})
        attributes {tsr.ranks = {pp = 0 : i64}, tsr.pipeline_schedule = {actions = ["F0", "F1", "B0", "B1"], ...}} {
      %x0 = tsr.slice %x ...
      %a0 = call @stage0.forward(%x0, %w1) ...
      tsr.send %a0 {mesh_axes = ["pp"], peer = 1 : i64} : tensor<4x8xf32>
      ...
      %d0 = tsr.recv {mesh_axes = ["pp"], peer = 1 : i64} : tensor<4x8xf32>
      %g0 = call @stage0.backward(..., %d0) ...
      ...
      %l = tsr.broadcast_from %zero {mesh_axes = ["pp"], root = 1 : i64} ...
    ```
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "The pipeline schedule: gpipe, 1f1b, interleaved, zb-h1, zb-v, "
           "v-half, dualpipev or pipedream">,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "Micro-batches per step (the batch arguments grow by this "
           "factor)">,
    Option<"peakFlops", "peak-flops", "double", "185e9",
           "The cost model's FLOP/s">,
    Option<"bandwidth", "bandwidth", "double", "25e9",
           "The cost model's memory bytes/s">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
}

def TsrVerifyPipeline : Pass<"tsr-verify-pipeline", "ModuleOp"> {
  let summary = "Check that the per-rank programs of a pipeline exchange "
                "their messages without a deadlock";
  let description = [{
    Runs every public function with `tsr.ranks` (the programs of
    `tsr-pipeline`, one per rank of a mesh axis) symbolically: a `tsr.send`
    queues its message on the channel to its peer and goes on, a `tsr.recv`
    waits until the channel from its peer holds a message and takes the
    oldest, and a collective over that axis waits until every rank has
    reached one. It fails, naming the ops, if a received message has
    another type than the receive expects, if the programs stop with every
    remaining one waiting (a deadlock: each waiting op is named), if ranks
    meet at different collectives, or if a message is never received. A
    module without such functions is left alone.

    For example, both ranks receiving first deadlock:

    ```mlir
    func.func @stage0() attributes {tsr.ranks = {pp = 0 : i64}} {
      %a = tsr.recv {mesh_axes = ["pp"], peer = 1 : i64} : tensor<4xf32>
      tsr.send %a {mesh_axes = ["pp"], peer = 1 : i64} : tensor<4xf32>
      return
    }
    func.func @stage1() attributes {tsr.ranks = {pp = 1 : i64}} {
      %b = tsr.recv {mesh_axes = ["pp"], peer = 0 : i64} : tensor<4xf32>
      tsr.send %b {mesh_axes = ["pp"], peer = 0 : i64} : tensor<4xf32>
      return
    }
    ```
  }];
}

#endif // TESSERA_TRANSFORMS_PARALLEL_PASSES_TD
