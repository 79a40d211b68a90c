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

/// The position of each op in its block, numbered once before any dealloc
/// moves: moving an op makes MLIR renumber the whole block at the next
/// order query, which made the pass quadratic in the length of a step.
/// Only deallocs move, and a dealloc is never a use, so the numbers of the
/// ops compared stay in order.
class Positions {
public:
  unsigned of(Operation *op) {
    Block *block = op->getBlock();
    if (numbered.insert(block).second) {
      unsigned next = 0;
      for (Operation &each : *block)
        position[&each] = next++;
    }
    return position.lookup(op);
  }

private:
  DenseSet<Block *> numbered;
  DenseMap<Operation *, unsigned> position;
};

/// The last op of `block` that uses `root` or a value computed from it
/// (transitively), or null if one of them leaves the block or the function.
Operation *findLastUse(Value root, Block &block, Positions &positions) {
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
      if (positions.of(last) < positions.of(op))
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
    Positions positions;
    for (memref::DeallocOp dealloc : deallocs) {
      Value buffer = dealloc.getMemref();
      auto alloc = buffer.getDefiningOp<memref::AllocOp>();
      Block *block = dealloc->getBlock();
      if (!alloc || alloc->getBlock() != block)
        continue;
      Operation *last = findLastUse(buffer, *block, positions);
      if (last && positions.of(last) < positions.of(dealloc))
        dealloc->moveAfter(last);
    }
  }
};

} // namespace
