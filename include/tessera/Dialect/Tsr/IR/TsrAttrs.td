//===- TsrAttrs.td - Attributes and enums of tsr ------------*- tablegen -*-===//
//
// The enums that ops and the training contract use instead of strings (a
// misspelled value is a parse or verifier error, never a silent default),
// and the device mesh.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_DIALECT_TSR_TSRATTRS_TD
#define TESSERA_DIALECT_TSR_TSRATTRS_TD

include "tessera/Dialect/Tsr/IR/TsrBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

class Tsr_EnumAttr<EnumAttrInfo info, string mnemonic>
    : EnumAttr<Tsr_Dialect, info, mnemonic> {
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// The training contract
//===----------------------------------------------------------------------===//

def Tsr_Role : I32EnumAttr<"Role", "what a function argument or result is "
    "to the training loop", [
  I32EnumAttrCase<"data", 1>,
  I32EnumAttrCase<"label", 2>,
  I32EnumAttrCase<"param", 3>,
  I32EnumAttrCase<"state", 4>,
  I32EnumAttrCase<"loss", 5>,
  I32EnumAttrCase<"metric", 6>,
  I32EnumAttrCase<"grad", 7>,
  I32EnumAttrCase<"rng", 8>,
  I32EnumAttrCase<"sync", 9>]> {
  let cppNamespace = "::mlir::tsr";
  let genSpecializedAttr = 0;
}
def Tsr_RoleAttr : Tsr_EnumAttr<Tsr_Role, "role"> {
  let summary = "the role of a training value (`tsr.role`)";
  let description = [{
    Set on the arguments and results of a training function: `data` and
    `label` come from the batch, `param` and `state` are carried from step
    to step (a result with `tsr.updates = i` is the next value of argument
    i), `rng` is the step's random seed, `sync` an i64 scalar the runtime
    sets to 1 on a step after which the ranks' parameters must agree (the
    last of a run; local SGD averages then), `loss`, `metric` and `grad`
    are outputs. The values match the runtime's `tsr_role_t`.

    Example: `{tsr.name = "fc.weight", tsr.role = #tsr.role<param>}`
  }];
}

//===----------------------------------------------------------------------===//
// Op modes
//===----------------------------------------------------------------------===//

def Tsr_CollectiveReduction : I32EnumAttr<"CollectiveReduction",
    "how a collective combines the ranks' values", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"mean", 1>,
  I32EnumAttrCase<"max", 2>,
  I32EnumAttrCase<"min", 3>]> {
  let cppNamespace = "::mlir::tsr";
  let genSpecializedAttr = 0;
}
def Tsr_CollectiveReductionAttr
    : Tsr_EnumAttr<Tsr_CollectiveReduction, "reduction"> {
  let summary = "the reduction of all_reduce and reduce_scatter";
  let description = [{
    `sum`, `mean` (the sum divided by the number of ranks), `max` or `min`.
    The values are the runtime's `tsr_reduce_op_t`, which the lowering
    passes as is.
  }];
}

def Tsr_LossReduction : I32EnumAttr<"LossReduction",
    "how a loss combines its per-sample values", [
  I32EnumAttrCase<"none", 0>,
  I32EnumAttrCase<"sum", 1>,
  I32EnumAttrCase<"mean", 2>]> {
  let cppNamespace = "::mlir::tsr";
  let genSpecializedAttr = 0;
}
def Tsr_LossReductionAttr : Tsr_EnumAttr<Tsr_LossReduction, "loss_reduction"> {
  let summary = "the reduction of a loss op (ONNX's `reduction`)";
}

def Tsr_PadMode : I32EnumAttr<"PadMode", "how tsr.pad fills", [
  I32EnumAttrCase<"constant", 0>,
  I32EnumAttrCase<"reflect", 1>,
  I32EnumAttrCase<"edge", 2>]> {
  let cppNamespace = "::mlir::tsr";
  let genSpecializedAttr = 0;
}
def Tsr_PadModeAttr : Tsr_EnumAttr<Tsr_PadMode, "pad_mode"> {
  let summary = "the mode of tsr.pad (ONNX Pad's `mode`)";
}

def Tsr_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "the formula of tsr.gelu", [
  I32EnumAttrCase<"none", 0>,
  I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::mlir::tsr";
  let genSpecializedAttr = 0;
}
def Tsr_GeluApproximationAttr
    : Tsr_EnumAttr<Tsr_GeluApproximation, "gelu_approximation"> {
  let summary = "the formula of tsr.gelu (ONNX Gelu's `approximate`)";
}

def Tsr_ScatterReduction : I32EnumAttr<"ScatterReduction",
    "how tsr.scatter_elements combines an update with the data", [
  I32EnumAttrCase<"none", 0>,
  I32EnumAttrCase<"add", 1>,
  I32EnumAttrCase<"mul", 2>,
  I32EnumAttrCase<"max", 3>,
  I32EnumAttrCase<"min", 4>]> {
  let cppNamespace = "::mlir::tsr";
  let genSpecializedAttr = 0;
}
def Tsr_ScatterReductionAttr
    : Tsr_EnumAttr<Tsr_ScatterReduction, "scatter_reduction"> {
  let summary = "the reduction of tsr.scatter_elements";
}

//===----------------------------------------------------------------------===//
// The device mesh
//===----------------------------------------------------------------------===//

def Tsr_MeshAttr : AttrDef<Tsr_Dialect, "Mesh"> {
  let mnemonic = "mesh";
  let summary = "an ordered list of named device-mesh axes";
  let description = [{
    The devices of an SPMD program as a grid whose axes have names and
    sizes, in a stated order (Shardy's `sdy.mesh` vocabulary; upstream
    `shard.grid` numbers its axes instead of naming them). Rank layout:
    row-major over the axes as listed, the last axis innermost, so the rank
    of the device at coordinates (c0, ..., cK) is
    sum_i c_i * prod_{j > i} size_j. With `["dp"=2, "tp"=2]`, ranks 0 and 1
    form the first tp group and ranks 0 and 2 the first dp group. A
    collective over several axes works on the group of ranks that differ
    only in those axes, numbered by the same row-major rule restricted to
    them.

    Example: `module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=4]>}`
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::StringAttr">:$names,
                        ArrayRefParameter<"int64_t">:$sizes);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The index of axis `name`, if the mesh has one.
    std::optional<unsigned> getAxisIndex(::llvm::StringRef name) const;
    /// The size of axis `name`, if the mesh has one.
    std::optional<int64_t> getAxisSize(::llvm::StringRef name) const;
    /// The number of devices: the product of the sizes.
    int64_t getNumDevices() const;
  }];
}

def Tsr_ZeroAttr : AttrDef<Tsr_Dialect, "Zero"> {
  let mnemonic = "zero";
  let summary = "the ZeRO layout of a data-parallel training function";
  let description = [{
    Set by `tsr-data-parallel` on the function it rewrites (`tsr.zero`):
    the stage (0 replicates everything; 1 shards optimizer state, 2 also
    gradients, 3 also parameters) and the mesh axes the shards are spread
    over. `tsr-optimizer` reads it to update shards.

    Example: `func.func @step(...) attributes {tsr.zero = #tsr.zero<stage = 2, axes = ["dp"]>}`
  }];
  let parameters = (ins "int64_t":$stage, "::mlir::ArrayAttr":$axes);
  let assemblyFormat = "`<` `stage` `=` $stage `,` `axes` `=` $axes `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Sharding of a value over the mesh
//===----------------------------------------------------------------------===//

def Tsr_ShardingAttr : AttrDef<Tsr_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "how a value is split over the mesh, and what is pending on it";
  let description = [{
    One entry per tensor dimension: the mesh axes the dimension is split
    over (empty: every rank of those axes holds all of it). Over axes
    `["dp", "tp"]` the dimension is cut into size(dp)·size(tp) equal blocks
    and the rank at coordinates (d, t) holds block d·size(tp) + t (the
    mesh's row-major rule restricted to the listed axes, as for the
    collectives). `partial` lists axes over which each rank holds only a
    summand: the value is the sum over the ranks of those axes (a
    row-parallel matmul's result before its all-reduce). An axis appears at
    most once. The vocabulary of upstream `shard` (split and partial axes)
    and of Shardy's `sdy.sharding`.

    Set by `tsr-sharding-propagation` on ops (`tsr.sharding`, one per
    result) and on function arguments and results; read by
    `tsr-sharding-partition`.

    Examples: `#tsr.sharding<[[], ["tp"]]>` (columns split over tp),
    `#tsr.sharding<[[], []], partial = ["tp"]>` (a pending sum over tp).
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims,
                        OptionalParameter<"::mlir::ArrayAttr">:$partial);
  let assemblyFormat = "`<` $dims (`,` `partial` `=` $partial^)? `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// A sharding of `rank` dimensions, none split, nothing pending.
    static ShardingAttr getReplicated(::mlir::MLIRContext *ctx, unsigned rank);
    /// The axes dimension `dim` is split over.
    ::mlir::ArrayAttr getDimAxes(unsigned dim) const;
    /// The axes of a pending sum (empty if none).
    ::llvm::SmallVector<::llvm::StringRef> getPartialAxes() const;
    /// Whether no dimension is split and nothing is pending.
    bool isReplicated() const;
    /// The dimension split over `axis`, if one is.
    std::optional<unsigned> getDimOf(::llvm::StringRef axis) const;
  }];
}

#endif // TESSERA_DIALECT_TSR_TSRATTRS_TD
