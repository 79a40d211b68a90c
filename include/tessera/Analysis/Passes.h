//===- Passes.h - Passes that print the plan layer's analyses --*- C++ -*-===//
#ifndef TESSERA_ANALYSIS_PASSES_H
#define TESSERA_ANALYSIS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::tessera {
#define GEN_PASS_DECL
#include "tessera/Analysis/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "tessera/Analysis/Passes.h.inc"
} // namespace mlir::tessera

#endif // TESSERA_ANALYSIS_PASSES_H
