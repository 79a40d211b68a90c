//===- Kernels.cpp - What the GPU passes share about kernels --------------===//
#include "Kernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

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
  if (body->getOperations().size() != 2)
    return {};
  auto threads = dyn_cast<scf::ForallOp>(body->front());
  return threads && isMapped(threads, false) ? threads : scf::ForallOp();
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
        kernels.push_back({grid, threads});
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
