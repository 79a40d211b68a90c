//===- Collectives.cpp - Collectives as calls into the runtime ------------===//
//
// A collective reads its operand's buffer and writes a fresh one: the
// operand becomes `bufferization.to_buffer` (read-only, identity layout, so
// bufferization copies a strided view into a contiguous buffer), the result
// a `memref.alloc` that `bufferization.to_tensor` hands back to tensor code,
// and between them one call of the runtime's C ABI (Comm.h) with the
// buffers' addresses. Ownership-based deallocation frees buffers at the end
// of their block, after the call. The runtime numbers mesh axes in the
// order of the module's `tsr.mesh` dictionary and collectives by their `id`
// (-1 when the artifact writer has not numbered them).
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <functional>

using namespace mlir;
using namespace mlir::tessera::tsr_to_linalg;

namespace {

/// tsr_dtype_t (the ONNX TensorProto data type numbers).
std::optional<int64_t> getDTypeCode(Type t) {
  if (t.isF32())
    return 1;
  if (t.isF64())
    return 11;
  if (t.isF16())
    return 10;
  if (t.isBF16())
    return 16;
  auto i = dyn_cast<IntegerType>(t);
  if (!i)
    return std::nullopt;
  bool u = i.isUnsigned();
  switch (i.getWidth()) {
  case 1:
    return 9;
  case 8:
    return u ? 2 : 3;
  case 16:
    return u ? 4 : 5;
  case 32:
    return u ? 12 : 6;
  case 64:
    return u ? 13 : 7;
  default:
    return std::nullopt;
  }
}

/// tsr_reduce_op_t.
int64_t getReduceCode(StringRef reduction) {
  return llvm::StringSwitch<int64_t>(reduction)
      .Case("sum", 0)
      .Case("mean", 1)
      .Case("max", 2)
      .Case("min", 3)
      .Default(0);
}

FailureOr<int64_t> getAxisIndex(Operation *op, StringRef axis) {
  auto module = op->getParentOfType<ModuleOp>();
  auto mesh = module ? module->getAttrOfType<DictionaryAttr>("tsr.mesh")
                     : DictionaryAttr();
  if (mesh)
    for (auto [i, entry] : llvm::enumerate(mesh))
      if (entry.getName() == axis)
        return int64_t(i);
  return op->emitOpError("mesh axis '") << axis << "' is not in tsr.mesh";
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

/// Lowers a collective `x` -> `result` to
///   runtime(id, axis, &x, &result, count, dtype, extra...).
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
    auto inType = cast<RankedTensorType>(adaptor.getX().getType());
    auto outType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    std::optional<int64_t> dtype = getDTypeCode(getElementType(op.getX()));
    if (!dtype)
      return rewriter.notifyMatchFailure(op, "no runtime dtype");
    FailureOr<int64_t> axis = getAxisIndex(op, op.getMeshAxis());
    if (failed(axis))
      return failure();
    int64_t id = op.getId() ? int64_t(*op.getId()) : -1;
    int64_t count =
        countResult ? outType.getNumElements() : inType.getNumElements();

    auto inBuffer = MemRefType::get(inType.getShape(), inType.getElementType());
    auto outBuffer =
        MemRefType::get(outType.getShape(), outType.getElementType());
    Value in = bufferization::ToBufferOp::create(rewriter, loc, inBuffer,
                                                 adaptor.getX(),
                                                 /*read_only=*/true);
    Value out = memref::AllocOp::create(rewriter, loc, outBuffer);
    auto c = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(rewriter, loc, v, 64);
    };
    SmallVector<Value> args{c(id),
                            c(*axis),
                            addressOf(rewriter, loc, in),
                            addressOf(rewriter, loc, out),
                            c(count),
                            c(*dtype)};
    if (extra)
      if (std::optional<int64_t> e = extra(op))
        args.push_back(c(*e));
    // An async collective starts here; tsr.wait completes it.
    func::FuncOp f = getOrInsertRuntimeFunc(
        op, rewriter, op.getAsync() ? callee + "_start" : callee,
        ValueRange(args).getTypes(), {});
    func::CallOp::create(rewriter, loc, f, args);
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(
        op, outType, out, /*restrict=*/true, /*writable=*/true);
    return success();
  }

  std::string callee;
  bool countResult;
  std::function<std::optional<int64_t>(OpT)> extra;
};

/// tsrt_wait(&result): blocks until the collective writing the result buffer
/// has completed. (The runtime copied the operand when it started.)
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
    SmallVector<Value> args{buffer(adaptor.getPending())};
    func::FuncOp f = getOrInsertRuntimeFunc(op, rewriter, "tsrt_wait",
                                            ValueRange(args).getTypes(), {});
    func::CallOp::create(rewriter, loc, f, args);
    rewriter.replaceOp(op, adaptor.getPending());
    return success();
  }
};

/// this rank's block: extract_slice at offset rank·c of dimension 0.
struct LocalShardPattern : OpConversionPattern<tsr::LocalShardOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tsr::LocalShardOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto outType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    FailureOr<int64_t> axis = getAxisIndex(op, op.getMeshAxis());
    if (failed(axis))
      return failure();
    Type i64 = rewriter.getI64Type();
    func::FuncOp f =
        getOrInsertRuntimeFunc(op, rewriter, "tsrt_axis_rank", {i64}, {i64});
    Value rank =
        func::CallOp::create(
            rewriter, loc, f,
            ValueRange{arith::ConstantIntOp::create(rewriter, loc, *axis, 64)})
            .getResult(0);
    Value offset = arith::MulIOp::create(
        rewriter, loc, rank,
        arith::ConstantIntOp::create(rewriter, loc, outType.getDimSize(0), 64));
    offset = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                        offset);
    int64_t rankOf = outType.getRank();
    SmallVector<OpFoldResult> offsets(rankOf, rewriter.getIndexAttr(0));
    offsets[0] = offset;
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
        return getReduceCode(op.getReduction());
      });
  patterns.add<CollectivePattern<tsr::ReduceScatterOp>>(
      converter, ctx, "tsrt_reduce_scatter", /*countResult=*/true,
      [](tsr::ReduceScatterOp op) -> std::optional<int64_t> {
        return getReduceCode(op.getReduction());
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
