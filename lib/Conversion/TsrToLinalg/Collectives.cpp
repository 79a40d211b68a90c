//===- Collectives.cpp - Collectives as runtime-level tsrt ops ------------===//
//
// A tsr collective becomes the tsrt op of its runtime entry point, on
// tensors and in destination-passing style, so that one-shot bufferization
// decides its buffers and tsr-collectives-to-runtime, after bufferization,
// makes the call. The group is the bit mask of its mesh axes (bit i for
// axis i of the module's `tsr.mesh`), the id -1 when the artifact writer has
// not numbered it, and the dtype the runtime's code of the tsr element type,
// decided here because this conversion makes unsigned integers signless.
// all_reduce and broadcast_from write into their own operand
// (`ins(%x) outs(%x)`, which bufferization keeps in place when %x dies
// there and the runtime takes as send == recv); the others into a
// tensor.empty. The runtime exchanges blocks of dimension 0: a collective
// along another dimension moves it to the front (linalg.transpose) before
// and back after, for an async one after its wait.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

using namespace mlir;
using namespace mlir::tessera::tsr_to_linalg;

namespace {

/// The runtime's code of a tsr element type (signed or unsigned).
std::optional<tsrt::DType> getDType(Type t) {
  if (t.isF32())
    return tsrt::DType::float32;
  if (t.isF64())
    return tsrt::DType::float64;
  if (t.isF16())
    return tsrt::DType::float16;
  if (t.isBF16())
    return tsrt::DType::bfloat16;
  auto i = dyn_cast<IntegerType>(t);
  if (!i)
    return std::nullopt;
  bool u = i.isUnsigned();
  switch (i.getWidth()) {
  case 1:
    return tsrt::DType::boolean;
  case 8:
    return u ? tsrt::DType::uint8 : tsrt::DType::int8;
  case 16:
    return u ? tsrt::DType::uint16 : tsrt::DType::int16;
  case 32:
    return u ? tsrt::DType::uint32 : tsrt::DType::int32;
  case 64:
    return u ? tsrt::DType::uint64 : tsrt::DType::int64;
  default:
    return std::nullopt;
  }
}

tsrt::Reduction getReduction(tsr::CollectiveReduction reduction) {
  switch (reduction) {
  case tsr::CollectiveReduction::sum:
    return tsrt::Reduction::sum;
  case tsr::CollectiveReduction::mean:
    return tsrt::Reduction::mean;
  case tsr::CollectiveReduction::max:
    return tsrt::Reduction::max;
  case tsr::CollectiveReduction::min:
    return tsrt::Reduction::min;
  }
  llvm_unreachable("unknown collective reduction");
}

/// The runtime's group of a collective: bit i set for axis i of the mesh.
FailureOr<int64_t> getGroupMask(Operation *op, ArrayAttr axes) {
  FailureOr<tsr::MeshAttr> mesh = tsr::getEnclosingMesh(op);
  if (failed(mesh))
    return failure();
  int64_t mask = 0;
  for (Attribute axis : axes) {
    std::optional<unsigned> i =
        mesh->getAxisIndex(cast<StringAttr>(axis).getValue());
    if (!i)
      return op->emitOpError("mesh axis ") << axis << " is not in " << *mesh;
    mask |= int64_t(1) << *i;
  }
  return mask;
}

/// The permutation that moves dimension `dim` of a rank-`rank` tensor to
/// the front (its inverse moves it back).
SmallVector<int64_t> frontPermutation(int64_t rank, int64_t dim) {
  SmallVector<int64_t> perm{dim};
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim)
      perm.push_back(d);
  return perm;
}

/// Lowers a tsr collective to `TsrtOpT` on tensors.
template <typename OpT, typename TsrtOpT>
struct CollectivePattern : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type elementType = getElementType(op.getX());
    std::optional<tsrt::DType> dtype = getDType(elementType);
    if (!dtype)
      return op.emitOpError("has element type ")
             << elementType << ", which the runtime's collectives do not carry";
    FailureOr<int64_t> group = getGroupMask(op, op.getMeshAxes());
    if (failed(group))
      return failure();

    SmallVector<NamedAttribute> attrs{
        rewriter.getNamedAttr("group", rewriter.getI64IntegerAttr(*group)),
        rewriter.getNamedAttr("dtype", tsrt::DTypeAttr::get(ctx, *dtype))};
    if (std::optional<uint64_t> id = op.getId())
      attrs.push_back(
          rewriter.getNamedAttr("id", rewriter.getI64IntegerAttr(*id)));
    if constexpr (std::is_same_v<OpT, tsr::AllReduceOp> ||
                  std::is_same_v<OpT, tsr::ReduceScatterOp>)
      attrs.push_back(rewriter.getNamedAttr(
          "reduction",
          tsrt::ReductionAttr::get(ctx, getReduction(op.getReduction()))));
    if constexpr (std::is_same_v<OpT, tsr::BroadcastFromOp>)
      attrs.push_back(rewriter.getNamedAttr("root", op.getRootAttr()));
    bool async = op.getAsync();
    if (async)
      attrs.push_back(rewriter.getNamedAttr("async", rewriter.getUnitAttr()));

    Value x = adaptor.getX();
    auto outType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    SmallVector<int64_t> perm;
    if (int64_t dim = getBlockDim(op); dim != 0) {
      perm = frontPermutation(outType.getRank(), dim);
      x = transpose(rewriter, loc, x, perm);
      outType = outType.clone(applyPermutation(outType.getShape(), perm));
    }
    // all_reduce and broadcast_from overwrite their operand where it dies.
    constexpr bool inPlace = std::is_same_v<OpT, tsr::AllReduceOp> ||
                             std::is_same_v<OpT, tsr::BroadcastFromOp>;
    Value init = inPlace ? x : emptyTensor(rewriter, loc, outType);
    Value result = TsrtOpT::create(rewriter, loc, TypeRange{outType},
                                   ValueRange{x, init}, attrs)
                       ->getResult(0);
    if (perm.empty()) {
      rewriter.replaceOp(op, result);
      return success();
    }
    SmallVector<int64_t> back = invertPermutationVector(perm);
    if (!async) {
      rewriter.replaceOp(op, transpose(rewriter, loc, result, back));
      return success();
    }
    // The blocks move back once they have arrived: at the wait, the
    // collective's one user, which this pattern replaces as well.
    Operation *wait = *op->getUsers().begin();
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(wait);
    Value done =
        tsrt::WaitOp::create(rewriter, wait->getLoc(), TypeRange{outType},
                             ValueRange{result}, ArrayRef<NamedAttribute>{})
            ->getResult(0);
    rewriter.replaceOp(wait, transpose(rewriter, wait->getLoc(), done, back));
    rewriter.eraseOp(op);
    return success();
  }

  static int64_t getBlockDim(OpT op) {
    if constexpr (std::is_same_v<OpT, tsr::AllReduceOp> ||
                  std::is_same_v<OpT, tsr::BroadcastFromOp>)
      return 0;
    else
      return op.getDim();
  }
};

/// tsr.send and tsr.recv: a tsrt.permute with an empty other side.
template <typename OpT> struct PointToPointPattern : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    constexpr bool isSend = std::is_same_v<OpT, tsr::SendOp>;
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    RankedTensorType type;
    if constexpr (isSend)
      type = cast<RankedTensorType>(adaptor.getX().getType());
    else
      type = cast<RankedTensorType>(
          this->getTypeConverter()->convertType(op.getType()));
    std::optional<tsrt::DType> dtype = getDType(type.getElementType());
    if (!dtype)
      return op.emitOpError("has element type ")
             << type.getElementType()
             << ", which the runtime's messages do not carry";
    FailureOr<int64_t> group = getGroupMask(op, op.getMeshAxes());
    if (failed(group))
      return failure();
    int64_t peer = static_cast<int64_t>(op.getPeer());
    SmallVector<NamedAttribute> attrs{
        rewriter.getNamedAttr("group", rewriter.getI64IntegerAttr(*group)),
        rewriter.getNamedAttr("dtype", tsrt::DTypeAttr::get(ctx, *dtype)),
        rewriter.getNamedAttr("send_to",
                              rewriter.getI64IntegerAttr(isSend ? peer : -1)),
        rewriter.getNamedAttr("recv_from",
                              rewriter.getI64IntegerAttr(isSend ? -1 : peer))};
    if (std::optional<uint64_t> id = op.getId())
      attrs.push_back(
          rewriter.getNamedAttr("id", rewriter.getI64IntegerAttr(*id)));
    auto none = RankedTensorType::get({0}, type.getElementType());
    Value empty = emptyTensor(rewriter, loc, none);
    if constexpr (isSend) {
      tsrt::PermuteOp::create(rewriter, loc, TypeRange{none},
                              ValueRange{adaptor.getX(), empty}, attrs);
      rewriter.eraseOp(op);
    } else {
      Value init = emptyTensor(rewriter, loc, type);
      rewriter.replaceOp(op,
                         tsrt::PermuteOp::create(rewriter, loc, TypeRange{type},
                                                 ValueRange{empty, init}, attrs)
                             ->getResult(0));
    }
    return success();
  }
};

/// tsr.wait of a collective along dimension 0 (the collective's pattern
/// replaces the others).
struct WaitPattern : OpConversionPattern<tsr::WaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::WaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value pending = adaptor.getPending();
    rewriter.replaceOp(op, tsrt::WaitOp::create(rewriter, op.getLoc(),
                                                TypeRange{pending.getType()},
                                                ValueRange{pending},
                                                ArrayRef<NamedAttribute>{})
                               ->getResult(0));
    return success();
  }
};

/// this rank's block: extract_slice at offset rank·c of dimension `dim`.
struct LocalShardPattern : OpConversionPattern<tsr::LocalShardOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::LocalShardOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto outType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    FailureOr<int64_t> group = getGroupMask(op, op.getMeshAxes());
    if (failed(group))
      return failure();
    int64_t dim = op.getDim();
    Value rank = tsrt::AxisRankOp::create(rewriter, loc, rewriter.getI64Type(),
                                          static_cast<uint64_t>(*group));
    Value offset =
        arith::MulIOp::create(rewriter, loc, rank,
                              arith::ConstantIntOp::create(
                                  rewriter, loc, outType.getDimSize(dim), 64));
    offset = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                        offset);
    int64_t rankOf = outType.getRank();
    SmallVector<OpFoldResult> offsets(rankOf, rewriter.getIndexAttr(0));
    offsets[dim] = offset;
    SmallVector<OpFoldResult> sizes, strides(rankOf, rewriter.getIndexAttr(1));
    for (int64_t d : outType.getShape())
      sizes.push_back(rewriter.getIndexAttr(d));
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, outType, adaptor.getX(), offsets, sizes, strides);
    return success();
  }
};

} // namespace

void mlir::tessera::tsr_to_linalg::populateCollectivePatterns(
    TypeConverter &converter, RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns
      .add<CollectivePattern<tsr::AllReduceOp, tsrt::AllReduceOp>,
           CollectivePattern<tsr::ReduceScatterOp, tsrt::ReduceScatterOp>,
           CollectivePattern<tsr::AllGatherOp, tsrt::AllGatherOp>,
           CollectivePattern<tsr::AllToAllOp, tsrt::AllToAllOp>,
           CollectivePattern<tsr::BroadcastFromOp, tsrt::BroadcastOp>,
           PointToPointPattern<tsr::SendOp>, PointToPointPattern<tsr::RecvOp>,
           LocalShardPattern, WaitPattern>(converter, ctx);
}
