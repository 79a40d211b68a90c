//===- Compression.cpp - Gradient compression on the dp axis --------------===//
//
// Two compressors, each built from ordinary tsr ops and all-gathers:
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
// The pairs, or levels and norms, of all ranks are all-gathered, so every
// rank rebuilds the same dense mean.
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
  return std::nullopt;
}

std::string GradientCompression::str() const {
  switch (kind) {
  case Kind::None:
    return "none";
  case Kind::TopK:
    return llvm::formatv("topk:{0}", ratio).str();
  case Kind::QSGD:
    return llvm::formatv("qsgd:{0}:{1}", bits, bucket).str();
  }
  llvm_unreachable("unknown compressor");
}

bool GradientCompression::appliesTo(RankedTensorType type) const {
  return kind != Kind::None && type.getRank() >= 2 &&
         isa<FloatType>(type.getElementType());
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

/// An async all-gather over `axes` of `v` (flat), tagged as part of the
/// compressed exchange of `serves`.
tsr::AllGatherOp gatherCompressed(OpBuilder &b, Location loc, Value v,
                                  int64_t numRanks, ArrayAttr axes,
                                  StringRef serves, StringAttr spec,
                                  const Twine &reason) {
  auto type = cast<RankedTensorType>(v.getType());
  auto op = tsr::AllGatherOp::create(
      b, loc,
      RankedTensorType::get({numRanks * type.getDimSize(0)},
                            type.getElementType()),
      v, b.getI64IntegerAttr(0), axes, b.getStrArrayAttr({serves}),
      IntegerAttr(), IntegerAttr(), b.getUnitAttr());
  op->setAttr(tsr::attr::kCompression, spec);
  op->setAttr(tsr::attr::kReason,
              b.getStringAttr(spec.getValue() + ": " + reason));
  return op;
}

void setDenseBytes(Operation *op, RankedTensorType grad) {
  OpBuilder b(op);
  op->setAttr(tsr::attr::kDenseBytes,
              b.getI64IntegerAttr(grad.getNumElements() *
                                  int64_t(grad.getElementTypeBitWidth() / 8)));
}

CompressedExchange startTopK(GradientBuilder &g, Value grad, Value residual,
                             const GradientCompression &method,
                             int64_t numRanks, ArrayAttr axes,
                             StringRef serves) {
  OpBuilder &b = g.builder();
  Location loc = g.getLoc();
  auto type = cast<RankedTensorType>(grad.getType());
  int64_t n = type.getNumElements(), k = method.keptElements(n);
  Type elem = type.getElementType();
  Value acc = g.add(g.reshape(grad, {n}), residual);

  auto top = tsr::TopKOp::create(b, loc, tsr::AbsOp::create(b, loc, acc), k,
                                 /*axis=*/0, /*largest=*/true,
                                 /*sorted=*/false);
  Value indices = top.getIndices();
  Value values = tsr::GatherElementsOp::create(
      b, loc, RankedTensorType::get({k}, elem), acc, indices, 0);
  // The residual is what was not sent: the sum with the kept ones zeroed.
  Value next = tsr::ScatterElementsOp::create(
      b, loc, acc.getType(), acc, indices,
      g.splat(RankedTensorType::get({k}, elem), 0.0), 0,
      tsr::ScatterReduction::none);
  // Indices of a gradient below 2^31 elements travel as i32.
  if (n <= std::numeric_limits<int32_t>::max())
    indices = g.castTo(indices, b.getI32Type());
  StringAttr spec = b.getStringAttr(method.str());
  auto what = [&](StringRef part) {
    return llvm::formatv("the {0} of the {1} of {2} gradient elements of "
                         "'{3}' each rank sends",
                         part, k, n, serves)
        .str();
  };
  CompressedExchange exchange;
  exchange.method = method;
  exchange.first = gatherCompressed(b, loc, indices, numRanks, axes, serves,
                                    spec, what("indices"));
  auto valuesGather = gatherCompressed(b, loc, values, numRanks, axes, serves,
                                       spec, what("values"));
  setDenseBytes(valuesGather, type);
  exchange.second = valuesGather;
  exchange.residual = next;
  return exchange;
}

CompressedExchange startQSGD(GradientBuilder &g, Value grad, Value rng,
                             const GradientCompression &method,
                             int64_t numRanks, ArrayAttr axes,
                             StringRef serves) {
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
      b.getI64IntegerAttr(compressionSeed(serves)));
  Value up = g.select(g.less(u, g.sub(a, floor)), one, zero);
  Value level = g.mul(tsr::SignOp::create(b, loc, v), g.add(floor, up));
  Value levels = g.castTo(g.reshape(level, {buckets * d}), b.getI8Type());
  StringAttr spec = b.getStringAttr(method.str());
  CompressedExchange exchange;
  exchange.method = method;
  auto levelsGather = gatherCompressed(
      b, loc, levels, numRanks, axes, serves, spec,
      llvm::formatv("the int8 levels of the {0} gradient elements of '{1}' "
                    "({2} buckets, padded to {3})",
                    n, serves, buckets, buckets * d));
  setDenseBytes(levelsGather, type);
  exchange.first = levelsGather;
  exchange.second = gatherCompressed(
      b, loc, g.reshape(norm, {buckets}), numRanks, axes, serves, spec,
      llvm::formatv("the norms of the {0} buckets of '{1}'", buckets, serves));
  return exchange;
}

} // namespace

CompressedExchange mlir::tessera::startCompressedExchange(
    GradientBuilder &g, Value grad, Value residual, Value rng,
    const GradientCompression &method, int64_t numRanks, ArrayAttr axes,
    llvm::StringRef serves) {
  if (method.kind == GradientCompression::Kind::QSGD)
    return startQSGD(g, grad, rng, method, numRanks, axes, serves);
  return startTopK(g, grad, residual, method, numRanks, axes, serves);
}

Value mlir::tessera::finishCompressedExchange(
    GradientBuilder &g, const CompressedExchange &exchange,
    RankedTensorType type, int64_t numRanks) {
  OpBuilder &b = g.builder();
  Location loc = g.getLoc();
  Value first =
      tsr::WaitOp::create(b, loc, exchange.first.getType(), exchange.first);
  Value second =
      tsr::WaitOp::create(b, loc, exchange.second.getType(), exchange.second);
  int64_t n = type.getNumElements();
  Type elem = type.getElementType();
  Value dense;
  if (exchange.method.kind == GradientCompression::Kind::QSGD) {
    // Every rank's levels times its bucket norms / s, summed over ranks.
    Type f32 = b.getF32Type();
    int64_t buckets =
        cast<RankedTensorType>(second.getType()).getDimSize(0) / numRanks;
    int64_t d = cast<RankedTensorType>(first.getType()).getDimSize(0) /
                (numRanks * buckets);
    Value levels = g.reshape(g.castTo(first, f32), {numRanks, buckets, d});
    Value norms = g.reshape(second, {numRanks, buckets, 1});
    Value sum = g.reduceSum(g.mul(levels, norms), {0}, /*keepdims=*/false);
    dense = g.reshape(sum, {buckets * d});
    if (buckets * d != n)
      dense = g.slice(dense, {0}, {n}, {1});
    dense = g.mul(dense, g.scalar(f32, 1.0 / double(exchange.method.levels())));
    dense = g.castTo(dense, elem);
  } else {
    Value indices = first;
    if (!getElementTypeOrSelf(indices.getType()).isInteger(64))
      indices = g.castTo(indices, b.getI64Type());
    // Several ranks may send the same index: their values add up.
    dense = tsr::ScatterElementsOp::create(
        b, loc, RankedTensorType::get({n}, elem),
        g.splat(RankedTensorType::get({n}, elem), 0.0), indices, second, 0,
        tsr::ScatterReduction::add);
  }
  if (numRanks > 1)
    dense = g.mul(dense, g.scalar(elem, 1.0 / double(numRanks)));
  return g.reshape(dense, type.getShape());
}
