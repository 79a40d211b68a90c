//===- CollectivesToRuntime.cpp - tsrt on buffers to tsrt_* calls ---------===//
//
// Each tsrt collective on memrefs becomes one call of the runtime's C ABI
// (runtime/include/tessera-runtime/Comm.h) with the addresses of its
// buffers:
//
//   tsrt_<op>[_start](id, group, send, recv, count, dtype, [op|root,] stream)
//   tsrt_permute(id, group, send, recv, send_count, dtype, recv_count,
//                send_to, recv_from, stream)
//
// tsrt.wait becomes tsrt_wait(recv, stream) and tsrt.axis_rank
// tsrt_axis_rank(group). The dtype and reduction codes are the runtime's
// (the enums' values, checked against its header below). The stream is
// null, or, for an op that gpu-async-region queued on the CUDA target's
// stream, that stream: the op's async dependency cast to a pointer, which
// gpu-to-llvm resolves to the stream, and the op's token becomes that
// dependency. Buffers are contiguous (tsr-contiguous-collectives).
//
// The transfer ops to host memory and back (tsr.offload_start and the rest,
// TsrTransferOps.td) become tsrt_<op>(transfer, address[, bytes], stream),
// declared in runtime/include/tessera-runtime/Runtime.h, the stream null
// or their dependency as for the collectives.
//
//===----------------------------------------------------------------------===//
#include "tessera/Conversion/CollectivesToRuntime/CollectivesToRuntime.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "tessera-runtime/Comm.h"

using namespace mlir;
using namespace mlir::tessera;

// The tsrt enums are the runtime's codes, passed as they are.
static_assert(int(tsrt::DType::float32) == TSR_DTYPE_FLOAT32 &&
              int(tsrt::DType::uint8) == TSR_DTYPE_UINT8 &&
              int(tsrt::DType::int8) == TSR_DTYPE_INT8 &&
              int(tsrt::DType::uint16) == TSR_DTYPE_UINT16 &&
              int(tsrt::DType::int16) == TSR_DTYPE_INT16 &&
              int(tsrt::DType::int32) == TSR_DTYPE_INT32 &&
              int(tsrt::DType::int64) == TSR_DTYPE_INT64 &&
              int(tsrt::DType::boolean) == TSR_DTYPE_BOOL &&
              int(tsrt::DType::float16) == TSR_DTYPE_FLOAT16 &&
              int(tsrt::DType::float64) == TSR_DTYPE_FLOAT64 &&
              int(tsrt::DType::uint32) == TSR_DTYPE_UINT32 &&
              int(tsrt::DType::uint64) == TSR_DTYPE_UINT64 &&
              int(tsrt::DType::bfloat16) == TSR_DTYPE_BFLOAT16);
static_assert(int(tsrt::Reduction::sum) == TSR_REDUCE_SUM &&
              int(tsrt::Reduction::mean) == TSR_REDUCE_MEAN &&
              int(tsrt::Reduction::max) == TSR_REDUCE_MAX &&
              int(tsrt::Reduction::min) == TSR_REDUCE_MIN);

namespace {

/// The stream of a call with none: a null pointer, which MPI ignores.
Value buildNullStream(OpBuilder &b, Location loc) {
  return LLVM::ZeroOp::create(b, loc,
                              LLVM::LLVMPointerType::get(b.getContext()));
}

/// Whether the runtime can take `buffer` as it is: its elements one after
/// the other in row-major order (a view at an offset qualifies).
bool isContiguous(Value buffer) {
  return memref::isStaticShapeAndContiguousRowMajor(
      cast<MemRefType>(buffer.getType()));
}

Value i64Constant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIntOp::create(b, loc, value, 64);
}

/// The address of the first element of a contiguous buffer: its aligned
/// pointer advanced by the view's offset.
Value addressOf(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  Value aligned =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  Value integer = arith::IndexCastOp::create(b, loc, b.getI64Type(), aligned);
  Value address = LLVM::IntToPtrOp::create(b, loc, ptr, integer);
  int64_t offset = type.getStridesAndOffset().second;
  if (offset == 0)
    return address;
  Value elements =
      ShapedType::isDynamic(offset)
          ? arith::IndexCastOp::create(
                b, loc, b.getI64Type(),
                memref::ExtractStridedMetadataOp::create(b, loc, buffer)
                    .getOffset())
          : i64Constant(b, loc, offset);
  return LLVM::GEPOp::create(b, loc, ptr, type.getElementType(), address,
                             ValueRange{elements});
}

/// Calls the runtime function `name`, declaring it at the top of the module
/// on first use; fails (with an error on `op`) if the module declares that
/// name otherwise.
LogicalResult callRuntime(Operation *op, ConversionPatternRewriter &rewriter,
                          StringRef name, ValueRange args,
                          TypeRange results = {},
                          SmallVectorImpl<Value> *values = nullptr) {
  auto module = op->getParentOfType<ModuleOp>();
  FunctionType type =
      rewriter.getFunctionType(ValueRange(args).getTypes(), results);
  auto function = module.lookupSymbol<func::FuncOp>(name);
  if (!function && module.lookupSymbol(name))
    return op->emitOpError("needs the runtime function @")
           << name << ", but the module defines that symbol otherwise";
  if (function && function.getFunctionType() != type)
    return op->emitOpError("needs the runtime function @")
           << name << " of type " << type << ", but the module declares it as "
           << function.getFunctionType();
  if (!function) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    function = func::FuncOp::create(rewriter, module.getLoc(), name, type);
    function.setPrivate();
  }
  auto call = func::CallOp::create(rewriter, op->getLoc(), function, args);
  if (values)
    values->append(call.getResults().begin(), call.getResults().end());
  return success();
}

/// The element count the runtime entry point of `op` takes.
template <typename OpT> int64_t getCount(OpT op) {
  auto shaped = [](Value v) { return cast<ShapedType>(v.getType()); };
  if constexpr (std::is_same_v<OpT, tsrt::ReduceScatterOp>)
    return shaped(op.getInit()).getNumElements();
  else
    return shaped(op.getInput()).getNumElements();
}

/// The arguments after the dtype: the reduction, the root, or a permute's
/// receive count and peers.
template <typename OpT> SmallVector<int64_t> getExtraArguments(OpT op) {
  if constexpr (std::is_same_v<OpT, tsrt::AllReduceOp> ||
                std::is_same_v<OpT, tsrt::ReduceScatterOp>)
    return {static_cast<int64_t>(op.getReduction())};
  else if constexpr (std::is_same_v<OpT, tsrt::BroadcastOp>)
    return {static_cast<int64_t>(op.getRoot())};
  else if constexpr (std::is_same_v<OpT, tsrt::PermuteOp>)
    return {cast<ShapedType>(op.getInit().getType()).getNumElements(),
            static_cast<int64_t>(op.getSendTo()),
            static_cast<int64_t>(op.getRecvFrom())};
  else
    return {};
}

template <typename OpT> bool isAsync(OpT op) {
  if constexpr (std::is_same_v<OpT, tsrt::AllReduceOp> ||
                std::is_same_v<OpT, tsrt::ReduceScatterOp> ||
                std::is_same_v<OpT, tsrt::AllGatherOp>)
    return op.getAsync();
  else
    return false;
}

/// The stream `op` runs on: its one async dependency as a pointer, or null
/// (no stream: the CPU).
Value streamOf(OpBuilder &b, Location loc, ValueRange deps) {
  if (deps.empty())
    return buildNullStream(b, loc);
  return UnrealizedConversionCastOp::create(
             b, loc, LLVM::LLVMPointerType::get(b.getContext()), deps[0])
      .getResult(0);
}

/// Replaces `op` once its call is made: its token, if any, by the
/// dependency, the stream the work after it stays queued on.
void replaceDone(ConversionPatternRewriter &rewriter, Operation *op,
                 ValueRange deps) {
  if (op->getNumResults() == 1)
    rewriter.replaceOp(op, deps);
  else
    rewriter.eraseOp(op);
}

/// Whether the bufferized `op` can become a call: contiguous buffers and at
/// most one token to queue after.
bool isLowerable(DestinationStyleOpInterface op, ValueRange deps) {
  return op.hasPureBufferSemantics() && deps.size() <= 1 &&
         llvm::all_of(op->getOperands(), [](Value v) {
           return isa<gpu::AsyncTokenType>(v.getType()) || isContiguous(v);
         });
}

template <typename OpT> struct CollectiveToCall : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange deps = adaptor.getAsyncDependencies();
    if (!isLowerable(op, deps))
      return rewriter.notifyMatchFailure(op, "not lowerable");
    Location loc = op.getLoc();
    Value send = adaptor.getInput(), recv = adaptor.getInit();
    // An in-place collective passes one address twice.
    Value sendAddress = addressOf(rewriter, loc, send);
    Value recvAddress =
        send == recv ? sendAddress : addressOf(rewriter, loc, recv);
    SmallVector<Value> args{
        i64Constant(rewriter, loc, static_cast<int64_t>(op.getId())),
        i64Constant(rewriter, loc, static_cast<int64_t>(op.getGroup())),
        sendAddress,
        recvAddress,
        i64Constant(rewriter, loc, getCount(op)),
        i64Constant(rewriter, loc, static_cast<int64_t>(op.getDtype()))};
    for (int64_t extra : getExtraArguments(op))
      args.push_back(i64Constant(rewriter, loc, extra));
    args.push_back(streamOf(rewriter, loc, deps));
    std::string callee =
        ("tsrt_" + op->getName().stripDialect() + (isAsync(op) ? "_start" : ""))
            .str();
    if (failed(callRuntime(op, rewriter, callee, args)))
      return failure();
    replaceDone(rewriter, op, deps);
    return success();
  }
};

struct WaitToCall : OpConversionPattern<tsrt::WaitOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(tsrt::WaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange deps = adaptor.getAsyncDependencies();
    if (!isLowerable(op, deps))
      return rewriter.notifyMatchFailure(op, "not lowerable");
    Location loc = op.getLoc();
    Value args[] = {addressOf(rewriter, loc, adaptor.getPending()),
                    streamOf(rewriter, loc, deps)};
    if (failed(callRuntime(op, rewriter, "tsrt_wait", args)))
      return failure();
    replaceDone(rewriter, op, deps);
    return success();
  }
};

struct AxisRankToCall : OpConversionPattern<tsrt::AxisRankOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(tsrt::AxisRankOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value group =
        i64Constant(rewriter, op.getLoc(), static_cast<int64_t>(op.getGroup()));
    SmallVector<Value> rank;
    if (failed(callRuntime(op, rewriter, "tsrt_axis_rank", group,
                           rewriter.getI64Type(), &rank)))
      return failure();
    rewriter.replaceOp(op, rank);
    return success();
  }
};

/// The transfer ops to host memory and back: the runtime's calls of the
/// same names, with the transfer's number, the buffer's address and, to
/// start one, its bytes.
template <typename OpT> struct TransferToCall : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange deps = adaptor.getAsyncDependencies();
    if (deps.size() > 1)
      return rewriter.notifyMatchFailure(op, "queued after several tokens");
    // The waits pass the address too: the runtime checks it, and the
    // buffer's deallocation, placed after its last use, stays after them.
    Value buffer;
    if constexpr (std::is_same_v<OpT, tsr::OffloadStartOp> ||
                  std::is_same_v<OpT, tsr::OffloadWaitOp>)
      buffer = op.getX();
    else if constexpr (std::is_same_v<OpT, tsr::PrefetchStartOp>)
      buffer = op.getBuffer();
    else
      buffer = op.getPending();
    bool start = std::is_same_v<OpT, tsr::OffloadStartOp> ||
                 std::is_same_v<OpT, tsr::PrefetchStartOp>;
    if (!isa<MemRefType>(buffer.getType()))
      return rewriter.notifyMatchFailure(op, "not bufferized");
    if (!isContiguous(buffer))
      return rewriter.notifyMatchFailure(op, "strided buffer");
    Location loc = op.getLoc();
    SmallVector<Value> args{
        i64Constant(rewriter, loc, static_cast<int64_t>(op.getTransfer()))};
    args.push_back(addressOf(rewriter, loc, buffer));
    if (start) {
      auto type = cast<MemRefType>(buffer.getType());
      int64_t width = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      args.push_back(i64Constant(rewriter, loc, type.getNumElements() * width));
    }
    args.push_back(streamOf(rewriter, loc, deps));
    std::string callee = ("tsrt_" + op->getName().stripDialect()).str();
    if (failed(callRuntime(op, rewriter, callee, args)))
      return failure();
    replaceDone(rewriter, op, deps);
    return success();
  }
};

} // namespace

void mlir::tessera::populateCollectivesToRuntimePatterns(
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<CollectiveToCall<tsrt::AllReduceOp>,
               CollectiveToCall<tsrt::ReduceScatterOp>,
               CollectiveToCall<tsrt::AllGatherOp>,
               CollectiveToCall<tsrt::AllToAllOp>,
               CollectiveToCall<tsrt::BroadcastOp>,
               CollectiveToCall<tsrt::PermuteOp>, WaitToCall>(ctx);
  patterns.add<AxisRankToCall, TransferToCall<tsr::OffloadStartOp>,
               TransferToCall<tsr::OffloadWaitOp>,
               TransferToCall<tsr::PrefetchStartOp>,
               TransferToCall<tsr::PrefetchWaitOp>>(ctx);
}
