//===- Launch.cpp - One gpu.launch per linalg op on buffers ---------------===//
#include "tessera/Conversion/GPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPULAUNCH
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// Threads per block of the linearized mapping.
constexpr int64_t kBlockSize = 256;

/// Whether `op` reads or writes a buffer.
bool touchesBuffer(Operation *op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::any_of(list, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()) &&
           e.getValue() && isa<MemRefType>(e.getValue().getType());
  });
}

/// Whether `op` or an op nested in it reads or writes a buffer.
bool touchesBufferWithin(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        return touchesBuffer(nested) ? WalkResult::interrupt()
                                     : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Creates `gpu.launch` with grid (`blocks`, 1, 1) and block (`threads`, 1,
/// 1) before `rewriter`'s insertion point, its body ending in
/// gpu.terminator; the insertion point moves to before that terminator.
gpu::LaunchOp createLaunch(IRRewriter &rewriter, Location loc, int64_t blocks,
                           int64_t threads) {
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  };
  Value one = index(1);
  auto launch = gpu::LaunchOp::create(rewriter, loc, index(blocks), one, one,
                                      index(threads), one, one);
  Block &body = launch.getBody().front();
  rewriter.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(rewriter, loc);
  rewriter.setInsertionPoint(terminator);
  return launch;
}

/// Replaces the loop nest `parallel` (no reductions, static bounds) by a
/// launch with one thread per point of its iteration space.
LogicalResult linearize(IRRewriter &rewriter, scf::ParallelOp parallel) {
  Location loc = parallel.getLoc();
  if (!parallel.getInitVals().empty())
    return parallel.emitError("tsr-gpu-launch: a parallel loop with "
                              "reductions has no mapping yet");
  SmallVector<int64_t> lower, step, trips;
  for (auto [lb, ub, st] :
       llvm::zip(parallel.getLowerBound(), parallel.getUpperBound(),
                 parallel.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           s = getConstantIntValue(st);
    if (!l || !u || !s || *s <= 0)
      return parallel.emitError("tsr-gpu-launch: the cuda target needs "
                                "static loop bounds");
    lower.push_back(*l);
    step.push_back(*s);
    trips.push_back(std::max<int64_t>(0, llvm::divideCeil(*u - *l, *s)));
  }
  int64_t total = 1;
  for (int64_t t : trips)
    total *= t;
  rewriter.setInsertionPoint(parallel);
  if (total == 0) {
    rewriter.eraseOp(parallel);
    return success();
  }
  int64_t threads = std::min(total, kBlockSize);
  gpu::LaunchOp launch =
      createLaunch(rewriter, loc, llvm::divideCeil(total, threads), threads);
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  };
  Value linear = affine::AffineApplyOp::create(
      rewriter, loc,
      AffineMap::get(2, 0,
                     rewriter.getAffineDimExpr(0) * threads +
                         rewriter.getAffineDimExpr(1)),
      ValueRange{launch.getBlockIds().x, launch.getThreadIds().x});
  Value inside = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                       linear, index(total));
  auto guard = scf::IfOp::create(rewriter, loc, inside);
  rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
  SmallVector<Value> ivs;
  if (trips.size() == 1) {
    ivs.push_back(linear);
  } else {
    auto split = affine::AffineDelinearizeIndexOp::create(
        rewriter, loc, linear, trips, /*hasOuterBound=*/true);
    llvm::append_range(ivs, split.getResults());
  }
  for (size_t i = 0; i < ivs.size(); ++i)
    if (lower[i] != 0 || step[i] != 1)
      ivs[i] = affine::AffineApplyOp::create(
          rewriter, loc,
          AffineMap::get(1, 0,
                         rewriter.getAffineDimExpr(0) * step[i] + lower[i]),
          ValueRange{ivs[i]});
  Block *body = parallel.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.inlineBlockBefore(body, guard.thenBlock()->getTerminator(), ivs);
  rewriter.eraseOp(parallel);
  return success();
}

/// Lowers `op` to its loop nest and puts the nest on the GPU.
LogicalResult launchLinalgOp(IRRewriter &rewriter, linalg::LinalgOp op) {
  Block *block = op->getBlock();
  Operation *before = op->getPrevNode();
  rewriter.setInsertionPoint(op);
  if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
    return op->emitError("tsr-gpu-launch: cannot lower ")
           << op->getName() << " to loops";
  // What the loop nest computes on the host first (bounds: constants,
  // memref.dim) stays there; the rest goes on the GPU.
  SmallVector<Operation *> created;
  for (Operation *it = before ? before->getNextNode() : &block->front();
       it != op.getOperation(); it = it->getNextNode())
    if (!created.empty() || touchesBufferWithin(it))
      created.push_back(it);
  rewriter.eraseOp(op);
  if (created.empty())
    return success();
  if (created.size() == 1)
    if (auto parallel = dyn_cast<scf::ParallelOp>(created.front()))
      return linearize(rewriter, parallel);
  // No parallel dimension: the whole nest on one thread.
  rewriter.setInsertionPoint(created.front());
  gpu::LaunchOp launch = createLaunch(rewriter, op.getLoc(), 1, 1);
  Operation *terminator = launch.getBody().front().getTerminator();
  for (Operation *moved : created)
    rewriter.moveOpBefore(moved, terminator);
  return success();
}

struct TsrGpuLaunchPass : tessera::impl::TsrGpuLaunchBase<TsrGpuLaunchPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    IRRewriter rewriter(&getContext());

    // Copies are kernels like any other linalg op.
    function.walk([&](memref::CopyOp copy) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    });
    SmallVector<linalg::LinalgOp> ops;
    function.walk([&](linalg::LinalgOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>())
        ops.push_back(op);
    });
    for (linalg::LinalgOp op : ops)
      if (failed(launchLinalgOp(rewriter, op)))
        return signalPassFailure();

    if (failed(placeBuffers(rewriter, function)))
      return signalPassFailure();

    if (failed(launchHostCode(rewriter, function)))
      return signalPassFailure();
  }

  /// Puts the function body's loops and other ops that read or write a
  /// buffer (what tsr-to-linalg lowers to `scf` directly, e.g. a scatter
  /// with accumulation) on one GPU thread, each run of consecutive ones in
  /// one launch. A value they compute that the host uses is an error.
  LogicalResult launchHostCode(IRRewriter &rewriter, func::FuncOp function) {
    auto needsDevice = [](Operation *op) {
      if (isa<gpu::LaunchOp>(op) ||
          (op->getDialect() && isa<gpu::GPUDialect>(op->getDialect())))
        return false;
      return touchesBufferWithin(op);
    };
    SmallVector<SmallVector<Operation *>> runs;
    bool open = false;
    for (Operation &op : function.getBody().getOps()) {
      if (!needsDevice(&op)) {
        open = false;
        continue;
      }
      if (!open)
        runs.emplace_back();
      runs.back().push_back(&op);
      open = true;
    }
    for (ArrayRef<Operation *> run : runs) {
      llvm::SmallPtrSet<Operation *, 8> members(run.begin(), run.end());
      for (Operation *op : run)
        for (Operation *user : op->getUsers())
          if (isa<func::ReturnOp>(user) ||
              !members.contains(
                  function.getBody().front().findAncestorOpInBlock(*user)))
            return op->emitError("tsr-gpu-launch: the cuda target cannot run ")
                   << op->getName()
                   << " on the host (it reads or writes a buffer in device "
                      "memory) nor on the GPU (the host uses its result)";
      rewriter.setInsertionPoint(run.front());
      gpu::LaunchOp launch =
          createLaunch(rewriter, run.front()->getLoc(), 1, 1);
      Operation *terminator = launch.getBody().front().getTerminator();
      for (Operation *op : run)
        rewriter.moveOpBefore(op, terminator);
    }
    return success();
  }

  /// Moves the host's buffers to device memory.
  LogicalResult placeBuffers(IRRewriter &rewriter, func::FuncOp function) {
    SmallVector<Operation *> hostOps;
    function->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (isa<memref::AllocOp, memref::DeallocOp, memref::GetGlobalOp,
              memref::AllocaOp>(op))
        hostOps.push_back(op);
      return WalkResult::advance();
    });
    SmallVector<Value> uploads;
    for (Operation *op : hostOps) {
      rewriter.setInsertionPoint(op);
      Location loc = op->getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        if (!alloc.getSymbolOperands().empty() ||
            !alloc.getType().getLayout().isIdentity())
          return alloc.emitError("tsr-gpu-launch: no device allocation for ")
                 << alloc.getType();
        rewriter.replaceOpWithNewOp<gpu::AllocOp>(
            alloc, alloc.getType(), Type(), ValueRange{},
            alloc.getDynamicSizes(), ValueRange{});
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        rewriter.replaceOpWithNewOp<gpu::DeallocOp>(
            dealloc, Type(), ValueRange{}, dealloc.getMemref());
      } else if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
        rewriter.setInsertionPointAfter(global);
        auto device =
            gpu::AllocOp::create(rewriter, loc, global.getType(), Type(),
                                 ValueRange{}, ValueRange{}, ValueRange{});
        rewriter.replaceAllUsesWith(global.getResult(), device.getMemref());
        gpu::MemcpyOp::create(rewriter, loc, Type(), ValueRange{},
                              device.getMemref(), global.getResult());
        uploads.push_back(device.getMemref());
      } else {
        return op->emitError("tsr-gpu-launch: stack buffers have no device "
                             "counterpart");
      }
    }
    if (uploads.empty())
      return success();
    WalkResult returns = function.walk([&](func::ReturnOp ret) {
      if (ret->getParentOp() != function) {
        ret.emitError("tsr-gpu-launch: expected returns only in the body");
        return WalkResult::interrupt();
      }
      rewriter.setInsertionPoint(ret);
      for (Value buffer : uploads)
        gpu::DeallocOp::create(rewriter, ret.getLoc(), Type(), ValueRange{},
                               buffer);
      return WalkResult::advance();
    });
    return failure(returns.wasInterrupted());
  }
};

} // namespace
