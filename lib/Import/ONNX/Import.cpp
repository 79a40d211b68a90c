//===- Import.cpp - ONNX model import, both stages ------------------------===//
#include "tessera/Import/ONNX/Import.h"

using namespace mlir;

OwningOpRef<ModuleOp>
mlir::tessera::importOnnxModel(MLIRContext &ctx, StringRef path,
                               const OnnxImportOptions &opts) {
  OwningOpRef<ModuleOp> module = importOnnxModelGeneric(ctx, path, opts);
  if (!module || !opts.legalize)
    return module;
  if (failed(legalizeOnnxModule(*module)))
    return nullptr;
  return module;
}
