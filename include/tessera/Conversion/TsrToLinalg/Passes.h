//===- Passes.h - tsr to linalg conversion pass -----------------*- C++ -*-===//
#ifndef TESSERA_CONVERSION_TSRTOLINALG_PASSES_H
#define TESSERA_CONVERSION_TSRTOLINALG_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::tessera {
#define GEN_PASS_DECL
#include "tessera/Conversion/TsrToLinalg/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "tessera/Conversion/TsrToLinalg/Passes.h.inc"
} // namespace mlir::tessera

#endif // TESSERA_CONVERSION_TSRTOLINALG_PASSES_H
