//===- Compression.cpp - Gradient compression on the dp axis --------------===//
//
// Top-k sparsification with error feedback (Stich, Cordonnier and Jaggi,
// "Sparsified SGD with Memory", 2018; Lin et al., "Deep Gradient
// Compression", 2018): each rank adds what it left out last step to its
// gradient, sends the k elements of largest magnitude as (index, value)
// pairs and keeps the rest for the next step. The pairs of all ranks are
// all-gathered, so every rank rebuilds the same dense mean. The ops are
// ordinary tsr ops: an unsorted tsr.topk (a radix select, O(bits · n)), a
// gather, a scatter and two all-gathers.
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
  auto [method, arg] = spec.split(':');
  if (method != "topk")
    return std::nullopt;
  double ratio;
  if (arg.getAsDouble(ratio) || !(ratio > 0) || ratio > 1)
    return std::nullopt;
  c.kind = Kind::TopK;
  c.ratio = ratio;
  return c;
}

std::string GradientCompression::str() const {
  if (kind == Kind::None)
    return "none";
  return llvm::formatv("topk:{0}", ratio).str();
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

CompressedExchange mlir::tessera::startCompressedExchange(
    GradientBuilder &g, Value grad, Value residual,
    const GradientCompression &method, int64_t numRanks, ArrayAttr axes,
    llvm::StringRef serves) {
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
  Type indexWire = b.getI64Type();
  if (n <= std::numeric_limits<int32_t>::max()) {
    indexWire = b.getI32Type();
    indices = g.castTo(indices, indexWire);
  }
  StringAttr spec = b.getStringAttr(method.str());
  ArrayAttr servesAttr = b.getStrArrayAttr({serves});
  auto gather = [&](Value v, Type wireElem, StringRef what) {
    auto op = tsr::AllGatherOp::create(
        b, loc, RankedTensorType::get({numRanks * k}, wireElem), v,
        b.getI64IntegerAttr(0), axes, servesAttr, IntegerAttr(), IntegerAttr(),
        b.getUnitAttr());
    op->setAttr(tsr::attr::kCompression, spec);
    op->setAttr(tsr::attr::kReason, b.getStringAttr(llvm::formatv(
                                        "{0}: the {1} of the {2} of {3} "
                                        "gradient elements of '{4}' "
                                        "each rank sends",
                                        spec.getValue(), what, k, n, serves)));
    return op;
  };
  CompressedExchange exchange;
  exchange.indices = gather(indices, indexWire, "indices").getResult();
  auto valuesGather = gather(values, elem, "values");
  valuesGather->setAttr(
      tsr::attr::kDenseBytes,
      b.getI64IntegerAttr(n * int64_t(elem.getIntOrFloatBitWidth() / 8)));
  exchange.values = valuesGather.getResult();
  exchange.residual = next;
  return exchange;
}

Value mlir::tessera::finishCompressedExchange(
    GradientBuilder &g, const CompressedExchange &exchange,
    RankedTensorType type, int64_t numRanks) {
  OpBuilder &b = g.builder();
  Location loc = g.getLoc();
  Value indices =
      tsr::WaitOp::create(b, loc, exchange.indices.getType(), exchange.indices);
  Value values =
      tsr::WaitOp::create(b, loc, exchange.values.getType(), exchange.values);
  if (!getElementTypeOrSelf(indices.getType()).isInteger(64))
    indices = g.castTo(indices, b.getI64Type());
  int64_t n = type.getNumElements();
  Type elem = type.getElementType();
  // Several ranks may send the same index: their values add up.
  Value dense = tsr::ScatterElementsOp::create(
      b, loc, RankedTensorType::get({n}, elem),
      g.splat(RankedTensorType::get({n}, elem), 0.0), indices, values, 0,
      tsr::ScatterReduction::add);
  if (numRanks > 1)
    dense = g.mul(dense, g.scalar(elem, 1.0 / double(numRanks)));
  return g.reshape(dense, type.getShape());
}
