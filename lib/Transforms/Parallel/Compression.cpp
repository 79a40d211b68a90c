//===- Compression.cpp - Gradient compression on the dp axis --------------===//
//
// Three compressors, each built from ordinary tsr ops and collectives:
//
// - Top-k sparsification with error feedback (Stich, Cordonnier and Jaggi,
//   "Sparsified SGD with Memory", 2018; Lin et al., "Deep Gradient
//   Compression", 2018): each rank adds what it left out last step to its
//   gradient, sends the k elements of largest magnitude as (index, value)
//   pairs (an unsorted tsr.topk, a radix select, O(bits · n)) and keeps the
//   rest for the next step.
// - QSGD (Alistarh et al., "QSGD: Communication-Efficient SGD via Gradient
//   Quantization and Encoding", 2017): each bucket of d elements becomes
//   its norm and, per element, a sign and one of s levels, rounded up or
//   down at random with the probabilities that keep it unbiased
//   (E[Q(v)] = v); the levels travel as int8, the norms as floats.
//
// - PowerSGD (Vogels, Karimireddy and Jaggi, "PowerSGD: Practical
//   Low-Rank Gradient Compression for Distributed Optimization", 2019):
//   one power-iteration step per gradient matrix M, P = M·Q and Q = Mᵀ·P̂,
//   warm-started from the previous step's Q, with error feedback.
//
// Top-k's pairs and QSGD's levels and norms of all ranks are all-gathered,
// so every rank rebuilds the same dense mean; PowerSGD's factors are
// all-reduced (tsr-data-parallel orchestrates its two rounds).
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Parallel/Compression.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tessera;

std::optional<GradientCompression>
GradientCompression::parse(llvm::StringRef spec) {
  GradientCompression c;
  if (spec == "none")
    return c;
  SmallVector<StringRef> parts;
  spec.split(parts, ':');
  if (parts[0] == "topk" && parts.size() == 2) {
    double ratio;
    if (parts[1].getAsDouble(ratio) || !(ratio > 0) || ratio > 1)
      return std::nullopt;
    c.kind = Kind::TopK;
    c.ratio = ratio;
    c.ratioText = parts[1].str();
    return c;
  }
  if (parts[0] == "qsgd" && (parts.size() == 2 || parts.size() == 3)) {
    if (parts[1].getAsInteger(10, c.bits) || c.bits < 2 || c.bits > 8)
      return std::nullopt;
    if (parts.size() == 3 &&
        (parts[2].getAsInteger(10, c.bucket) || c.bucket < 1))
      return std::nullopt;
    c.kind = Kind::QSGD;
    return c;
  }
  if (parts[0] == "powersgd" && parts.size() == 2) {
    if (parts[1].getAsInteger(10, c.rank) || c.rank < 1)
      return std::nullopt;
    c.kind = Kind::PowerSGD;
    return c;
  }
  if (parts[0] == "onebit" && parts.size() <= 3) {
    if (parts.size() >= 2 &&
        (parts[1].getAsInteger(10, c.warmup) || c.warmup < 1))
      return std::nullopt;
    if (parts.size() == 3) {
      if (parts[2].getAsDouble(c.beta1) || !(c.beta1 >= 0) || c.beta1 >= 1)
        return std::nullopt;
      c.beta1Text = parts[2].str();
    }
    c.kind = Kind::OneBit;
    return c;
  }
  return std::nullopt;
}

std::string GradientCompression::str() const {
  switch (kind) {
  case Kind::None:
    return "none";
  case Kind::TopK:
    return "topk:" + ratioText;
  case Kind::QSGD:
    return llvm::formatv("qsgd:{0}:{1}", bits, bucket).str();
  case Kind::PowerSGD:
    return llvm::formatv("powersgd:{0}", rank).str();
  case Kind::OneBit:
    return llvm::formatv("onebit:{0}:{1}", warmup, beta1Text).str();
  }
  llvm_unreachable("unknown compressor");
}

bool GradientCompression::appliesTo(RankedTensorType type) const {
  if (kind == Kind::OneBit)
    return isa<FloatType>(type.getElementType());
  if (kind == Kind::None || type.getRank() < 2 ||
      !isa<FloatType>(type.getElementType()))
    return false;
  if (kind != Kind::PowerSGD)
    return true;
  auto [n, m] = powerSGDMatrixShape(type);
  return rank * (n + m) < n * m;
}

std::pair<int64_t, int64_t>
mlir::tessera::powerSGDMatrixShape(RankedTensorType type) {
  int64_t n = type.getDimSize(0);
  return {n, type.getNumElements() / n};
}

int64_t GradientCompression::keptElements(int64_t numElements) const {
  if (kind == Kind::None)
    return numElements;
  auto k = int64_t(std::ceil(ratio * double(numElements)));
  return std::clamp<int64_t>(k, 1, numElements);
}

int64_t mlir::tessera::compressionSeed(llvm::StringRef name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return int64_t(hash);
}

namespace {

CompressedPiece compressTopK(GradientBuilder &g, Value grad, Value residual,
                             const GradientCompression &method) {
  OpBuilder &b = g.builder();
  Location loc = g.getLoc();
  auto type = cast<RankedTensorType>(grad.getType());
  int64_t n = type.getNumElements(), k = method.keptElements(n);
  Type elem = type.getElementType();
  Value acc = g.add(g.reshape(grad, {n}), residual);
  auto top = tsr::TopKOp::create(b, loc, tsr::AbsOp::create(b, loc, acc), k,
                                 /*axis=*/0, /*largest=*/true,
                                 /*sorted=*/false);
  CompressedPiece piece;
  piece.type = type;
  piece.first = top.getIndices();
  piece.second = tsr::GatherElementsOp::create(
      b, loc, RankedTensorType::get({k}, elem), acc, piece.first, 0);
  // The residual is what was not sent: the sum with the kept ones zeroed.
  piece.residual = tsr::ScatterElementsOp::create(
      b, loc, acc.getType(), acc, piece.first,
      g.splat(RankedTensorType::get({k}, elem), 0.0), 0,
      tsr::ScatterReduction::none);
  return piece;
}

CompressedPiece compressQSGD(GradientBuilder &g, Value grad, Value rng,
                             const GradientCompression &method,
                             StringRef name) {
  OpBuilder &b = g.builder();
  Location loc = g.getLoc();
  auto type = cast<RankedTensorType>(grad.getType());
  int64_t n = type.getNumElements(), d = std::min(method.bucket, n);
  int64_t buckets = llvm::divideCeil(n, d);
  Type f32 = b.getF32Type();
  // [buckets, d], zero-padded.
  Value v = g.castTo(g.reshape(grad, {n}), f32);
  if (buckets * d != n)
    v = tsr::PadOp::create(
        b, loc, v, b.getDenseI64ArrayAttr({0, buckets * d - n}),
        tsr::PadModeAttr::get(b.getContext(), tsr::PadMode::constant),
        b.getF64FloatAttr(0));
  v = g.reshape(v, {buckets, d});
  Value norm = g.sqrt(g.reduceSum(g.mul(v, v), {1}, /*keepdims=*/true));
  Value zero = g.scalar(f32, 0.0), one = g.scalar(f32, 1.0);
  Value safe = g.select(g.greater(norm, zero), norm, one);
  double s = double(method.levels());
  // a = |v|/‖v‖·s in [0, s]: level floor(a), plus one with probability
  // a − floor(a).
  Value a = g.mul(g.div(tsr::AbsOp::create(b, loc, v), safe), g.scalar(f32, s));
  Value floor = tsr::FloorOp::create(b, loc, a);
  Value u = tsr::RandomUniformOp::create(
      b, loc, RankedTensorType::get({buckets, d}, f32), rng,
      b.getI64IntegerAttr(compressionSeed(name)));
  Value up = g.select(g.less(u, g.sub(a, floor)), one, zero);
  Value level = g.mul(tsr::SignOp::create(b, loc, v), g.add(floor, up));
  CompressedPiece piece;
  piece.type = type;
  piece.first = g.castTo(g.reshape(level, {buckets * d}), b.getI8Type());
  piece.second = g.reshape(norm, {buckets});
  return piece;
}

} // namespace

PowerSGDProjection mlir::tessera::powerSGDProject(GradientBuilder &g,
                                                  Value grad, Value residual,
                                                  Value qState,
                                                  llvm::StringRef name) {
  OpBuilder &b = g.builder();
  Location loc = g.getLoc();
  auto type = cast<RankedTensorType>(grad.getType());
  auto [n, m] = powerSGDMatrixShape(type);
  auto qType = cast<RankedTensorType>(qState.getType());
  Type elem = type.getElementType();
  Value matrix = g.reshape(g.add(g.reshape(grad, {n * m}), residual), {n, m});
  // The first step starts from a draw that every rank makes alike.
  Value draw = g.sub(
      tsr::RandomUniformOp::create(b, loc, qType, Value(),
                                   b.getI64IntegerAttr(compressionSeed(name))),
      g.scalar(elem, 0.5));
  Value fresh =
      g.equal(g.reduceSum(g.mul(qState, qState), {0, 1}, /*keepdims=*/false),
              g.scalar(elem, 0.0));
  Value q = g.select(fresh, draw, qState);
  return {type, matrix, g.matmul(matrix, q)};
}

Value mlir::tessera::orthonormalColumns(GradientBuilder &g, Value p) {
  auto type = cast<RankedTensorType>(p.getType());
  int64_t n = type.getDimSize(0), r = type.getDimSize(1);
  Type elem = type.getElementType();
  SmallVector<Value> columns;
  for (int64_t j = 0; j < r; ++j) {
    Value col = g.slice(p, {0, j}, {n, j + 1}, {1, 1});
    for (Value q : columns)
      col = g.sub(col, g.mul(g.reduceSum(g.mul(q, col), {0, 1},
                                         /*keepdims=*/false),
                             q));
    Value norm = g.sqrt(g.reduceSum(g.mul(col, col), {0, 1}, false));
    Value zero = g.scalar(elem, 0.0);
    Value positive = g.greater(norm, zero);
    columns.push_back(g.select(
        positive, g.div(col, g.select(positive, norm, g.scalar(elem, 1.0))),
        zero));
  }
  if (columns.size() == 1)
    return columns.front();
  OpBuilder &b = g.builder();
  return tsr::ConcatOp::create(b, g.getLoc(), columns, b.getI64IntegerAttr(1));
}

namespace {

/// `parts` (flat) as one flat tensor.
Value concatFlat(GradientBuilder &g, ArrayRef<Value> parts) {
  if (parts.size() == 1)
    return parts.front();
  OpBuilder &b = g.builder();
  return tsr::ConcatOp::create(b, g.getLoc(), parts, b.getI64IntegerAttr(0));
}

/// Columns [offset, offset + width) of the gathered [N·total] as a flat
/// [N·width] (rank-major): one gradient's part of every rank's piece.
Value columnsOf(GradientBuilder &g, Value gathered, int64_t numRanks,
                int64_t total, int64_t offset, int64_t width) {
  if (width == total)
    return gathered;
  Value rows = g.reshape(gathered, {numRanks, total});
  return g.reshape(
      g.slice(rows, {0, offset}, {numRanks, offset + width}, {1, 1}),
      {numRanks * width});
}

} // namespace

CompressedPiece
mlir::tessera::compressGradient(GradientBuilder &g, Value grad, Value residual,
                                Value rng, const GradientCompression &method,
                                llvm::StringRef name) {
  if (method.kind == GradientCompression::Kind::QSGD)
    return compressQSGD(g, grad, rng, method, name);
  return compressTopK(g, grad, residual, method);
}

CompressedExchange mlir::tessera::startCompressedExchange(
    GradientBuilder &g, ArrayRef<CompressedPiece> pieces,
    const GradientCompression &method, int64_t numRanks, ArrayAttr axes,
    ArrayRef<StringRef> serves, IntegerAttr bucket) {
  OpBuilder &b = g.builder();
  Location loc = g.getLoc();
  CompressedExchange exchange;
  exchange.method = method;
  SmallVector<Value> firsts, seconds;
  int64_t elements = 0, denseBytes = 0, largest = 0;
  for (const CompressedPiece &piece : pieces) {
    exchange.types.push_back(piece.type);
    exchange.firstWidths.push_back(
        cast<RankedTensorType>(piece.first.getType()).getDimSize(0));
    exchange.secondWidths.push_back(
        cast<RankedTensorType>(piece.second.getType()).getDimSize(0));
    firsts.push_back(piece.first);
    seconds.push_back(piece.second);
    elements += piece.type.getNumElements();
    largest = std::max(largest, piece.type.getNumElements());
    denseBytes += piece.type.getNumElements() *
                  int64_t(piece.type.getElementTypeBitWidth() / 8);
  }
  Value first = concatFlat(g, firsts), second = concatFlat(g, seconds);
  int64_t firstWidth = cast<RankedTensorType>(first.getType()).getDimSize(0);
  // Top-k's indices into gradients below 2^31 elements travel as i32.
  if (method.kind == GradientCompression::Kind::TopK &&
      largest <= std::numeric_limits<int32_t>::max())
    first = g.castTo(first, b.getI32Type());
  StringAttr spec = b.getStringAttr(method.str());
  ArrayAttr servesAttr = b.getStrArrayAttr(serves);
  auto gather = [&](Value v, const Twine &reason) {
    auto type = cast<RankedTensorType>(v.getType());
    auto op = tsr::AllGatherOp::create(
        b, loc,
        RankedTensorType::get({numRanks * type.getDimSize(0)},
                              type.getElementType()),
        v, b.getI64IntegerAttr(0), axes, servesAttr, bucket, IntegerAttr(),
        b.getUnitAttr());
    op->setAttr(tsr::attr::kCompression, spec);
    op->setAttr(tsr::attr::kReason,
                b.getStringAttr(spec.getValue() + ": " + reason));
    return op;
  };
  std::string of =
      llvm::formatv("{0} gradient elements of {1} parameter{2}", elements,
                    pieces.size(), pieces.size() == 1 ? "" : "s");
  tsr::AllGatherOp firstGather, secondGather;
  if (method.kind == GradientCompression::Kind::QSGD) {
    firstGather = gather(first, "the int8 levels of the " + of + " (" +
                                    Twine(firstWidth) + " with padding)");
    secondGather = gather(second, "the norms of their buckets");
  } else {
    firstGather = gather(first, "the indices of the " + Twine(firstWidth) +
                                    " of the " + of + " each rank sends");
    secondGather = gather(second, "their values");
  }
  firstGather->setAttr(tsr::attr::kDenseBytes, b.getI64IntegerAttr(denseBytes));
  exchange.first = firstGather;
  exchange.second = secondGather;
  return exchange;
}

SmallVector<Value> mlir::tessera::finishCompressedExchange(
    GradientBuilder &g, const CompressedExchange &exchange, int64_t numRanks) {
  OpBuilder &b = g.builder();
  Location loc = g.getLoc();
  Value first =
      tsr::WaitOp::create(b, loc, exchange.first.getType(), exchange.first);
  Value second =
      tsr::WaitOp::create(b, loc, exchange.second.getType(), exchange.second);
  int64_t firstTotal = 0, secondTotal = 0;
  for (auto [w1, w2] : llvm::zip(exchange.firstWidths, exchange.secondWidths)) {
    firstTotal += w1;
    secondTotal += w2;
  }
  bool qsgd = exchange.method.kind == GradientCompression::Kind::QSGD;
  Type f32 = b.getF32Type();
  if (qsgd)
    first = g.castTo(first, f32);
  else if (!getElementTypeOrSelf(first.getType()).isInteger(64))
    first = g.castTo(first, b.getI64Type());
  SmallVector<Value> means;
  int64_t firstOffset = 0, secondOffset = 0;
  for (auto [type, w1, w2] :
       llvm::zip(exchange.types, exchange.firstWidths, exchange.secondWidths)) {
    Value mine1 = columnsOf(g, first, numRanks, firstTotal, firstOffset, w1);
    Value mine2 = columnsOf(g, second, numRanks, secondTotal, secondOffset, w2);
    firstOffset += w1;
    secondOffset += w2;
    int64_t n = type.getNumElements();
    Type elem = type.getElementType();
    Value dense;
    if (qsgd) {
      // Every rank's levels times its bucket norms / s, summed over ranks.
      int64_t buckets = w2, d = w1 / w2;
      Value levels = g.reshape(mine1, {numRanks, buckets, d});
      Value norms = g.reshape(mine2, {numRanks, buckets, 1});
      Value sum = g.reduceSum(g.mul(levels, norms), {0}, /*keepdims=*/false);
      dense = g.reshape(sum, {buckets * d});
      if (buckets * d != n)
        dense = g.slice(dense, {0}, {n}, {1});
      dense =
          g.mul(dense, g.scalar(f32, 1.0 / double(exchange.method.levels())));
      dense = g.castTo(dense, elem);
    } else {
      // Several ranks may send the same index: their values add up.
      dense = tsr::ScatterElementsOp::create(
          b, loc, RankedTensorType::get({n}, elem),
          g.splat(RankedTensorType::get({n}, elem), 0.0), mine1, mine2, 0,
          tsr::ScatterReduction::add);
    }
    if (numRanks > 1)
      dense = g.mul(dense, g.scalar(elem, 1.0 / double(numRanks)));
    means.push_back(g.reshape(dense, type.getShape()));
  }
  return means;
}
