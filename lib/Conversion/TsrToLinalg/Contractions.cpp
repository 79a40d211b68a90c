//===- Contractions.cpp - Lowering of matmul, conv and einsum -------------===//
//
// Matmuls and convolutions end in linalg.matmul / linalg.batch_matmul so that
// the CPU pipeline can replace them by BLAS calls; einsum is one generic.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

using namespace mlir;
using namespace mlir::tessera::tsr_to_linalg;

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

/// A zero-initialized accumulator of `type`.
Value zeros(OpBuilder &b, Location loc, RankedTensorType type) {
  return filledTensor(b, loc, type,
                      scalarConstant(b, loc, type.getElementType(), 0.0));
}

/// Brings `v` = [batch..., R, C] to [B, R, C], broadcasting its batch
/// dimensions to `batch` (linalg.broadcast after dropping the size-1
/// dimensions that broadcast) and collapsing them.
Value toBatch3D(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> batch) {
  auto type = cast<RankedTensorType>(v.getType());
  Type elem = type.getElementType();
  int64_t r = type.getDimSize(type.getRank() - 2),
          c = type.getDimSize(type.getRank() - 1);
  ArrayRef<int64_t> own = type.getShape().drop_back(2);
  size_t offset = batch.size() - own.size();
  SmallVector<int64_t> kept, added;
  for (size_t i = 0; i < batch.size(); ++i) {
    bool present = i >= offset && own[i - offset] == batch[i];
    if (present)
      kept.push_back(batch[i]);
    else
      added.push_back(i);
  }
  if (!added.empty()) {
    kept.append({r, c});
    Value dropped = reshapeTo(b, loc, v, tensorOf(kept, elem));
    SmallVector<int64_t> full(batch);
    full.append({r, c});
    v = linalg::BroadcastOp::create(
            b, loc, dropped, emptyTensor(b, loc, tensorOf(full, elem)), added)
            .getResult()[0];
  }
  return reshapeTo(b, loc, v, tensorOf({product(batch), r, c}, elem));
}

/// numpy.matmul: 1-D operands get a unit dimension, batch dimensions
/// broadcast; a batched lhs against a 2-D rhs folds the batch into the rows.
struct MatMulPattern : OpConversionPattern<tsr::MatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = convertTensorType(*getTypeConverter(), op.getType());
    Type elem = resultType.getElementType();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    SmallVector<int64_t> a(cast<RankedTensorType>(lhs.getType()).getShape()),
        bs(cast<RankedTensorType>(rhs.getType()).getShape());
    if (a.size() == 1) {
      a.insert(a.begin(), 1);
      lhs = reshapeTo(rewriter, loc, lhs, tensorOf(a, elem));
    }
    if (bs.size() == 1) {
      bs.push_back(1);
      rhs = reshapeTo(rewriter, loc, rhs, tensorOf(bs, elem));
    }
    int64_t m = a[a.size() - 2], k = a.back(), n = bs.back();
    auto batch = tsr::broadcastShapes(ArrayRef(a).drop_back(2),
                                      ArrayRef(bs).drop_back(2));
    if (failed(batch))
      return rewriter.notifyMatchFailure(op, "batch dims do not broadcast");
    int64_t batchSize = product(*batch);
    Type acc = accumulatorType(elem);
    Value result;
    if (bs.size() == 2 || batchSize == 1) {
      // [B·M, K] × [K, N]: one plain matmul.
      Value l =
          reshapeTo(rewriter, loc, lhs, tensorOf({batchSize * m, k}, elem));
      Value r = reshapeTo(rewriter, loc, rhs, tensorOf({k, n}, elem));
      auto outType = tensorOf({batchSize * m, n}, acc);
      result =
          linalg::MatmulOp::create(rewriter, loc, outType, ValueRange{l, r},
                                   zeros(rewriter, loc, outType))
              .getResult(0);
    } else {
      Value l = toBatch3D(rewriter, loc, lhs, *batch);
      Value r = toBatch3D(rewriter, loc, rhs, *batch);
      auto outType = tensorOf({batchSize, m, n}, acc);
      result = linalg::BatchMatmulOp::create(rewriter, loc, outType,
                                             ValueRange{l, r},
                                             zeros(rewriter, loc, outType))
                   .getResult(0);
    }
    result = narrowTo(rewriter, loc, result, elem);
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, result, resultType));
    return success();
  }
};

/// Convolution as im2col + one batch_matmul over the groups.
///
/// With x [N, C, D1..Dk] padded, w [M, C/G, K1..Kk], G groups, Cg = C/G,
/// Mg = M/G, output spatial sizes O1..Ok:
///   col [G, Cg, K1..Kk, N, O1..Ok] = xp[n, g·Cg + c, o_i·s_i + k_i·d_i]
///     viewed as [G, Cg·ΠK, N·ΠO];
///   w viewed as [G, Mg, Cg·ΠK];
///   y' = batch_matmul(w, col) : [G, Mg, N·ΠO], viewed as [G, Mg, N, O..];
///   y [N, G, Mg, O..] = y'[g, m, n, o..] + bias[g·Mg + m], viewed as
///     [N, M, O..].
struct ConvPattern : OpConversionPattern<tsr::ConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto xType = cast<RankedTensorType>(adaptor.getX().getType());
    auto wType = cast<RankedTensorType>(adaptor.getW().getType());
    auto resultType = convertTensorType(*getTypeConverter(), op.getType());
    Type elem = xType.getElementType();
    int64_t k = xType.getRank() - 2, n = xType.getDimSize(0),
            c = xType.getDimSize(1), m = wType.getDimSize(0), g = op.getGroup(),
            cg = c / g, mg = m / g;
    ArrayRef<int64_t> strides = op.getStrides(), pads = op.getPads(),
                      dilations = op.getDilations();
    ArrayRef<int64_t> kernel = wType.getShape().drop_front(2);
    ArrayRef<int64_t> out = resultType.getShape().drop_front(2);
    int64_t kProd = product(kernel), oProd = product(out);

    Value x = adaptor.getX();
    if (llvm::any_of(pads, [](int64_t p) { return p != 0; })) {
      SmallVector<OpFoldResult> lo(2, rewriter.getIndexAttr(0)),
          hi(2, rewriter.getIndexAttr(0));
      SmallVector<int64_t> padded(xType.getShape());
      for (int64_t i = 0; i < k; ++i) {
        lo.push_back(rewriter.getIndexAttr(pads[i]));
        hi.push_back(rewriter.getIndexAttr(pads[k + i]));
        padded[2 + i] += pads[i] + pads[k + i];
      }
      x = tensor::PadOp::create(rewriter, loc, tensorOf(padded, elem), x, lo,
                                hi, scalarConstant(rewriter, loc, elem, 0.0));
    }

    // im2col: loops (g, c, k1..kk, n, o1..ok).
    int64_t colRank = 3 + 2 * k;
    SmallVector<int64_t> colShape = {g, cg};
    llvm::append_range(colShape, kernel);
    colShape.push_back(n);
    llvm::append_range(colShape, out);
    auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> xExprs = {dim(2 + k), dim(0) * cg + dim(1)};
    for (int64_t i = 0; i < k; ++i)
      xExprs.push_back(dim(3 + k + i) * strides[i] + dim(2 + i) * dilations[i]);
    auto colType = tensorOf(colShape, elem);
    Value col =
        linalg::GenericOp::create(
            rewriter, loc, colType, x, emptyTensor(rewriter, loc, colType),
            {AffineMap::get(colRank, 0, xExprs, ctx),
             AffineMap::getMultiDimIdentityMap(colRank, ctx)},
            SmallVector<utils::IteratorType>(colRank,
                                             utils::IteratorType::parallel),
            [](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(b, l, args[0]);
            })
            .getResult(0);
    col = reshapeTo(rewriter, loc, col,
                    tensorOf({g, cg * kProd, n * oProd}, elem));
    Value w = reshapeTo(rewriter, loc, adaptor.getW(),
                        tensorOf({g, mg, cg * kProd}, elem));
    auto mmType = tensorOf({g, mg, n * oProd}, accumulatorType(elem));
    Value mm =
        linalg::BatchMatmulOp::create(rewriter, loc, mmType, ValueRange{w, col},
                                      zeros(rewriter, loc, mmType))
            .getResult(0);
    mm = narrowTo(rewriter, loc, mm, elem);
    SmallVector<int64_t> mmShape = {g, mg, n};
    llvm::append_range(mmShape, out);
    mm = reshapeTo(rewriter, loc, mm, tensorOf(mmShape, elem));

    // Transpose to [N, G, Mg, O..] and add the bias: loops (n, g, m, o..).
    int64_t outRank = 3 + k;
    SmallVector<int64_t> ySplit = {n, g, mg};
    llvm::append_range(ySplit, out);
    SmallVector<AffineExpr> mmExprs = {dim(1), dim(2), dim(0)};
    for (int64_t i = 0; i < k; ++i)
      mmExprs.push_back(dim(3 + i));
    SmallVector<Value> inputs = {mm};
    SmallVector<AffineMap> maps = {AffineMap::get(outRank, 0, mmExprs, ctx)};
    if (Value bias = adaptor.getBias()) {
      inputs.push_back(reshapeTo(rewriter, loc, bias, tensorOf({g, mg}, elem)));
      maps.push_back(AffineMap::get(outRank, 0, {dim(1), dim(2)}, ctx));
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(outRank, ctx));
    auto yType = tensorOf(ySplit, elem);
    bool hasBias = inputs.size() == 2;
    Value y = linalg::GenericOp::create(
                  rewriter, loc, yType, inputs,
                  emptyTensor(rewriter, loc, yType), maps,
                  SmallVector<utils::IteratorType>(
                      outRank, utils::IteratorType::parallel),
                  [&](OpBuilder &b, Location l, ValueRange args) {
                    Value v = args[0];
                    if (hasBias)
                      v = arith::AddFOp::create(b, l, v, args[1]);
                    linalg::YieldOp::create(b, l, v);
                  })
                  .getResult(0);
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, y, resultType));
    return success();
  }
};

/// Einsum as one generic: a loop per distinct label (output labels first),
/// reduction loops for labels absent from the output; a label repeated in
/// one operand reads its diagonal.
struct EinsumPattern : OpConversionPattern<tsr::EinsumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::EinsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto spec = tsr::parseEinsum(op.getEquation(), op.getInputs().size());
    if (failed(spec))
      return rewriter.notifyMatchFailure(op, "malformed equation");
    auto resultType = convertTensorType(*getTypeConverter(), op.getType());
    Type elem = resultType.getElementType();
    bool isFloat = isa<FloatType>(elem);
    std::string labels;
    for (char l : spec->output)
      if (labels.find(l) == std::string::npos)
        labels.push_back(l);
    size_t numParallel = labels.size();
    for (const std::string &in : spec->inputs)
      for (char l : in)
        if (labels.find(l) == std::string::npos)
          labels.push_back(l);
    auto mapOf = [&](StringRef ls) {
      SmallVector<AffineExpr> exprs;
      for (char l : ls)
        exprs.push_back(getAffineDimExpr(labels.find(l), ctx));
      return AffineMap::get(labels.size(), 0, exprs, ctx);
    };
    SmallVector<AffineMap> maps;
    for (const std::string &in : spec->inputs)
      maps.push_back(mapOf(in));
    maps.push_back(mapOf(spec->output));
    SmallVector<utils::IteratorType> iterators(labels.size(),
                                               utils::IteratorType::reduction);
    for (size_t i = 0; i < numParallel; ++i)
      iterators[i] = utils::IteratorType::parallel;
    unsigned numInputs = op.getInputs().size();
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, resultType, adaptor.getInputs(),
            zeros(rewriter, loc, resultType), maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value p = args[0];
              for (unsigned i = 1; i < numInputs; ++i)
                p = isFloat ? (Value)arith::MulFOp::create(b, l, p, args[i])
                            : (Value)arith::MulIOp::create(b, l, p, args[i]);
              Value acc = args[numInputs];
              Value s = isFloat ? (Value)arith::AddFOp::create(b, l, acc, p)
                                : (Value)arith::AddIOp::create(b, l, acc, p);
              linalg::YieldOp::create(b, l, s);
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::tessera::tsr_to_linalg::populateContractionPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<MatMulPattern, ConvPattern, EinsumPattern>(
      converter, patterns.getContext());
}
