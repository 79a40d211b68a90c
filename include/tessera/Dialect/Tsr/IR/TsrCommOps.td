//===- TsrCommOps.td - Collectives of per-rank programs -----*- tablegen -*-===//
//
// The communication of an SPMD program, explicit in its IR: every rank runs
// the same function on its own data and these ops exchange values within a
// group of ranks: those that differ only in the listed axes of the device
// mesh that the module's `tsr.mesh` attribute declares
// (`#tsr.mesh<["dp"=2, "tp"=4]>`, rank layout in TsrAttrs.td). Each names the training values it
// serves (`serves`), so the IR says which parameters every message carries.
// They are not Pure: every rank must issue them in the same order, so no
// pass may drop, merge or reorder them. Included by TsrOps.td; the
// verifiers live in TsrCommOps.cpp. Lowering: the runtime-level `tsrt` ops
// (include/tessera/Dialect/Tsrt), bufferized, then calls into the runtime's
// C ABI (`tsrt_*`, runtime/include/tessera-runtime/Comm.h).
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_DIALECT_TSR_TSRCOMMOPS_TD
#define TESSERA_DIALECT_TSR_TSRCOMMOPS_TD

class Tsr_CommDoc<string semantics, string example> {
  string text = !strconcat(semantics, "\n\n`mesh_axes` lists axes of the "
    "module's `tsr.mesh`, in the mesh's order: the op works on the group of "
    "N ranks (the product of their sizes) that differ only in those axes, "
    "numbered row-major over them; `serves` lists the parameters (or other training "
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

defvar Tsr_MeshAxes = ConfinedAttr<StrArrayAttr, [ArrayMinCount<1>]>;
defvar Tsr_CommAttrs = (ins Tsr_MeshAxes:$mesh_axes,
    DefaultValuedAttr<StrArrayAttr, "{}">:$serves,
    OptionalAttr<I64Attr>:$bucket, OptionalAttr<I64Attr>:$id,
    UnitAttr:$async);

defvar Tsr_BlockDim = (ins DefaultValuedAttr<I64Attr, "0">:$dim);

def Tsr_AllReduceOp : Tsr_CommOp<"all_reduce"> {
  let summary = "reduces a tensor over the ranks of a mesh-axis group";
  let description = Tsr_CommDoc<"Every rank gets the elementwise `reduction` "
    "(sum, mean, max or min) of the operand over all N ranks of the group; "
    "the result has the operand's type. mean is the sum divided by N (the "
    "data-parallel gradient of a per-rank mean loss).",
    "%g = tsr.all_reduce %x {mesh_axes = [\"dp\"], reduction = #tsr.reduction<mean>, serves = [\"fc.weight\"]} : (tensor<4x3xf32>) -> tensor<4x3xf32>">.text;
  let arguments = !con((ins Tsr_NumericTensor:$x,
      DefaultValuedAttr<Tsr_CollectiveReductionAttr, "::mlir::tsr::CollectiveReduction::sum">:$reduction), Tsr_CommAttrs);
  // A blocking collective that a pass inserts (no id or bucket yet).
  let builders = [OpBuilder<(ins "::mlir::Value":$x,
      "::mlir::tsr::CollectiveReduction":$reduction,
      "::mlir::ArrayAttr":$mesh_axes,
      CArg<"::mlir::ArrayAttr", "{}">:$serves), [{
    build($_builder, $_state, x.getType(), x,
          CollectiveReductionAttr::get($_builder.getContext(), reduction),
          mesh_axes, serves ? serves : $_builder.getArrayAttr({}),
          IntegerAttr(), IntegerAttr(), UnitAttr());
  }]>];
}

def Tsr_ReduceScatterOp : Tsr_CommOp<"reduce_scatter"> {
  let summary = "reduces over a mesh-axis group and keeps one block per rank";
  let description = Tsr_CommDoc<"The operand's dimension `dim` holds N equal "
    "blocks for a group of N ranks; rank r gets block r of the reduction "
    "(ZeRO-2's gradient shards with dim 0; sequence parallelism's "
    "reduce-scatter over the sequence dimension).",
    "%s = tsr.reduce_scatter %x {mesh_axes = [\"dp\"], reduction = #tsr.reduction<mean>, serves = [\"w\"]} : (tensor<8xf32>) -> tensor<2xf32>">.text;
  let arguments = !con((ins Tsr_NumericTensor:$x,
      DefaultValuedAttr<Tsr_CollectiveReductionAttr, "::mlir::tsr::CollectiveReduction::sum">:$reduction),
      Tsr_BlockDim, Tsr_CommAttrs);
  let builders = [OpBuilder<(ins "::mlir::Type":$type, "::mlir::Value":$x,
      "::mlir::tsr::CollectiveReduction":$reduction, "int64_t":$dim,
      "::mlir::ArrayAttr":$mesh_axes,
      CArg<"::mlir::ArrayAttr", "{}">:$serves), [{
    build($_builder, $_state, type, x,
          CollectiveReductionAttr::get($_builder.getContext(), reduction),
          $_builder.getI64IntegerAttr(dim), mesh_axes,
          serves ? serves : $_builder.getArrayAttr({}), IntegerAttr(),
          IntegerAttr(), UnitAttr());
  }]>];
}

def Tsr_AllGatherOp : Tsr_CommOp<"all_gather"> {
  let summary = "concatenates every rank's tensor along dimension `dim`";
  let description = Tsr_CommDoc<"Block r of the result's dimension `dim` is "
    "rank r's operand (ZeRO-3 gathers a parameter from its shards).",
    "%p = tsr.all_gather %s {mesh_axes = [\"dp\"], serves = [\"w\"]} : (tensor<2xf32>) -> tensor<8xf32>\n"
    "%q = tsr.all_gather %t {dim = 1 : i64, mesh_axes = [\"dp\", \"tp\"]} : (tensor<4x2xf32>) -> tensor<4x8xf32>">.text;
  let arguments = !con((ins Tsr_NumericTensor:$x), Tsr_BlockDim,
      Tsr_CommAttrs);
  let builders = [OpBuilder<(ins "::mlir::Type":$type, "::mlir::Value":$x,
      "int64_t":$dim, "::mlir::ArrayAttr":$mesh_axes,
      CArg<"::mlir::ArrayAttr", "{}">:$serves), [{
    build($_builder, $_state, type, x, $_builder.getI64IntegerAttr(dim),
          mesh_axes, serves ? serves : $_builder.getArrayAttr({}),
          IntegerAttr(), IntegerAttr(), UnitAttr());
  }]>];
}

def Tsr_AllToAllOp : Tsr_CommOp<"all_to_all"> {
  let summary = "exchanges blocks of dimension `dim` between all ranks";
  let description = Tsr_CommDoc<"Dimension `dim` holds N equal blocks for a "
    "group of N ranks: block p goes to rank p, and block p of the result "
    "comes from rank p (expert parallelism's token exchange).",
    "%y = tsr.all_to_all %x {mesh_axes = [\"ep\"], serves = [\"tokens\"]} : (tensor<8x4xf32>) -> tensor<8x4xf32>">.text;
  let arguments = !con((ins Tsr_NumericTensor:$x), Tsr_BlockDim,
      Tsr_CommAttrs);
  let builders = [OpBuilder<(ins "::mlir::Type":$type, "::mlir::Value":$x,
      "int64_t":$dim, "::mlir::ArrayAttr":$mesh_axes,
      CArg<"::mlir::ArrayAttr", "{}">:$serves), [{
    build($_builder, $_state, type, x, $_builder.getI64IntegerAttr(dim),
          mesh_axes, serves ? serves : $_builder.getArrayAttr({}),
          IntegerAttr(), IntegerAttr(), UnitAttr());
  }]>];
}

def Tsr_BroadcastFromOp : Tsr_CommOp<"broadcast_from"> {
  let summary = "copies rank `root`'s tensor to every rank of a group";
  let description = Tsr_CommDoc<"Every rank gets the operand of rank `root` "
    "of the group; the result has the operand's type.",
    "%y = tsr.broadcast_from %x {mesh_axes = [\"dp\"], root = 0 : i64, serves = [\"w\"]} : (tensor<4xf32>) -> tensor<4xf32>">.text;
  let arguments = !con((ins Tsr_NumericTensor:$x, I64Attr:$root),
      Tsr_CommAttrs);
}

defvar Tsr_PeerDoc = "\n\nPoint-to-point messages belong to the per-rank "
  "programs of a pipeline (`tsr-pipeline`), in which ranks run different "
  "code: `peer` is the other rank's number in the group of `mesh_axes`. A "
  "send never waits for its receive (the runtime copies the data and sends "
  "it in the background); a receive waits until the message has arrived. "
  "Messages between two ranks arrive in the order they were sent, so the "
  "k-th receive from a peer gets the k-th message that peer sent to this "
  "rank: `tsr-verify-pipeline` checks that the programs agree.";

def Tsr_SendOp : Tsr_Op<"send"> {
  let summary = "sends a tensor to one rank of a mesh-axis group";
  let description = !strconcat("Sends `x` to rank `peer` of the group of "
    "`mesh_axes`, whose matching `tsr.recv` has `x`'s type; `serves` names "
    "the values the message carries.", Tsr_PeerDoc, "\n\nExample:\n\n"
    "```mlir\ntsr.send %h {mesh_axes = [\"pp\"], peer = 1 : i64, serves = "
    "[\"h.3\"]} : tensor<4x8xf32>\n```\n");
  let arguments = (ins Tsr_NumericTensor:$x, Tsr_MeshAxes:$mesh_axes,
      I64Attr:$peer, DefaultValuedAttr<StrArrayAttr, "{}">:$serves,
      OptionalAttr<I64Attr>:$id);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def Tsr_RecvOp : Tsr_Op<"recv"> {
  let summary = "receives a tensor from one rank of a mesh-axis group";
  let description = !strconcat("Returns the next message that rank `peer` "
    "of the group of `mesh_axes` sent to this rank with `tsr.send`.",
    Tsr_PeerDoc, "\n\nExample:\n\n```mlir\n%h = tsr.recv {mesh_axes = "
    "[\"pp\"], peer = 0 : i64, serves = [\"h.3\"]} : tensor<4x8xf32>\n```\n");
  let arguments = (ins Tsr_MeshAxes:$mesh_axes, I64Attr:$peer,
      DefaultValuedAttr<StrArrayAttr, "{}">:$serves,
      OptionalAttr<I64Attr>:$id);
  let results = (outs Tsr_NumericTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
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
    %p = tsr.all_reduce %g {async, bucket = 0 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w"]} : (tensor<6xf32>) -> tensor<6xf32>
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
  let summary = "this rank's block of dimension `dim`";
  let description = [{
    Dimension `dim` of the operand holds N equal blocks for the group of N
    ranks that differ only in `mesh_axes` (numbered as for the
    collectives); rank r of the group gets block r. No communication: the
    values every rank already holds are cut to the part it owns (ZeRO-1's
    optimizer works on the local block of an all-reduced gradient).

    Example:

    ```mlir
    %s = tsr.local_shard %g {mesh_axes = ["dp"]} : (tensor<8xf32>) -> tensor<2xf32>
    ```
  }];
  let arguments = (ins Tsr_Tensor:$x, Tsr_MeshAxes:$mesh_axes,
                       DefaultValuedAttr<I64Attr, "0">:$dim);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // TESSERA_DIALECT_TSR_TSRCOMMOPS_TD
