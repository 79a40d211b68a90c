//===- Reductions.cpp - Lowering of reductions, arg-reductions, CumSum, TopK
//===//
#include "Patterns.h"

using namespace mlir;
using namespace mlir::tessera::tsr_to_linalg;
using arith::CmpFPredicate;
using arith::CmpIPredicate;

namespace {

enum class ReduceKind { Sum, Mean, Max, Min, Prod };

template <typename OpT, ReduceKind kind>
struct ReducePattern : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type tsrElem = getElementType(op.getX());
    bool isFloat = isa<FloatType>(tsrElem), uns = isUnsigned(tsrElem);
    auto resultType =
        convertTensorType(*this->getTypeConverter(), op.getType());
    Value init;
    switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean:
      init = scalarConstant(rewriter, loc, tsrElem, 0.0);
      break;
    case ReduceKind::Prod:
      init = scalarConstant(rewriter, loc, tsrElem, 1.0);
      break;
    case ReduceKind::Max:
      init = extremeConstant(rewriter, loc, tsrElem, /*lowest=*/true);
      break;
    case ReduceKind::Min:
      init = extremeConstant(rewriter, loc, tsrElem, /*lowest=*/false);
      break;
    }
    Value reduced = buildReduction(
        rewriter, loc, adaptor.getX(), op.getAxes(), init,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value x = args[0], acc = args[1];
          switch (kind) {
          case ReduceKind::Sum:
          case ReduceKind::Mean:
            return isFloat ? (Value)arith::AddFOp::create(b, l, x, acc)
                           : (Value)arith::AddIOp::create(b, l, x, acc);
          case ReduceKind::Prod:
            return isFloat ? (Value)arith::MulFOp::create(b, l, x, acc)
                           : (Value)arith::MulIOp::create(b, l, x, acc);
          case ReduceKind::Max:
            if (isFloat)
              return arith::MaximumFOp::create(b, l, x, acc);
            return uns ? (Value)arith::MaxUIOp::create(b, l, x, acc)
                       : (Value)arith::MaxSIOp::create(b, l, x, acc);
          case ReduceKind::Min:
            if (isFloat)
              return arith::MinimumFOp::create(b, l, x, acc);
            return uns ? (Value)arith::MinUIOp::create(b, l, x, acc)
                       : (Value)arith::MinSIOp::create(b, l, x, acc);
          }
          llvm_unreachable("unknown reduction");
        });
    if (kind == ReduceKind::Mean) {
      auto inType = cast<RankedTensorType>(op.getX().getType());
      int64_t count = 1;
      for (int64_t a : op.getAxes())
        count *= inType.getDimSize(a);
      // Integer means of empty sets stay 0 instead of dividing by zero.
      if (isFloat || count != 0) {
        auto type = cast<RankedTensorType>(reduced.getType());
        reduced = buildElementwise(
            rewriter, loc, type, reduced,
            [&](OpBuilder &b, Location l, ValueRange args) -> Value {
              Value c = scalarConstant(b, l, tsrElem, (double)count);
              if (isFloat)
                return arith::DivFOp::create(b, l, args[0], c);
              return uns ? (Value)arith::DivUIOp::create(b, l, args[0], c)
                         : (Value)arith::DivSIOp::create(b, l, args[0], c);
            });
      }
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, reduced, resultType));
    return success();
  }
};

/// ArgMax/ArgMin: a reduction carrying (best value, best index). A candidate
/// wins if strictly better, if equal and `select_last_index`, or if it is
/// the first NaN (NaN beats every number, as in numpy).
template <typename OpT, bool isMax>
struct ArgReducePattern : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type tsrElem = getElementType(op.getX());
    bool isFloat = isa<FloatType>(tsrElem), uns = isUnsigned(tsrElem);
    bool last = op.getSelectLastIndex();
    auto inType = cast<RankedTensorType>(adaptor.getX().getType());
    int64_t axis = op.getAxis(), rank = inType.getRank();
    SmallVector<int64_t> outShape(inType.getShape());
    outShape.erase(outShape.begin() + axis);
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iterators;
    for (int64_t d = 0; d < rank; ++d) {
      iterators.push_back(d == axis ? utils::IteratorType::reduction
                                    : utils::IteratorType::parallel);
      if (d != axis)
        outExprs.push_back(getAffineDimExpr(d, ctx));
    }
    auto valType = RankedTensorType::get(outShape, inType.getElementType());
    auto idxType = RankedTensorType::get(outShape, rewriter.getI64Type());
    Value valInit = filledTensor(
        rewriter, loc, valType, extremeConstant(rewriter, loc, tsrElem, isMax));
    Value idxInit =
        filledTensor(rewriter, loc, idxType,
                     scalarConstant(rewriter, loc, rewriter.getI64Type(), 0));
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valType, idxType}, adaptor.getX(),
        ValueRange{valInit, idxInit},
        {AffineMap::getMultiDimIdentityMap(rank, ctx), outMap, outMap},
        iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = args[0], best = args[1], bestIdx = args[2];
          Value better, equal;
          if (isFloat) {
            better = arith::CmpFOp::create(
                b, l, isMax ? CmpFPredicate::OGT : CmpFPredicate::OLT, x, best);
            equal = arith::CmpFOp::create(b, l, CmpFPredicate::OEQ, x, best);
            Value xNaN = arith::CmpFOp::create(b, l, CmpFPredicate::UNO, x, x);
            Value bestNum =
                arith::CmpFOp::create(b, l, CmpFPredicate::ORD, best, best);
            better = arith::OrIOp::create(
                b, l, better, arith::AndIOp::create(b, l, xNaN, bestNum));
          } else {
            CmpIPredicate p =
                isMax ? (uns ? CmpIPredicate::ugt : CmpIPredicate::sgt)
                      : (uns ? CmpIPredicate::ult : CmpIPredicate::slt);
            better = arith::CmpIOp::create(b, l, p, x, best);
            equal = arith::CmpIOp::create(b, l, CmpIPredicate::eq, x, best);
          }
          Value take = better;
          if (last)
            take = arith::OrIOp::create(b, l, better, equal);
          Value idx = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::SelectOp::create(b, l, take, x, best),
                         arith::SelectOp::create(b, l, take, idx, bestIdx)});
        });
    auto resultType =
        convertTensorType(*this->getTypeConverter(), op.getType());
    rewriter.replaceOp(
        op, reshapeTo(rewriter, loc, generic.getResult(1), resultType));
    return success();
  }
};

/// CumSum as an scf.for along the axis carrying the running sum (one slice)
/// and the result.
struct CumSumPattern : OpConversionPattern<tsr::CumSumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::CumSumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value x = adaptor.getX();
    auto type = cast<RankedTensorType>(x.getType());
    Type elem = type.getElementType();
    bool isFloat = isa<FloatType>(elem);
    int64_t axis = op.getAxis(), rank = type.getRank(),
            len = type.getDimSize(axis);
    bool exclusive = op.getExclusive(), reverse = op.getReverse();
    SmallVector<int64_t> sliceShape(type.getShape());
    sliceShape[axis] = 1;
    auto sliceType = RankedTensorType::get(sliceShape, elem);
    Value zero = scalarConstant(rewriter, loc, elem, 0.0);
    Value running = filledTensor(rewriter, loc, sliceType, zero);
    Value result = emptyTensor(rewriter, loc, type);
    auto loop = scf::ForOp::create(
        rewriter, loc, indexConstant(rewriter, loc, 0),
        indexConstant(rewriter, loc, len), indexConstant(rewriter, loc, 1),
        ValueRange{running, result},
        [&](OpBuilder &b, Location l, Value iv, ValueRange iter) {
          Value pos = iv;
          if (reverse)
            pos = arith::SubIOp::create(b, l, indexConstant(b, l, len - 1), iv);
          SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
              strides(rank, b.getIndexAttr(1)), sizes;
          for (int64_t d : sliceShape)
            sizes.push_back(b.getIndexAttr(d));
          offsets[axis] = pos;
          Value slice = tensor::ExtractSliceOp::create(b, l, sliceType, x,
                                                       offsets, sizes, strides);
          // The running sum updates in place (bufferization keeps the loop
          // carried buffers); the exclusive result reads it before that.
          Value result = iter[1];
          if (exclusive)
            result = tensor::InsertSliceOp::create(b, l, iter[0], result,
                                                   offsets, sizes, strides);
          AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
          Value sum = linalg::GenericOp::create(
                          b, l, sliceType, slice, iter[0], {id, id},
                          SmallVector<utils::IteratorType>(
                              rank, utils::IteratorType::parallel),
                          [&](OpBuilder &nb, Location nl, ValueRange args) {
                            Value r = isFloat ? (Value)arith::AddFOp::create(
                                                    nb, nl, args[0], args[1])
                                              : (Value)arith::AddIOp::create(
                                                    nb, nl, args[0], args[1]);
                            linalg::YieldOp::create(nb, nl, r);
                          })
                          .getResult(0);
          Value updated = result;
          if (!exclusive)
            updated = tensor::InsertSliceOp::create(b, l, sum, result, offsets,
                                                    sizes, strides);
          scf::YieldOp::create(b, l, ValueRange{sum, updated});
        });
    rewriter.replaceOp(op, loop.getResult(1));
    return success();
  }
};

/// TopK by selection: k rounds, each an arg-reduction over the elements not
/// taken yet (strictly better wins, so ties keep the lower index), writing
/// slice t of the results and marking the winner taken.
struct TopKPattern : OpConversionPattern<tsr::TopKOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value x = adaptor.getX();
    auto type = cast<RankedTensorType>(x.getType());
    Type tsrElem = getElementType(op.getX());
    Type elem = type.getElementType();
    bool isFloat = isa<FloatType>(elem), uns = isUnsigned(tsrElem),
         largest = op.getLargest();
    int64_t axis = op.getAxis(), rank = type.getRank(), k = op.getK();
    Type i64 = rewriter.getI64Type();
    auto valuesType =
        convertTensorType(*getTypeConverter(), op.getValues().getType());
    auto indicesType = cast<RankedTensorType>(op.getIndices().getType());
    SmallVector<int64_t> rowShape(type.getShape());
    rowShape.erase(rowShape.begin() + axis);
    auto rowValType = RankedTensorType::get(rowShape, elem);
    auto rowIdxType = RankedTensorType::get(rowShape, i64);
    auto takenType =
        RankedTensorType::get(type.getShape(), rewriter.getI1Type());

    SmallVector<AffineExpr> rowExprs;
    SmallVector<utils::IteratorType> reduceIters;
    for (int64_t d = 0; d < rank; ++d) {
      reduceIters.push_back(d == axis ? utils::IteratorType::reduction
                                      : utils::IteratorType::parallel);
      if (d != axis)
        rowExprs.push_back(getAffineDimExpr(d, ctx));
    }
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap rowMap = AffineMap::get(rank, 0, rowExprs, ctx);

    Value taken =
        filledTensor(rewriter, loc, takenType,
                     scalarConstant(rewriter, loc, rewriter.getI1Type(), 0));
    auto loop = scf::ForOp::create(
        rewriter, loc, indexConstant(rewriter, loc, 0),
        indexConstant(rewriter, loc, k), indexConstant(rewriter, loc, 1),
        ValueRange{emptyTensor(rewriter, loc, valuesType),
                   emptyTensor(rewriter, loc, indicesType), taken},
        [&](OpBuilder &b, Location l, Value iv, ValueRange iter) {
          Value valInit = filledTensor(b, l, rowValType,
                                       extremeConstant(b, l, tsrElem, largest));
          Value idxInit =
              filledTensor(b, l, rowIdxType, scalarConstant(b, l, i64, -1));
          auto select = linalg::GenericOp::create(
              b, l, TypeRange{rowValType, rowIdxType}, ValueRange{x, iter[2]},
              ValueRange{valInit, idxInit}, {id, id, rowMap, rowMap},
              reduceIters, [&](OpBuilder &nb, Location nl, ValueRange args) {
                Value v = args[0], isTaken = args[1], best = args[2],
                      bestIdx = args[3];
                Value better;
                if (isFloat) {
                  better = arith::CmpFOp::create(
                      nb, nl, largest ? CmpFPredicate::OGT : CmpFPredicate::OLT,
                      v, best);
                } else {
                  better = arith::CmpIOp::create(
                      nb, nl,
                      largest ? (uns ? CmpIPredicate::ugt : CmpIPredicate::sgt)
                              : (uns ? CmpIPredicate::ult : CmpIPredicate::slt),
                      v, best);
                }
                Value none =
                    arith::CmpIOp::create(nb, nl, CmpIPredicate::slt, bestIdx,
                                          scalarConstant(nb, nl, i64, 0));
                Value take = arith::AndIOp::create(
                    nb, nl, arith::OrIOp::create(nb, nl, better, none),
                    arith::XOrIOp::create(
                        nb, nl, isTaken,
                        scalarConstant(nb, nl, nb.getI1Type(), 1)));
                Value idx = arith::IndexCastOp::create(
                    nb, nl, i64, linalg::IndexOp::create(nb, nl, axis));
                linalg::YieldOp::create(
                    nb, nl,
                    ValueRange{
                        arith::SelectOp::create(nb, nl, take, v, best),
                        arith::SelectOp::create(nb, nl, take, idx, bestIdx)});
              });
          Value rowVal = select.getResult(0), rowIdx = select.getResult(1);
          SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
              strides(rank, b.getIndexAttr(1)), sizes;
          for (int64_t d = 0; d < rank; ++d)
            sizes.push_back(b.getIndexAttr(d == axis ? 1 : type.getDimSize(d)));
          offsets[axis] = iv;
          Value values = tensor::InsertSliceOp::create(b, l, rowVal, iter[0],
                                                       offsets, sizes, strides);
          Value indices = tensor::InsertSliceOp::create(
              b, l, rowIdx, iter[1], offsets, sizes, strides);
          Value newTaken =
              linalg::GenericOp::create(
                  b, l, takenType, rowIdx, iter[2], {rowMap, id},
                  SmallVector<utils::IteratorType>(
                      rank, utils::IteratorType::parallel),
                  [&](OpBuilder &nb, Location nl, ValueRange args) {
                    Value idx = arith::IndexCastOp::create(
                        nb, nl, i64, linalg::IndexOp::create(nb, nl, axis));
                    Value hit = arith::CmpIOp::create(nb, nl, CmpIPredicate::eq,
                                                      idx, args[0]);
                    linalg::YieldOp::create(
                        nb, nl,
                        arith::OrIOp::create(nb, nl, args[1], hit).getResult());
                  })
                  .getResult(0);
          scf::YieldOp::create(b, l, ValueRange{values, indices, newTaken});
        });
    rewriter.replaceOp(op, {loop.getResult(0), loop.getResult(1)});
    return success();
  }
};

/// Unsorted TopK of a 1-D tensor by radix select: every element maps to an
/// unsigned key of its width that orders as the elements do (a float's bits
/// with the sign flipped, or all bits for a negative one; complemented for
/// `largest = false`). The threshold t, the k-th best key, is found one bit
/// at a time from the top: a bit stays set if at least k keys are >= the
/// candidate, so `bits` counting passes over the n elements. One sequential
/// pass then takes every key above t and, lowest index first, the k − (keys
/// above t) equal to it, in index order: O(bits · n) against selection's
/// O(k · n), whatever k is.
struct UnsortedTopKPattern : OpConversionPattern<tsr::TopKOp> {
  UnsortedTopKPattern(const TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(tsr::TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value x = adaptor.getX();
    auto type = cast<RankedTensorType>(x.getType());
    Type elem = type.getElementType();
    unsigned width = elem.getIntOrFloatBitWidth();
    if (op.getSorted() || type.getRank() != 1 || width < 8 || width > 64)
      return rewriter.notifyMatchFailure(op, "not an unsorted 1-D TopK");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type tsrElem = getElementType(op.getX());
    bool isFloat = isa<FloatType>(elem), uns = isUnsigned(tsrElem);
    bool largest = op.getLargest();
    Type keyType = rewriter.getIntegerType(width), i64 = rewriter.getI64Type();
    APInt signBit = APInt::getSignMask(width), ones = APInt::getAllOnes(width);
    auto keyConst = [&](OpBuilder &b, Location l, const APInt &v) -> Value {
      return arith::ConstantOp::create(b, l, b.getIntegerAttr(keyType, v));
    };
    auto keyOf = [&](OpBuilder &b, Location l, Value v) {
      Value key = v;
      if (isFloat) {
        Value bits = arith::BitcastOp::create(b, l, keyType, v);
        Value negative = arith::CmpIOp::create(b, l, CmpIPredicate::slt, bits,
                                               keyConst(b, l, APInt(width, 0)));
        key = arith::SelectOp::create(
            b, l, negative,
            arith::XOrIOp::create(b, l, bits, keyConst(b, l, ones)),
            arith::XOrIOp::create(b, l, bits, keyConst(b, l, signBit)));
      } else if (!uns) {
        key = arith::XOrIOp::create(b, l, v, keyConst(b, l, signBit));
      }
      if (!largest)
        key = arith::XOrIOp::create(b, l, key, keyConst(b, l, ones));
      return key;
    };
    // How many keys compare `pred` against `t`, as an i64.
    auto id = AffineMap::getMultiDimIdentityMap(1, ctx);
    auto scalarMap = AffineMap::get(1, 0, {}, ctx);
    auto countType = RankedTensorType::get({}, i64);
    auto count = [&](OpBuilder &b, Location l, CmpIPredicate pred, Value t) {
      Value init =
          filledTensor(b, l, countType, scalarConstant(b, l, i64, 0.0));
      auto counted = linalg::GenericOp::create(
          b, l, countType, x, init, {id, scalarMap},
          {utils::IteratorType::reduction},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value hit =
                arith::CmpIOp::create(nb, nl, pred, keyOf(nb, nl, args[0]), t);
            Value one = arith::ExtUIOp::create(nb, nl, i64, hit);
            linalg::YieldOp::create(
                nb, nl,
                arith::AddIOp::create(nb, nl, args[1], one).getResult());
          });
      return tensor::ExtractOp::create(b, l, counted.getResult(0), ValueRange{})
          .getResult();
    };
    Value k = scalarConstant(rewriter, loc, i64, double(op.getK()));
    auto search = scf::ForOp::create(
        rewriter, loc, indexConstant(rewriter, loc, 0),
        indexConstant(rewriter, loc, width), indexConstant(rewriter, loc, 1),
        ValueRange{keyConst(rewriter, loc, APInt(width, 0))},
        [&](OpBuilder &b, Location l, Value iv, ValueRange iter) {
          Value shift =
              arith::SubIOp::create(b, l, indexConstant(b, l, width - 1), iv);
          Value bit = arith::ShLIOp::create(
              b, l, keyConst(b, l, APInt(width, 1)),
              arith::IndexCastOp::create(b, l, keyType, shift));
          Value candidate = arith::OrIOp::create(b, l, iter[0], bit);
          Value enough = arith::CmpIOp::create(
              b, l, CmpIPredicate::uge,
              count(b, l, CmpIPredicate::uge, candidate), k);
          scf::YieldOp::create(b, l,
                               ValueRange{arith::SelectOp::create(
                                              b, l, enough, candidate, iter[0])
                                              .getResult()});
        });
    Value threshold = search.getResult(0);
    Value ties = arith::SubIOp::create(
        rewriter, loc, k, count(rewriter, loc, CmpIPredicate::ugt, threshold));
    auto valuesType =
        convertTensorType(*getTypeConverter(), op.getValues().getType());
    auto indicesType = cast<RankedTensorType>(op.getIndices().getType());
    Value zero64 = scalarConstant(rewriter, loc, i64, 0.0);
    auto take = scf::ForOp::create(
        rewriter, loc, indexConstant(rewriter, loc, 0),
        indexConstant(rewriter, loc, type.getDimSize(0)),
        indexConstant(rewriter, loc, 1),
        ValueRange{emptyTensor(rewriter, loc, valuesType),
                   emptyTensor(rewriter, loc, indicesType),
                   indexConstant(rewriter, loc, 0), ties},
        [&](OpBuilder &b, Location l, Value iv, ValueRange iter) {
          Value v = tensor::ExtractOp::create(b, l, x, iv);
          Value key = keyOf(b, l, v);
          Value above =
              arith::CmpIOp::create(b, l, CmpIPredicate::ugt, key, threshold);
          Value tie = arith::AndIOp::create(
              b, l,
              arith::CmpIOp::create(b, l, CmpIPredicate::eq, key, threshold),
              arith::CmpIOp::create(b, l, CmpIPredicate::sgt, iter[3], zero64));
          Value taken = arith::OrIOp::create(b, l, above, tie);
          auto write = scf::IfOp::create(
              b, l, taken,
              [&](OpBuilder &tb, Location tl) {
                Value values =
                    tensor::InsertOp::create(tb, tl, v, iter[0], iter[2]);
                Value indices = tensor::InsertOp::create(
                    tb, tl, arith::IndexCastOp::create(tb, tl, i64, iv),
                    iter[1], iter[2]);
                Value next = arith::AddIOp::create(tb, tl, iter[2],
                                                   indexConstant(tb, tl, 1));
                scf::YieldOp::create(tb, tl, ValueRange{values, indices, next});
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el,
                                     ValueRange{iter[0], iter[1], iter[2]});
              });
          Value left = arith::SubIOp::create(
              b, l, iter[3], arith::ExtUIOp::create(b, l, i64, tie));
          scf::YieldOp::create(b, l,
                               ValueRange{write.getResult(0),
                                          write.getResult(1),
                                          write.getResult(2), left});
        });
    rewriter.replaceOp(op, {take.getResult(0), take.getResult(1)});
    return success();
  }
};

} // namespace

void mlir::tessera::tsr_to_linalg::populateReductionPatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ReducePattern<tsr::ReduceSumOp, ReduceKind::Sum>,
               ReducePattern<tsr::ReduceMeanOp, ReduceKind::Mean>,
               ReducePattern<tsr::ReduceMaxOp, ReduceKind::Max>,
               ReducePattern<tsr::ReduceMinOp, ReduceKind::Min>,
               ReducePattern<tsr::ReduceProdOp, ReduceKind::Prod>,
               ArgReducePattern<tsr::ArgMaxOp, true>,
               ArgReducePattern<tsr::ArgMinOp, false>, CumSumPattern,
               TopKPattern, UnsortedTopKPattern>(converter,
                                                 patterns.getContext());
}
