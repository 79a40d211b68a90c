//===- Passes.td - Mixed precision -------------------------*- tablegen -*-===//
#ifndef TESSERA_TRANSFORMS_PRECISION_PASSES_TD
#define TESSERA_TRANSFORMS_PRECISION_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrPrecisionPlan : Pass<"tsr-precision-plan", "ModuleOp"> {
  let summary = "Decide the compute type of every floating-point op";
  let description = [{
    The decide half of mixed precision (attributes only). Runs on the loss
    function before `tsr-autodiff`, so the backward pass inherits every
    choice through the gradient rules. Each op with a floating-point operand
    or result gets `tsr.precision` (the type it computes and stores its
    results in: `f32`, `bf16` or `f16`) and `tsr.reason` (the rule that
    chose it, which `tessera-compile --explain` prints). With
    `precision=bf16` (or `f16`):

    - `tsr.matmul` and `tsr.conv` compute in the low type; their lowering
      accumulates in f32 and rounds once (Micikevicius et al. 2018).
    - Softmax, log-softmax and layer normalization store their results in
      the type of their activation input but compute in f32 inside: their
      lowering widens the input and rounds the result once (so a softmax
      over bf16 attention scores keeps one bf16 copy of the probabilities
      for the backward pass, not an f32 one and a bf16 one).
    - Batch normalization, every reduction, cumulative sums, the losses,
      and `exp`, `log`, `pow`, `sqrt`, `reciprocal`, `softplus` compute in
      f32: they need its range or sum many terms.
    - Elementwise and data-movement ops follow their inputs: the widest
      floating-point type among their operands that are activations, that
      is, neither parameters (or other non-data arguments) nor constants
      nor values computed from those alone (a causal mask), which adapt to
      the op. A gather of a parameter by indices (an embedding lookup)
      computes in the low type, so the residual stream it starts is stored
      low, as in Megatron's bf16 training; another op with no activation
      operand computes in f32.
    - Ops with no rule (einsum, pooling, ...) compute in f32.
    - `keep-fp32` globs force to f32 every op whose ONNX node name matches
      one of them, and every op with an operand that is a parameter whose
      name matches.

    Parameters stay f32 (the master copies the optimizer updates);
    `tsr-precision` casts each to the low type once, where it is used. The
    function records the policy (`tsr.precision = "bf16"`). With
    `precision=fp32` the pass changes nothing.

    Before (`precision=bf16`):

    ```mlir
    %h = tsr.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %a = tsr.add %h, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
    %p = tsr.softmax %a {axis = 1 : i64} : tensor<8x32xf32>
    ```

    After:

    ```mlir
    %h = tsr.matmul %x, %w {tsr.precision = "bf16",
        tsr.reason = "matmul: bf16 operands, f32 accumulation"} : ...
    %a = tsr.add %h, %b {tsr.precision = "bf16",
        tsr.reason = "follows its activation operands"} : ...
    %p = tsr.softmax %a {axis = 1 : i64, tsr.precision = "bf16",
        tsr.reason = "softmax: f32 arithmetic inside, stored in its input's type"} : ...
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"fp32\"",
           "fp32, bf16 or fp16">,
    ListOption<"keepFp32", "keep-fp32", "std::string",
               "Globs over ONNX node and parameter names kept in f32">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to plan (default: the module's one public function)">,
  ];
  let dependentDialects = ["mlir::tsr::TsrDialect"];
}

def TsrPrecision : Pass<"tsr-precision", "ModuleOp"> {
  let summary = "Apply the precision plan: retype ops and insert the casts";
  let description = [{
    The apply half of mixed precision. Every op with `tsr.precision` gets
    the floating-point results of that type, and every floating-point
    operand of another type goes through a `tsr.cast`. A value is cast at
    most once to each type, right after it is defined (a parameter at the
    top of the function), so each f32 master parameter has one low working
    copy per step, made before its first use. Ops without a plan (returns,
    the model's own casts, integer ops) see their operands in their original
    types again. The function's signature is unchanged: parameters, data
    and the loss keep their types.

    Before:

    ```mlir
    func.func @main(%w: tensor<16x32xf32> {tsr.role = #tsr.role<param>}, %x: tensor<8x16xf32>) -> tensor<8x32xf32> {
      %h = tsr.matmul %x, %w {tsr.precision = "bf16", ...} : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
      return %h : tensor<8x32xf32>
    }
    ```

    After:

    ```mlir
    func.func @main(%w: tensor<16x32xf32> {tsr.role = #tsr.role<param>}, %x: tensor<8x16xf32>) -> tensor<8x32xf32> {
      %wl = tsr.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
      %xl = tsr.cast %x : tensor<8x16xf32> to tensor<8x16xbf16>
      %h = tsr.matmul %xl, %wl {tsr.precision = "bf16", ...} : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
      %r = tsr.cast %h : tensor<8x32xbf16> to tensor<8x32xf32>
      return %r : tensor<8x32xf32>
    }
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public function)">,
  ];
  let dependentDialects = ["mlir::tsr::TsrDialect"];
}

def TsrRecastParameters : Pass<"tsr-recast-parameters", "ModuleOp"> {
  let summary = "Cast parameters again for the backward pass instead of "
                "keeping their 16-bit working copies";
  let description = [{
    `tsr-precision` casts each parameter once, at the top of the step, and
    the backward pass (`tsr-autodiff`) reads the same working copy to
    compute input gradients, so every copy stays live from the start of the
    forward pass to its last backward use: at the peak (the start of the
    backward pass) all of them are held. A cast is cheap and its input, the
    f32 master parameter, is live anyway: this pass gives the backward
    users of each cast of a parameter argument their own cast, placed right
    before the first of them (after a `tsr.remat_barrier`, so that CSE
    does not merge the two). The forward copy then dies after its last
    forward use. On the exported 4-layer GPT in bf16 that takes the
    working copies (5.8 MB) off the step's peak. Runs on every function
    (a micro-step's too) after the optimizer update.

    Before:

    ```mlir
    %w16 = tsr.cast %w : tensor<4x3xf32> to tensor<4x3xbf16>
    %y = tsr.matmul %x, %w16 : ...
    ...
    %wt = tsr.transpose %w16 {perm = array<i64: 1, 0>, tsr.backward} : ...
    ```

    After:

    ```mlir
    %w16 = tsr.cast %w : tensor<4x3xf32> to tensor<4x3xbf16>
    %y = tsr.matmul %x, %w16 : ...
    ...
    %b = tsr.remat_barrier %w {tsr.backward} : tensor<4x3xf32>
    %w16b = tsr.cast %b {tsr.backward} : tensor<4x3xf32> to tensor<4x3xbf16>
    %wt = tsr.transpose %w16b {perm = array<i64: 1, 0>, tsr.backward} : ...
    ```
  }];
}

def TsrLossScale : Pass<"tsr-loss-scale", "ModuleOp"> {
  let summary = "Scale the loss before autodiff, so that 16-bit gradients do not underflow";
  let description = [{
    Loss scaling (Micikevicius et al. 2018) for fp16 steps. Runs on the loss
    function before `tsr-autodiff`: the loss it returns becomes `loss ×
    scale`, so every gradient autodiff derives is `scale` times the true
    one and small fp16 gradients keep their digits. `tsr-optimizer` with
    the matching `loss-scale` option divides the gradients by the scale
    again (before clipping) and reports the unscaled loss.

    - `scale=dynamic` adds a state argument `loss_scale` (f32, starting at
      `init`, by default 2^16): the optimizer doubles it after
      `growth-interval` steps without an overflow and halves it, skipping
      the step, when a gradient is infinite or NaN (PyTorch's GradScaler).
      Being state, it is checkpointed with the optimizer's.
    - `scale=S` (a positive number): a constant scale, no skipping.
    - `scale=none`: nothing.

    Before (`scale=dynamic`):

    ```mlir
    func.func @main(%x: tensor<4x8xf32>, ...) -> (tensor<f32> {tsr.role = #tsr.role<loss>}) {
      ...
      return %loss : tensor<f32>
    }
    ```

    After:

    ```mlir
    func.func @main(%x: tensor<4x8xf32>, ...,
                    %s: tensor<f32> {tsr.init = 6.553600e+04 : f64, tsr.name = "loss_scale",
                                     tsr.role = #tsr.role<state>})
        -> (tensor<f32> {tsr.role = #tsr.role<loss>}) {
      ...
      %scaled = tsr.mul %loss, %s {tsr.reason = "loss scaling: the gradients are scale times the loss's"} : ...
      return %scaled : tensor<f32>
    }
    ```
  }];
  let options = [
    Option<"scale", "scale", "std::string", /*default=*/"\"none\"",
           "none, dynamic, or a constant scale">,
    Option<"init", "init", "double", /*default=*/"65536.0",
           "The dynamic scale's first value">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to rewrite (default: the module's one public function)">,
  ];
  let dependentDialects = ["mlir::tsr::TsrDialect"];
}

#endif // TESSERA_TRANSFORMS_PRECISION_PASSES_TD
