//===- Gemm.cpp - Matrix products as cuBLASLt calls on the GPU ------------===//
#include "tessera/Conversion/GPU/Passes.h"
#include "tessera/Conversion/ZeroFill.h"
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPUGEMM
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// Whether cuBLASLt can run `op`: static, non-empty, contiguous row-major
/// buffers of f32 x f32 or bf16 x bf16 or f16 x f16 into f32.
bool isLibraryGemm(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureBufferSemantics())
    return false;
  SmallVector<MemRefType> types;
  for (Value v :
       {op.getDpsInputOperand(0)->get(), op.getDpsInputOperand(1)->get(),
        op.getDpsInitOperand(0)->get()}) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
        type.getNumElements() == 0)
      return false;
    types.push_back(type);
  }
  Type in = types[0].getElementType();
  // K = 0 leaves nothing to multiply: the generated kernel handles it.
  return types[1].getElementType() == in && types[2].getElementType().isF32() &&
         (in.isF32() || in.isBF16() || in.isF16()) &&
         types[0].getShape().back() != 0;
}

/// The buffer `v` is a view of (or `v` itself when it is none).
Value getRootBuffer(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// Whether some op strictly between `from` and `to` (one block) may write
/// or free any view of `root` (early deallocation frees a buffer right
/// after its last use, which a folded transpose's source may have been).
bool mayWriteOrFreeBetween(Operation *from, Operation *to, Value root) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode()) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects) {
      if (op->getNumRegions() == 0 && isMemoryEffectFree(op))
        continue;
      // Loops and kernels: whatever they hold may write or free.
      bool writes = false;
      op->walk([&](Operation *nested) {
        auto inner = dyn_cast<MemoryEffectOpInterface>(nested);
        if (inner ? inner.hasEffect<MemoryEffects::Write>() ||
                        inner.hasEffect<MemoryEffects::Free>()
                  : !isMemoryEffectFree(nested) && nested->getNumRegions() == 0)
          writes = true;
      });
      if (writes)
        return true;
      continue;
    }
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &e : list)
      if (isa<MemoryEffects::Write, MemoryEffects::Free>(e.getEffect()) &&
          (!e.getValue() || getRootBuffer(e.getValue()) == root))
        return true;
  }
  return false;
}

/// The `linalg.transpose` of the last two dimensions that writes `operand`,
/// a fresh buffer that only it writes and only `gemm` reads, if the
/// transpose's source is not written or freed between the two: cuBLASLt can
/// then read the source with its operand transposed, and the copy goes.
linalg::TransposeOp getFoldableTranspose(Operation *gemm, Value operand) {
  if (!operand.getDefiningOp<memref::AllocOp>())
    return {};
  linalg::TransposeOp transpose;
  for (Operation *user : operand.getUsers()) {
    if (user == gemm || isa<memref::DeallocOp>(user))
      continue;
    auto t = dyn_cast<linalg::TransposeOp>(user);
    if (!t || transpose || t.getInit() != operand)
      return {};
    transpose = t;
  }
  if (!transpose || transpose->getBlock() != gemm->getBlock() ||
      !transpose->isBeforeInBlock(gemm))
    return {};
  ArrayRef<int64_t> perm = transpose.getPermutation();
  bool lastTwo = perm.size() == 2 ? perm[0] == 1 && perm[1] == 0
                                  : perm.size() == 3 && perm[0] == 0 &&
                                        perm[1] == 2 && perm[2] == 1;
  auto source = dyn_cast<MemRefType>(transpose.getInput().getType());
  if (!lastTwo || !source || !source.hasStaticShape() ||
      !source.getLayout().isIdentity() ||
      mayWriteOrFreeBetween(transpose, gemm,
                            getRootBuffer(transpose.getInput())))
    return {};
  return transpose;
}

/// Replaces `operand`'s foldable transpose by its source; erases the
/// transposed buffer where nothing else uses it. Returns the source, or
/// null where there is no such transpose.
Value foldTranspose(IRRewriter &rewriter, Operation *gemm, Value operand) {
  linalg::TransposeOp transpose = getFoldableTranspose(gemm, operand);
  if (!transpose)
    return {};
  Value source = transpose.getInput();
  rewriter.eraseOp(transpose);
  return source;
}

/// Erases `buffer`'s allocation and deallocation if nothing else uses it.
void eraseIfUnused(IRRewriter &rewriter, Value buffer) {
  auto alloc = buffer.getDefiningOp<memref::AllocOp>();
  if (!alloc || !llvm::all_of(buffer.getUsers(), [](Operation *user) {
        return isa<memref::DeallocOp>(user);
      }))
    return;
  for (Operation *user : llvm::to_vector(buffer.getUsers()))
    rewriter.eraseOp(user);
  rewriter.eraseOp(alloc);
}

struct TsrGpuGemmPass : tessera::impl::TsrGpuGemmBase<TsrGpuGemmPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> gemms;
    getOperation().walk([&](linalg::LinalgOp op) {
      bool plain = (isa<linalg::MatmulOp>(op) &&
                    !cast<linalg::MatmulOp>(op).hasUserDefinedMaps()) ||
                   (isa<linalg::BatchMatmulOp>(op) &&
                    !cast<linalg::BatchMatmulOp>(op).hasUserDefinedMaps());
      if (plain && isLibraryGemm(op))
        gemms.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : gemms) {
      Value a = op.getDpsInputOperand(0)->get(),
            b = op.getDpsInputOperand(1)->get(),
            c = op.getDpsInitOperand(0)->get();
      linalg::FillOp fill = tessera::getZeroFill(op, c);
      Value sourceA = foldTranspose(rewriter, op, a);
      Value sourceB = b == a ? Value() : foldTranspose(rewriter, op, b);
      rewriter.setInsertionPoint(op);
      tsrt::GpuGemmOp::create(rewriter, op.getLoc(), Type(), ValueRange{},
                              sourceA ? sourceA : a, sourceB ? sourceB : b, c,
                              /*transpose_a=*/bool(sourceA),
                              /*transpose_b=*/bool(sourceB),
                              /*accumulate=*/!fill);
      rewriter.eraseOp(op);
      if (fill)
        rewriter.eraseOp(fill);
      eraseIfUnused(rewriter, a);
      if (b != a)
        eraseIfUnused(rewriter, b);
    }
  }
};

} // namespace
