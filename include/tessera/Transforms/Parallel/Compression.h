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

/// A gradient compressor: `none`; `topk:R` (keep the fraction R of the
/// elements of largest magnitude, 0 < R <= 1, with error feedback); or
/// `qsgd:BITS[:BUCKET]` (QSGD's unbiased stochastic quantization to
/// 2^(BITS-1) - 1 levels and a sign per element, one norm per bucket of
/// BUCKET elements, default 512; 2 <= BITS <= 8); or `powersgd:RANK`
/// (PowerSGD's rank-RANK approximation of each gradient as a matrix, with
/// warm-started Q and error feedback); or `onebit[:WARMUP[:BETA1]]` (1-bit
/// Adam: WARMUP steps of all-reduced gradients, default 100, then Adam's
/// momentum with first-moment decay BETA1, default 0.9, exchanged as signs
/// and a scale, with error feedback on both stages).
struct GradientCompression {
  enum class Kind { None, TopK, QSGD, PowerSGD, OneBit };
  Kind kind = Kind::None;
  double ratio = 1.0, beta1 = 0.9;
  int64_t bits = 8, bucket = 512, rank = 4, warmup = 100;
  /// Top-k's ratio and 1-bit Adam's beta1 as the spec spelled them (they
  /// round-trip exactly).
  std::string ratioText, beta1Text = "0.9";

  /// Parses a spec; nullopt if it is malformed.
  static std::optional<GradientCompression> parse(llvm::StringRef spec);
  /// The spec back (`topk:0.01`, `qsgd:8:512`).
  std::string str() const;
  bool isNone() const { return kind == Kind::None; }
  /// Whether a gradient of `type` is compressed: matrices and larger (a
  /// vector's bias or norm gains little and is all-reduced in a bucket);
  /// for PowerSGD only those whose factors are smaller than the matrix,
  /// RANK·(n + m) < n·m; for 1-bit Adam every float gradient (the momentum
  /// of all of them is exchanged).
  bool appliesTo(RankedTensorType type) const;
  /// k, the elements top-k keeps of n: ceil(R·n), at least 1.
  int64_t keptElements(int64_t numElements) const;
  /// QSGD's s, the nonzero levels per sign: 2^(BITS-1) - 1.
  int64_t levels() const { return (int64_t(1) << (bits - 1)) - 1; }
  /// Whether it carries an error-feedback residual from step to step.
  bool hasResidual() const {
    return kind == Kind::TopK || kind == Kind::PowerSGD || kind == Kind::OneBit;
  }
  /// Whether it draws random numbers (from the step's `rng`).
  bool isStochastic() const { return kind == Kind::QSGD; }
};

/// PowerSGD's view of a gradient of `type` as a matrix: [dim 0, the rest].
std::pair<int64_t, int64_t> powerSGDMatrixShape(RankedTensorType type);

/// The seed a stochastic compressor uses for the gradient of parameter
/// `name`: FNV-1a (64-bit) of the name, so that every parameter draws its
/// own stream and a test can recompute it.
int64_t compressionSeed(llvm::StringRef name);

/// PowerSGD's first product for one gradient: M = grad + residual as a
/// matrix [n, m] and P = M·Q, with Q the warm-started `qState` [m, RANK],
/// or a uniform draw in [-0.5, 0.5) seeded by compressionSeed(`name`) (the
/// same on every rank) while the state is all zero (the first step).
struct PowerSGDProjection {
  RankedTensorType type;
  Value matrix, p;
};
PowerSGDProjection powerSGDProject(GradientBuilder &g, Value grad,
                                   Value residual, Value qState,
                                   llvm::StringRef name);

/// The columns of `p` [n, r] made orthonormal by Gram-Schmidt, in order (a
/// zero column stays zero).
Value orthonormalColumns(GradientBuilder &g, Value p);

/// One gradient's part of a compressed exchange, built where the gradient
/// is ready and not sent yet.
struct CompressedPiece {
  /// The gradient's type.
  RankedTensorType type;
  /// Top-k: the kept i64 indices and their values [k]; QSGD: the i8 levels
  /// [buckets·d] and the f32 bucket norms [buckets].
  Value first, second;
  /// Top-k's next error-feedback residual: what this rank did not send.
  Value residual;
};

/// Compresses this rank's `grad`: for top-k, `residual` (flat) is added
/// first; QSGD draws from `rng` (the step's seed offset, an i64 scalar)
/// with compressionSeed(`name`).
CompressedPiece compressGradient(GradientBuilder &g, Value grad, Value residual,
                                 Value rng, const GradientCompression &method,
                                 llvm::StringRef name);

/// The exchange of a bucket of compressed gradients: their pieces
/// concatenated and all-gathered asynchronously, two collectives for the
/// whole bucket.
struct CompressedExchange {
  GradientCompression method;
  /// The async all-gathers in flight.
  Value first, second;
  /// Per gradient: its type and the widths of its two pieces.
  SmallVector<RankedTensorType> types;
  SmallVector<int64_t> firstWidths, secondWidths;
};

/// Starts the exchange of `pieces` over `axes` (N ranks). The two
/// all-gathers carry `bucket`, `serves`, `tsr.compression`, a `tsr.reason`,
/// and the first `tsr.dense_bytes`, the bytes an all-reduce of the
/// gradients would carry.
CompressedExchange startCompressedExchange(GradientBuilder &g,
                                           ArrayRef<CompressedPiece> pieces,
                                           const GradientCompression &method,
                                           int64_t numRanks, ArrayAttr axes,
                                           ArrayRef<StringRef> serves,
                                           IntegerAttr bucket);

/// Waits for `exchange` and returns, per gradient, the mean of the N ranks'
/// compressed gradients, dense, in the gradient's shape.
SmallVector<Value> finishCompressedExchange(GradientBuilder &g,
                                            const CompressedExchange &exchange,
                                            int64_t numRanks);

} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_PARALLEL_COMPRESSION_H
