//===- Passes.h - ONNX import passes ----------------------------*- C++ -*-===//
#ifndef TESSERA_IMPORT_ONNX_PASSES_H
#define TESSERA_IMPORT_ONNX_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"

namespace mlir::tessera {
#define GEN_PASS_DECL
#include "tessera/Import/ONNX/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "tessera/Import/ONNX/Passes.h.inc"
} // namespace mlir::tessera

#endif // TESSERA_IMPORT_ONNX_PASSES_H
