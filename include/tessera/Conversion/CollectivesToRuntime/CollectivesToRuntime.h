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

#include <functional>

namespace mlir::tessera {

/// Builds, at the builder's insertion point, the `void *stream` that every
/// collective call passes to the runtime: the stream a target orders
/// collectives on (a CUDA stream for NCCL).
using CollectiveStreamBuilder = std::function<Value(OpBuilder &, Location)>;

/// The stream of a target without streams: a null pointer, which MPI
/// ignores (the CPU target, and `tsr-collectives-to-runtime` run alone).
Value buildNullStream(OpBuilder &b, Location loc);

/// Patterns lowering every `tsrt` op on memrefs to a runtime call,
/// declaring the `tsrt_*` functions in the module as they are first used;
/// strided buffers go through contiguous temporaries.
void populateCollectivesToRuntimePatterns(RewritePatternSet &patterns,
                                          CollectiveStreamBuilder stream);

} // namespace mlir::tessera

#endif // TESSERA_CONVERSION_COLLECTIVESTORUNTIME_COLLECTIVESTORUNTIME_H
