//===- LibraryCalls.cpp - GPU library ops as runtime calls on a stream ----===//
#include "tessera/Conversion/GPU/Passes.h"
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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
      .Default(TSR_GEMM_EPILOGUE_NONE);
}

/// `tsrt_gpu_gemm(stream, batch, m, n, k, a, b, c, dtype, transpose_a,
/// transpose_b, accumulate, bias, epilogue)`, declared on first use.
func::FuncOp getGemmDeclaration(ModuleOp module, OpBuilder &b) {
  if (auto f = module.lookupSymbol<func::FuncOp>(kGemm))
    return f;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  Type ptr = LLVM::LLVMPointerType::get(b.getContext()), i64 = b.getI64Type(),
       i32 = b.getI32Type();
  auto f = func::FuncOp::create(
      b, module.getLoc(), kGemm,
      b.getFunctionType({ptr, i64, i64, i64, i64, ptr, ptr, ptr, i32, i32, i32,
                         i32, ptr, i32},
                        {}));
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

struct TsrGpuLibraryCallsPass
    : tessera::impl::TsrGpuLibraryCallsBase<TsrGpuLibraryCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<tsrt::GpuGemmOp> gemms;
    getOperation().walk([&](tsrt::GpuGemmOp op) { gemms.push_back(op); });
    OpBuilder b(&getContext());
    for (tsrt::GpuGemmOp op : gemms) {
      if (!op.getAsyncToken() || op.getAsyncDependencies().size() != 1) {
        op.emitError("tsr-gpu-library-calls: expected an async op with one "
                     "dependency, the stream it runs on (run "
                     "gpu-async-region first)");
        return signalPassFailure();
      }
      Location loc = op.getLoc();
      b.setInsertionPoint(op);
      Value token = op.getAsyncDependencies()[0];
      // gpu-to-llvm lowers each token to the stream its work runs on; the
      // cast resolves to that stream when it does.
      Value stream =
          UnrealizedConversionCastOp::create(
              b, loc, LLVM::LLVMPointerType::get(b.getContext()), token)
              .getResult(0);
      auto c = cast<MemRefType>(op.getC().getType());
      ArrayRef<int64_t> shape = c.getShape();
      int64_t batch = c.getRank() == 3 ? shape[0] : 1;
      int64_t m = shape[c.getRank() - 2], n = shape[c.getRank() - 1];
      ArrayRef<int64_t> a = cast<MemRefType>(op.getA().getType()).getShape();
      int64_t k = op.getTransposeA() ? a[a.size() - 2] : a.back();
      auto i64 = [&](int64_t v) -> Value {
        return arith::ConstantIntOp::create(b, loc, v, 64);
      };
      auto i32 = [&](int64_t v) -> Value {
        return arith::ConstantIntOp::create(b, loc, v, 32);
      };
      Type element = cast<MemRefType>(op.getA().getType()).getElementType();
      Value bias = op.getBias()
                       ? addressOf(b, loc, op.getBias())
                       : LLVM::ZeroOp::create(
                             b, loc, LLVM::LLVMPointerType::get(b.getContext()))
                             .getResult();
      func::CallOp::create(
          b, loc, getGemmDeclaration(module, b),
          ValueRange{stream, i64(batch), i64(m), i64(n), i64(k),
                     addressOf(b, loc, op.getA()), addressOf(b, loc, op.getB()),
                     addressOf(b, loc, op.getC()), i32(dtypeCode(element)),
                     i32(op.getTransposeA()), i32(op.getTransposeB()),
                     i32(op.getAccumulate()), bias,
                     i32(epilogueCode(op.getEpilogue()))});
      // Queued on the same stream, the call is ordered after the
      // dependency and before whatever waits on it: the token stays valid.
      op.getAsyncToken().replaceAllUsesWith(token);
      op.erase();
    }
  }
};

} // namespace
