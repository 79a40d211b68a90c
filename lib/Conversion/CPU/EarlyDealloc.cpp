//===- EarlyDealloc.cpp - Free buffers after their last use ---------------===//
#include "tessera/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRCPUEARLYDEALLOC
#include "tessera/Conversion/CPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// The last op of `block` that uses `root` or a value computed from it
/// (transitively), or null if one of them leaves the block or the function.
Operation *findLastUse(Value root, Block &block) {
  SmallVector<Value> work{root};
  DenseSet<Value> seen{root};
  Operation *last = root.getDefiningOp();
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (isa<memref::DeallocOp>(user))
        continue;
      Operation *op = block.findAncestorOpInBlock(*user);
      if (!op || isa<func::ReturnOp>(op))
        return nullptr;
      if (last->isBeforeInBlock(op))
        last = op;
      // Anything an op computes from the buffer may stand for it: views,
      // addresses, and the results of ops holding a use in a region.
      for (Value result : op->getResults())
        if (seen.insert(result).second)
          work.push_back(result);
      if (user != op)
        for (Value result : user->getResults())
          if (seen.insert(result).second)
            work.push_back(result);
    }
  }
  return last;
}

struct TsrCpuEarlyDeallocPass
    : tessera::impl::TsrCpuEarlyDeallocBase<TsrCpuEarlyDeallocPass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation().walk([&](memref::DeallocOp d) { deallocs.push_back(d); });
    for (memref::DeallocOp dealloc : deallocs) {
      Value buffer = dealloc.getMemref();
      auto alloc = buffer.getDefiningOp<memref::AllocOp>();
      Block *block = dealloc->getBlock();
      if (!alloc || alloc->getBlock() != block)
        continue;
      Operation *last = findLastUse(buffer, *block);
      if (last && last->isBeforeInBlock(dealloc))
        dealloc->moveAfter(last);
    }
  }
};

} // namespace
