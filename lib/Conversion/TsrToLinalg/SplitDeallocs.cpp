//===- SplitDeallocs.cpp - Unconditional deallocs of distinct allocations -===//
#include "tessera/Conversion/TsrToLinalg/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRSPLITDEALLOCS
#include "tessera/Conversion/TsrToLinalg/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// Whether `dealloc` frees distinct `memref.alloc` results unconditionally
/// and retains nothing: then no two of them alias, and freeing each on its
/// own is what buffer-deallocation-simplification and lower-deallocations
/// would make of it.
bool freesDistinctAllocations(bufferization::DeallocOp dealloc) {
  if (!dealloc.getRetained().empty())
    return false;
  DenseSet<Value> seen;
  for (Value memref : dealloc.getMemrefs())
    if (!memref.getDefiningOp<memref::AllocOp>() || !seen.insert(memref).second)
      return false;
  return llvm::all_of(dealloc.getConditions(), [](Value condition) {
    return matchPattern(condition, m_One());
  });
}

struct TsrSplitDeallocsPass
    : tessera::impl::TsrSplitDeallocsBase<TsrSplitDeallocsPass> {
  void runOnOperation() override {
    SmallVector<bufferization::DeallocOp> deallocs;
    getOperation().walk([&](bufferization::DeallocOp dealloc) {
      if (freesDistinctAllocations(dealloc))
        deallocs.push_back(dealloc);
    });
    for (bufferization::DeallocOp dealloc : deallocs) {
      OpBuilder builder(dealloc);
      for (Value memref : dealloc.getMemrefs())
        memref::DeallocOp::create(builder, dealloc.getLoc(), memref);
      dealloc.erase();
    }
  }
};

} // namespace
