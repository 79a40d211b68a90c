//===- Passes.h - GPU code generation passes --------------------*- C++ -*-===//
#ifndef TESSERA_CONVERSION_GPU_PASSES_H
#define TESSERA_CONVERSION_GPU_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::tessera {
#define GEN_PASS_DECL
#include "tessera/Conversion/GPU/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

#endif // TESSERA_CONVERSION_GPU_PASSES_H
