//===- LinalgToBlas.cpp - Matmuls as library calls -----------------------===//
#include "tessera/Conversion/CPU/Passes.h"
#include "tessera/Conversion/ZeroFill.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRLINALGTOBLAS
#include "tessera/Conversion/CPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {
// CBLAS enumerators (cblas.h).
constexpr int32_t kRowMajor = 101, kNoTrans = 111;
constexpr StringLiteral kCblasSgemm = "cblas_sgemm";
/// The runtime's f32, bf16 x bf16 -> f32 and f16 x f16 -> f32 GEMMs (oneDNN;
/// runtime/lib/Gemm.cpp), which share one signature.
constexpr StringLiteral kGemmF32 = "tsr_gemm_f32", kGemmBf16 = "tsr_gemm_bf16",
                        kGemmF16 = "tsr_gemm_f16";

bool isContiguous(Value v, Type element) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.hasStaticShape() && type.getElementType() == element &&
         type.getLayout().isIdentity();
}

/// The private declaration of the library function `name` taking
/// `inputs`, made on first use.
func::FuncOp getOrInsertCall(ModuleOp module, OpBuilder &b, StringRef name,
                             ArrayRef<Type> inputs) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto f = func::FuncOp::create(b, module.getLoc(), name,
                                b.getFunctionType(inputs, {}));
  f.setPrivate();
  return f;
}

/// The address of element 0 of `v` plus `byteOffset`, as an LLVM pointer.
Value pointerTo(OpBuilder &b, Location loc, Value v, Value byteOffset) {
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, v);
  Value addr = arith::IndexCastOp::create(b, loc, b.getI64Type(), base);
  addr = arith::AddIOp::create(b, loc, addr, byteOffset);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), addr);
}

/// Rewrites C[b] += A[b] * B[b] (b optional) into calls of the runtime's
/// oneDNN GEMMs, or of OpenBLAS's sgemm for f32 unless `onednn`; into
/// C[b] = A[b] * B[b] where C was just filled with zeros (getZeroFill).
LogicalResult rewriteMatmul(RewriterBase &rewriter, linalg::LinalgOp op,
                            bool onednn) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureBufferSemantics())
    return failure();
  Value a = op.getDpsInputOperand(0)->get(),
        b = op.getDpsInputOperand(1)->get(), c = op.getDpsInitOperand(0)->get();
  Type f32 = rewriter.getF32Type(), bf16 = rewriter.getBF16Type(),
       f16 = rewriter.getF16Type();
  bool single =
      isContiguous(a, f32) && isContiguous(b, f32) && isContiguous(c, f32);
  auto halfOf = [&](Type t) {
    return isContiguous(a, t) && isContiguous(b, t) && isContiguous(c, f32);
  };
  bool brain = halfOf(bf16), half = halfOf(f16);
  if (!single && !brain && !half)
    return failure();
  auto at = cast<MemRefType>(a.getType()), bt = cast<MemRefType>(b.getType());
  bool batched = at.getRank() == 3;
  int64_t batch = batched ? at.getDimSize(0) : 1;
  int64_t m = at.getDimSize(at.getRank() - 2),
          k = at.getDimSize(at.getRank() - 1),
          n = bt.getDimSize(bt.getRank() - 1);
  if (m == 0 || n == 0 || k == 0 || batch == 0)
    return failure();

  Location loc = op.getLoc();
  auto module = op->getParentOfType<ModuleOp>();
  Type i32t = rewriter.getI32Type(), i64t = rewriter.getI64Type(),
       ptr = LLVM::LLVMPointerType::get(rewriter.getContext());
  bool cblas = single && !onednn;
  func::FuncOp gemm =
      cblas ? getOrInsertCall(module, rewriter, kCblasSgemm,
                              {i32t, i32t, i32t, i32t, i32t, i32t, f32, ptr,
                               i32t, ptr, i32t, f32, ptr, i32t})
            : getOrInsertCall(
                  module, rewriter,
                  single ? kGemmF32 : (brain ? kGemmBf16 : kGemmF16),
                  {i64t, i64t, i64t, ptr, i64t, ptr, i64t, ptr, i64t, f32});
  int64_t inBytes = single ? 4 : 2;
  rewriter.setInsertionPoint(op);
  auto i32 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(rewriter, loc, v, 32);
  };
  auto i64 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(rewriter, loc, v, 64);
  };
  Value one = arith::ConstantFloatOp::create(
      rewriter, loc, rewriter.getF32Type(), APFloat(1.0f));
  Value beta = one;
  if (linalg::FillOp fill = tessera::getZeroFill(op, c)) {
    rewriter.eraseOp(fill);
    beta = arith::ConstantFloatOp::create(rewriter, loc, rewriter.getF32Type(),
                                          APFloat(0.0f));
  }
  auto emitCall = [&](OpBuilder &bld, Value batchIndex) {
    auto offset = [&](int64_t bytes) -> Value {
      if (!batchIndex)
        return i64(0);
      return arith::MulIOp::create(bld, loc, batchIndex, i64(bytes));
    };
    Value pa = pointerTo(bld, loc, a, offset(m * k * inBytes));
    Value pb = pointerTo(bld, loc, b, offset(k * n * inBytes));
    Value pc = pointerTo(bld, loc, c, offset(m * n * 4));
    if (cblas)
      func::CallOp::create(bld, loc, gemm,
                           ValueRange{i32(kRowMajor), i32(kNoTrans),
                                      i32(kNoTrans), i32(m), i32(n), i32(k),
                                      one, pa, i32(k), pb, i32(n), beta, pc,
                                      i32(n)});
    else
      func::CallOp::create(bld, loc, gemm,
                           ValueRange{i64(m), i64(n), i64(k), pa, i64(k), pb,
                                      i64(n), pc, i64(n), beta});
  };
  if (!batched) {
    emitCall(rewriter, Value());
  } else {
    Value lb = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value ub = arith::ConstantIndexOp::create(rewriter, loc, batch);
    Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
    scf::ForOp::create(rewriter, loc, lb, ub, step, ValueRange{},
                       [&](OpBuilder &bld, Location, Value iv, ValueRange) {
                         Value idx = arith::IndexCastOp::create(
                             bld, loc, bld.getI64Type(), iv);
                         emitCall(bld, idx);
                         scf::YieldOp::create(bld, loc);
                       });
  }
  rewriter.eraseOp(op);
  return success();
}

/// linalg.matmul or linalg.batch_matmul (`Op`) as library calls.
template <typename Op> struct MatmulToBlas : OpRewritePattern<Op> {
  MatmulToBlas(MLIRContext *context, bool onednn)
      : OpRewritePattern<Op>(context), onednn(onednn) {}
  LogicalResult matchAndRewrite(Op op,
                                PatternRewriter &rewriter) const override {
    if (op.hasUserDefinedMaps())
      return failure();
    return rewriteMatmul(rewriter, op, onednn);
  }
  bool onednn;
};

struct TsrLinalgToBlasPass
    : tessera::impl::TsrLinalgToBlasBase<TsrLinalgToBlasPass> {
  using Base::Base;
  void runOnOperation() override {
    if (library != "onednn" && library != "openblas") {
      getOperation().emitError("tsr-linalg-to-blas: unknown library '")
          << library << "' (expected onednn or openblas)";
      return signalPassFailure();
    }
    bool onednn = library == "onednn";
    RewritePatternSet patterns(&getContext());
    patterns.add<MatmulToBlas<linalg::MatmulOp>,
                 MatmulToBlas<linalg::BatchMatmulOp>>(&getContext(), onednn);
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};
} // namespace
