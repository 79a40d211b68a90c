//===- NNRules.cpp - Gradients of convolution, pooling and the rest -------===//
//
// Rules for conv, the poolings, batch_norm, einsum, cumsum, topk, the
// element gathers and scatters, trilu, tile, pad, slice and the
// mixture-of-experts dispatch and combine. Convolution and
// max pooling use the backward ops of TsrGradOps.td; average pooling is the
// transposed depthwise convolution of dy/count with a kernel of ones; the
// other rules are made of forward tsr ops: the adjoint of a gather is a
// scatter-add, of a strided slice an interior pad (a reshape, a pad of the
// new unit dimension and a reshape back), of an edge or reflect pad slices
// summed onto the border. Every rule is exact, with the forward op's
// conventions for ties (max_pool: the first maximum in the window).
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Autodiff/GradientRules.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/Matchers.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <map>
#include <type_traits>

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// Zeros of `v`'s type.
Value zerosLike(GradientBuilder &g, Value v) {
  return g.splat(getTensorType(v), 0.0);
}

/// x[start:limit:step] along dimension `dim`, whole along the others.
Value sliceDim(GradientBuilder &g, Value x, int64_t dim, int64_t start,
               int64_t limit, int64_t step = 1) {
  ArrayRef<int64_t> shape = getTensorType(x).getShape();
  SmallVector<int64_t> starts(shape.size(), 0), limits(shape),
      steps(shape.size(), 1);
  starts[dim] = start;
  limits[dim] = limit;
  steps[dim] = step;
  return g.slice(x, starts, limits, steps);
}

/// Zero padding by `pads` (begin pads then end pads; negative ones crop).
Value zeroPad(GradientBuilder &g, Value x, ArrayRef<int64_t> pads) {
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return x;
  OpBuilder &b = g.builder();
  return tsr::PadOp::create(
      b, g.getLoc(), x, b.getDenseI64ArrayAttr(pads),
      tsr::PadModeAttr::get(b.getContext(), tsr::PadMode::constant),
      b.getF64FloatAttr(0.0));
}

/// Zero padding of dimension `dim` only.
Value zeroPadDim(GradientBuilder &g, Value x, int64_t dim, int64_t begin,
                 int64_t end) {
  int64_t rank = getTensorType(x).getRank();
  SmallVector<int64_t> pads(2 * rank, 0);
  pads[dim] = begin;
  pads[rank + dim] = end;
  return zeroPad(g, x, pads);
}

/// scatter_elements(into, indices, updates) along `axis`.
Value scatter(GradientBuilder &g, Value into, Value indices, Value updates,
              int64_t axis, tsr::ScatterReduction reduction) {
  OpBuilder &b = g.builder();
  return tsr::ScatterElementsOp::create(
      b, g.getLoc(), into.getType(), into, indices, updates,
      b.getI64IntegerAttr(axis),
      tsr::ScatterReductionAttr::get(b.getContext(), reduction));
}

Value gatherElements(GradientBuilder &g, Value data, Value indices,
                     int64_t axis) {
  OpBuilder &b = g.builder();
  Type type =
      getTensorType(indices).clone(getElementTypeOrSelf(data.getType()));
  return tsr::GatherElementsOp::create(b, g.getLoc(), type, data, indices,
                                       b.getI64IntegerAttr(axis));
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

LogicalResult convRule(tsr::ConvOp op, GradientBuilder &g,
                       ArrayRef<Value> resultGrads,
                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  OpBuilder &b = g.builder();
  operandGrads[0] = tsr::ConvBackwardDataOp::create(
      b, g.getLoc(), op.getX().getType(), dy, op.getW(), op.getStridesAttr(),
      op.getPadsAttr(), op.getDilationsAttr(), op.getGroupAttr());
  operandGrads[1] = tsr::ConvBackwardFilterOp::create(
      b, g.getLoc(), op.getW().getType(), op.getX(), dy, op.getStridesAttr(),
      op.getPadsAttr(), op.getDilationsAttr(), op.getGroupAttr());
  if (op.getBias()) {
    SmallVector<int64_t> axes = {0};
    llvm::append_range(axes,
                       llvm::seq<int64_t>(2, getTensorType(dy).getRank()));
    operandGrads[2] = g.reduceSum(dy, axes, /*keepdims=*/false);
  }
  return success();
}

LogicalResult maxPoolRule(tsr::MaxPoolOp op, GradientBuilder &g,
                          ArrayRef<Value> resultGrads,
                          SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  operandGrads[0] = tsr::MaxPoolGradOp::create(
      g.builder(), g.getLoc(), op.getX().getType(), op.getX(), dy,
      op.getKernelShapeAttr(), op.getStridesAttr(), op.getPadsAttr(),
      op.getDilationsAttr(), op.getCeilModeAttr());
  return success();
}

/// Each window's dy divided by the number of elements it averaged, then
/// spread over the window: the transposed depthwise convolution with a
/// kernel of ones. The end pads become what the last window reaches (the
/// extra ceil_mode padding reads nothing, and any input it skips gets 0).
LogicalResult avgPoolRule(tsr::AvgPoolOp op, GradientBuilder &g,
                          ArrayRef<Value> resultGrads,
                          SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  RankedTensorType xType = getTensorType(op.getX());
  Type elem = xType.getElementType();
  ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                    pads = op.getPads(), dilations = op.getDilations();
  ArrayRef<int64_t> out = getTensorType(dy).getShape().drop_front(2);
  int64_t k = kernel.size(), channels = xType.getDimSize(1);

  // The separable per-position counts, as the lowering computes them.
  SmallVector<SmallVector<int64_t>> counts(k);
  SmallVector<int64_t> convPads(pads);
  for (int64_t i = 0; i < k; ++i) {
    int64_t in = xType.getDimSize(2 + i);
    int64_t first = op.getCountIncludePad() ? -pads[i] : 0;
    int64_t limit = op.getCountIncludePad() ? in + pads[k + i] : in;
    for (int64_t o = 0; o < out[i]; ++o) {
      int64_t c = 0;
      for (int64_t j = 0; j < kernel[i]; ++j) {
        int64_t h = o * strides[i] - pads[i] + j * dilations[i];
        c += h >= first && h < limit;
      }
      counts[i].push_back(c);
    }
    int64_t needed =
        (out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1;
    convPads[k + i] = std::max<int64_t>(0, needed - in - pads[i]);
  }
  SmallVector<double> inverse;
  for (int64_t flat = 0, e = computeProduct(out); flat < e; ++flat) {
    int64_t rest = flat, c = 1;
    for (int64_t i = k - 1; i >= 0; --i) {
      c *= counts[i][rest % out[i]];
      rest /= out[i];
    }
    inverse.push_back(c == 0 ? 0.0 : 1.0 / double(c));
  }
  SmallVector<Attribute> values;
  for (double v : inverse)
    values.push_back(FloatAttr::get(elem, v));
  OpBuilder &b = g.builder();
  Value scale = tsr::ConstantOp::create(
      b, g.getLoc(),
      DenseElementsAttr::get(RankedTensorType::get(out, elem), values));

  SmallVector<int64_t> onesShape = {channels, 1};
  llvm::append_range(onesShape, kernel);
  Value ones = g.splat(RankedTensorType::get(onesShape, elem), 1.0);
  operandGrads[0] = tsr::ConvBackwardDataOp::create(
      b, g.getLoc(), xType, g.mul(dy, scale), ones, op.getStridesAttr(),
      b.getDenseI64ArrayAttr(convPads), op.getDilationsAttr(),
      b.getI64IntegerAttr(channels));
  return success();
}

/// y = scale·(x − mean)·r + bias per channel, r = 1/√(var + ε).
LogicalResult batchNormRule(tsr::BatchNormOp op, GradientBuilder &g,
                            ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  Value x = op.getX(), scale = op.getScale();
  RankedTensorType xType = getTensorType(x);
  int64_t rank = xType.getRank();
  SmallVector<int64_t> channelShape(rank, 1);
  channelShape[1] = xType.getDimSize(1);
  auto perChannel = [&](Value v) { return g.reshape(v, channelShape); };
  SmallVector<int64_t> axes = {0};
  llvm::append_range(axes, llvm::seq<int64_t>(2, rank));

  Value r = tsr::ReciprocalOp::create(
      g.builder(), g.getLoc(),
      g.sqrt(g.add(op.getVar(),
                   g.scalarLike(x, op.getEpsilon().convertToDouble()))));
  Value scaleR = g.mul(scale, r);
  Value centred = g.sub(x, perChannel(op.getMean()));
  Value sumDy = g.reduceSum(dy, axes, /*keepdims=*/false);
  Value sumDyXc = g.reduceSum(g.mul(dy, centred), axes, /*keepdims=*/false);
  operandGrads[0] = g.mul(dy, perChannel(scaleR));
  operandGrads[1] = g.mul(sumDyXc, r);
  operandGrads[2] = sumDy;
  operandGrads[3] = g.neg(g.mul(sumDy, scaleR));
  // ∂y/∂var = −½·scale·(x − mean)·r³.
  operandGrads[4] =
      g.mul(g.mul(sumDyXc, scaleR), g.mul(g.mul(r, r), g.scalarLike(x, -0.5)));
  return success();
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// The adjoint of operand i is the einsum of dy (output labels) with the
/// other operands, producing operand i's labels. A label repeated in operand
/// i (a diagonal) is renamed on its repeats, each tied to the original by an
/// identity matrix operand; labels that only operand i has are summed over,
/// so their adjoint is broadcast along them.
LogicalResult einsumRule(tsr::EinsumOp op, GradientBuilder &g,
                         ArrayRef<Value> resultGrads,
                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  auto spec = tsr::parseEinsum(op.getEquation(), op.getInputs().size());
  assert(succeeded(spec) && "verified einsum");
  const std::string &output = spec->output;
  for (auto [i, c] : llvm::enumerate(output))
    if (output.find(c, i + 1) != std::string::npos)
      return op.emitOpError("has no gradient rule for the repeated output "
                            "label '")
             << c << "' of '" << op.getEquation() << "'";
  std::string used;
  std::map<char, int64_t> sizes;
  for (auto [value, labels] : llvm::zip(op.getInputs(), spec->inputs))
    for (auto [c, d] : llvm::zip(labels, getTensorType(value).getShape())) {
      used.push_back(c);
      sizes[c] = d;
    }
  // A letter the equation does not use yet, or 0 if none is left.
  auto freshLabel = [&]() -> char {
    for (StringRef range :
         {"abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"})
      for (char c : range)
        if (used.find(c) == std::string::npos) {
          used.push_back(c);
          return c;
        }
    return 0;
  };
  Type elem = getTensorType(dy).getElementType();
  OpBuilder &b = g.builder();

  for (auto [i, operand] : llvm::enumerate(op.getInputs())) {
    SmallVector<Value> inputs = {dy};
    SmallVector<std::string> labels = {output};
    for (auto [j, other] : llvm::enumerate(op.getInputs()))
      if (j != i) {
        inputs.push_back(other);
        labels.push_back(spec->inputs[j]);
      }
    std::string renamed;
    for (char c : spec->inputs[i]) {
      if (renamed.find(c) == std::string::npos) {
        renamed.push_back(c);
        continue;
      }
      char fresh = freshLabel();
      if (!fresh)
        return op.emitOpError("has no gradient rule for '")
               << op.getEquation()
               << "': no letter is left to rename its repeated labels";
      renamed.push_back(fresh);
      int64_t n = sizes[c];
      SmallVector<Attribute> eye;
      for (int64_t r = 0; r < n; ++r)
        for (int64_t col = 0; col < n; ++col)
          eye.push_back(FloatAttr::get(elem, r == col ? 1.0 : 0.0));
      inputs.push_back(tsr::ConstantOp::create(
          b, g.getLoc(),
          DenseElementsAttr::get(RankedTensorType::get({n, n}, elem), eye)));
      labels.push_back({c, fresh});
    }
    std::string available;
    for (const std::string &l : labels)
      available += l;
    std::string target;
    SmallVector<int64_t> keptShape;
    for (auto [c, d] : llvm::zip(renamed, getTensorType(operand).getShape())) {
      bool present = available.find(c) != std::string::npos;
      if (present)
        target.push_back(c);
      keptShape.push_back(present ? d : 1);
    }
    Value grad;
    if (inputs.size() == 1) {
      // dy alone: its labels, permuted.
      SmallVector<int64_t> perm;
      for (char c : target)
        perm.push_back(output.find(c));
      grad = g.transpose(dy, perm);
    } else {
      std::string equation = llvm::join(labels, ",") + "->" + target;
      grad = tsr::EinsumOp::create(b, g.getLoc(), inputs,
                                   b.getStringAttr(equation));
    }
    grad = g.reshape(grad, keptShape);
    operandGrads[i] = g.broadcastTo(grad, getTensorType(operand).getShape());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Scans, selection, gathers and scatters
//===----------------------------------------------------------------------===//

/// A running sum's adjoint is the running sum the other way.
LogicalResult cumsumRule(tsr::CumSumOp op, GradientBuilder &g,
                         ArrayRef<Value> resultGrads,
                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  OpBuilder &b = g.builder();
  operandGrads[0] = tsr::CumSumOp::create(b, g.getLoc(), dy, op.getAxisAttr(),
                                          op.getExclusiveAttr(),
                                          b.getBoolAttr(!op.getReverse()));
  return success();
}

/// The values' adjoint goes back to where they were taken from.
LogicalResult topkRule(tsr::TopKOp op, GradientBuilder &g,
                       ArrayRef<Value> resultGrads,
                       SmallVectorImpl<Value> &operandGrads) {
  Value dv = resultGrads[0];
  if (!dv || !hasFloatElements(dv))
    return success();
  operandGrads[0] = scatter(g, zerosLike(g, op.getX()), op.getIndices(), dv,
                            op.getAxis(), tsr::ScatterReduction::add);
  return success();
}

LogicalResult gatherElementsRule(tsr::GatherElementsOp op, GradientBuilder &g,
                                 ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  operandGrads[0] = scatter(g, zerosLike(g, op.getData()), op.getIndices(), dy,
                            op.getAxis(), tsr::ScatterReduction::add);
  return success();
}

/// Whether `indices`, a constant, sends every update of scatter_elements
/// along `axis` into `dataShape` to its own position (as the lowering
/// normalizes and clamps them).
bool hasDistinctTargets(Value indices, int64_t axis,
                        ArrayRef<int64_t> dataShape) {
  DenseIntElementsAttr attr;
  if (!matchPattern(indices, m_Constant(&attr)))
    return false;
  ArrayRef<int64_t> shape = getTensorType(indices).getShape();
  int64_t size = dataShape[axis];
  llvm::DenseSet<int64_t> seen;
  int64_t flat = 0;
  for (APInt value : attr.getValues<APInt>()) {
    int64_t idx = value.getSExtValue();
    if (idx < 0)
      idx += size;
    idx = std::clamp<int64_t>(idx, 0, std::max<int64_t>(size - 1, 0));
    int64_t rest = flat++, target = 0, stride = 1;
    for (int64_t d = shape.size() - 1; d >= 0; --d) {
      int64_t coord = d == axis ? idx : rest % shape[d];
      rest /= shape[d];
      target += coord * stride;
      stride *= dataShape[d];
    }
    if (!seen.insert(target).second)
      return false;
  }
  return true;
}

/// Without reduction, data's adjoint is dy with the overwritten positions
/// zeroed and an update's adjoint is dy at its target, if no later update
/// overwrote it (the lowering applies updates in row-major order). The
/// winner of every position is found by scattering the updates' own
/// positions, unless the indices are constants without repeats.
LogicalResult scatterElementsRule(tsr::ScatterElementsOp op, GradientBuilder &g,
                                  ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  Value indices = op.getIndices(), updates = op.getUpdates();
  int64_t axis = op.getAxis();
  tsr::ScatterReduction reduction = op.getReduction();
  if (reduction == tsr::ScatterReduction::add) {
    operandGrads[0] = dy;
    operandGrads[2] = gatherElements(g, dy, indices, axis);
    return success();
  }
  if (reduction != tsr::ScatterReduction::none)
    return op.emitOpError("has no gradient rule for reduction '")
           << tsr::stringifyScatterReduction(reduction)
           << "' (none and add have one)";
  operandGrads[0] = scatter(g, dy, indices, zerosLike(g, updates), axis,
                            tsr::ScatterReduction::none);
  Value gathered = gatherElements(g, dy, indices, axis);
  ArrayRef<int64_t> dataShape = getTensorType(op.getData()).getShape();
  if (hasDistinctTargets(indices, axis, dataShape)) {
    operandGrads[2] = gathered;
    return success();
  }
  OpBuilder &b = g.builder();
  RankedTensorType positionType = getTensorType(updates).clone(b.getI64Type());
  SmallVector<int64_t> iota =
      llvm::to_vector(llvm::seq<int64_t>(0, positionType.getNumElements()));
  Value positions = tsr::ConstantOp::create(
      b, g.getLoc(),
      DenseElementsAttr::get(positionType, ArrayRef<int64_t>(iota)));
  Value winners =
      scatter(g, g.splat(RankedTensorType::get(dataShape, b.getI64Type()), -1),
              indices, positions, axis, tsr::ScatterReduction::none);
  Value won = g.equal(gatherElements(g, winners, indices, axis), positions);
  operandGrads[2] = g.select(won, gathered, g.scalarLike(gathered, 0.0));
  return success();
}

//===----------------------------------------------------------------------===//
// Trilu, tile, pad, slice
//===----------------------------------------------------------------------===//

LogicalResult triluRule(tsr::TriluOp op, GradientBuilder &g,
                        ArrayRef<Value> resultGrads,
                        SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  operandGrads[0] = tsr::TriluOp::create(g.builder(), g.getLoc(), dy,
                                         op.getUpperAttr(), op.getKAttr());
  return success();
}

/// Sums the copies: dy as [r0, d0, r1, d1, ...] reduced over the r axes.
LogicalResult tileRule(tsr::TileOp op, GradientBuilder &g,
                       ArrayRef<Value> resultGrads,
                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  ArrayRef<int64_t> shape = getTensorType(op.getX()).getShape();
  ArrayRef<int64_t> repeats = op.getRepeats();
  if (llvm::is_contained(repeats, 0)) {
    operandGrads[0] = zerosLike(g, op.getX());
    return success();
  }
  SmallVector<int64_t> split, axes;
  for (auto [d, r] : llvm::zip(shape, repeats)) {
    if (r != 1) {
      axes.push_back(split.size());
      split.push_back(r);
    }
    split.push_back(d);
  }
  operandGrads[0] = g.reshape(
      g.reduceSum(g.reshape(dy, split), axes, /*keepdims=*/false), shape);
  return success();
}

/// The adjoint of edge or reflect padding along `dim` of a tensor `n` long
/// (after cropping), from `grad`, `lo` + n + `hi` long there.
FailureOr<Value> foldBorder(tsr::PadOp op, GradientBuilder &g, Value grad,
                            int64_t dim, int64_t lo, int64_t hi, int64_t n) {
  bool reflect = op.getMode() == tsr::PadMode::reflect && n > 1;
  if (!reflect) {
    // Edge: the border copies of the first and last element sum onto them.
    auto sumRange = [&](int64_t start, int64_t limit) {
      Value part = sliceDim(g, grad, dim, start, limit);
      return limit - start == 1 ? part
                                : g.reduceSum(part, {dim}, /*keepdims=*/true);
    };
    if (n == 1)
      return sumRange(0, lo + 1 + hi);
    SmallVector<Value> parts = {sumRange(0, lo + 1)};
    if (n > 2)
      parts.push_back(sliceDim(g, grad, dim, lo + 1, lo + n - 1));
    parts.push_back(sumRange(lo + n - 1, lo + n + hi));
    OpBuilder &b = g.builder();
    return Value(
        tsr::ConcatOp::create(b, g.getLoc(), parts, b.getI64IntegerAttr(dim)));
  }
  if (lo > n - 1 || hi > n - 1)
    return op.emitOpError("has no gradient rule for reflect padding wider "
                          "than its cropped dimension ")
           << dim << " (" << n << " elements)";
  // Reflect: y[lo − 1 − t] = x[1 + t] and y[lo + n + hi − 1 − t] =
  // x[n − 1 − hi + t]; the reversed border slices add onto those ranges.
  Value dx = sliceDim(g, grad, dim, lo, lo + n);
  if (lo > 0)
    dx = g.add(dx, zeroPadDim(g, sliceDim(g, grad, dim, lo - 1, -1, -1), dim, 1,
                              n - 1 - lo));
  if (hi > 0)
    dx = g.add(
        dx,
        zeroPadDim(g, sliceDim(g, grad, dim, lo + n + hi - 1, lo + n - 1, -1),
                   dim, n - 1 - hi, 1));
  return dx;
}

/// Constant padding: dy cropped back (and zero where the pad cropped). Edge
/// and reflect: per dimension, the border folded back, then the crop undone.
LogicalResult padRule(tsr::PadOp op, GradientBuilder &g,
                      ArrayRef<Value> resultGrads,
                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  ArrayRef<int64_t> pads = op.getPads();
  if (op.getMode() == tsr::PadMode::constant) {
    SmallVector<int64_t> inverse;
    for (int64_t p : pads)
      inverse.push_back(-p);
    operandGrads[0] = zeroPad(g, dy, inverse);
    return success();
  }
  ArrayRef<int64_t> shape = getTensorType(op.getX()).getShape();
  int64_t rank = shape.size();
  Value grad = dy;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t begin = pads[d], end = pads[rank + d];
    int64_t lo = std::max<int64_t>(begin, 0), hi = std::max<int64_t>(end, 0);
    int64_t cropBegin = std::max<int64_t>(-begin, 0),
            cropEnd = std::max<int64_t>(-end, 0);
    int64_t n = shape[d] - cropBegin - cropEnd;
    if (lo > 0 || hi > 0) {
      FailureOr<Value> folded = foldBorder(op, g, grad, d, lo, hi, n);
      if (failed(folded))
        return failure();
      grad = *folded;
    }
    grad = zeroPadDim(g, grad, d, cropBegin, cropEnd);
  }
  operandGrads[0] = grad;
  return success();
}

/// dy put back at the sliced positions: dimensions with a negative step
/// reversed, zeros interleaved for steps above 1 (each element of dy gets a
/// unit dimension padded to the step), then the outer zero padding.
LogicalResult sliceRule(tsr::SliceOp op, GradientBuilder &g,
                        ArrayRef<Value> resultGrads,
                        SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !hasFloatElements(dy))
    return success();
  if (getTensorType(dy).getNumElements() == 0) {
    operandGrads[0] = zerosLike(g, op.getX());
    return success();
  }
  ArrayRef<int64_t> shape = getTensorType(op.getX()).getShape();
  ArrayRef<int64_t> out = getTensorType(dy).getShape();
  ArrayRef<int64_t> starts = op.getStarts(), steps = op.getSteps();
  int64_t rank = shape.size();
  Value grad = dy;

  if (llvm::any_of(steps, [](int64_t s) { return s < 0; })) {
    SmallVector<int64_t> first, limits, dirs;
    for (int64_t d = 0; d < rank; ++d) {
      bool back = steps[d] < 0;
      first.push_back(back ? out[d] - 1 : 0);
      limits.push_back(back ? -1 : out[d]);
      dirs.push_back(back ? -1 : 1);
    }
    grad = g.slice(grad, first, limits, dirs);
  }

  SmallVector<int64_t> spread(out);
  if (llvm::any_of(steps, [](int64_t s) { return std::abs(s) > 1; })) {
    SmallVector<int64_t> withUnits, unitPads;
    for (int64_t d = 0; d < rank; ++d) {
      withUnits.push_back(out[d]);
      unitPads.push_back(0);
      if (std::abs(steps[d]) > 1) {
        withUnits.push_back(1);
        unitPads.push_back(std::abs(steps[d]) - 1);
        spread[d] = out[d] * std::abs(steps[d]);
      }
    }
    SmallVector<int64_t> interior(unitPads.size(), 0);
    interior.append(unitPads);
    grad = g.reshape(zeroPad(g, g.reshape(grad, withUnits), interior), spread);
  }

  SmallVector<int64_t> outer(2 * rank);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t first =
        steps[d] > 0 ? starts[d] : starts[d] + (out[d] - 1) * steps[d];
    outer[d] = first;
    outer[rank + d] = shape[d] - first - spread[d];
  }
  operandGrads[0] = zeroPad(g, grad, outer);
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// Dispatch and combine are each other's adjoints: every slot holds one
/// (token, choice), so the slot's adjoint goes back to that token scaled by
/// the same gate, and a gate's adjoint is the dot product of the token's row
/// with its slot's row.
template <typename OpT, typename AdjointT>
LogicalResult moeMoveRule(OpT op, GradientBuilder &g,
                          ArrayRef<Value> resultGrads,
                          SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  OpBuilder &b = g.builder();
  operandGrads[0] =
      AdjointT::create(b, g.getLoc(), op.getX().getType(), dy, op.getExperts(),
                       op.getSlots(), op.getSources(), op.getWeights());
  if (Value w = op.getWeights()) {
    bool toBuffer = std::is_same_v<OpT, tsr::MoeDispatchOp>;
    operandGrads[4] = tsr::MoeGatherDotOp::create(
        b, g.getLoc(), w.getType(), toBuffer ? dy : op.getX(), op.getExperts(),
        op.getSlots(), toBuffer ? op.getX() : dy);
  }
  return success();
}

LogicalResult moeDispatchRule(tsr::MoeDispatchOp op, GradientBuilder &g,
                              ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  return moeMoveRule<tsr::MoeDispatchOp, tsr::MoeCombineOp>(op, g, resultGrads,
                                                            operandGrads);
}

LogicalResult moeCombineRule(tsr::MoeCombineOp op, GradientBuilder &g,
                             ArrayRef<Value> resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  return moeMoveRule<tsr::MoeCombineOp, tsr::MoeDispatchOp>(op, g, resultGrads,
                                                            operandGrads);
}

} // namespace

void mlir::tessera::registerNNGradientRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tsr::TsrDialect *) {
    using namespace tsr;
    attachGradientRule<ConvOp, convRule>(ctx);
    attachGradientRule<MaxPoolOp, maxPoolRule>(ctx);
    attachGradientRule<AvgPoolOp, avgPoolRule>(ctx);
    attachGradientRule<BatchNormOp, batchNormRule>(ctx);
    attachGradientRule<EinsumOp, einsumRule>(ctx);
    attachGradientRule<CumSumOp, cumsumRule>(ctx);
    attachGradientRule<TopKOp, topkRule>(ctx);
    attachGradientRule<GatherElementsOp, gatherElementsRule>(ctx);
    attachGradientRule<ScatterElementsOp, scatterElementsRule>(ctx);
    attachGradientRule<TriluOp, triluRule>(ctx);
    attachGradientRule<TileOp, tileRule>(ctx);
    attachGradientRule<PadOp, padRule>(ctx);
    attachGradientRule<SliceOp, sliceRule>(ctx);
    attachGradientRule<MoeDispatchOp, moeDispatchRule>(ctx);
    attachGradientRule<MoeCombineOp, moeCombineRule>(ctx);
  });
}
