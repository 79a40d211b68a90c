//===- Passes.h - Loss construction and reverse-mode autodiff ---*- C++ -*-===//
#ifndef TESSERA_TRANSFORMS_AUTODIFF_PASSES_H
#define TESSERA_TRANSFORMS_AUTODIFF_PASSES_H

#include "mlir/Pass/Pass.h"

#include <limits>

namespace mlir::tessera {
#define GEN_PASS_DECL
#include "tessera/Transforms/Autodiff/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "tessera/Transforms/Autodiff/Passes.h.inc"
} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_AUTODIFF_PASSES_H
