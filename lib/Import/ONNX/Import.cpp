//===- Import.cpp - ONNX model import, both stages ------------------------===//
#include "tessera/Import/ONNX/Import.h"

using namespace mlir;

OwningOpRef<ModuleOp>
mlir::tessera::importOnnxModel(MLIRContext &ctx, StringRef path,
                               const OnnxImportOptions &opts) {
  OwningOpRef<ModuleOp> module = importOnnxModelGeneric(ctx, path, opts);
  if (!module || !opts.legalize)
    return module;
  if (failed(legalizeOnnxModule(*module, opts)))
    return nullptr;
  return module;
}

LogicalResult mlir::tessera::addInputShapeSpec(StringRef spec,
                                               OnnxImportOptions &opts) {
  if (!spec.contains('='))
    return failure();
  auto [name, dims] = spec.rsplit('=');
  if (name.empty())
    return failure();
  SmallVector<int64_t> shape;
  if (!dims.empty()) {
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    for (StringRef p : parts) {
      int64_t d;
      if (p.getAsInteger(10, d))
        return failure();
      shape.push_back(d);
    }
  }
  opts.inputShapes[name] = shape;
  return success();
}
