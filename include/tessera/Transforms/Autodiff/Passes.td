//===- Passes.td - Loss construction and reverse-mode autodiff -*- tablegen -*-===//
#ifndef TESSERA_TRANSFORMS_AUTODIFF_PASSES_TD
#define TESSERA_TRANSFORMS_AUTODIFF_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrAppendLoss : Pass<"tsr-append-loss", "ModuleOp"> {
  let summary = "Make the public function return one scalar loss";
  let description = [{
    Turns an imported model into a loss function, the input of
    `tsr-autodiff`. With `loss=cross_entropy` or `loss=mse` the pass appends
    that loss on the result named `logits` and adds an argument `labels`
    (`tsr.role = "label"`):

    - `cross_entropy`: classes on the last axis of the logits; the labels
      are i64 and shaped like the logits without that axis, so
      [batch, sequence, vocabulary] logits of a language model train as
      exported. The loss is the mean over all label positions
      (`tsr.softmax_cross_entropy_loss` on the logits reshaped to one row
      of classes per position, [batch · sequence, vocabulary], and the
      labels to one per row: the log-softmax then reduces contiguous
      classes, where moving the classes to ONNX's axis 1 would copy the
      logits and their gradient); positions whose label is `ignore-index`
      count for nothing.
    - `mse`: labels have the logits' type; the loss is mean((logits −
      labels)²).

    Without `loss`, the result named `output` (or, if `output` is empty, the
    only scalar floating-point result) is the loss: models that end in an
    ONNX loss op train as they are. Results marked `tsr.aux_loss` (a
    mixture-of-experts layer's load-balancing loss, from import with
    `--moe-aux-loss`) are added to the loss. Results carrying `tsr.updates`
    (state updates) stay after the loss; every other result is dropped.

    Before (`loss=cross_entropy logits=y labels=t`):

    ```mlir
    func.func @main(%x: tensor<4x3xf32> {tsr.name = "x"})
        -> (tensor<4x10xf32> {tsr.name = "y"}) { ... return %y ... }
    ```

    After:

    ```mlir
    func.func @main(%x: tensor<4x3xf32> {tsr.name = "x"},
                    %t: tensor<4xi64> {tsr.name = "t", tsr.role = "label"})
        -> (tensor<f32> {tsr.name = "loss", tsr.role = "loss"}) {
      ...
      %l = tsr.softmax_cross_entropy_loss %y, %t {reduction = "mean"}
          : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"\"",
           "Loss to append: cross_entropy or mse; empty selects an existing "
           "scalar result">,
    Option<"logits", "logits", "std::string", /*default=*/"\"\"",
           "Name of the result the appended loss reads">,
    Option<"labels", "labels", "std::string", /*default=*/"\"labels\"",
           "Name of the new labels argument">,
    Option<"output", "output", "std::string", /*default=*/"\"\"",
           "Name of an existing scalar result to use as the loss">,
    Option<"ignoreIndex", "ignore-index", "int64_t",
           /*default=*/"std::numeric_limits<int64_t>::min()",
           "cross_entropy: label value that adds nothing to the loss and does "
           "not count in the mean (padding); unset by default">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
}

def TsrBatchNormStatistics : Pass<"tsr-batch-norm-statistics", "ModuleOp"> {
  let summary = "Normalize with batch statistics and update the running ones";
  let description = [{
    Training semantics of BatchNormalization (ONNX `training_mode = 1`,
    PyTorch's `train()`): every `tsr.batch_norm` whose mean and variance are
    arguments marked `tsr.statistics` (the running statistics the importer
    made parameters) normalizes with the mean and population variance of
    the batch over every dimension but 1, so gradients flow through them,
    and the function returns the updated running statistics

        running = momentum · running + (1 − momentum) · batch statistic

    (ONNX's formula; momentum 0.9 by default, as in ONNX) as extra results
    with `tsr.role = "param"` and `tsr.updates` naming the argument they
    replace, which the later training passes carry along and `tessera-run`
    swaps in after each step. `batch_norm` ops with other operands keep
    their inference semantics.

    Before:

    ```mlir
    func.func @main(%x: tensor<2x3x4x4xf32>, ...,
                    %m: tensor<3xf32> {tsr.name = "bn.mean", tsr.role = "param", tsr.statistics},
                    %v: tensor<3xf32> {tsr.name = "bn.var", tsr.role = "param", tsr.statistics})
        -> tensor<2x3x4x4xf32> {
      %y = tsr.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64} : ...
      return %y : tensor<2x3x4x4xf32>
    }
    ```

    After:

    ```mlir
    func.func @main(...) -> (tensor<2x3x4x4xf32>,
        tensor<3xf32> {tsr.name = "bn.mean", tsr.role = "param", tsr.updates = 3 : i64},
        tensor<3xf32> {tsr.name = "bn.var", tsr.role = "param", tsr.updates = 4 : i64}) {
      %bm = tsr.reduce_mean %x {axes = array<i64: 0, 2, 3>, keepdims = false} : ...
      %xc = tsr.sub %x, %bm_b ...
      %bv = tsr.reduce_mean %xc2 {axes = array<i64: 0, 2, 3>, keepdims = false} : ...
      %y = tsr.batch_norm %x, %s, %b, %bm, %bv {epsilon = 1.0e-05 : f64} : ...
      %m1 = ... 0.9·%m + 0.1·%bm
      %v1 = ... 0.9·%v + 0.1·%bv
      return %y, %m1, %v1 : ...
    }
    ```
  }];
  let options = [
    Option<"momentum", "momentum", "double", /*default=*/"0.9",
           "Weight of the old running statistic in its update">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
}

def TsrSeedDropout : Pass<"tsr-seed-dropout", "ModuleOp"> {
  let summary = "Feed the training step's number to every dropout op";
  let description = [{
    A `tsr.dropout` draws its mask from (seed, element index), so without
    more it drops the same elements at every step. This pass adds one scalar
    i64 argument `rng.step` (`tsr.role = "rng"`) to the public function, which
    `tessera-run` sets to the 0-based step number, and makes it the
    `seed_offset` of every dropout op that has none: each step draws fresh
    masks, and a run is reproducible from the step number alone (which is
    all a checkpoint needs to restore the random state). Functions without
    dropout are left unchanged.

    Before:

    ```mlir
    func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"}) -> tensor<4x8xf32> {
      %y, %m = tsr.dropout %x {ratio = 0.1 : f64, seed = 7 : i64} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
      return %y : tensor<4x8xf32>
    }
    ```

    After:

    ```mlir
    func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"},
                    %step: tensor<i64> {tsr.name = "rng.step", tsr.role = "rng"}) -> tensor<4x8xf32> {
      %y, %m = tsr.dropout %x, %step {ratio = 0.1 : f64, seed = 7 : i64} : (tensor<4x8xf32>, tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
      return %y : tensor<4x8xf32>
    }
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
}

def TsrAutodiff : Pass<"tsr-autodiff", "ModuleOp"> {
  let summary = "Append the reverse-mode gradient of the loss to the public function";
  let description = [{
    Differentiates the public function, which must return one scalar
    floating-point loss, with respect to its arguments marked
    `tsr.role = "param"` (and, with `wrt-inputs`, every floating-point
    argument that is not a label). The backward pass is ordinary tsr IR
    inserted before the return: ops are visited in reverse and each op's
    `DifferentiableOpInterface::buildGradients` emits the adjoints of its
    operands from the adjoints of its results. Adjoints of values with
    several uses are summed (fan-out); broadcast operands get adjoints summed
    back to their shape; integer and boolean values, `tsr.stop_gradient` and
    non-differentiable operands (indices, masks) carry none. Every op a
    gradient rule builds is marked `tsr.backward` (what later passes, such
    as ZeRO-3's gather placement, read) and has the location
    `fused<"tsr.grad">[forward op's location]`, so a diagnostic traces it
    back to the op it differentiates.

    Parameters whose name matches a `frozen` pattern (a glob: `*` matches any
    run of characters), or, when `trainable` patterns are given, matches
    none of them, keep `tsr.role = #tsr.role<param>` but get no gradient;
    the function's `tsr.frozen` dictionary records each with the reason
    (beside the initializers that the importer left constant). A pattern
    that matches no parameter is an error.

    Parameters marked `tsr.statistics` (running statistics) are never
    differentiated, and results after the loss that carry `tsr.updates`
    (their updates) are returned after the gradients unchanged.

    The function then returns the loss followed by one gradient per
    differentiated argument, with result attrs `tsr.role = #tsr.role<grad>`,
    `tsr.name = "grad.<name>"` and `tsr.grad_of = <argument index>`. An op on
    the path to the loss without a gradient rule is an error naming it.

    Before:

    ```mlir
    func.func @main(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                    %x: tensor<4x3xf32> {tsr.name = "x"}) -> tensor<f32> {
      %y = tsr.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
      %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false}
          : (tensor<4x2xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
    ```

    After:

    ```mlir
    func.func @main(%w: ..., %x: ...)
        -> (tensor<f32>, tensor<3x2xf32> {tsr.grad_of = 0 : i64,
                                          tsr.name = "grad.w", tsr.role = #tsr.role<grad>}) {
      %y = tsr.matmul %x, %w ...
      %l = tsr.reduce_sum %y ...
      %one = tsr.constant dense<1.0> : tensor<f32>
      %dy = tsr.broadcast %one : tensor<f32> to tensor<4x2xf32>
      %xt = tsr.transpose %x {perm = array<i64: 1, 0>} ...
      %dw = tsr.matmul %xt, %dy : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
      return %l, %dw : tensor<f32>, tensor<3x2xf32>
    }
    ```
  }];
  let options = [
    ListOption<"frozen", "frozen", "std::string",
               "Glob patterns of parameter names that get no gradient">,
    ListOption<"trainable", "trainable", "std::string",
               "Glob patterns of the parameter names to train (default: "
               "all)">,
    Option<"wrtInputs", "wrt-inputs", "bool", /*default=*/"false",
           "Also differentiate with respect to floating-point data inputs">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public "
           "function)">,
  ];
}

#endif // TESSERA_TRANSFORMS_AUTODIFF_PASSES_TD
