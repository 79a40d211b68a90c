//===- OnnxOps.td - Generic ONNX nodes ----------------------*- tablegen -*-===//
//
// The first stage of ONNX import: every NodeProto becomes one `onnx.node`
// holding its op type, domain, opset and attributes verbatim. Legalization to
// `tsr` (keyed on op type and since_version) happens in a second stage.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_DIALECT_ONNX_ONNXOPS_TD
#define TESSERA_DIALECT_ONNX_ONNXOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Onnx_Dialect : Dialect {
  let name = "onnx";
  let cppNamespace = "::mlir::onnx_generic";
  let summary = "Generic ONNX nodes, as imported, before legalization";
}

def Onnx_NodeOp : Op<Onnx_Dialect, "node"> {
  let summary = "one ONNX NodeProto, verbatim";
  let description = [{
    An ONNX node before legalization. `op_type`, `domain` and `name` are the
    node's; `since_version` is the version of the op's schema in effect at
    the model's opset for that domain, `opset` that opset. `attrs` holds the
    node's attributes (ints as i64, floats as f32, strings, tensors as dense
    elements, lists as arrays). Absent optional inputs are `onnx.none`.

    Example:

    ```mlir
    %y = onnx.node "Relu"(%x) {domain = "", name = "relu0", opset = 13 : i64, since_version = 13 : i64, attrs = {}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, StrAttr:$op_type,
                       StrAttr:$domain, StrAttr:$name, I64Attr:$opset,
                       I64Attr:$since_version, DictionaryAttr:$attrs);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = [{
    $op_type `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)
  }];
}

def Onnx_NoneOp : Op<Onnx_Dialect, "none", [Pure]> {
  let summary = "an absent optional input";
  let description = [{
    Stands for an ONNX optional input given as the empty name.

    Example:

    ```mlir
    %n = onnx.none
    ```
  }];
  let results = (outs NoneType:$result);
  let assemblyFormat = "attr-dict";
}

#endif // TESSERA_DIALECT_ONNX_ONNXOPS_TD
