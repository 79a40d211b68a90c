//===- PeakMemory.h - Liveness and peak memory of a tsr function -*- C++ -*-===//
//
// Predicts, on tsr before bufferization, the most bytes a function holds in
// buffers it allocates itself at any point of one call: every value that
// will get a buffer of its own lives from the op that defines it to its last
// use (values returned live to the end), and the peak is the largest sum
// over program points. Its model of the lowering: reshapes, waits and
// stop_gradient alias their operand; constants are globals; an elementwise
// producer with one user that is itself a loop nest is fused into it (its
// operands then live until the user); a call holds what the callee holds at
// its own peak. Arguments are the caller's and count nothing.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_ANALYSIS_PEAKMEMORY_H
#define TESSERA_ANALYSIS_PEAKMEMORY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tessera {

struct PeakMemory {
  /// The most bytes live at once.
  int64_t peakBytes = 0;
  /// The op at whose execution the peak is reached (null for an empty
  /// function).
  Operation *peakOp = nullptr;
  /// The values whose buffers are live at the peak, largest first.
  SmallVector<std::pair<Value, int64_t>> liveAtPeak;
};

/// The predicted peak of one call of `f` (a single-block function).
PeakMemory predictPeakMemory(func::FuncOp f);

} // namespace mlir::tessera

#endif // TESSERA_ANALYSIS_PEAKMEMORY_H
