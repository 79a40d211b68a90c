//===- HorizontalFuse.cpp - Runs of independent kernels as one launch -----===//
//
// The optimizer updates each parameter with its own elementwise kernel: 21
// launches for the character LM's Adam step, each a few blocks. Launched
// one after another, each waits for the one before although none reads
// what another writes. Like the multi-tensor kernels of apex and PyTorch's
// fused optimizers (one launch whose blocks are split among the tensors),
// this pass gives a run of consecutive independent kernels one grid: the
// blocks of the first kernel, then those of the second, and so on, each
// block running the thread body of the kernel it belongs to. It works on
// tsr-gpu-map's kernels, so that the CPU emulation runs the fused kernels
// too.
//
//===----------------------------------------------------------------------===//
#include "tessera/Conversion/GPU/Passes.h"

#include "Kernels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPUHORIZONTALFUSE
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// The buffers a kernel reads and writes, each as its root: the function
/// argument or allocation that its views (subview, collapse_shape, ...)
/// come from.
struct Access {
  llvm::SmallDenseSet<Value, 8> touched, written;
  /// Whether the kernel's warps meet in gpu.subgroup_reduce ops.
  bool warpReductions = false;
};

/// Whether the memref arguments of each function are distinct buffers: a
/// public function's are (the runtime passes each tensor its own buffer); a
/// private one's if every call passes distinct roots, and caller arguments
/// among them only where the caller's are distinct too.
class DistinctArguments {
public:
  explicit DistinctArguments(ModuleOp module) {
    module.walk([&](func::CallOp call) {
      calls[call.getCalleeAttr().getAttr()].push_back(call);
    });
  }

  bool get(func::FuncOp function) {
    if (function.isPublic())
      return true;
    auto [it, inserted] = memo.try_emplace(function, false);
    if (!inserted)
      return it->second;
    bool distinct = true;
    for (func::CallOp call : calls.lookup(function.getSymNameAttr())) {
      llvm::SmallDenseSet<Value, 8> roots;
      bool callerArguments = false;
      for (Value operand : call.getOperands()) {
        if (!isa<MemRefType>(operand.getType()))
          continue;
        Value root = tessera::viewRoot(operand);
        callerArguments |= isa<BlockArgument>(root);
        distinct &= roots.insert(root).second;
      }
      auto caller = call->getParentOfType<func::FuncOp>();
      if (callerArguments && caller != function)
        distinct &= get(caller);
    }
    memo[function] = distinct;
    return distinct;
  }

private:
  llvm::DenseMap<StringAttr, SmallVector<func::CallOp>> calls;
  llvm::DenseMap<func::FuncOp, bool> memo;
};

/// What `kernel` (no workgroup memory) reads and writes, or nothing if an
/// op in it has effects that are not on a known buffer or synchronizes the
/// block (a barrier). With `argumentsAlias`, every
/// argument of the function is one root.
std::optional<Access> accessOf(tessera::Kernel kernel, bool argumentsAlias) {
  if (!kernel.workgroup.empty())
    return std::nullopt;
  Access access;
  WalkResult walk = kernel.threads.getBody()->walk([&](Operation *op) {
    if (isa<gpu::SubgroupReduceOp>(op)) {
      access.warpReductions = true;
      return WalkResult::advance();
    }
    if (isa<gpu::BarrierOp>(op))
      return WalkResult::interrupt();
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects)
      return WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &effect : list) {
      if (isa<MemoryEffects::Allocate, MemoryEffects::Free>(effect.getEffect()))
        continue;
      Value value = effect.getValue();
      if (!value || !isa<MemRefType>(value.getType()))
        return WalkResult::interrupt();
      Value r = tessera::bufferRoot(value, argumentsAlias);
      access.touched.insert(r);
      if (isa<MemoryEffects::Write>(effect.getEffect()))
        access.written.insert(r);
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return std::nullopt;
  return access;
}

/// Whether neither of two kernels writes a buffer the other one touches.
bool independent(const Access &a, const Access &b) {
  auto disjoint = [](const llvm::SmallDenseSet<Value, 8> &x,
                     const llvm::SmallDenseSet<Value, 8> &y) {
    return llvm::none_of(x, [&](Value v) { return y.contains(v); });
  };
  return disjoint(a.written, b.touched) && disjoint(b.written, a.touched);
}

/// Ops that may sit between two kernels of a run: allocations without
/// operands and constants (moved before the run when a later kernel uses
/// them), deallocations (of buffers no later kernel of the run uses), and
/// pure index math.
bool mayInterleave(Operation *op) {
  if (isa<memref::AllocOp>(op))
    return op->getNumOperands() == 0;
  if (isa<memref::DeallocOp>(op))
    return true;
  return op->getNumRegions() == 0 && isPure(op);
}

/// Moves `op` (allocation or pure) and what it uses from after `first`
/// before `first`.
void hoistBefore(Operation *op, Operation *first) {
  if (op->getBlock() != first->getBlock() || !first->isBeforeInBlock(op))
    return;
  for (Value operand : op->getOperands())
    if (Operation *def = operand.getDefiningOp())
      hoistBefore(def, first);
  op->moveBefore(first);
}

/// What a fused kernel may take as parameters, in bytes: the 4352 that
/// PTX before ISA 8.1 allows, less room for the launch's own values.
constexpr int64_t kParameterBytes = 4096;

/// Bytes of `value` as a kernel parameter: a memref as its descriptor (two
/// pointers, the offset, sizes and strides), anything else 8.
int64_t parameterBytes(Value value) {
  if (auto type = dyn_cast<MemRefType>(value.getType()))
    return 8 * (3 + 2 * type.getRank());
  return 8;
}

/// Whether a value can cross a fused kernel's warp reduction as a result
/// of the branch before it (the other kernels' threads yield zero).
bool hasZero(Type type) {
  if (auto vector = dyn_cast<VectorType>(type))
    type = vector.getElementType();
  return isa<IntegerType, IndexType, FloatType>(type);
}

/// The top-level op of `body` that holds `op`.
Operation *topLevel(Block *body, Operation *op) {
  return body->findAncestorOpInBlock(*op);
}

/// The pieces of a thread body between its warp reductions (the last piece
/// after the last one) and, for each, its results that later pieces use.
struct Piece {
  SmallVector<Operation *> ops;
  gpu::SubgroupReduceOp end;
  SmallVector<Value> escaping;
};

SmallVector<Piece> splitAtWarpReductions(Block *body) {
  SmallVector<Piece> pieces(1);
  for (Operation &op : body->without_terminator()) {
    if (auto reduce = dyn_cast<gpu::SubgroupReduceOp>(op)) {
      pieces.back().end = reduce;
      pieces.emplace_back();
      continue;
    }
    pieces.back().ops.push_back(&op);
  }
  for (Piece &piece : pieces) {
    llvm::SmallPtrSet<Operation *, 16> members(piece.ops.begin(),
                                               piece.ops.end());
    for (Operation *op : piece.ops)
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !members.contains(topLevel(body, user));
            }))
          piece.escaping.push_back(result);
  }
  return pieces;
}

/// Whether `kernel`, whose threads meet in warp reductions, can join a
/// fused kernel: one block (a full reduction), whole warps, and only
/// scalars and vectors used across its reductions.
bool isFusableFullReduction(tessera::Kernel kernel) {
  if (kernel.grid.getStaticUpperBound()[0] != 1 ||
      kernel.threads.getStaticUpperBound()[0] % tessera::kWarpSize != 0)
    return false;
  for (const Piece &piece : splitAtWarpReductions(kernel.threads.getBody()))
    for (Value value : piece.escaping)
      if (!hasZero(value.getType()))
        return false;
  return true;
}

/// Puts each of `pieces` (a thread body's, inlined into the fused kernel's)
/// in a branch on `mine`, whose results pass on what
/// later pieces use (zero on the other kernels' threads), the reductions
/// left at the top of the body: every thread of the fused kernel reaches
/// them, as gpu.subgroup_reduce needs (they combine zeros outside the
/// kernel's own block).
void guardPieces(IRRewriter &rewriter, Location loc, ArrayRef<Piece> pieces,
                 Value mine) {
  for (const Piece &piece : pieces) {
    if (piece.ops.empty())
      continue;
    rewriter.setInsertionPoint(piece.ops.front());
    SmallVector<Type> types;
    for (Value value : piece.escaping)
      types.push_back(value.getType());
    auto branch = scf::IfOp::create(rewriter, loc, types, mine,
                                    /*withElseRegion=*/!types.empty());
    Block *then = branch.thenBlock();
    if (!types.empty()) {
      OpBuilder end = OpBuilder::atBlockEnd(then);
      scf::YieldOp::create(end, loc, piece.escaping);
    }
    for (Operation *op : piece.ops)
      op->moveBefore(then->getTerminator());
    if (!types.empty()) {
      OpBuilder otherwise = OpBuilder::atBlockEnd(branch.elseBlock());
      SmallVector<Value> zeros;
      for (Type type : types)
        zeros.push_back(arith::ConstantOp::create(otherwise, loc, type,
                                                  otherwise.getZeroAttr(type)));
      scf::YieldOp::create(otherwise, loc, zeros);
    }
    for (auto [value, result] : llvm::zip(piece.escaping, branch.getResults()))
      rewriter.replaceUsesWithIf(value, result, [&](OpOperand &use) {
        return !branch->isAncestor(use.getOwner());
      });
  }
}

/// A run of kernels to launch as one.
struct Run {
  SmallVector<tessera::Kernel> kernels;
  SmallVector<Access> accesses;
  /// What the kernels use from outside them (their parameters once fused,
  /// constants aside, which tsr-gpu-launch's users sink into the kernel).
  llvm::SetVector<Value> parameters;
  int64_t bytes = 0;

  /// Whether `kernel` with `access` may join, and if so adds it. Kernels
  /// with warp reductions join only each other, and only with one block
  /// each (a full reduction: a loss, a parameter's norm), as every block of
  /// the fused kernel runs the reductions of all of them (see fuse).
  bool add(tessera::Kernel kernel, Access access) {
    if (!kernels.empty() &&
        accesses.front().warpReductions != access.warpReductions)
      return false;
    if (!llvm::all_of(accesses,
                      [&](const Access &a) { return independent(a, access); }))
      return false;
    llvm::SetVector<Value> used;
    getUsedValuesDefinedAbove(kernel.grid.getRegion(), used);
    int64_t extra = 0;
    for (Value value : used)
      if (!parameters.contains(value) && !matchPattern(value, m_Constant()))
        extra += parameterBytes(value);
    if (!kernels.empty() && bytes + extra > kParameterBytes)
      return false;
    kernels.push_back(kernel);
    accesses.push_back(std::move(access));
    parameters.insert(used.begin(), used.end());
    bytes += extra;
    return true;
  }
};

/// Replaces the kernels of `run` by one at the first one's place: block b
/// of the fused grid runs block b - offset(k) of kernel k for the k whose
/// blocks it falls in, with as many threads as the widest kernel (the
/// threads past a narrower kernel's count do nothing).
void fuse(IRRewriter &rewriter, Run &run) {
  scf::ForallOp first = run.kernels.front().grid;
  Location loc = first.getLoc();
  // What the later kernels use from between the kernels comes first.
  for (tessera::Kernel &kernel : llvm::drop_begin(run.kernels)) {
    llvm::SetVector<Value> used;
    getUsedValuesDefinedAbove(kernel.grid.getRegion(), used);
    for (Value value : used)
      if (Operation *def = value.getDefiningOp())
        hoistBefore(def, first);
  }
  int64_t blocks = 0, threads = 0;
  for (tessera::Kernel &kernel : run.kernels) {
    blocks += kernel.grid.getStaticUpperBound()[0];
    threads = std::max(threads, kernel.threads.getStaticUpperBound()[0]);
  }
  bool warpReductions = run.accesses.front().warpReductions;
  rewriter.setInsertionPoint(first);
  scf::ForallOp block = tessera::createKernel(rewriter, loc, blocks, threads);
  auto grid = cast<scf::ForallOp>(block->getParentOp());
  Value blockId = grid.getInductionVar(0);
  Value threadId = block.getInductionVar(0);
  // The bounds of each kernel's blocks and threads, before the grid.
  OpBuilder constants(grid);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(constants, loc, v);
  };
  int64_t offset = 0;
  for (tessera::Kernel &kernel : run.kernels) {
    int64_t count = kernel.grid.getStaticUpperBound()[0];
    int64_t width = kernel.threads.getStaticUpperBound()[0];
    Value mine = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                       blockId, index(offset + count));
    if (offset != 0)
      mine = arith::AndIOp::create(
          rewriter, loc, mine,
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::uge,
                                blockId, index(offset)));
    if (width != threads)
      mine = arith::AndIOp::create(
          rewriter, loc, mine,
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                threadId, index(width)));
    Value local =
        offset == 0
            ? blockId
            : affine::AffineApplyOp::create(
                  rewriter, loc,
                  AffineMap::get(1, 0, rewriter.getAffineDimExpr(0) - offset),
                  ValueRange{blockId})
                  .getResult();
    Block *body = kernel.threads.getBody();
    Block *fused = block.getBody();
    if (warpReductions) {
      SmallVector<Piece> pieces = splitAtWarpReductions(body);
      rewriter.eraseOp(body->getTerminator());
      rewriter.inlineBlockBefore(body, fused->getTerminator(),
                                 ValueRange{threadId});
      guardPieces(rewriter, loc, pieces, mine);
      rewriter.setInsertionPoint(fused->getTerminator());
    } else {
      auto branch = scf::IfOp::create(rewriter, loc, mine);
      rewriter.eraseOp(body->getTerminator());
      rewriter.inlineBlockBefore(body, branch.thenBlock()->getTerminator(),
                                 ValueRange{threadId});
    }
    rewriter.replaceAllUsesWith(kernel.grid.getInductionVar(0), local);
    rewriter.eraseOp(kernel.grid);
    offset += count;
  }
}

struct TsrGpuHorizontalFusePass
    : tessera::impl::TsrGpuHorizontalFuseBase<TsrGpuHorizontalFusePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    DistinctArguments distinct(module);
    IRRewriter rewriter(&getContext());
    for (auto function : module.getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      bool argumentsAlias = !distinct.get(function);
      std::vector<Run> runs;
      bool open = false;
      for (Operation &op : function.getBody().front()) {
        auto grid = dyn_cast<scf::ForallOp>(op);
        scf::ForallOp threads =
            grid ? tessera::getKernelThreads(grid) : scf::ForallOp();
        if (!threads) {
          open &= mayInterleave(&op);
          continue;
        }
        tessera::Kernel kernel{grid, threads, {}};
        for (auto alloca : grid.getBody()->getOps<memref::AllocaOp>())
          kernel.workgroup.push_back(alloca);
        std::optional<Access> access = accessOf(kernel, argumentsAlias);
        if (!access ||
            (access->warpReductions && !isFusableFullReduction(kernel))) {
          open = false;
          continue;
        }
        if (!open || !runs.back().add(kernel, *access)) {
          runs.emplace_back();
          runs.back().add(kernel, std::move(*access));
        }
        open = true;
      }
      for (Run &run : runs)
        if (run.kernels.size() > 1)
          fuse(rewriter, run);
    }
  }
};

} // namespace
