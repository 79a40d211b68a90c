//===- Collectives.cpp - Collectives as calls into the runtime ------------===//
//
// A collective reads its operand's buffer and writes a fresh one: the
// operand becomes `bufferization.to_buffer` (read-only, identity layout, so
// bufferization copies a strided view into a contiguous buffer), the result
// a `memref.alloc` that `bufferization.to_tensor` hands back to tensor code,
// and between them one call of the runtime's C ABI (Comm.h) with the
// buffers' addresses. Ownership-based deallocation frees buffers at the end
// of their block, after the call. The runtime names the group of ranks by a
// bit mask of mesh axes (bit i for axis i of the module's `tsr.mesh`), and
// collectives by their `id` (-1 when the artifact writer has not numbered
// them). Data-type and reduction codes come from the runtime's C header.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "tessera-runtime/Comm.h"

#include <functional>

using namespace mlir;
using namespace mlir::tessera::tsr_to_linalg;

namespace {

/// The runtime's tsr_dtype_t of an element type.
std::optional<int64_t> getDTypeCode(Type t) {
  if (t.isF32())
    return TSR_DTYPE_FLOAT32;
  if (t.isF64())
    return TSR_DTYPE_FLOAT64;
  if (t.isF16())
    return TSR_DTYPE_FLOAT16;
  if (t.isBF16())
    return TSR_DTYPE_BFLOAT16;
  auto i = dyn_cast<IntegerType>(t);
  if (!i)
    return std::nullopt;
  bool u = i.isUnsigned();
  switch (i.getWidth()) {
  case 1:
    return TSR_DTYPE_BOOL;
  case 8:
    return u ? TSR_DTYPE_UINT8 : TSR_DTYPE_INT8;
  case 16:
    return u ? TSR_DTYPE_UINT16 : TSR_DTYPE_INT16;
  case 32:
    return u ? TSR_DTYPE_UINT32 : TSR_DTYPE_INT32;
  case 64:
    return u ? TSR_DTYPE_UINT64 : TSR_DTYPE_INT64;
  default:
    return std::nullopt;
  }
}

// The dialect's reductions are the runtime's tsr_reduce_op_t.
static_assert(int(tsr::CollectiveReduction::sum) == TSR_REDUCE_SUM &&
              int(tsr::CollectiveReduction::mean) == TSR_REDUCE_MEAN &&
              int(tsr::CollectiveReduction::max) == TSR_REDUCE_MAX &&
              int(tsr::CollectiveReduction::min) == TSR_REDUCE_MIN);

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

func::FuncOp getOrInsertRuntimeFunc(Operation *op, OpBuilder &b, StringRef name,
                                    TypeRange args, TypeRange results) {
  auto module = op->getParentOfType<ModuleOp>();
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto f = func::FuncOp::create(b, module.getLoc(), name,
                                b.getFunctionType(args, results));
  f.setPrivate();
  return f;
}

/// The address of element 0 of an identity-layout buffer.
Value addressOf(OpBuilder &b, Location loc, Value memref) {
  Value index = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
}

/// The stream argument of every collective: the CPU target has none (NULL).
Value nullStream(OpBuilder &b, Location loc) {
  return LLVM::ZeroOp::create(b, loc,
                              LLVM::LLVMPointerType::get(b.getContext()));
}

/// Lowers a collective `x` -> `result` to
///   runtime(id, group, &x, &result, count, dtype, extra..., stream).
/// The runtime works on blocks of dimension 0; a collective along another
/// dimension moves it to the front before and back after.
template <typename OpT> struct CollectivePattern : OpConversionPattern<OpT> {
  CollectivePattern(TypeConverter &converter, MLIRContext *ctx,
                    StringRef callee, bool countResult,
                    std::function<std::optional<int64_t>(OpT)> extra = nullptr)
      : OpConversionPattern<OpT>(converter, ctx), callee(callee.str()),
        countResult(countResult), extra(extra) {}

  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getX();
    auto outType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    std::optional<int64_t> dtype = getDTypeCode(getElementType(op.getX()));
    if (!dtype)
      return rewriter.notifyMatchFailure(op, "no runtime dtype");
    FailureOr<int64_t> group = getGroupMask(op, op.getMeshAxes());
    if (failed(group))
      return failure();
    SmallVector<int64_t> perm;
    if (int64_t dim = getBlockDim(op); dim != 0) {
      perm = frontPermutation(outType.getRank(), dim);
      x = transpose(rewriter, loc, x, perm);
      SmallVector<int64_t> shape;
      for (int64_t p : perm)
        shape.push_back(outType.getDimSize(p));
      outType = outType.clone(shape);
    }
    auto inType = cast<RankedTensorType>(x.getType());
    int64_t id = op.getId() ? int64_t(*op.getId()) : -1;
    int64_t count =
        countResult ? outType.getNumElements() : inType.getNumElements();

    auto inBuffer = MemRefType::get(inType.getShape(), inType.getElementType());
    auto outBuffer =
        MemRefType::get(outType.getShape(), outType.getElementType());
    Value in = bufferization::ToBufferOp::create(rewriter, loc, inBuffer, x,
                                                 /*read_only=*/true);
    Value out = memref::AllocOp::create(rewriter, loc, outBuffer);
    auto c = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(rewriter, loc, v, 64);
    };
    SmallVector<Value> args{c(id),
                            c(*group),
                            addressOf(rewriter, loc, in),
                            addressOf(rewriter, loc, out),
                            c(count),
                            c(*dtype)};
    if (extra)
      if (std::optional<int64_t> e = extra(op))
        args.push_back(c(*e));
    args.push_back(nullStream(rewriter, loc));
    // An async collective starts here; tsr.wait completes it.
    func::FuncOp f = getOrInsertRuntimeFunc(
        op, rewriter, op.getAsync() ? callee + "_start" : callee,
        ValueRange(args).getTypes(), {});
    func::CallOp::create(rewriter, loc, f, args);
    Value result = bufferization::ToTensorOp::create(
        rewriter, loc, outType, out, /*restrict=*/true, /*writable=*/true);
    if (!perm.empty())
      result = transpose(rewriter, loc, result, invertPermutationVector(perm));
    rewriter.replaceOp(op, result);
    return success();
  }

  static int64_t getBlockDim(OpT op) {
    if constexpr (std::is_same_v<OpT, tsr::AllReduceOp> ||
                  std::is_same_v<OpT, tsr::BroadcastFromOp>)
      return 0;
    else
      return op.getDim();
  }

  std::string callee;
  bool countResult;
  std::function<std::optional<int64_t>(OpT)> extra;
};

/// tsrt_wait(&result, stream): blocks until the collective writing the result
/// buffer has completed. (The runtime copied the operand when it started.)
struct WaitPattern : OpConversionPattern<tsr::WaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::WaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto buffer = [&](Value tensor) {
      auto type = cast<RankedTensorType>(tensor.getType());
      Value memref = bufferization::ToBufferOp::create(
          rewriter, loc,
          MemRefType::get(type.getShape(), type.getElementType()), tensor,
          /*read_only=*/true);
      return addressOf(rewriter, loc, memref);
    };
    SmallVector<Value> args{buffer(adaptor.getPending()),
                            nullStream(rewriter, loc)};
    func::FuncOp f = getOrInsertRuntimeFunc(op, rewriter, "tsrt_wait",
                                            ValueRange(args).getTypes(), {});
    func::CallOp::create(rewriter, loc, f, args);
    rewriter.replaceOp(op, adaptor.getPending());
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
    Type i64 = rewriter.getI64Type();
    func::FuncOp f =
        getOrInsertRuntimeFunc(op, rewriter, "tsrt_axis_rank", {i64}, {i64});
    Value rank =
        func::CallOp::create(
            rewriter, loc, f,
            ValueRange{arith::ConstantIntOp::create(rewriter, loc, *group, 64)})
            .getResult(0);
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
  patterns.add<CollectivePattern<tsr::AllReduceOp>>(
      converter, ctx, "tsrt_all_reduce", /*countResult=*/false,
      [](tsr::AllReduceOp op) -> std::optional<int64_t> {
        return int64_t(op.getReduction());
      });
  patterns.add<CollectivePattern<tsr::ReduceScatterOp>>(
      converter, ctx, "tsrt_reduce_scatter", /*countResult=*/true,
      [](tsr::ReduceScatterOp op) -> std::optional<int64_t> {
        return int64_t(op.getReduction());
      });
  patterns.add<CollectivePattern<tsr::AllGatherOp>>(
      converter, ctx, "tsrt_all_gather", /*countResult=*/false);
  patterns.add<CollectivePattern<tsr::AllToAllOp>>(
      converter, ctx, "tsrt_all_to_all", /*countResult=*/false);
  patterns.add<CollectivePattern<tsr::BroadcastFromOp>>(
      converter, ctx, "tsrt_broadcast", /*countResult=*/false,
      [](tsr::BroadcastFromOp op) -> std::optional<int64_t> {
        return int64_t(op.getRootAttr().getInt());
      });
  patterns.add<LocalShardPattern, WaitPattern>(converter, ctx);
}
