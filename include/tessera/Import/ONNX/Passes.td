//===- Passes.td - ONNX import passes -----------------------*- tablegen -*-===//
#ifndef TESSERA_IMPORT_ONNX_PASSES_TD
#define TESSERA_IMPORT_ONNX_PASSES_TD

include "mlir/Pass/PassBase.td"

def TsrLegalizeOnnx : Pass<"tsr-legalize-onnx", "ModuleOp"> {
  let summary = "Legalize generic onnx.node ops to tsr ops";
  let description = [{
    Stage 2 of ONNX import. Walks every `onnx.node` of every function in
    order and calls the handler registered for its (op type,
    since_version); handlers build tsr ops with folding, so constant shape
    subgraphs (Shape -> Gather -> Concat -> Reshape) disappear. Inputs that
    must be constant (Reshape's shape, Slice's bounds, ...) must fold to
    `tsr.constant`. A node without a handler, or with an attribute value the
    handler does not support, fails with `unsupported ONNX op 'X' (domain
    '', opset N, since_version V) at node 'name'`. Afterwards each
    function's type is set from the values it returns.

    Before:

    ```mlir
    func.func @main(%x: tensor<2x3xf32>) -> tensor<*xf32> {
      %y = onnx.node "Relu"(%x) {attrs = {}, domain = "", name = "r",
          opset = 13 : i64, since_version = 13 : i64}
          : (tensor<2x3xf32>) -> tensor<*xf32>
      return %y : tensor<*xf32>
    }
    ```

    After:

    ```mlir
    func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %y = tsr.relu %x : tensor<2x3xf32>
      return %y : tensor<2x3xf32>
    }
    ```
  }];
  let dependentDialects = ["mlir::tsr::TsrDialect",
                           "mlir::func::FuncDialect"];
}

#endif // TESSERA_IMPORT_ONNX_PASSES_TD
