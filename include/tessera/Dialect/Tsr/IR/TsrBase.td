//===- TsrBase.td - The tsr dialect -------------------------*- tablegen -*-===//
#ifndef TESSERA_DIALECT_TSR_TSRBASE_TD
#define TESSERA_DIALECT_TSR_TSRBASE_TD

include "mlir/IR/OpBase.td"

def Tsr_Dialect : Dialect {
  let name = "tsr";
  let cppNamespace = "::mlir::tsr";
  let summary = "Tessera's tensor dialect: value-semantics ops on static tensors";
  let description = [{
    `tsr` holds whole neural-network programs imported from ONNX: every op
    works on ranked tensors with static shapes and value semantics. Each op
    implements the cost interface (FLOPs and bytes). The gradient-rule and
    sharding-rule interfaces are declared here for the training and
    partitioning passes that implement them per op. Signed integers are
    signless `iN`, unsigned ones `uiN` (the lowering picks unsigned
    arithmetic for them).
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  // The transfer ops take and return `!gpu.async.token`s on the CUDA
  // target (TsrTransferOps.td).
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
  // The `tsr.*` discardable attributes (TsrAttrNames.h) are verified.
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Tsr_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tsr_Dialect, mnemonic, traits>;

#endif // TESSERA_DIALECT_TSR_TSRBASE_TD
