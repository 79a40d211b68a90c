//===- Passes.h - Collectives to runtime calls ------------------*- C++ -*-===//
#ifndef TESSERA_CONVERSION_COLLECTIVESTORUNTIME_PASSES_H
#define TESSERA_CONVERSION_COLLECTIVESTORUNTIME_PASSES_H

#include "mlir/Pass/Pass.h"
#include "tessera/Conversion/CollectivesToRuntime/CollectivesToRuntime.h"

namespace mlir::tessera {
#define GEN_PASS_DECL
#include "tessera/Conversion/CollectivesToRuntime/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessera/Conversion/CollectivesToRuntime/Passes.h.inc"
} // namespace mlir::tessera

#endif // TESSERA_CONVERSION_COLLECTIVESTORUNTIME_PASSES_H
