//===- Launch.cpp - Kernels as gpu.launch, buffers on the GPU -------------===//
#include "tessera/Conversion/GPU/Passes.h"

#include "Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPULAUNCH
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// Replaces `kernel` by a gpu.launch of as many blocks and threads, its
/// workgroup buffers the launch's workgroup attributions.
void launch(IRRewriter &rewriter, const tessera::Kernel &kernelNest) {
  scf::ForallOp grid = kernelNest.grid, threads = kernelNest.threads;
  Location loc = grid.getLoc();
  rewriter.setInsertionPoint(grid);
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  };
  Value one = index(1);
  auto kernel = gpu::LaunchOp::create(
      rewriter, loc, index(grid.getStaticUpperBound()[0]), one, one,
      index(threads.getStaticUpperBound()[0]), one, one);
  // An alloca in workgroup memory inside the kernel would be lowered to a
  // stack buffer that the NVVM conversion then mislabels (MLIR 22): the
  // launch's attributions are the shared memory it allocates.
  for (memref::AllocaOp alloca : kernelNest.workgroup) {
    BlockArgument shared =
        kernel.addWorkgroupAttribution(alloca.getType(), alloca.getLoc());
    rewriter.replaceAllUsesWith(alloca.getResult(), shared);
    rewriter.eraseOp(alloca);
  }
  Block &body = kernel.getBody().front();
  rewriter.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(rewriter, loc);
  rewriter.replaceAllUsesWith(grid.getInductionVar(0), kernel.getBlockIds().x);
  Block *threadBody = threads.getBody();
  rewriter.eraseOp(threadBody->getTerminator());
  rewriter.inlineBlockBefore(threadBody, terminator,
                             ValueRange{kernel.getThreadIds().x});
  rewriter.eraseOp(grid);
}

struct TsrGpuLaunchPass : tessera::impl::TsrGpuLaunchBase<TsrGpuLaunchPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    IRRewriter rewriter(&getContext());
    FailureOr<SmallVector<tessera::Kernel>> kernels =
        tessera::collectKernels(function, getArgument());
    if (failed(kernels))
      return signalPassFailure();
    for (const tessera::Kernel &kernel : *kernels)
      launch(rewriter, kernel);
    WalkResult stack = function.walk([&](Operation *op) {
      auto type = op->getNumResults() == 1
                      ? dyn_cast<MemRefType>(op->getResult(0).getType())
                      : MemRefType();
      if (!isa<memref::AllocaOp, memref::AllocOp>(op) || !type ||
          !tessera::isWorkgroupMemory(type))
        return WalkResult::advance();
      op->emitError("tsr-gpu-launch: workgroup memory must be allocated "
                    "in a kernel's block loop, before its thread loop (it "
                    "becomes the launch's workgroup attribution), not by ")
          << op->getName();
      return WalkResult::interrupt();
    });
    if (stack.wasInterrupted())
      return signalPassFailure();

    if (failed(placeBuffers(rewriter, function)))
      return signalPassFailure();

    WalkResult host = function->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      // gpu ops and library calls that run on the device like them.
      if ((op->getDialect() && isa<gpu::GPUDialect>(op->getDialect())) ||
          isa<gpu::AsyncOpInterface>(op))
        return WalkResult::advance();
      if (tessera::touchesBuffer(op)) {
        op->emitError("tsr-gpu-launch: the cuda target cannot run ")
            << op->getName()
            << " on the host: it reads or writes a buffer in device "
               "memory (run tsr-gpu-map first)";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (host.wasInterrupted())
      signalPassFailure();
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
