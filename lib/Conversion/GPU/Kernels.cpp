//===- Kernels.cpp - What the GPU passes share about kernels --------------===//
#include "Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

std::optional<gpu::AllReduceOperation>
mlir::tessera::getWarpCombiner(Operation *combine) {
  return llvm::TypeSwitch<Operation *, std::optional<gpu::AllReduceOperation>>(
             combine)
      .Case<arith::AddFOp>([](auto) { return gpu::AllReduceOperation::ADD; })
      .Case<arith::MulFOp>([](auto) { return gpu::AllReduceOperation::MUL; })
      .Case<arith::MaximumFOp>(
          [](auto) { return gpu::AllReduceOperation::MAXIMUMF; })
      .Case<arith::MinimumFOp>(
          [](auto) { return gpu::AllReduceOperation::MINIMUMF; })
      .Case<arith::MaxNumFOp>(
          [](auto) { return gpu::AllReduceOperation::MAXNUMF; })
      .Case<arith::MinNumFOp>(
          [](auto) { return gpu::AllReduceOperation::MINNUMF; })
      .Default([](Operation *) { return std::nullopt; });
}

scf::ForallOp mlir::tessera::getKernelThreads(scf::ForallOp grid) {
  auto isMapped = [](scf::ForallOp loop, bool block) {
    std::optional<ArrayAttr> mapping = loop.getMapping();
    if (loop.getRank() != 1 || !loop.getOutputs().empty() || !mapping ||
        mapping->size() != 1 ||
        ShapedType::isDynamic(loop.getStaticUpperBound()[0]) ||
        !loop.isNormalized())
      return false;
    Attribute id = (*mapping)[0];
    return block ? isa<gpu::GPUBlockMappingAttr>(id)
                 : isa<gpu::GPUThreadMappingAttr>(id);
  };
  if (!isMapped(grid, true))
    return {};
  Block *body = grid.getBody();
  auto it = body->begin();
  for (; it != body->end(); ++it) {
    auto alloca = dyn_cast<memref::AllocaOp>(*it);
    if (!alloca)
      break;
    if (!isWorkgroupMemory(alloca.getType()) ||
        !alloca.getType().hasStaticShape())
      return {};
  }
  auto threads = dyn_cast<scf::ForallOp>(*it);
  if (!threads || std::next(it) != body->getTerminator()->getIterator())
    return {};
  return isMapped(threads, false) ? threads : scf::ForallOp();
}

/// Creates a kernel (Kernels.h) of `blocks` blocks of
/// `threads` threads before `rewriter`'s insertion point and moves the
/// insertion point into the thread loop; returns the thread loop.
scf::ForallOp mlir::tessera::createKernel(OpBuilder &rewriter, Location loc,
                                          int64_t blocks, int64_t threads) {
  MLIRContext *ctx = rewriter.getContext();
  auto grid = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(blocks)},
      ValueRange{},
      rewriter.getArrayAttr(
          gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX)));
  rewriter.setInsertionPoint(grid.getBody()->getTerminator());
  auto block = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(threads)},
      ValueRange{},
      rewriter.getArrayAttr(
          gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)));
  rewriter.setInsertionPoint(block.getBody()->getTerminator());
  return block;
}

bool mlir::tessera::isWorkgroupMemory(MemRefType type) {
  auto space = dyn_cast_or_null<gpu::AddressSpaceAttr>(type.getMemorySpace());
  return space && space.getValue() == gpu::AddressSpace::Workgroup;
}

FailureOr<SmallVector<tessera::Kernel>>
mlir::tessera::collectKernels(func::FuncOp function, StringRef pass) {
  SmallVector<Kernel> kernels;
  WalkResult walk =
      function->walk<WalkOrder::PreOrder>([&](scf::ForallOp grid) {
        scf::ForallOp threads = getKernelThreads(grid);
        if (!threads) {
          grid.emitError() << pass
                           << ": expected a kernel of tsr-gpu-map (a loop "
                              "over #gpu.block<x> holding one over "
                              "#gpu.thread<x>, static bounds)";
          return WalkResult::interrupt();
        }
        Kernel kernel{grid, threads, {}};
        for (auto alloca : grid.getBody()->getOps<memref::AllocaOp>())
          kernel.workgroup.push_back(alloca);
        WalkResult collective = threads.walk([&](Operation *op) {
          if (!isa<gpu::BarrierOp, gpu::SubgroupReduceOp>(op) ||
              op->getParentOp() == threads.getOperation())
            return WalkResult::advance();
          op->emitError() << pass << ": " << op->getName()
                          << " must be at the top of its kernel's thread "
                             "loop, reached by every thread";
          return WalkResult::interrupt();
        });
        if (collective.wasInterrupted())
          return WalkResult::interrupt();
        kernels.push_back(std::move(kernel));
        return WalkResult::skip();
      });
  if (walk.wasInterrupted())
    return failure();
  return kernels;
}

bool mlir::tessera::touchesBuffer(Operation *op) {
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

Value mlir::tessera::viewRoot(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

Value mlir::tessera::bufferRoot(Value value, bool argumentsAlias) {
  Value root = viewRoot(value);
  if (auto arg = dyn_cast<BlockArgument>(root);
      arg && argumentsAlias &&
      isa<func::FuncOp>(arg.getParentBlock()->getParentOp()))
    return arg.getParentBlock()->getArgument(0);
  return root;
}
