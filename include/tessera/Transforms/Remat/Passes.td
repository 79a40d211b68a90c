//===- Passes.td - Rematerialization -------------------------*- tablegen -*-===//
#ifndef TESSERA_TRANSFORMS_REMAT_PASSES_TD
#define TESSERA_TRANSFORMS_REMAT_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrRematPlan : Pass<"tsr-remat-plan", "ModuleOp"> {
  let summary = "Decide which saved activations the backward pass recomputes";
  let description = [{
    The decide half of rematerialization (attributes only). In every
    function that `tsr-autodiff` differentiated, a forward value is *saved*
    when a backward op (`tsr.backward`) reads it: it stays alive from the
    forward pass to the backward pass. The policy picks the saved values to
    recompute instead, and the pass marks with `tsr.remat = "recompute"` the
    forward ops the backward pass must repeat to get them back: the
    producers of those values, back to values that are kept (saved and not
    recomputed), function arguments, constants, collectives and ops that
    are not pure (a collective is never repeated: it would communicate
    again).

    - `none`: nothing (the pass changes nothing).
    - `selective` (Korthikanti et al. 2022, "Reducing Activation
      Recomputation in Large Transformer Models"): the attention core, the
      ops whose result has the shape of a softmax's result (the [batch,
      heads, seq, seq] scores, their scaling and mask, the softmax and its
      dropout), recomputed from the queries and keys. They are the largest
      activations of a transformer at long sequences and among the cheapest
      to recompute.
    - `full`: every saved value but the inputs of the normalization ops
      (LayerNorm, BatchNorm): in a pre-norm transformer those are the
      residual stream between sub-blocks, so each attention and MLP block is
      recomputed from its input (Chen et al. 2016's checkpointing at block
      boundaries).
    - `auto` with `budget` B: a solver decides, for each saved value,
      keep or recompute, at the least added time by the cost model, so
      that the public functions' footprint fits in B bytes: their
      arguments, their results and the peak of their own allocations as
      the tsr-level liveness analysis predicts it (equal to the runtime
      allocator's count). The solver works on a graph of each
      differentiated function (one node per op, its result bytes and
      roofline time; views read through): `milp` solves Checkmate's MILP
      (Jain et al. 2020) restricted to schedules this pass can apply (each
      forward op recomputed at most once, in the backward pass) with
      COIN-OR CBC; `beam` is a beam search over greedy steps (width 32 up
      to 256 nodes, then 8192 / nodes, at least 1),
      each recomputing one more value live at the graph's peak, ranked by
      bytes over budget removed per second, and then undoes what the budget
      does not need; `auto` takes the MILP for graphs of up to 120 nodes
      and the beam search above. The graph
      counts every result as a buffer, the prediction knows fusion and
      scratch: the pass bisects the budget it gives the solver for the
      largest whose schedule, applied to a copy of the module, fits B by
      the prediction. When no schedule does and `offload` is set, saved
      values are copied to host memory and back instead (`tsr.remat =
      "offload"`, which `tsr-offload` applies): the fewest, largest first,
      that fit, first without recomputation, then on top of the schedule
      that recomputes most. A candidate has one result, is read by the
      backward pass (directly or through forward reshapes) and has an op
      that allocates between its last forward read and its first backward
      read (else offloading it frees nothing). If nothing fits, the pass
      fails and names the smallest footprint it met (`the step needs at
      least N bytes per rank (recomputing and offloading all it can), over
      the memory budget of B bytes`; without offload `(recomputing all it
      can)`).

    The public functions record the policy (`tsr.remat = "selective"`).

    Before (`policy=selective`), the softmax's result is saved:

    ```mlir
    %s = tsr.matmul %q, %kt : ... -> tensor<2x4x16x16xf32>
    %p = tsr.softmax %s {axis = 3 : i64} : tensor<2x4x16x16xf32>
    %o = tsr.matmul %p, %v : ...
    ...
    %dp = tsr.matmul %do, %vt {tsr.backward} : ...
    %t = tsr.mul %p, %dp {tsr.backward} ...   // the softmax's gradient
    ```

    After:

    ```mlir
    func.func @main(...) attributes {tsr.remat = "selective"} {
    %s = tsr.matmul %q, %kt {tsr.remat = "recompute"} : ...
    %p = tsr.softmax %s {axis = 3 : i64, tsr.remat = "recompute"} : ...
    ```
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"none\"",
           "none, selective, full or auto">,
    Option<"budget", "budget", "int64_t", /*default=*/"0",
           "With policy auto: the bytes one rank may use while the step "
           "runs">,
    Option<"solver", "solver", "std::string", /*default=*/"\"auto\"",
           "With policy auto: milp, beam, or auto (the MILP for small "
           "graphs)">,
    Option<"peakFlops", "peak-flops", "double", "185e9",
           "The cost model's FLOP/s, which times recomputations">,
    Option<"bandwidth", "bandwidth", "double", "25e9",
           "The cost model's memory bytes/s">,
    Option<"offload", "offload", "bool", /*default=*/"true",
           "With policy auto: offload saved values to host memory when "
           "recomputation alone cannot meet the budget">,
    Option<"hostBandwidth", "host-bandwidth", "double", "50e9",
           "With offload: the host link's bytes/s (PCIe 5 x16)">,
  ];
}

def TsrOffload : Pass<"tsr-offload", "ModuleOp"> {
  let summary = "Copy the saved values marked for offload to host memory "
                "and back";
  let description = [{
    The apply half of activation offload. The result of every forward op
    marked `tsr.remat = "offload"` (by `tsr-remat-plan` under a memory
    budget) is copied to host memory while the forward pass goes on and
    copied back before the backward pass first reads it; its device buffer
    is free in between. Each transfer is four ops with one number
    (TsrTransferOps.td): `tsr.offload_start` right after the producer,
    `tsr.offload_wait` (which reads the value, so its buffer lives until
    then) at the first op that starts once the copy has completed by the
    model, but not before the forward pass's last read of the value and at
    the latest where the backward pass starts, `tsr.prefetch_start` (a new
    buffer) where the compute until the first backward read covers the
    copy back, and `tsr.prefetch_wait` right before that read. The backward
    pass reads the prefetched value, through clones of the forward views
    (reshapes) it read. The model: a copy takes bytes / `host-bandwidth`
    seconds on one queue (the runtime's transfer thread; copies out run in
    the order they start), an op its roofline time (`peak-flops`,
    `bandwidth`) and at least the time to write its results. Each
    `tsr.offload_start` records the time of one copy (`copy_seconds`) and
    how much of its two copies the model leaves exposed
    (`exposed_seconds`), and says why in `tsr.reason`. The marks are
    removed. Copies are exact, so the step computes the same values bit for
    bit.

    Before:

    ```mlir
    %h = tsr.tanh %a {tsr.remat = "offload"} : tensor<64x256xf32>
    %y = tsr.matmul %h, %w : ...
    ...
    %dh = tsr.matmul %dy, %wt {tsr.backward} : ...
    %t = tsr.mul %h, %h {tsr.backward} : ...   // tanh's gradient
    ```

    After:

    ```mlir
    %h = tsr.tanh %a : tensor<64x256xf32>
    tsr.offload_start %h {copy_seconds = 1.3e-06 : f64, exposed_seconds = 0.0 : f64, transfer = 0 : i64, tsr.reason = "..."} : tensor<64x256xf32>
    %y = tsr.matmul %h, %w : ...
    tsr.offload_wait %h {transfer = 0 : i64} : tensor<64x256xf32>
    ...
    %p = tsr.prefetch_start {transfer = 0 : i64, tsr.backward} -> tensor<64x256xf32>
    %dh = tsr.matmul %dy, %wt {tsr.backward} : ...
    %h2 = tsr.prefetch_wait %p {transfer = 0 : i64, tsr.backward} : tensor<64x256xf32> -> tensor<64x256xf32>
    %t = tsr.mul %h2, %h2 {tsr.backward} : ...
    ```
  }];
  let options = [
    Option<"hostBandwidth", "host-bandwidth", "double", "50e9",
           "The host link's bytes/s (PCIe 5 x16)">,
    Option<"peakFlops", "peak-flops", "double", "185e9",
           "The cost model's FLOP/s, which times the ops copies overlap">,
    Option<"bandwidth", "bandwidth", "double", "25e9",
           "The cost model's memory bytes/s">,
  ];
}

def TsrRemat : Pass<"tsr-remat", "ModuleOp"> {
  let summary = "Clone the ops marked for recomputation into the backward pass";
  let description = [{
    The apply half of rematerialization. Every forward op marked
    `tsr.remat = "recompute"` (by `tsr-remat-plan`) whose results the
    backward pass reads is cloned right before the first backward op that
    needs it (directly, or through the clone of a marked op that reads it),
    and the backward ops read the clones; the forward results then die in
    the forward pass. A clone reads the clones of marked producers and,
    for every other operand, the operand through a `tsr.remat_barrier`, so
    that CSE cannot merge it back into the forward op. Clones and barriers
    are backward ops (`tsr.backward`); the marks are removed. The forward
    ops are repeated with the same operands and attributes (dropout with
    the same seed), so the step computes the same values bit for bit.

    Before:

    ```mlir
    %p = tsr.softmax %s {axis = 3 : i64, tsr.remat = "recompute"} : ...
    %o = tsr.matmul %p, %v : ...
    ...
    %t = tsr.mul %p, %dp {tsr.backward} ...   // the softmax's gradient
    ```

    After:

    ```mlir
    %p = tsr.softmax %s {axis = 3 : i64} : ...
    %o = tsr.matmul %p, %v : ...
    ...
    %b = tsr.remat_barrier %s {tsr.backward} : ...
    %p2 = tsr.softmax %b {axis = 3 : i64, tsr.backward} : ...
    %t = tsr.mul %p2, %dp {tsr.backward} ...
    ```
  }];
}

def TsrPrintRematSolvers : Pass<"tsr-print-remat-solvers", "ModuleOp"> {
  let summary = "Compare the rematerialization solvers on each function";
  let description = [{
    Test and benchmark pass (the IR is unchanged). For every function with
    a backward pass, builds the graph `tsr-remat-plan` solves (one node per
    op, views read through) and, at each budget given as a fraction of the
    graph's peak without recomputation, solves it with the MILP (CBC, at
    most `search-nodes` branch-and-bound nodes) and with the beam search,
    and prints both recomputation costs (the cost model's seconds), the
    peaks the schedules reach on the graph, whether CBC proved its optimum,
    and the beam search's cost as a multiple of the optimum:

    ```
    @main: 58 nodes, 21 forward (17 recomputable), peak 5376 bytes without recomputation
      budget 0.80 (4300 bytes): milp 1.92e-09 s (peak 4288, optimal, 820 binaries), beam 1.92e-09 s (peak 4288): 1.000 of the optimum
    ```

    Nothing to print for a function without a backward pass.
  }];
  let options = [
    ListOption<"fractions", "fractions", "double",
               "Budgets, as fractions of the peak without recomputation">,
    Option<"searchNodes", "search-nodes", "int", /*default=*/"100000",
           "The MILP's limit on branch-and-bound nodes">,
    Option<"milp", "milp", "bool", /*default=*/"true",
           "Solve the MILP too (false: the beam search only, for graphs "
           "too large for CBC)">,
    Option<"beamWidth", "beam-width", "int", /*default=*/"32",
           "The beam search's width">,
    Option<"beamTried", "beam-tried", "int", /*default=*/"16",
           "The candidates the beam search tries per schedule and step">,
    Option<"peakFlops", "peak-flops", "double", "185e9",
           "The cost model's FLOP/s, which times recomputations">,
    Option<"bandwidth", "bandwidth", "double", "25e9",
           "The cost model's memory bytes/s">,
  ];
}

#endif // TESSERA_TRANSFORMS_REMAT_PASSES_TD
