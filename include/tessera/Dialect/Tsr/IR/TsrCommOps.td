//===- TsrCommOps.td - Collectives of per-rank programs -----*- tablegen -*-===//
//
// The communication of an SPMD program, explicit in its IR: every rank runs
// the same function on its own data and these ops exchange values along one
// axis of the device mesh that the module's `tsr.mesh` attribute declares
// (`{dp = 4 : i64}`: axis name to size). Each names the training values it
// serves (`serves`), so the IR says which parameters every message carries.
// They are not Pure: every rank must issue them in the same order, so no
// pass may drop, merge or reorder them. Included by TsrOps.td; the
// verifiers live in TsrCommOps.cpp. Lowering: calls into the runtime's C ABI
// (`tsrt_*`, runtime/include/tessera-runtime/Comm.h).
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_DIALECT_TSR_TSRCOMMOPS_TD
#define TESSERA_DIALECT_TSR_TSRCOMMOPS_TD

class Tsr_CommDoc<string semantics, string example> {
  string text = !strconcat(semantics, "\n\n`mesh_axis` names an axis of the "
    "module's `tsr.mesh`; `serves` lists the parameters (or other training "
    "values) whose data the message carries; `bucket`, when present, is the "
    "gradient bucket it reduces. With `async` the collective only starts "
    "here: its one user is the `tsr.wait` that completes it, and the ops in "
    "between run while it is in flight. The lowering numbers collectives in "
    "program order (`id`), which the artifact's manifest maps to a "
    "description for error messages.\n\nExample:\n\n```mlir\n", example,
    "\n```\n");
}

class Tsr_CommOp<string mnemonic, list<Trait> traits = []>
    : Tsr_Op<mnemonic, !listconcat(traits, [Tsr_CostOpInterface])> {
  let results = (outs Tsr_NumericTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

defvar Tsr_CommAttrs = (ins StrAttr:$mesh_axis,
    DefaultValuedAttr<StrArrayAttr, "{}">:$serves,
    OptionalAttr<I64Attr>:$bucket, OptionalAttr<I64Attr>:$id,
    UnitAttr:$async);

def Tsr_AllReduceOp : Tsr_CommOp<"all_reduce"> {
  let summary = "reduces a tensor over the ranks of a mesh axis";
  let description = Tsr_CommDoc<"Every rank gets the elementwise `reduction` "
    "(sum, mean, max or min) of the operand over all ranks of the axis; the "
    "result has the operand's type. mean is the sum divided by the axis "
    "size (the data-parallel gradient of a per-rank mean loss).",
    "%g = tsr.all_reduce %x {mesh_axis = \"dp\", reduction = \"mean\", serves = [\"fc.weight\"]} : (tensor<4x3xf32>) -> tensor<4x3xf32>">.text;
  let arguments = !con((ins Tsr_NumericTensor:$x,
      DefaultValuedStrAttr<StrAttr, "sum">:$reduction), Tsr_CommAttrs);
}

def Tsr_ReduceScatterOp : Tsr_CommOp<"reduce_scatter"> {
  let summary = "reduces over a mesh axis and keeps one block per rank";
  let description = Tsr_CommDoc<"The operand's dimension 0 holds N equal "
    "blocks for an axis of size N; rank r gets block r of the reduction "
    "(ZeRO-2's gradient shards).",
    "%s = tsr.reduce_scatter %x {mesh_axis = \"dp\", reduction = \"mean\", serves = [\"w\"]} : (tensor<8xf32>) -> tensor<2xf32>">.text;
  let arguments = !con((ins Tsr_NumericTensor:$x,
      DefaultValuedStrAttr<StrAttr, "sum">:$reduction), Tsr_CommAttrs);
}

def Tsr_AllGatherOp : Tsr_CommOp<"all_gather"> {
  let summary = "concatenates every rank's tensor along dimension 0";
  let description = Tsr_CommDoc<"Block r of the result's dimension 0 is rank "
    "r's operand (ZeRO-3 gathers a parameter from its shards).",
    "%p = tsr.all_gather %s {mesh_axis = \"dp\", serves = [\"w\"]} : (tensor<2xf32>) -> tensor<8xf32>">.text;
  let arguments = !con((ins Tsr_NumericTensor:$x), Tsr_CommAttrs);
}

def Tsr_AllToAllOp : Tsr_CommOp<"all_to_all"> {
  let summary = "exchanges blocks of dimension 0 between all ranks";
  let description = Tsr_CommDoc<"Dimension 0 holds N equal blocks for an "
    "axis of size N: block p goes to rank p, and block p of the result "
    "comes from rank p (expert parallelism's token exchange).",
    "%y = tsr.all_to_all %x {mesh_axis = \"ep\", serves = [\"tokens\"]} : (tensor<8x4xf32>) -> tensor<8x4xf32>">.text;
  let arguments = !con((ins Tsr_NumericTensor:$x), Tsr_CommAttrs);
}

def Tsr_BroadcastFromOp : Tsr_CommOp<"broadcast_from"> {
  let summary = "copies rank `root`'s tensor to every rank of an axis";
  let description = Tsr_CommDoc<"Every rank gets the operand of rank `root` "
    "of the axis; the result has the operand's type.",
    "%y = tsr.broadcast_from %x {mesh_axis = \"dp\", root = 0 : i64, serves = [\"w\"]} : (tensor<4xf32>) -> tensor<4xf32>">.text;
  let arguments = !con((ins Tsr_NumericTensor:$x, I64Attr:$root),
      Tsr_CommAttrs);
}

def Tsr_WaitOp : Tsr_Op<"wait", [Tsr_CostOpInterface]> {
  let summary = "completes an asynchronous collective";
  let description = [{
    Returns the result of the `async` collective that produced `pending`,
    once it has completed. Ops between the collective and the wait overlap
    with the communication; `tsr-data-parallel` starts every gradient bucket
    right after its last gradient and waits for all of them only before the
    optimizer update. The collective's operand is free once it has started:
    the runtime copies what it sends when the collective starts.

    Example:

    ```mlir
    %p = tsr.all_reduce %g {async, bucket = 0 : i64, mesh_axis = "dp", reduction = "mean", serves = ["w"]} : (tensor<6xf32>) -> tensor<6xf32>
    ...
    %r = tsr.wait %p : (tensor<6xf32>) -> tensor<6xf32>
    ```
  }];
  let arguments = (ins Tsr_NumericTensor:$pending);
  let results = (outs Tsr_NumericTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tsr_LocalShardOp : Tsr_Op<"local_shard", [Pure, Tsr_CostOpInterface]> {
  let summary = "this rank's block of dimension 0";
  let description = [{
    Dimension 0 of the operand holds N equal blocks for an axis of size N;
    rank r of `mesh_axis` gets block r. No communication: the values every
    rank already holds are cut to the part it owns (ZeRO-1's optimizer works
    on the local block of an all-reduced gradient).

    Example:

    ```mlir
    %s = tsr.local_shard %g {mesh_axis = "dp"} : (tensor<8xf32>) -> tensor<2xf32>
    ```
  }];
  let arguments = (ins Tsr_Tensor:$x, StrAttr:$mesh_axis);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // TESSERA_DIALECT_TSR_TSRCOMMOPS_TD
