//===- DataMovement.cpp - Lowering of reshapes, slices, gathers and pads --===//
//
// Static reshapes and slices become tensor ops; ops that compute addresses
// (gather, reverse slices, reflect/edge pads, one-hot) become generics whose
// bodies read with tensor.extract; ScatterElements is an scf.for over the
// updates in order, so later updates win. Of the mixture-of-experts ops,
// moe_assign is a sequential scan (a slot depends on every earlier choice);
// dispatch, combine and the gate gradient are parallel gathers.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"

using namespace mlir;
using namespace mlir::tessera::tsr_to_linalg;
using arith::CmpIPredicate;

namespace {

SmallVector<utils::IteratorType> parallel(int64_t n) {
  return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
}

/// A parallel generic over `type` with `inputs` read through `maps`; `body`
/// gets the input elements and may call linalg.index.
Value indexedGeneric(OpBuilder &b, Location loc, RankedTensorType type,
                     ValueRange inputs, ArrayRef<AffineMap> maps, BodyFn body) {
  SmallVector<AffineMap> all(maps);
  all.push_back(
      AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext()));
  unsigned n = inputs.size();
  return linalg::GenericOp::create(
             b, loc, type, inputs, emptyTensor(b, loc, type), all,
             parallel(type.getRank()),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, body(nb, l, args.take_front(n)));
             })
      .getResult(0);
}

SmallVector<Value> loopIndices(OpBuilder &b, Location loc, int64_t rank) {
  SmallVector<Value> ivs;
  for (int64_t d = 0; d < rank; ++d)
    ivs.push_back(linalg::IndexOp::create(b, loc, d));
  return ivs;
}

/// An integer index (i32/i64, signed) as `index`, negative values counting
/// from `size`, clamped to [0, size − 1].
Value normalizeIndex(OpBuilder &b, Location loc, Value idx, int64_t size,
                     bool clamp) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), idx);
  Value zero = indexConstant(b, loc, 0);
  Value neg = arith::CmpIOp::create(b, loc, CmpIPredicate::slt, i, zero);
  i = arith::SelectOp::create(
      b, loc, neg,
      arith::AddIOp::create(b, loc, i, indexConstant(b, loc, size)), i);
  if (!clamp)
    return i;
  i = arith::MaxSIOp::create(b, loc, i, zero);
  return arith::MinSIOp::create(
      b, loc, i, indexConstant(b, loc, std::max<int64_t>(size - 1, 0)));
}

struct ReshapePattern : OpConversionPattern<tsr::ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    rewriter.replaceOp(op,
                       reshapeTo(rewriter, op.getLoc(), adaptor.getX(), type));
    return success();
  }
};

struct TransposePattern : OpConversionPattern<tsr::TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    Value init = emptyTensor(rewriter, op.getLoc(), type);
    rewriter.replaceOp(op, linalg::TransposeOp::create(rewriter, op.getLoc(),
                                                       adaptor.getX(), init,
                                                       op.getPerm())
                               .getResult());
    return success();
  }
};

struct BroadcastPattern : OpConversionPattern<tsr::BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::BroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    rewriter.replaceOp(op, buildElementwise(rewriter, op.getLoc(), type,
                                            adaptor.getX(),
                                            [](OpBuilder &, Location,
                                               ValueRange a) { return a[0]; }));
    return success();
  }
};

struct ConcatPattern : OpConversionPattern<tsr::ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    int64_t axis = op.getAxis(), rank = type.getRank(), offset = 0;
    Value result = emptyTensor(rewriter, loc, type);
    for (Value in : adaptor.getInputs()) {
      auto t = cast<RankedTensorType>(in.getType());
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0)),
          strides(rank, rewriter.getIndexAttr(1)), sizes;
      for (int64_t d : t.getShape())
        sizes.push_back(rewriter.getIndexAttr(d));
      offsets[axis] = rewriter.getIndexAttr(offset);
      offset += t.getDimSize(axis);
      result = tensor::InsertSliceOp::create(rewriter, loc, in, result, offsets,
                                             sizes, strides);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A strided extract_slice over the selected indices; dimensions with a
/// negative step are then reversed by a generic reading index n − 1 − i.
struct SlicePattern : OpConversionPattern<tsr::SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    if (type.getNumElements() == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type));
      return success();
    }
    ArrayRef<int64_t> starts = op.getStarts(), steps = op.getSteps();
    SmallVector<OpFoldResult> offsets, sizes, strides;
    SmallVector<AffineExpr> exprs;
    bool reversed = false;
    for (auto [d, n] : llvm::enumerate(type.getShape())) {
      int64_t s = starts[d], st = steps[d];
      int64_t first = st > 0 ? s : s + (n - 1) * st;
      offsets.push_back(rewriter.getIndexAttr(first));
      sizes.push_back(rewriter.getIndexAttr(n));
      strides.push_back(rewriter.getIndexAttr(std::abs(st)));
      exprs.push_back(st > 0 ? getAffineDimExpr(d, ctx)
                             : n - 1 - getAffineDimExpr(d, ctx));
      reversed |= st < 0;
    }
    Value slice = tensor::ExtractSliceOp::create(
        rewriter, loc, type, adaptor.getX(), offsets, sizes, strides);
    if (reversed)
      slice = indexedGeneric(
          rewriter, loc, type, slice,
          AffineMap::get(type.getRank(), 0, exprs, ctx),
          [](OpBuilder &, Location, ValueRange a) { return a[0]; });
    rewriter.replaceOp(op, slice);
    return success();
  }
};

/// result[o.., i.., p..] = data[o.., idx(indices[i..]), p..].
struct GatherPattern : OpConversionPattern<tsr::GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    Value data = adaptor.getData();
    auto dataType = cast<RankedTensorType>(data.getType());
    int64_t axis = op.getAxis(), size = dataType.getDimSize(axis);
    int64_t idxRank =
        cast<RankedTensorType>(op.getIndices().getType()).getRank();
    SmallVector<AffineExpr> idxExprs;
    for (int64_t i = 0; i < idxRank; ++i)
      idxExprs.push_back(getAffineDimExpr(axis + i, ctx));
    Value result = indexedGeneric(
        rewriter, loc, type, adaptor.getIndices(),
        AffineMap::get(type.getRank(), 0, idxExprs, ctx),
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          SmallVector<Value> ivs = loopIndices(b, l, type.getRank());
          SmallVector<Value> at(ivs.begin(), ivs.begin() + axis);
          at.push_back(normalizeIndex(b, l, a[0], size, /*clamp=*/true));
          at.append(ivs.begin() + axis + idxRank, ivs.end());
          return tensor::ExtractOp::create(b, l, data, at);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GatherElementsPattern : OpConversionPattern<tsr::GatherElementsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::GatherElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    Value data = adaptor.getData();
    int64_t axis = op.getAxis();
    int64_t size = cast<RankedTensorType>(data.getType()).getDimSize(axis);
    Value result = indexedGeneric(
        rewriter, loc, type, adaptor.getIndices(),
        AffineMap::getMultiDimIdentityMap(type.getRank(), op.getContext()),
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          SmallVector<Value> at = loopIndices(b, l, type.getRank());
          at[axis] = normalizeIndex(b, l, a[0], size, /*clamp=*/true);
          return tensor::ExtractOp::create(b, l, data, at);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// One scf.for over the updates in row-major order: later updates win. The
/// loop carries tsr.scatter_shape, so that a parallel target can run the
/// updates that differ outside the axis at once. Data that is a splat
/// constant (an embedding gradient's zeros) starts as a filled tensor:
/// bufferized, a constant would be a global as large as the result (77 MB
/// of zeros in GPT-2's bf16 step), copied into the result at every call.
struct ScatterElementsPattern : OpConversionPattern<tsr::ScatterElementsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::ScatterElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value indices = adaptor.getIndices(), updates = adaptor.getUpdates();
    auto updType = cast<RankedTensorType>(updates.getType());
    // Broadcast indices (an embedding gradient's token ids repeated along
    // the row) are read from the broadcast's operand: the [tokens, width]
    // index tensor is never built.
    auto broadcast = op.getIndices().getDefiningOp<tsr::BroadcastOp>();
    if (broadcast)
      indices = rewriter.getRemappedValue(broadcast.getX());
    ArrayRef<int64_t> idxShape =
        cast<RankedTensorType>(indices.getType()).getShape();
    auto dataType = cast<RankedTensorType>(adaptor.getData().getType());
    Type tsrElem = getElementType(op.getData());
    bool isFloat = isa<FloatType>(tsrElem), uns = isUnsigned(tsrElem);
    StringRef reduction = tsr::stringifyScatterReduction(op.getReduction());
    int64_t axis = op.getAxis(), rank = updType.getRank();
    // 16-bit floats add and multiply in f32, the result rounded once (as
    // reductions do): summed in bf16, an embedding row's gradient stops
    // growing at 256 updates of 1.
    Type stored = dataType.getElementType();
    Type acc = isFloat && (reduction == "add" || reduction == "mul")
                   ? accumulatorType(stored)
                   : stored;
    Value data = adaptor.getData();
    SplatElementsAttr splat;
    if (matchPattern(data, m_Constant(&splat))) {
      TypedAttr value = splat.getSplatValue<TypedAttr>();
      if (acc != stored)
        value = rewriter.getFloatAttr(
            acc, splat.getSplatValue<APFloat>().convertToDouble());
      data = filledTensor(rewriter, loc, dataType.clone(acc),
                          arith::ConstantOp::create(rewriter, loc, value));
    } else if (acc != stored) {
      data = widenToF32(rewriter, loc, data);
    }
    auto loop = scf::ForOp::create(
        rewriter, loc, indexConstant(rewriter, loc, 0),
        indexConstant(rewriter, loc, updType.getNumElements()),
        indexConstant(rewriter, loc, 1), data,
        [&](OpBuilder &b, Location l, Value iv, ValueRange iter) {
          SmallVector<Value> at(rank);
          Value rest = iv;
          for (int64_t d = rank - 1; d >= 0; --d) {
            Value size = indexConstant(b, l, updType.getDimSize(d));
            at[d] = arith::RemUIOp::create(b, l, rest, size);
            rest = arith::DivUIOp::create(b, l, rest, size);
          }
          Value upd = tensor::ExtractOp::create(b, l, updates, at);
          if (acc != stored)
            upd = arith::ExtFOp::create(b, l, acc, upd);
          // The broadcast's operand, right-aligned: repeated dimensions
          // read its element 0.
          SmallVector<Value> from(at.end() - idxShape.size(), at.end());
          for (auto [d, size] : llvm::enumerate(idxShape))
            if (size == 1)
              from[d] = indexConstant(b, l, 0);
          Value idx = tensor::ExtractOp::create(b, l, indices, from);
          SmallVector<Value> target(at);
          target[axis] = normalizeIndex(b, l, idx, dataType.getDimSize(axis),
                                        /*clamp=*/true);
          Value v = upd;
          if (reduction != "none") {
            Value old = tensor::ExtractOp::create(b, l, iter[0], target);
            if (reduction == "add")
              v = isFloat ? (Value)arith::AddFOp::create(b, l, old, upd)
                          : (Value)arith::AddIOp::create(b, l, old, upd);
            else if (reduction == "mul")
              v = isFloat ? (Value)arith::MulFOp::create(b, l, old, upd)
                          : (Value)arith::MulIOp::create(b, l, old, upd);
            else if (reduction == "max")
              v = isFloat ? (Value)arith::MaximumFOp::create(b, l, old, upd)
                  : uns   ? (Value)arith::MaxUIOp::create(b, l, old, upd)
                          : (Value)arith::MaxSIOp::create(b, l, old, upd);
            else
              v = isFloat ? (Value)arith::MinimumFOp::create(b, l, old, upd)
                  : uns   ? (Value)arith::MinUIOp::create(b, l, old, upd)
                          : (Value)arith::MinSIOp::create(b, l, old, upd);
          }
          Value next = tensor::InsertOp::create(b, l, v, iter[0], target);
          scf::YieldOp::create(b, l, next);
        });
    if (updType.getNumElements() > 0) {
      SmallVector<int64_t> shape{axis};
      llvm::append_range(shape, updType.getShape());
      loop->setAttr(tsr::attr::kScatterShape,
                    rewriter.getDenseI64ArrayAttr(shape));
    }
    Value result = loop.getResult(0);
    if (acc != stored)
      result = narrowTo(rewriter, loc, result, stored);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// result[i..] = x[i mod size..].
struct TilePattern : OpConversionPattern<tsr::TileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::TileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = op.getContext();
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    auto inType = cast<RankedTensorType>(adaptor.getX().getType());
    if (type.getNumElements() == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, op.getLoc(), type));
      return success();
    }
    SmallVector<AffineExpr> exprs;
    for (auto [d, size] : llvm::enumerate(inType.getShape()))
      exprs.push_back(getAffineDimExpr(d, ctx) % size);
    rewriter.replaceOp(
        op, indexedGeneric(
                rewriter, op.getLoc(), type, adaptor.getX(),
                AffineMap::get(type.getRank(), 0, exprs, ctx),
                [](OpBuilder &, Location, ValueRange a) { return a[0]; }));
    return success();
  }
};

/// Negative pads crop first (extract_slice); then constant mode is a
/// tensor.pad and reflect/edge a generic computing the source index.
struct PadPattern : OpConversionPattern<tsr::PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    Type elem = type.getElementType();
    Value x = adaptor.getX();
    auto inType = cast<RankedTensorType>(x.getType());
    int64_t rank = inType.getRank();
    ArrayRef<int64_t> pads = op.getPads();
    SmallVector<int64_t> lo(rank), hi(rank), cropped(inType.getShape());
    SmallVector<OpFoldResult> offsets, sizes,
        strides(rank, rewriter.getIndexAttr(1));
    bool crop = false;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t b = pads[d], e = pads[rank + d];
      int64_t cb = std::min<int64_t>(b, 0), ce = std::min<int64_t>(e, 0);
      cropped[d] += cb + ce;
      offsets.push_back(rewriter.getIndexAttr(-cb));
      sizes.push_back(rewriter.getIndexAttr(cropped[d]));
      lo[d] = std::max<int64_t>(b, 0);
      hi[d] = std::max<int64_t>(e, 0);
      crop |= cb != 0 || ce != 0;
    }
    if (crop)
      x = tensor::ExtractSliceOp::create(rewriter, loc,
                                         RankedTensorType::get(cropped, elem),
                                         x, offsets, sizes, strides);
    if (op.getMode() == tsr::PadMode::constant) {
      SmallVector<OpFoldResult> l, h;
      for (int64_t d = 0; d < rank; ++d) {
        l.push_back(rewriter.getIndexAttr(lo[d]));
        h.push_back(rewriter.getIndexAttr(hi[d]));
      }
      Value value = scalarConstant(rewriter, loc, getElementType(op.getX()),
                                   op.getValue().convertToDouble());
      rewriter.replaceOp(
          op, tensor::PadOp::create(rewriter, loc, type, x, l, h, value)
                  .getResult());
      return success();
    }
    bool reflect = op.getMode() == tsr::PadMode::reflect;
    Value source = x;
    Value result = indexedGeneric(
        rewriter, loc, type, {}, {},
        [&](OpBuilder &b, Location l, ValueRange) -> Value {
          SmallVector<Value> at;
          for (int64_t d = 0; d < rank; ++d) {
            int64_t n = cropped[d];
            Value i =
                arith::SubIOp::create(b, l, linalg::IndexOp::create(b, l, d),
                                      indexConstant(b, l, lo[d]));
            if (reflect && n > 1) {
              // Reflect about 0 and n − 1 (pads are smaller than n).
              Value zero = indexConstant(b, l, 0);
              Value neg =
                  arith::CmpIOp::create(b, l, CmpIPredicate::slt, i, zero);
              i = arith::SelectOp::create(
                  b, l, neg, arith::SubIOp::create(b, l, zero, i), i);
              Value last = indexConstant(b, l, n - 1);
              Value over =
                  arith::CmpIOp::create(b, l, CmpIPredicate::sgt, i, last);
              i = arith::SelectOp::create(
                  b, l, over,
                  arith::SubIOp::create(b, l, indexConstant(b, l, 2 * (n - 1)),
                                        i),
                  i);
            } else {
              i = arith::MaxSIOp::create(b, l, i, indexConstant(b, l, 0));
              i = arith::MinSIOp::create(
                  b, l, i, indexConstant(b, l, std::max<int64_t>(n - 1, 0)));
            }
            at.push_back(i);
          }
          return tensor::ExtractOp::create(b, l, source, at);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Keeps x where j − i ≥ k (upper) or j − i ≤ k (lower), else 0.
struct TriluPattern : OpConversionPattern<tsr::TriluOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::TriluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(adaptor.getX().getType());
    int64_t rank = type.getRank(), k = op.getK();
    bool upper = op.getUpper();
    Value result = indexedGeneric(
        rewriter, op.getLoc(), type, adaptor.getX(),
        AffineMap::getMultiDimIdentityMap(rank, op.getContext()),
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value i = linalg::IndexOp::create(b, l, rank - 2);
          Value j = linalg::IndexOp::create(b, l, rank - 1);
          Value diff = arith::SubIOp::create(b, l, j, i);
          Value keep = arith::CmpIOp::create(
              b, l, upper ? CmpIPredicate::sge : CmpIPredicate::sle, diff,
              indexConstant(b, l, k));
          return arith::SelectOp::create(
              b, l, keep, a[0], scalarConstant(b, l, a[0].getType(), 0.0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct OneHotPattern : OpConversionPattern<tsr::OneHotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::OneHotOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = op.getContext();
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    Type tsrIdx = getElementType(op.getIndices());
    Type tsrOut = getElementType(op.getResult());
    int64_t rank = type.getRank(), depth = op.getDepth();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (axis < 0)
      axis += rank;
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        exprs.push_back(getAffineDimExpr(d, ctx));
    double on = op.getOnValue().convertToDouble(),
           off = op.getOffValue().convertToDouble();
    Value result = indexedGeneric(
        rewriter, op.getLoc(), type, adaptor.getIndices(),
        AffineMap::get(rank, 0, exprs, ctx),
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Type i64 = b.getI64Type();
          Value idx = convertScalar(b, l, a[0], tsrIdx, i64);
          Value neg = arith::CmpIOp::create(b, l, CmpIPredicate::slt, idx,
                                            scalarConstant(b, l, i64, 0));
          idx = arith::SelectOp::create(
              b, l, neg,
              arith::AddIOp::create(b, l, idx,
                                    scalarConstant(b, l, i64, (double)depth)),
              idx);
          Value pos = arith::IndexCastOp::create(
              b, l, i64, linalg::IndexOp::create(b, l, axis));
          Value hit = arith::CmpIOp::create(b, l, CmpIPredicate::eq, idx, pos);
          return arith::SelectOp::create(b, l, hit,
                                         scalarConstant(b, l, tsrOut, on),
                                         scalarConstant(b, l, tsrOut, off));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// An i64 expert number clamped to [0, numExperts) as an index.
Value expertIndex(OpBuilder &b, Location loc, Value e, int64_t numExperts) {
  return normalizeIndex(b, loc, e, numExperts, /*clamp=*/true);
}

/// Whether the i64 `slot` holds a token (it is -1 for a dropped choice), and
/// the slot clamped into [0, capacity) as an index for reading.
std::pair<Value, Value> slotIndex(OpBuilder &b, Location loc, Value slot,
                                  int64_t capacity) {
  Value zero = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
  Value valid = arith::CmpIOp::create(b, loc, CmpIPredicate::sge, slot, zero);
  Value i = arith::IndexCastOp::create(
      b, loc, b.getIndexType(), arith::MaxSIOp::create(b, loc, slot, zero));
  i = arith::MinSIOp::create(b, loc, i, indexConstant(b, loc, capacity - 1));
  return {valid, i};
}

/// Three scf.for loops (choice, group, token) in priority order; each
/// choice takes the next free slot of its expert in its group, or -1 when
/// the expert's buffer is full.
struct MoeAssignPattern : OpConversionPattern<tsr::MoeAssignOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::MoeAssignOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto slotsType = cast<RankedTensorType>(op.getSlots().getType());
    auto sourcesType = cast<RankedTensorType>(op.getSources().getType());
    int64_t groups = slotsType.getDimSize(0), tokens = slotsType.getDimSize(1),
            k = slotsType.getDimSize(2);
    int64_t numExperts = op.getNumExperts(), capacity = op.getCapacity();
    Type i64 = rewriter.getI64Type();
    auto i64Const = [&](OpBuilder &b, Location l, int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, l, i64, v);
    };
    Value experts = adaptor.getExperts();
    Value slots = emptyTensor(rewriter, loc, slotsType);
    Value sources =
        filledTensor(rewriter, loc, sourcesType, i64Const(rewriter, loc, -1));
    Value counts = filledTensor(
        rewriter, loc, RankedTensorType::get({groups, numExperts}, i64),
        i64Const(rewriter, loc, 0));
    auto forRange = [&](OpBuilder &b, Location l, int64_t n, ValueRange init,
                        function_ref<SmallVector<Value>(OpBuilder &, Location,
                                                        Value, ValueRange)>
                            body) -> SmallVector<Value> {
      auto loop = scf::ForOp::create(
          b, l, indexConstant(b, l, 0), indexConstant(b, l, n),
          indexConstant(b, l, 1), init,
          [&](OpBuilder &nb, Location nl, Value iv, ValueRange iter) {
            scf::YieldOp::create(nb, nl, body(nb, nl, iv, iter));
          });
      return SmallVector<Value>(loop.getResults());
    };
    SmallVector<Value> results = forRange(
        rewriter, loc, k, {slots, sources, counts},
        [&](OpBuilder &b, Location l, Value j,
            ValueRange it) -> SmallVector<Value> {
          return forRange(
              b, l, groups, it,
              [&](OpBuilder &b, Location l, Value g,
                  ValueRange it) -> SmallVector<Value> {
                return forRange(
                    b, l, tokens, it,
                    [&](OpBuilder &b, Location l, Value s,
                        ValueRange it) -> SmallVector<Value> {
                      Value e = expertIndex(
                          b, l,
                          tensor::ExtractOp::create(b, l, experts, {g, s, j}),
                          numExperts);
                      Value c = tensor::ExtractOp::create(b, l, it[2], {g, e});
                      Value fits =
                          arith::CmpIOp::create(b, l, CmpIPredicate::slt, c,
                                                i64Const(b, l, capacity));
                      Value slot = arith::SelectOp::create(b, l, fits, c,
                                                           i64Const(b, l, -1));
                      Value nextSlots = tensor::InsertOp::create(
                          b, l, slot, it[0], {g, s, j});
                      // A full expert rewrites slot 0 with what it holds.
                      Value at = arith::SelectOp::create(
                          b, l, fits,
                          arith::IndexCastOp::create(b, l, b.getIndexType(), c),
                          indexConstant(b, l, 0));
                      Value old =
                          tensor::ExtractOp::create(b, l, it[1], {e, g, at});
                      Value src = arith::IndexCastOp::create(
                          b, l, i64,
                          arith::AddIOp::create(
                              b, l,
                              arith::MulIOp::create(b, l, s,
                                                    indexConstant(b, l, k)),
                              j));
                      Value nextSources = tensor::InsertOp::create(
                          b, l, arith::SelectOp::create(b, l, fits, src, old),
                          it[1], {e, g, at});
                      Value nextCounts = tensor::InsertOp::create(
                          b, l,
                          arith::AddIOp::create(b, l, c, i64Const(b, l, 1)),
                          it[2], {g, e});
                      return SmallVector<Value>{nextSlots, nextSources,
                                                nextCounts};
                    });
              });
        });
    rewriter.replaceOp(op, {results[0], results[1]});
    return success();
  }
};

/// A parallel generic over the buffer [E, G, C, H] that reads each slot's
/// token (a gather: every slot has at most one source).
struct MoeDispatchPattern : OpConversionPattern<tsr::MoeDispatchOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::MoeDispatchOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    int64_t k = cast<RankedTensorType>(op.getExperts().getType()).getDimSize(2);
    Value x = adaptor.getX(), weights = adaptor.getWeights();
    AffineMap slotMap =
        AffineMap::get(4, 0,
                       {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx),
                        getAffineDimExpr(2, ctx)},
                       ctx);
    Value result = indexedGeneric(
        rewriter, loc, type, adaptor.getSources(), slotMap,
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value zero = arith::ConstantIntOp::create(b, l, b.getI64Type(), 0);
          Value valid =
              arith::CmpIOp::create(b, l, CmpIPredicate::sge, a[0], zero);
          Value src = arith::IndexCastOp::create(
              b, l, b.getIndexType(), arith::MaxSIOp::create(b, l, a[0], zero));
          Value kk = indexConstant(b, l, k);
          Value s = arith::DivUIOp::create(b, l, src, kk);
          Value g = linalg::IndexOp::create(b, l, 1);
          Value h = linalg::IndexOp::create(b, l, 3);
          Value v = tensor::ExtractOp::create(b, l, x, {g, s, h});
          if (weights) {
            Value j = arith::RemUIOp::create(b, l, src, kk);
            v = arith::MulFOp::create(
                b, l, v, tensor::ExtractOp::create(b, l, weights, {g, s, j}));
          }
          return arith::SelectOp::create(
              b, l, valid, v, scalarConstant(b, l, v.getType(), 0.0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A generic over 4 loops, the last a reduction, producing `type` in its
/// accumulator type: every (group, token, choice) that was not dropped adds
/// term(its buffer element, the other inputs' elements), with the loop of
/// the hidden dimension `hLoop`. `inputs` start with the expert numbers
/// and slots, read through `maps` like the rest.
Value moeGatherSum(
    OpBuilder &b, Location loc, RankedTensorType type, Value buffer,
    ValueRange inputs, ArrayRef<AffineMap> maps, unsigned hLoop,
    function_ref<Value(OpBuilder &, Location, Value, ValueRange)> term) {
  auto bufType = cast<RankedTensorType>(buffer.getType());
  Type acc = accumulatorType(type.getElementType());
  auto accType = type.clone(acc);
  Value init = filledTensor(b, loc, accType, scalarConstant(b, loc, acc, 0.0));
  SmallVector<utils::IteratorType> iters(3, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  Value sum =
      linalg::GenericOp::create(
          b, loc, accType, inputs, init, maps, iters,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value e = expertIndex(nb, l, a[0], bufType.getDimSize(0));
            auto [valid, slot] = slotIndex(nb, l, a[1], bufType.getDimSize(2));
            Value g = linalg::IndexOp::create(nb, l, 0);
            Value h = linalg::IndexOp::create(nb, l, hLoop);
            Value v = tensor::ExtractOp::create(nb, l, buffer, {e, g, slot, h});
            Value t = term(nb, l, v, a.drop_front(2).drop_back());
            if (t.getType() != acc)
              t = arith::ExtFOp::create(nb, l, acc, t);
            Value added = arith::AddFOp::create(nb, l, a.back(), t);
            Value next = arith::SelectOp::create(nb, l, valid, added, a.back());
            linalg::YieldOp::create(nb, l, next);
          })
          .getResult(0);
  return narrowTo(b, loc, sum, type.getElementType());
}

/// Loops (g, s, h, j), j summed: each token adds the rows of its choices
/// that were not dropped, times their gates.
struct MoeCombinePattern : OpConversionPattern<tsr::MoeCombineOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::MoeCombineOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = op.getContext();
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineMap choice = AffineMap::get(4, 0, {d(0), d(1), d(3)}, ctx);
    SmallVector<Value> inputs{adaptor.getExperts(), adaptor.getSlots()};
    if (adaptor.getWeights())
      inputs.push_back(adaptor.getWeights());
    SmallVector<AffineMap> maps(inputs.size(), choice);
    maps.push_back(AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx));
    rewriter.replaceOp(
        op, moeGatherSum(rewriter, op.getLoc(),
                         convertTensorType(*getTypeConverter(), op.getType()),
                         adaptor.getX(), inputs, maps, /*hLoop=*/2,
                         [](OpBuilder &b, Location l, Value v, ValueRange w) {
                           return w.empty() ? v
                                            : (Value)arith::MulFOp::create(
                                                  b, l, v, w[0]);
                         }));
    return success();
  }
};

/// Loops (g, s, j, h), h summed: dot products of the buffer rows of each
/// token's choices with the token's row of u.
struct MoeGatherDotPattern : OpConversionPattern<tsr::MoeGatherDotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::MoeGatherDotOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = op.getContext();
    auto type = convertTensorType(*getTypeConverter(), op.getType());
    Type acc = accumulatorType(type.getElementType());
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineMap choice = AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx);
    AffineMap token = AffineMap::get(4, 0, {d(0), d(1), d(3)}, ctx);
    rewriter.replaceOp(
        op, moeGatherSum(
                rewriter, op.getLoc(), type, adaptor.getBuffer(),
                ValueRange{adaptor.getExperts(), adaptor.getSlots(),
                           adaptor.getU()},
                {choice, choice, token, choice}, /*hLoop=*/3,
                [&](OpBuilder &b, Location l, Value v, ValueRange u) -> Value {
                  Value x = u[0];
                  if (v.getType() != acc) {
                    v = arith::ExtFOp::create(b, l, acc, v);
                    x = arith::ExtFOp::create(b, l, acc, x);
                  }
                  return arith::MulFOp::create(b, l, v, x);
                }));
    return success();
  }
};

} // namespace

void mlir::tessera::tsr_to_linalg::populateDataMovementPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ReshapePattern, TransposePattern, BroadcastPattern,
               ConcatPattern, SlicePattern, GatherPattern,
               GatherElementsPattern, ScatterElementsPattern, TilePattern,
               PadPattern, TriluPattern, OneHotPattern, MoeAssignPattern,
               MoeDispatchPattern, MoeCombinePattern, MoeGatherDotPattern>(
      converter, patterns.getContext());
}
