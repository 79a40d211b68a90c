//===- Passes.h - Mixed precision --------------------------------*- C++
//-*-===//
#ifndef TESSERA_TRANSFORMS_PRECISION_PASSES_H
#define TESSERA_TRANSFORMS_PRECISION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::tessera {
#define GEN_PASS_DECL
#include "tessera/Transforms/Precision/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "tessera/Transforms/Precision/Passes.h.inc"
} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_PRECISION_PASSES_H
