//===- Passes.td - Optimizer update and gradient accumulation -*- tablegen -*-===//
#ifndef TESSERA_TRANSFORMS_OPTIMIZER_PASSES_TD
#define TESSERA_TRANSFORMS_OPTIMIZER_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrAccumulateGradients : Pass<"tsr-accumulate-gradients", "ModuleOp"> {
  let summary = "Average loss and gradients over k micro-batches in one step";
  let description = [{
    The public function, as `tsr-autodiff` leaves it, computes the loss and
    gradients of one micro-batch of b samples. This pass makes it private
    (`@tessera_micro_step`) and creates a public function of the same
    parameters whose data and label arguments hold k·b samples: it slices
    them into k micro-batches along dimension 0, calls the micro-step on
    each, and returns the mean of the k losses and of the k gradients. With
    mean-reduced losses that is exactly the loss and gradient of the whole
    batch of k·b (up to float rounding). Only one micro-batch's activations
    are live at a time. An `rng` argument (from `tsr-seed-dropout`) r
    reaches micro-batch j as r·k + j, so every micro-batch draws its own
    dropout masks.

    Before (`micro-batches=2`):

    ```mlir
    func.func @main(%w: tensor<3x2xf32> {tsr.role = "param"},
                    %x: tensor<4x3xf32>) -> (tensor<f32>, tensor<3x2xf32>)
    ```

    After:

    ```mlir
    func.func private @tessera_micro_step(%w: tensor<3x2xf32>,
        %x: tensor<4x3xf32>) -> (tensor<f32>, tensor<3x2xf32>)
    func.func @main(%w: tensor<3x2xf32> {tsr.role = "param"},
                    %x: tensor<8x3xf32>) -> (tensor<f32>, tensor<3x2xf32>) {
      %x0 = tsr.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 4, 3>, ...}
      %l0, %g0 = func.call @tessera_micro_step(%w, %x0) : ...
      %x1 = tsr.slice %x {starts = array<i64: 4, 0>, limits = array<i64: 8, 3>, ...}
      %l1, %g1 = func.call @tessera_micro_step(%w, %x1) : ...
      %l = tsr.add %l0, %l1 ...   // then divided by 2, and likewise %g
      ...
    }
    ```
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "Number k of micro-batches per step">,
    Option<"metrics", "metrics", "bool", /*default=*/"false",
           "Also return the step's learning rate and gradient norm as "
           "metrics (lr, grad_norm)">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
}

def TsrOptimizer : Pass<"tsr-optimizer", "ModuleOp"> {
  let summary = "Append the optimizer update to a loss-and-gradient function";
  let description = [{
    Turns the public function (loss, gradients), as `tsr-autodiff` leaves it,
    into one training step (params, optimizer state, batch) -> (loss,
    params', state'). The state arguments (`tsr.role = "state"`, zero at
    the start, named `<optimizer>.<slot>.<parameter>`) include `step`, the
    number of updates done so far, from which the learning-rate schedule and
    bias corrections are computed in the step itself. Each updated parameter
    and state result carries `tsr.updates = <argument index>`; results that
    already carry `tsr.updates` (running statistics from
    `tsr-batch-norm-statistics`) are returned as they are. The formulas
    (docs/training.md gives them in full):

    - `sgd`: PyTorch's SGD: momentum buffer, Nesterov, L2 weight decay.
    - `adam`: Kingma & Ba with bias correction and L2 weight decay
      (PyTorch's Adam); `adamw`: decoupled weight decay (Loshchilov &
      Hutter).
    - `lamb`: You et al. 2019: the Adam direction plus weight decay, scaled
      per parameter tensor by the trust ratio ‖p‖/‖r‖.
    - `lars`: You et al. 2017: momentum SGD with the per-tensor local rate
      η‖p‖/(‖g‖ + wd‖p‖).
    - `adafactor`: Shazeer & Stern 2018 without momentum: factored second
      moments (row and column means) for tensors of rank ≥ 2, decay
      1 − t^decay-rate, update clipping by RMS.

    The learning rate at step t (1-based) is `lr` × the linear scaling rule
    factor `batch-size / base-batch-size` (when both are given) × the
    schedule: `constant`, `warmup` (linear from lr/warmup-steps to lr over
    `warmup-steps`) or `cosine` (warm-up, then cosine decay to
    `min-lr-ratio`·lr at `total-steps`). With `clip-norm` > 0 the gradients
    are first scaled by min(1, clip-norm / (‖g‖₂ + 1e-6)), ‖g‖₂ over all
    parameters together.

    With `loss-scale` (after `tsr-loss-scale` with the same setting before
    autodiff) the gradients are divided by the scale first, before
    clipping, and the loss result is the unscaled loss. With
    `loss-scale=dynamic` the step also checks every gradient (a NaN or
    infinity anywhere makes Σ g·0 NaN; the sum spans ZeRO shards and
    tensor-parallel blocks, so every rank of the mesh agrees) and adds the
    state `loss_scale.clean_steps`: on an overflow every parameter and
    optimizer state keeps its value (the step is skipped, its step counter
    too), the scale is multiplied by `loss-scale-backoff` and the count of
    clean steps restarts; after `loss-scale-growth-interval` clean steps in
    a row the scale is multiplied by `loss-scale-growth` (PyTorch's
    GradScaler: 0.5, 2000 and 2).

    With `metrics` the step also returns two f32 scalars with role
    `metric`, after its other results: `lr`, the learning rate of the step
    (schedule and scaling rule applied), and `grad_norm`, ‖g‖₂ over all
    parameters of the gradients the update receives (after unscaling and
    before clipping; over ZeRO shards, tensor-parallel blocks and pipeline
    stages as for clipping, which shares the sum).

    With `freeze-variance-after=W` (adam, adamw; 1-bit Adam's second
    phase, Tang et al. 2021) the second moment stops moving after step W:
    v keeps its step-W value and its bias correction 1 − β2^min(t, W).

    With `state-type=bf16` every optimizer state tensor except the step
    counter is stored in bf16 and widened to the parameter's type for the
    update. With `state-type=int8` the element-wise moments (momentum
    buffers, Adam's m and v) of parameters with at least
    `int8-min-elements` elements are stored as 8-bit codes with one f32
    absolute maximum per block of 2048 elements (`<state>.absmax`), as in
    8-bit Adam (Dettmers et al. 2022): a moment is dequantized as
    code[q]·absmax, updated in f32, and requantized to the nearest code
    (by binary search over the code midpoints). The codes are the dynamic
    tree map, signed for m and momentum, unsigned for v. Blocks cover this
    rank's ZeRO shard or tensor-parallel block, so the absmax state's
    shape records the layout: [ZeRO shards, blocks], with a leading
    dimension for the tensor-parallel parts.

    Before:

    ```mlir
    func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = "param"}, %x: ...)
        -> (tensor<f32>, tensor<3xf32> {tsr.grad_of = 0 : i64, tsr.role = "grad"})
    ```

    After (`optimizer=sgd lr=0.1`):

    ```mlir
    func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = "param"}, %x: ...,
                    %step: tensor<i64> {tsr.name = "step", tsr.role = "state"})
        -> (tensor<f32>, tensor<3xf32> {tsr.role = "param", tsr.updates = 0 : i64},
            tensor<i64> {tsr.role = "state", tsr.updates = 2 : i64}) {
      ...
      %lr = tsr.constant dense<1.000000e-01> : tensor<f32>
      %d = tsr.mul %lr, %gw : tensor<f32>, tensor<3xf32> -> tensor<3xf32>
      %w1 = tsr.sub %w, %d : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
      ...
    }
    ```
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "sgd, adam, adamw, lamb, lars or adafactor">,
    Option<"lr", "lr", "double", /*default=*/"0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "sgd and lars: momentum factor">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "sgd: Nesterov momentum">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "Weight decay (L2 for sgd/adam, decoupled for adamw/lamb/"
           "adafactor, in the trust ratio for lars)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9",
           "adam, adamw, lamb: first-moment decay">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999",
           "adam, adamw, lamb: second-moment decay">,
    Option<"eps", "eps", "double", /*default=*/"1e-8",
           "adam, adamw, lamb: denominator epsilon; adafactor: eps1 added "
           "to g²">,
    Option<"larsEta", "lars-eta", "double", /*default=*/"0.001",
           "lars: trust coefficient η">,
    Option<"decayRate", "decay-rate", "double", /*default=*/"-0.8",
           "adafactor: second-moment decay is 1 - t^decay-rate">,
    Option<"clipThreshold", "clip-threshold", "double", /*default=*/"1.0",
           "adafactor: the update is divided by max(1, RMS(u)/threshold)">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"constant\"",
           "Learning-rate schedule: constant, warmup or cosine">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"0",
           "Steps of linear warm-up (warmup, cosine)">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"0",
           "cosine: step at which the decay reaches its minimum">,
    Option<"minLrRatio", "min-lr-ratio", "double", /*default=*/"0.0",
           "cosine: final learning rate as a fraction of lr">,
    Option<"batchSize", "batch-size", "int64_t", /*default=*/"0",
           "Linear scaling rule: the global batch size of this step">,
    Option<"baseBatchSize", "base-batch-size", "int64_t", /*default=*/"0",
           "Linear scaling rule: the batch size lr was tuned for">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "Global-norm gradient clipping threshold (0: off)">,
    Option<"lossScale", "loss-scale", "std::string", /*default=*/"\"none\"",
           "none, dynamic (the loss_scale state of tsr-loss-scale) or the "
           "constant scale the loss was multiplied by">,
    Option<"lossScaleGrowthInterval", "loss-scale-growth-interval",
           "int64_t", /*default=*/"2000",
           "Clean steps after which the dynamic scale grows">,
    Option<"lossScaleGrowth", "loss-scale-growth", "double",
           /*default=*/"2.0", "Factor of the dynamic scale's growth">,
    Option<"lossScaleBackoff", "loss-scale-backoff", "double",
           /*default=*/"0.5", "Factor of the dynamic scale on an overflow">,
    Option<"stateType", "state-type", "std::string", /*default=*/"\"fp32\"",
           "Storage of the element-wise moments: fp32, bf16 or int8 "
           "(block-wise dynamic quantization)">,
    Option<"int8MinElements", "int8-min-elements", "int64_t",
           /*default=*/"4096",
           "state-type=int8: parameters with fewer elements keep f32 "
           "moments">,
    Option<"freezeVarianceAfter", "freeze-variance-after", "int64_t",
           /*default=*/"0",
           "adam, adamw: keep the second moment (and its bias correction) "
           "of step W from step W + 1 on (0: never)">,
    Option<"metrics", "metrics", "bool", /*default=*/"false",
           "Also return the step's learning rate and gradient norm as "
           "metrics (lr, grad_norm)">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
}

def TsrOffloadOptimizer : Pass<"tsr-offload-optimizer", "ModuleOp"> {
  let summary = "Move the optimizer update into a host program (ZeRO-Offload)";
  let description = [{
    The apply half of optimizer-state offload (ZeRO-Offload, Ren et al.
    2021). The step, a loss-and-gradient function as `tsr-autodiff` (and
    `tsr-data-parallel`, which reduces the gradients) leaves it, stays the
    device program. The pass adds a public function `@<update>` marked
    `tsr.on_host`: it takes the step's parameters and, for each gradient
    result, an input of the same name and role `grad`, and returns those
    gradients as a gradient function does (`tsr.grad_of`, no loss).
    `tsr-optimizer function=<update>` then turns it into the update, with
    the optimizer state among its inputs. The module's `tsr.schedule`
    becomes [@step, @<update>]: the runtime runs the step on the device,
    copies the gradients to host memory, runs the update there on the
    parameters and optimizer state it keeps in host memory, and copies the
    parameters back before the next step. The device never holds the
    optimizer state or the update's temporaries.

    Before:

    ```mlir
    func.func @main(%w: tensor<4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                    %x: tensor<4xf32>)
        -> (tensor<f32> {tsr.role = #tsr.role<loss>},
            tensor<4xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>})
    ```

    After:

    ```mlir
    module attributes {tsr.schedule = [@main, @host_update]} {
      func.func @main(...)  // unchanged
      func.func @host_update(
          %w: tensor<4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
          %g: tensor<4xf32> {tsr.name = "grad.w", tsr.role = #tsr.role<grad>})
          -> (tensor<4xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>})
          attributes {tsr.on_host} {
        return %g : tensor<4xf32>
      }
    }
    ```

    With ZeRO (`tsr.zero` on the step), the host program gets the step's
    layout: it takes the gradients as the step returns them (ZeRO 2 and 3
    reduce-scatter them: a shard, whose `tsr.global_shape` the pass adds),
    and `tsr-optimizer` updates this rank's shards there and all-gathers
    what the stage keeps whole, on the host.

    It refuses a step whose update cannot run apart from it: loss scaling
    (the update unscales the loss), running statistics (`tsr.updates`
    results) and a module that already has a schedule (pipelines, parameter
    servers).
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The step (default: the module's one public function)">,
    Option<"update", "update", "std::string", /*default=*/"\"host_update\"",
           "The name of the host program it adds">,
  ];
}

#endif // TESSERA_TRANSFORMS_OPTIMIZER_PASSES_TD
