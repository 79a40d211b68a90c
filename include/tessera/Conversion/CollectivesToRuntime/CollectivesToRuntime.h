//===- CollectivesToRuntime.h - tsrt to runtime calls -----------*- C++ -*-===//
//
// The lowering of the bufferized `tsrt` collectives to calls of the runtime's
// C ABI (`tsrt_*`, runtime/include/tessera-runtime/Comm.h).
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_CONVERSION_COLLECTIVESTORUNTIME_COLLECTIVESTORUNTIME_H
#define TESSERA_CONVERSION_COLLECTIVESTORUNTIME_COLLECTIVESTORUNTIME_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tessera {

/// Patterns lowering every `tsrt` op on memrefs to a runtime call,
/// declaring the `tsrt_*` functions in the module as they are first used,
/// on the stream of the op's async dependency, or a null one. Buffers must
/// be contiguous (tsr-contiguous-collectives).
void populateCollectivesToRuntimePatterns(RewritePatternSet &patterns);

} // namespace mlir::tessera

#endif // TESSERA_CONVERSION_COLLECTIVESTORUNTIME_COLLECTIVESTORUNTIME_H
