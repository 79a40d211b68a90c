//===- PeakMemory.h - Liveness and peak memory of tsr functions -*- C++ -*-===//
//
// Predicts, on tsr before bufferization, the most bytes a function holds in
// buffers it allocates itself at any point of one call. Each op runs as the
// steps its lowering takes (tsr-to-linalg, then bufferization): most ops
// are one step that reads their operands and writes their result, but a
// convolution gathers its patches, multiplies, then adds the bias, holding
// scratch buffers (im2col columns, GEMM results, transposed operands) the
// tsr program does not show. A buffer lives from the step that writes it to
// the last step that reads it (values returned live to the end), and the
// peak is the largest sum over steps, each buffer with the bytes the
// allocator adds to it.
//
// The model of the lowering: reshapes, waits (of collectives and of
// copies back from host memory), stop_gradient, local_shard
// and slices with positive steps are views of their operand's buffer (a
// reshape that bufferization cannot express as a view of a strided slice
// is a copy); constants are globals; an elementwise producer all of whose
// users end up in one loop nest (an elementwise op or a reduction) is fused
// into it (its operands then live until that op runs); scratch that CSE merges
// across ops (the padded input and im2col columns of convolutions of one input,
// the rows of dy that both convolution gradients transpose) is one buffer,
// live from its first op to its last; a call holds what the callee holds at
// its own peak, its results (allocated by the caller, unaligned) and copies
// of the arguments that are not row-major from their buffer's first
// element; an all-reduce or broadcast writes into its operand's buffer when
// nothing reads the operand afterwards (bufferization in place); a result
// of a public function that updates an argument (`tsr.updates`) is written
// into that argument's buffer by an elementwise op when every other reader
// of the argument runs before it (tsr-donate-updates). Arguments are the
// caller's and count nothing.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_ANALYSIS_PEAKMEMORY_H
#define TESSERA_ANALYSIS_PEAKMEMORY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tessera {

struct PeakMemoryOptions {
  /// Bytes the allocator adds to every buffer. The lowering aligns each
  /// buffer to 64 bytes (one-shot bufferization's default alignment), and
  /// finalize-memref-to-llvm allocates that many bytes more to align the
  /// pointer itself.
  int64_t bufferPadding = 64;
};

/// One buffer live at the peak.
struct PeakBuffer {
  /// The value it holds, or null for a scratch buffer of `op`'s lowering.
  Value value;
  /// The op whose lowering allocates it.
  Operation *op = nullptr;
  /// What a scratch buffer holds ("im2col columns"); empty for a value.
  StringRef scratch;
  /// Its bytes, without the allocator's padding.
  int64_t bytes = 0;
  /// The bytes the allocator adds to it (0 for an unaligned allocation).
  int64_t padding = 0;
};

struct PeakMemory {
  /// The most bytes live at once, the allocator's padding included.
  int64_t peakBytes = 0;
  /// The op during whose lowering the peak is reached (null for a function
  /// that allocates nothing).
  Operation *peakOp = nullptr;
  /// The buffers live at the peak, largest first.
  SmallVector<PeakBuffer> liveAtPeak;
  /// Of `peakBytes`: what a callee of `peakOp` holds at its own peak.
  int64_t calleeBytes = 0;
  /// The results written into the buffer of the argument they update
  /// (tsr-donate-updates): the caller allocates nothing for them.
  SmallVector<unsigned> inPlaceResults;

  /// The whole call, for a timeline of live bytes: the op each step lowers
  /// (an op may take several steps), every buffer with the first and last
  /// step it lives over, and what a callee holds at each step.
  struct LiveRange {
    PeakBuffer buffer;
    int64_t first = 0, last = 0;
  };
  SmallVector<Operation *> steps;
  SmallVector<LiveRange> ranges;
  SmallVector<int64_t> calleeBytesAt;
};

/// The predicted peak of one call of `f` (a single-block function).
PeakMemory predictPeakMemory(func::FuncOp f,
                             const PeakMemoryOptions &options = {});

} // namespace mlir::tessera

#endif // TESSERA_ANALYSIS_PEAKMEMORY_H
