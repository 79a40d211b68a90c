//===- Compression.h - Gradient compression on the dp axis ------*- C++ -*-===//
//
// What `--grad-compression` spells, what tsr-data-parallel-plan decides with
// it (which gradients are compressed) and the ops tsr-data-parallel builds
// for a compressed gradient: its mean over the data-parallel ranks from
// fewer bytes than an all-reduce of it, with the part not sent carried to
// the next step (error feedback).
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_TRANSFORMS_PARALLEL_COMPRESSION_H
#define TESSERA_TRANSFORMS_PARALLEL_COMPRESSION_H

#include "tessera/Transforms/Autodiff/GradientRules.h"

#include <optional>
#include <string>

namespace mlir::tessera {

/// A gradient compressor: `none`, or `topk:R` (keep the fraction R of the
/// elements of largest magnitude, 0 < R <= 1).
struct GradientCompression {
  enum class Kind { None, TopK };
  Kind kind = Kind::None;
  double ratio = 1.0;

  /// Parses a spec; nullopt if it is malformed.
  static std::optional<GradientCompression> parse(llvm::StringRef spec);
  /// The spec back (`topk:0.01`).
  std::string str() const;
  bool isNone() const { return kind == Kind::None; }
  /// Whether a gradient of `type` is compressed: matrices and larger (a
  /// vector's bias or norm gains little and is all-reduced in a bucket).
  bool appliesTo(RankedTensorType type) const;
  /// k, the elements top-k keeps of n: ceil(R·n), at least 1.
  int64_t keptElements(int64_t numElements) const;
};

/// The exchange of one compressed gradient, started where the gradient is
/// ready and finished before the step's return.
struct CompressedExchange {
  /// The all-gathered (async) kept indices (i32) and values.
  Value indices, values;
  /// The next error-feedback residual: what this rank did not send.
  Value residual;
};

/// Starts the exchange of `grad` plus `residual` (of the same elements,
/// flat) over `axes` (N ranks): top-k by magnitude, the (index, value) pairs
/// all-gathered asynchronously. The collectives carry `tsr.compression` and
/// the values' one `tsr.dense_bytes`, the bytes an all-reduce of the
/// gradient would carry.
CompressedExchange startCompressedExchange(GradientBuilder &g, Value grad,
                                           Value residual,
                                           const GradientCompression &method,
                                           int64_t numRanks, ArrayAttr axes,
                                           llvm::StringRef serves);

/// Waits for `exchange` and returns the mean of the N ranks' sparse
/// gradients, dense, in the shape of `type`.
Value finishCompressedExchange(GradientBuilder &g,
                               const CompressedExchange &exchange,
                               RankedTensorType type, int64_t numRanks);

} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_PARALLEL_COMPRESSION_H
