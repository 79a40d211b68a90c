//===- TsrtAttrs.td - Enums of tsrt -------------------------*- tablegen -*-===//
//
// The runtime's codes as enums: the values are those of the C header
// (`tsr_dtype_t` in Runtime.h, `tsr_reduce_op_t` in Comm.h), which
// tsr-collectives-to-runtime checks with static_asserts and passes as they
// are.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_DIALECT_TSRT_TSRTATTRS_TD
#define TESSERA_DIALECT_TSRT_TSRTATTRS_TD

include "tessera/Dialect/Tsrt/IR/TsrtBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

class Tsrt_EnumAttr<EnumAttrInfo info, string mnemonic>
    : EnumAttr<Tsrt_Dialect, info, mnemonic> {
  let assemblyFormat = "`<` $value `>`";
}

def Tsrt_DType : I32EnumAttr<"DType", "the runtime's element type code", [
  I32EnumAttrCase<"float32", 1>,
  I32EnumAttrCase<"uint8", 2>,
  I32EnumAttrCase<"int8", 3>,
  I32EnumAttrCase<"uint16", 4>,
  I32EnumAttrCase<"int16", 5>,
  I32EnumAttrCase<"int32", 6>,
  I32EnumAttrCase<"int64", 7>,
  I32EnumAttrCase<"boolean", 9, "bool">,
  I32EnumAttrCase<"float16", 10>,
  I32EnumAttrCase<"float64", 11>,
  I32EnumAttrCase<"uint32", 12>,
  I32EnumAttrCase<"uint64", 13>,
  I32EnumAttrCase<"bfloat16", 16>]> {
  let cppNamespace = "::mlir::tsrt";
  let genSpecializedAttr = 0;
}
def Tsrt_DTypeAttr : Tsrt_EnumAttr<Tsrt_DType, "dtype"> {
  let summary = "the element type of a collective's buffers, as the runtime names it";
  let description = [{
    The runtime's `tsr_dtype_t`: `float32`, `float64`, `float16`,
    `bfloat16`, `bool`, `int8` to `int64` and `uint8` to `uint64`. The
    buffers themselves have signless integers after `tsr-to-linalg`; the
    dtype keeps whether they are unsigned, which reductions need. The
    verifier checks that it fits the element type (kind and width).
  }];
}

def Tsrt_Reduction : I32EnumAttr<"Reduction",
    "how all_reduce and reduce_scatter combine the ranks' values", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"mean", 1>,
  I32EnumAttrCase<"max", 2>,
  I32EnumAttrCase<"min", 3>]> {
  let cppNamespace = "::mlir::tsrt";
  let genSpecializedAttr = 0;
}
def Tsrt_ReductionAttr : Tsrt_EnumAttr<Tsrt_Reduction, "reduction"> {
  let summary = "the runtime's reduction of a collective";
  let description = [{
    The runtime's `tsr_reduce_op_t`: `sum`, `mean` (the sum divided by the
    group's size; float element types only), `max` or `min`.
  }];
}

#endif // TESSERA_DIALECT_TSRT_TSRTATTRS_TD
