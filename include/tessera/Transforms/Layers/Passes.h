//===- Passes.h - Repeated layers -------------------------------*- C++ -*-===//
#ifndef TESSERA_TRANSFORMS_LAYERS_PASSES_H
#define TESSERA_TRANSFORMS_LAYERS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::tessera {
#define GEN_PASS_DECL
#include "tessera/Transforms/Layers/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "tessera/Transforms/Layers/Passes.h.inc"
} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_LAYERS_PASSES_H
