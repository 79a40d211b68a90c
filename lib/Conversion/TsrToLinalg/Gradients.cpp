//===- Gradients.cpp - Lowering of the ops of backward passes -------------===//
//
// The adjoints of convolution put their multiply-adds in one
// linalg.batch_matmul over the groups, like the forward convolution:
//
//   conv_backward_data:   dcol = wᵀ · dy, then col2im: every input position
//                         gathers the dcol entries of the windows that read
//                         it (a generic reducing over the kernel offsets);
//   conv_backward_filter: dw = dy · im2col(x)ᵀ.
//
// max_pool_grad finds each window's argmax (a two-result reduction), then
// every input position gathers the dy of the windows whose argmax it is.
// Both gathers loop over input positions and kernel offsets: the output
// position o of offset k at input position h solves o·s + k·d = h + pad.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

using namespace mlir;
using namespace mlir::tessera::tsr_to_linalg;
using arith::CmpIPredicate;

namespace {

RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type elem) {
  return RankedTensorType::get(shape, elem);
}

int64_t product(ArrayRef<int64_t> v) {
  int64_t p = 1;
  for (int64_t d : v)
    p *= d;
  return p;
}

Value batchMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  Type elem = l.getElementType();
  auto type =
      tensorOf({l.getDimSize(0), l.getDimSize(1), r.getDimSize(2)}, elem);
  Value acc = filledTensor(b, loc, type, scalarConstant(b, loc, elem, 0.0));
  return linalg::BatchMatmulOp::create(b, loc, type, ValueRange{lhs, rhs}, acc)
      .getResult(0);
}

/// dy [N, G·Mg, O..] as [G, Mg, N·ΠO].
Value groupedRows(OpBuilder &b, Location loc, Value dy, int64_t groups) {
  auto type = cast<RankedTensorType>(dy.getType());
  Type elem = type.getElementType();
  int64_t n = type.getDimSize(0), mg = type.getDimSize(1) / groups,
          o = product(type.getShape().drop_front(2));
  Value split = reshapeTo(b, loc, dy, tensorOf({n, groups, mg, o}, elem));
  return reshapeTo(b, loc, transpose(b, loc, split, {1, 2, 0, 3}),
                   tensorOf({groups, mg, n * o}, elem));
}

/// A generic over the loops of `outType` followed by one reduction loop per
/// kernel offset, `kernel` giving their sizes; the loops of `outType` come
/// first. `body` gets the accumulator and returns its new value.
Value reduceOverWindow(
    OpBuilder &b, Location loc, RankedTensorType outType, Value init,
    ArrayRef<int64_t> kernel,
    function_ref<Value(OpBuilder &, Location, Value acc)> body) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = outType.getRank(), k = kernel.size(), loops = rank + k;
  SmallVector<AffineExpr> winExprs, outExprs;
  for (int64_t i = 0; i < k; ++i)
    winExprs.push_back(getAffineDimExpr(rank + i, ctx));
  for (int64_t d = 0; d < rank; ++d)
    outExprs.push_back(getAffineDimExpr(d, ctx));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.append(k, utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, outType, windowShape(b, loc, kernel), init,
             {AffineMap::get(loops, 0, winExprs, ctx),
              AffineMap::get(loops, 0, outExprs, ctx)},
             iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(nb, l, body(nb, l, a[1]));
             })
      .getResult(0);
}

/// Inside a generic whose loops `spatialDim + i` run over input position h_i
/// and `offsetDim + i` over kernel offset k_i: the output positions o_i with
/// o_i·s_i + k_i·d_i = h_i + pad_i (clamped to 0 where there is none) and
/// whether every one exists.
std::pair<SmallVector<Value>, Value>
windowPositions(OpBuilder &b, Location loc, int64_t spatialDim,
                int64_t offsetDim, ArrayRef<int64_t> strides,
                ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                ArrayRef<int64_t> out) {
  int64_t k = strides.size();
  Value zero = indexConstant(b, loc, 0);
  Value valid = arith::ConstantIntOp::create(b, loc, 1, 1);
  SmallVector<Value> positions;
  for (int64_t i = 0; i < k; ++i) {
    Value h = linalg::IndexOp::create(b, loc, spatialDim + i);
    Value off = linalg::IndexOp::create(b, loc, offsetDim + i);
    Value t = arith::SubIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, h, indexConstant(b, loc, pads[i])),
        arith::MulIOp::create(b, loc, off,
                              indexConstant(b, loc, dilations[i])));
    Value ok = arith::CmpIOp::create(b, loc, CmpIPredicate::sge, t, zero);
    Value o = t;
    if (strides[i] != 1) {
      Value s = indexConstant(b, loc, strides[i]);
      Value rem = arith::RemSIOp::create(b, loc, t, s);
      ok = arith::AndIOp::create(
          b, loc, ok,
          arith::CmpIOp::create(b, loc, CmpIPredicate::eq, rem, zero));
      o = arith::DivSIOp::create(b, loc, t, s);
    }
    ok = arith::AndIOp::create(
        b, loc, ok,
        arith::CmpIOp::create(b, loc, CmpIPredicate::slt, o,
                              indexConstant(b, loc, out[i])));
    positions.push_back(arith::SelectOp::create(b, loc, ok, o, zero));
    valid = arith::AndIOp::create(b, loc, valid, ok);
  }
  return {positions, valid};
}

/// dx = col2im(wᵀ · dy): loops (n, g, c, h1..hk, k1..kk).
struct ConvBackwardDataPattern : OpConversionPattern<tsr::ConvBackwardDataOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::ConvBackwardDataOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto dyType = cast<RankedTensorType>(adaptor.getDy().getType());
    auto wType = cast<RankedTensorType>(adaptor.getW().getType());
    auto dxType = convertTensorType(*getTypeConverter(), op.getType());
    Type elem = dxType.getElementType();
    int64_t k = dxType.getRank() - 2, n = dxType.getDimSize(0),
            c = dxType.getDimSize(1), m = wType.getDimSize(0),
            g = op.getGroup(), cg = c / g, mg = m / g;
    ArrayRef<int64_t> kernel = wType.getShape().drop_front(2);
    ArrayRef<int64_t> out = dyType.getShape().drop_front(2);
    ArrayRef<int64_t> spatial = dxType.getShape().drop_front(2);
    int64_t kProd = product(kernel);

    Value w = reshapeTo(rewriter, loc, adaptor.getW(),
                        tensorOf({g, mg, cg * kProd}, elem));
    Value wT = transpose(rewriter, loc, w, {0, 2, 1});
    Value dcol = batchMatmul(rewriter, loc, wT,
                             groupedRows(rewriter, loc, adaptor.getDy(), g));
    SmallVector<int64_t> colShape = {g, cg};
    llvm::append_range(colShape, kernel);
    colShape.push_back(n);
    llvm::append_range(colShape, out);
    dcol = reshapeTo(rewriter, loc, dcol, tensorOf(colShape, elem));

    SmallVector<int64_t> splitShape = {n, g, cg};
    llvm::append_range(splitShape, spatial);
    auto splitType = tensorOf(splitShape, elem);
    Value zero = scalarConstant(rewriter, loc, elem, 0.0);
    Value dx = reduceOverWindow(
        rewriter, loc, splitType, filledTensor(rewriter, loc, splitType, zero),
        kernel, [&](OpBuilder &b, Location l, Value acc) -> Value {
          auto [positions, valid] =
              windowPositions(b, l, 3, 3 + k, op.getStrides(), op.getPads(),
                              op.getDilations(), out);
          SmallVector<Value> at = {linalg::IndexOp::create(b, l, 1),
                                   linalg::IndexOp::create(b, l, 2)};
          for (int64_t i = 0; i < k; ++i)
            at.push_back(linalg::IndexOp::create(b, l, 3 + k + i));
          at.push_back(linalg::IndexOp::create(b, l, 0));
          at.append(positions);
          Value v = tensor::ExtractOp::create(b, l, dcol, at);
          Value sum = arith::AddFOp::create(b, l, acc, v);
          return arith::SelectOp::create(b, l, valid, sum, acc);
        });
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, dx, dxType));
    return success();
  }
};

/// dw = dy · colᵀ with colᵀ [G, N, O.., Cg, K..] = x[n, g·Cg + c,
/// o_i·s_i + k_i·d_i − p_i] (0 in the padding, read in place rather than
/// from a padded copy, which CSE would share with the forward convolution's).
struct ConvBackwardFilterPattern
    : OpConversionPattern<tsr::ConvBackwardFilterOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::ConvBackwardFilterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto xType = cast<RankedTensorType>(adaptor.getX().getType());
    auto dyType = cast<RankedTensorType>(adaptor.getDy().getType());
    auto dwType = convertTensorType(*getTypeConverter(), op.getType());
    Type elem = xType.getElementType();
    int64_t k = xType.getRank() - 2, n = xType.getDimSize(0),
            c = xType.getDimSize(1), g = op.getGroup(), cg = c / g;
    ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();
    ArrayRef<int64_t> kernel = dwType.getShape().drop_front(2);
    ArrayRef<int64_t> out = dyType.getShape().drop_front(2);
    int64_t kProd = product(kernel), oProd = product(out);

    // Loops (g, n, o1..ok, c, k1..kk); zeros where the windows reach into
    // the padding (extractOrPad).
    Value x = adaptor.getX();
    ArrayRef<int64_t> pads = op.getPads();
    int64_t colRank = 3 + 2 * k;
    auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> xExprs = {dim(1), dim(0) * cg + dim(2 + k)};
    for (int64_t i = 0; i < k; ++i)
      xExprs.push_back(dim(2 + i) * strides[i] + dim(3 + k + i) * dilations[i] -
                       pads[i]);
    AffineMap xMap = AffineMap::get(colRank, 0, xExprs, ctx);
    bool padded = windowsLeaveInput(xType.getShape().drop_front(2), pads,
                                    kernel, strides, dilations, out);
    Value zero = scalarConstant(rewriter, loc, elem, 0.0);
    SmallVector<int64_t> colShape = {g, n};
    llvm::append_range(colShape, out);
    colShape.push_back(cg);
    llvm::append_range(colShape, kernel);
    auto colType = tensorOf(colShape, elem);
    SmallVector<AffineMap> colMaps;
    if (!padded)
      colMaps.push_back(xMap);
    colMaps.push_back(AffineMap::getMultiDimIdentityMap(colRank, ctx));
    Value col =
        linalg::GenericOp::create(
            rewriter, loc, colType, padded ? ValueRange{} : ValueRange{x},
            emptyTensor(rewriter, loc, colType), colMaps,
            SmallVector<utils::IteratorType>(colRank,
                                             utils::IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l, padded ? extractOrPad(b, l, x, xMap, zero) : args[0]);
            })
            .getResult(0);
    col = reshapeTo(rewriter, loc, col,
                    tensorOf({g, n * oProd, cg * kProd}, elem));
    Value dw = batchMatmul(rewriter, loc,
                           groupedRows(rewriter, loc, adaptor.getDy(), g), col);
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, dw, dwType));
    return success();
  }
};

/// The argmax of every window (its row-major offset, −1 if nothing beats
/// −∞), then dx[n, c, h..] = Σ over the windows containing h whose argmax is
/// h of dy.
struct MaxPoolGradPattern : OpConversionPattern<tsr::MaxPoolGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::MaxPoolGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto xType = cast<RankedTensorType>(adaptor.getX().getType());
    auto dyType = cast<RankedTensorType>(adaptor.getDy().getType());
    Type elem = xType.getElementType();
    Type i64 = rewriter.getI64Type();
    ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                      dilations = op.getDilations(), pads = op.getPads();
    ArrayRef<int64_t> out = dyType.getShape().drop_front(2);
    int64_t k = kernel.size(), rank = xType.getRank(), loops = rank + k;

    // Row-major offset of the window position of loops rank..rank+k−1.
    auto windowOffset = [&](OpBuilder &b, Location l) -> Value {
      Value flat = indexConstant(b, l, 0);
      for (int64_t i = 0; i < k; ++i)
        flat = arith::AddIOp::create(
            b, l,
            arith::MulIOp::create(b, l, flat, indexConstant(b, l, kernel[i])),
            linalg::IndexOp::create(b, l, rank + i));
      return arith::IndexCastOp::create(b, l, i64, flat);
    };

    Value lowest = extremeConstant(rewriter, loc, elem, /*lowest=*/true);
    Value x = adaptor.getX();
    bool padded = windowsLeaveInput(xType.getShape().drop_front(2), pads,
                                    kernel, strides, dilations, out);
    auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> inExprs = {dim(0), dim(1)}, outExprs = inExprs,
                            winExprs;
    for (int64_t i = 0; i < k; ++i) {
      inExprs.push_back(dim(2 + i) * strides[i] + dim(rank + i) * dilations[i] -
                        pads[i]);
      outExprs.push_back(dim(2 + i));
      winExprs.push_back(dim(rank + i));
    }
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    iters.append(k, utils::IteratorType::reduction);
    auto maxType = tensorOf(dyType.getShape(), elem);
    auto idxType = tensorOf(dyType.getShape(), i64);
    AffineMap inMap = AffineMap::get(loops, 0, inExprs, ctx);
    AffineMap outMap = AffineMap::get(loops, 0, outExprs, ctx);
    // Positions in the padding read −∞ and never win.
    SmallVector<Value> inputs = {windowShape(rewriter, loc, kernel)};
    SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, winExprs, ctx),
                                   outMap, outMap};
    if (!padded) {
      inputs.insert(inputs.begin(), x);
      maps.insert(maps.begin(), inMap);
    }
    Value argmax =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{maxType, idxType}, inputs,
            ValueRange{filledTensor(rewriter, loc, maxType, lowest),
                       filledTensor(rewriter, loc, idxType,
                                    scalarConstant(rewriter, loc, i64, -1.0))},
            maps, iters,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value v = padded ? extractOrPad(b, l, x, inMap, lowest) : a[0];
              Value max = a[a.size() - 2], index = a.back();
              Value greater = arith::CmpFOp::create(
                  b, l, arith::CmpFPredicate::OGT, v, max);
              linalg::YieldOp::create(
                  b, l,
                  ValueRange{arith::SelectOp::create(b, l, greater, v, max),
                             arith::SelectOp::create(
                                 b, l, greater, windowOffset(b, l), index)});
            })
            .getResult(1);

    Value dy = adaptor.getDy();
    Value dx = reduceOverWindow(
        rewriter, loc, xType,
        filledTensor(rewriter, loc, xType,
                     scalarConstant(rewriter, loc, elem, 0.0)),
        kernel, [&](OpBuilder &b, Location l, Value acc) -> Value {
          auto [positions, valid] =
              windowPositions(b, l, 2, rank, strides, pads, dilations, out);
          SmallVector<Value> at = {linalg::IndexOp::create(b, l, 0),
                                   linalg::IndexOp::create(b, l, 1)};
          at.append(positions);
          Value winner = tensor::ExtractOp::create(b, l, argmax, at);
          Value hit = arith::AndIOp::create(
              b, l, valid,
              arith::CmpIOp::create(b, l, CmpIPredicate::eq, winner,
                                    windowOffset(b, l)));
          Value sum = arith::AddFOp::create(
              b, l, acc, tensor::ExtractOp::create(b, l, dy, at));
          return arith::SelectOp::create(b, l, hit, sum, acc);
        });
    rewriter.replaceOp(op, dx);
    return success();
  }
};

} // namespace

void mlir::tessera::tsr_to_linalg::populateGradientPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ConvBackwardDataPattern, ConvBackwardFilterPattern,
               MaxPoolGradPattern>(converter, patterns.getContext());
}
