//===- Passes.td - Repeated layers ---------------------------*- tablegen -*-===//
#ifndef TESSERA_TRANSFORMS_LAYERS_PASSES_TD
#define TESSERA_TRANSFORMS_LAYERS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrLayerPlan : Pass<"tsr-layer-plan", "ModuleOp"> {
  let summary = "Find the repeated layers of a forward pass";
  let description = [{
    The decide half of layer folding (attributes only). A model of N
    identical layers (a transformer's blocks) is N copies of one sequence of
    ops; compiling each copy costs compile time in proportion to N, for the
    same code. This pass finds the copies in the forward function (named by
    `function`, else the module's one public function) and marks each op of
    copy k with `tsr.layer = k`. `tsr-autodiff` gives every gradient op its
    forward op's layer, and `tsr-outline-layers` makes one function of each
    layer's forward ops and one of its backward ops, then keeps one body of
    each kind for all the layers whose bodies are identical.

    The search runs over the ops in program order (constants aside: they are
    copied where they are used). An op's signature is its name, attributes,
    operand and result types; a layer is a run of P >= `min-ops` ops whose
    signatures repeat with period P. Among all periods and runs the pass takes
    the one that covers the most ops (the shortest period on a tie: one layer,
    not two), and within its run the alignment whose cuts have the fewest bytes
    live across them (the pipeline planner's measure: a transformer's cut
    between blocks carries only the residual stream). The copies must also
    read their operands alike: an op of copy k reads the same results of the
    same ops of copy k as copy 0 does, or values from outside the copy in the
    same pattern of first uses; the longest run of copies that agree keeps the
    marks. A function that is already differentiated (`tsr.backward` ops) or
    marked is left alone, and so is one with fewer than `min-layers`
    agreeing copies: folding saves compile time in proportion to the
    copies, and a call holds its arguments until it returns, which may raise
    the step's peak by one layer's saved activations.

    Before (a forward pass of two identical layers, shortened):

    ```mlir
    %h0 = tsr.matmul %x, %w0 : ...
    %a0 = tsr.relu %h0 : ...
    %h1 = tsr.matmul %a0, %w1 : ...
    %a1 = tsr.relu %h1 : ...
    ```

    After (with `min-ops=2 min-layers=2`):

    ```mlir
    %h0 = tsr.matmul %x, %w0 {tsr.layer = 0 : i64} : ...
    %a0 = tsr.relu %h0 {tsr.layer = 0 : i64} : ...
    %h1 = tsr.matmul %a0, %w1 {tsr.layer = 1 : i64} : ...
    %a1 = tsr.relu %h1 {tsr.layer = 1 : i64} : ...
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The forward function (default: the module's one public function)">,
    Option<"minOps", "min-ops", "int64_t", /*default=*/"8",
           "The fewest ops a layer has">,
    Option<"minLayers", "min-layers", "int64_t", /*default=*/"4",
           "The fewest copies worth folding (folding saves compile time in "
           "proportion to the copies and may raise the step's peak by one "
           "layer's saved activations)">,
  ];
}

def TsrOutlineLayers : Pass<"tsr-outline-layers", "ModuleOp"> {
  let summary = "Compile each kind of repeated layer once: a function called "
                "per layer";
  let description = [{
    The apply half of layer folding. In every function, the ops marked
    `tsr.layer = k` (by `tsr-layer-plan`, or a gradient op by `tsr-autodiff`)
    form up to three cells per layer: its forward ops, its backward ops
    (`tsr.backward`) and its ops after the function's last backward op (the
    layer's share of the gradient norm and its parameters' updates). Each
    cell becomes a private function (`@layerK.forward`, `@layerK.backward`,
    `@layerK.update`, marked `tsr.layer = array<i64: K>`) taking the values
    it reads from outside (constants are copied in) and returning those read
    outside, called where the cell was. A result of an update cell that the
    function returns as the next value of one of its arguments
    (`tsr.updates`), which the call passes and is the last to read, is
    marked `tsr.updates` with the cell's argument it replaces, so that
    `tsr-donate-updates` writes it in place as it would have in the step.
    Cells whose bodies (and result attributes) are identical but for
    locations then share one function, renamed
    after the layers it serves (`@layers0-11.forward`, `tsr.layer` listing
    them), its ops located at the names the copies have in common
    (`"/blocks.*/attn/MatMul"`), which is what `tessera-run --profile` and
    diagnostics show. Everything downstream (bufferization, the memory plan
    and its prediction, code generation) compiles that body once.

    A cell is the ops of the layer and what lies on a path between two of
    them (a cast another pass inserted, for instance). The ops of the
    function that the cell reads but that sit between its ops move ahead of
    the call, in their order; the rest stay after it. A cell is left in place
    when such a path passes through another cell, when it holds an op with
    side effects (a collective would be counted once for N runs), or when its
    phase has a single cell (no other layer could share it).

    Before:

    ```mlir
    %h0 = tsr.matmul %x, %w0 {tsr.layer = 0 : i64} : ...
    %a0 = tsr.relu %h0 {tsr.layer = 0 : i64} : ...
    %h1 = tsr.matmul %a0, %w1 {tsr.layer = 1 : i64} : ...
    %a1 = tsr.relu %h1 {tsr.layer = 1 : i64} : ...
    ```

    After:

    ```mlir
    %a0 = call @layers0-1.forward(%x, %w0) {tsr.layer = 0 : i64} : ...
    %a1 = call @layers0-1.forward(%a0, %w1) {tsr.layer = 1 : i64} : ...
    ...
    func.func private @layers0-1.forward(%arg0: ..., %arg1: ...) -> ...
        attributes {tsr.layer = array<i64: 0, 1>} {
      %0 = tsr.matmul %arg0, %arg1 : ...
      %1 = tsr.relu %0 : ...
      return %1 : ...
    }
    ```
  }];
}

#endif // TESSERA_TRANSFORMS_LAYERS_PASSES_TD
