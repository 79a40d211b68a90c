//===- LibraryCalls.cpp - GPU library ops as runtime calls on a stream ----===//
#include "tessera/Conversion/GPU/Passes.h"
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "tessera-runtime/Device.h"
#include "tessera-runtime/Runtime.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPULIBRARYCALLS
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

constexpr StringLiteral kGemm = "tsrt_gpu_gemm";
constexpr StringLiteral kAttention = "tsrt_gpu_attention";
constexpr StringLiteral kAttentionBackward = "tsrt_gpu_attention_backward";

/// The runtime's code for a GEMM operand's element type.
int32_t dtypeCode(Type element) {
  if (element.isBF16())
    return TSR_DTYPE_BFLOAT16;
  if (element.isF16())
    return TSR_DTYPE_FLOAT16;
  return TSR_DTYPE_FLOAT32;
}

/// The runtime's code for a tsrt.gpu_gemm epilogue (the op verified it).
int32_t epilogueCode(StringRef epilogue) {
  return llvm::StringSwitch<int32_t>(epilogue)
      .Case("relu", TSR_GEMM_EPILOGUE_RELU)
      .Case("bias", TSR_GEMM_EPILOGUE_BIAS)
      .Case("relu_bias", TSR_GEMM_EPILOGUE_RELU_BIAS)
      .Case("bias_grad_a", TSR_GEMM_EPILOGUE_BIAS_GRAD_A)
      .Case("bias_grad_b", TSR_GEMM_EPILOGUE_BIAS_GRAD_B)
      .Case("relu_aux", TSR_GEMM_EPILOGUE_RELU_AUX)
      .Case("relu_aux_bias", TSR_GEMM_EPILOGUE_RELU_AUX_BIAS)
      .Case("drelu", TSR_GEMM_EPILOGUE_DRELU)
      .Case("gelu", TSR_GEMM_EPILOGUE_GELU)
      .Case("gelu_bias", TSR_GEMM_EPILOGUE_GELU_BIAS)
      .Case("gelu_aux", TSR_GEMM_EPILOGUE_GELU_AUX)
      .Case("gelu_aux_bias", TSR_GEMM_EPILOGUE_GELU_AUX_BIAS)
      .Case("dgelu", TSR_GEMM_EPILOGUE_DGELU)
      .Default(TSR_GEMM_EPILOGUE_NONE);
}

/// The runtime function `name` of type (`inputs`) -> (), declared in
/// `module` on first use.
func::FuncOp getDeclaration(ModuleOp module, OpBuilder &b, StringRef name,
                            TypeRange inputs) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto f = func::FuncOp::create(b, module.getLoc(), name,
                                b.getFunctionType(inputs, {}));
  f.setPrivate();
  return f;
}

/// The address of `buffer`'s first element (its layout is the identity, so
/// its offset is 0).
Value addressOf(OpBuilder &b, Location loc, Value buffer) {
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), base);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
}

/// The runtime's code of an attention operand's layout: the stored order
/// of its logical dimensions, one hex digit each, outermost first.
int32_t layoutCode(ArrayRef<int64_t> layout) {
  int32_t code = 0;
  for (int64_t d : layout)
    code = code << 4 | static_cast<int32_t>(d);
  return code;
}

/// Builds the call that replaces the library op `op`: `build` gets the
/// stream (the dependency token, cast to a pointer) and the helpers that
/// make constants and addresses.
struct CallBuilder {
  OpBuilder &b;
  Location loc;
  Value i64(int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 64); }
  Value i32(int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 32); }
  Value address(Value buffer) {
    return buffer ? addressOf(b, loc, buffer)
                  : LLVM::ZeroOp::create(
                        b, loc, LLVM::LLVMPointerType::get(b.getContext()))
                        .getResult();
  }
};

/// Calls the runtime's `name` with `args`, declared on first use.
void emitCall(ModuleOp module, CallBuilder &c, StringRef name,
              ValueRange args) {
  func::CallOp::create(
      c.b, c.loc, getDeclaration(module, c.b, name, args.getTypes()), args);
}

/// `tsrt_gpu_gemm(stream, batch, m, n, k, a, b, c, dtype, transpose_a,
/// transpose_b, accumulate, bias, epilogue, aux)`.
void callGemm(ModuleOp module, CallBuilder &c, Value stream,
              tsrt::GpuGemmOp op) {
  auto out = cast<MemRefType>(op.getC().getType());
  ArrayRef<int64_t> shape = out.getShape();
  int64_t batch = out.getRank() == 3 ? shape[0] : 1;
  int64_t m = shape[out.getRank() - 2], n = shape[out.getRank() - 1];
  ArrayRef<int64_t> a = cast<MemRefType>(op.getA().getType()).getShape();
  int64_t k = op.getTransposeA() ? a[a.size() - 2] : a.back();
  Type element = cast<MemRefType>(op.getA().getType()).getElementType();
  SmallVector<Value> args{stream,
                          c.i64(batch),
                          c.i64(m),
                          c.i64(n),
                          c.i64(k),
                          c.address(op.getA()),
                          c.address(op.getB()),
                          c.address(op.getC()),
                          c.i32(dtypeCode(element)),
                          c.i32(op.getTransposeA()),
                          c.i32(op.getTransposeB()),
                          c.i32(op.getAccumulate()),
                          c.address(op.getBias()),
                          c.i32(epilogueCode(op.getEpilogue())),
                          c.address(op.getAux())};
  emitCall(module, c, kGemm, args);
}

/// The logical [B, H, S, D] of an attention operand stored in `layout`'s
/// order.
SmallVector<int64_t> getLogicalDims(Value v, ArrayRef<int64_t> layout) {
  ArrayRef<int64_t> shape = cast<MemRefType>(v.getType()).getShape();
  SmallVector<int64_t> dims(4);
  for (auto [stored, dim] : llvm::enumerate(layout))
    dims[dim] = shape[stored];
  return dims;
}

/// The arguments both attention calls start with (stream, b, h, sq, skv, d,
/// dtype) and the bias's broadcast bits (bit 0 batch, bit 1 heads).
template <typename OpT>
SmallVector<Value> getAttentionPrefix(CallBuilder &c, Value stream, OpT op,
                                      int32_t &broadcast) {
  SmallVector<int64_t> q = getLogicalDims(op.getQ(), op.getQLayout()),
                       k = getLogicalDims(op.getK(), op.getKLayout());
  broadcast = 0;
  if (Value bias = op.getBias()) {
    ArrayRef<int64_t> shape = cast<MemRefType>(bias.getType()).getShape();
    broadcast = (shape[0] == 1 && q[0] != 1 ? 1 : 0) |
                (shape[1] == 1 && q[1] != 1 ? 2 : 0);
  }
  Type element = cast<MemRefType>(op.getQ().getType()).getElementType();
  return {stream,
          c.i64(q[0]),
          c.i64(q[1]),
          c.i64(q[2]),
          c.i64(k[2]),
          c.i64(q[3]),
          c.i32(dtypeCode(element))};
}

/// Appends `buffer`'s address and its layout's code to `args`.
void appendOperand(CallBuilder &c, SmallVectorImpl<Value> &args, Value buffer,
                   ArrayRef<int64_t> layout) {
  args.push_back(c.address(buffer));
  args.push_back(c.i32(layoutCode(layout)));
}

/// `tsrt_gpu_attention(stream, b, h, sq, skv, d, dtype, q, q_layout, k,
/// k_layout, v, v_layout, o, o_layout, stats, scale, bias, bias_broadcast,
/// flags)`.
void callAttention(ModuleOp module, CallBuilder &c, Value stream,
                   tsrt::GpuAttentionOp op) {
  int32_t broadcast;
  SmallVector<Value> args = getAttentionPrefix(c, stream, op, broadcast);
  appendOperand(c, args, op.getQ(), op.getQLayout());
  appendOperand(c, args, op.getK(), op.getKLayout());
  appendOperand(c, args, op.getV(), op.getVLayout());
  appendOperand(c, args, op.getOut(), op.getOutLayout());
  args.append({c.address(op.getStats()), c.address(op.getScale()),
               c.address(op.getBias()), c.i32(broadcast),
               c.i32(op.getCausal() ? TSR_ATTENTION_CAUSAL : 0)});
  emitCall(module, c, kAttention, args);
}

/// `tsrt_gpu_attention_backward(stream, b, h, sq, skv, d, dtype, q,
/// q_layout, k, k_layout, v, v_layout, o, o_layout, d_o, d_o_layout, stats,
/// d_q, d_q_layout, d_k, d_k_layout, d_v, d_v_layout, scale, bias,
/// bias_broadcast, flags)`.
void callAttentionBackward(ModuleOp module, CallBuilder &c, Value stream,
                           tsrt::GpuAttentionBackwardOp op) {
  int32_t broadcast;
  SmallVector<Value> args = getAttentionPrefix(c, stream, op, broadcast);
  ValueRange grads = op.getInits();
  appendOperand(c, args, op.getQ(), op.getQLayout());
  appendOperand(c, args, op.getK(), op.getKLayout());
  appendOperand(c, args, op.getV(), op.getVLayout());
  appendOperand(c, args, op.getOut(), op.getOutLayout());
  appendOperand(c, args, op.getDOut(), op.getDOutLayout());
  args.push_back(c.address(op.getStats()));
  appendOperand(c, args, grads[0], op.getDqLayout());
  appendOperand(c, args, grads[1], op.getDkLayout());
  appendOperand(c, args, grads[2], op.getDvLayout());
  args.append({c.address(op.getScale()), c.address(op.getBias()),
               c.i32(broadcast),
               c.i32(op.getCausal() ? TSR_ATTENTION_CAUSAL : 0)});
  emitCall(module, c, kAttentionBackward, args);
}

struct TsrGpuLibraryCallsPass
    : tessera::impl::TsrGpuLibraryCallsBase<TsrGpuLibraryCallsPass> {
  using TsrGpuLibraryCallsBase::TsrGpuLibraryCallsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::AsyncOpInterface> calls;
    module.walk([&](Operation *op) {
      if (isa<tsrt::GpuGemmOp, tsrt::GpuAttentionOp,
              tsrt::GpuAttentionBackwardOp>(op))
        calls.push_back(cast<gpu::AsyncOpInterface>(op));
    });
    OpBuilder b(&getContext());
    for (gpu::AsyncOpInterface op : calls) {
      bool async = op.getAsyncToken() && op.getAsyncDependencies().size() == 1;
      bool sync = !op.getAsyncToken() && op.getAsyncDependencies().empty();
      if (synchronous ? !sync : !async) {
        op->emitError(synchronous
                          ? "tsr-gpu-library-calls: expected a synchronous "
                            "op (synchronous=true)"
                          : "tsr-gpu-library-calls: expected an async op "
                            "with one dependency, the stream it runs on (run "
                            "gpu-async-region first)");
        return signalPassFailure();
      }
      Location loc = op.getLoc();
      b.setInsertionPoint(op);
      Type ptr = LLVM::LLVMPointerType::get(b.getContext());
      // gpu-to-llvm lowers each token to the stream its work runs on; the
      // cast resolves to that stream when it does.
      Value stream = synchronous
                         ? LLVM::ZeroOp::create(b, loc, ptr).getResult()
                         : UnrealizedConversionCastOp::create(
                               b, loc, ptr, op.getAsyncDependencies()[0])
                               .getResult(0);
      CallBuilder call{b, loc};
      if (auto gemm = dyn_cast<tsrt::GpuGemmOp>(op.getOperation()))
        callGemm(module, call, stream, gemm);
      else if (auto attention =
                   dyn_cast<tsrt::GpuAttentionOp>(op.getOperation()))
        callAttention(module, call, stream, attention);
      else
        callAttentionBackward(
            module, call, stream,
            cast<tsrt::GpuAttentionBackwardOp>(op.getOperation()));
      // Queued on the same stream, the call is ordered after the
      // dependency and before whatever waits on it: the token stays valid.
      if (async)
        op.getAsyncToken().replaceAllUsesWith(op.getAsyncDependencies()[0]);
      op->erase();
    }
  }
};

} // namespace
