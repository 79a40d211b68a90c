//===- Emulate.cpp - tsr-gpu-map's kernels as CPU loops, in a chosen order ===//
#include "tessera/Conversion/GPU/Passes.h"

#include "Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include <numeric>

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPUEMULATE
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// A multiplier coprime with `n` near n times the golden ratio's
/// fractional part: i -> i * m mod n visits 0..n-1 once each, far from in
/// order.
int64_t shuffleMultiplier(int64_t n) {
  int64_t m = std::max<int64_t>(1, static_cast<int64_t>(n * 0.6180339887));
  while (std::gcd(m, n) != 1)
    ++m;
  return m;
}

struct TsrGpuEmulatePass : tessera::impl::TsrGpuEmulateBase<TsrGpuEmulatePass> {
  using Base::Base;

  void runOnOperation() override {
    if (order != "forward" && order != "reverse" && order != "shuffle") {
      getOperation().emitError("tsr-gpu-emulate: order '")
          << order << "' is not one of forward, reverse, shuffle";
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    FailureOr<SmallVector<tessera::Kernel>> kernels =
        tessera::collectKernels(getOperation(), getArgument());
    if (failed(kernels))
      return signalPassFailure();
    for (auto [grid, threads] : *kernels)
      emulate(rewriter, grid, threads);
  }

  /// Iteration `i` of `n` is position (i * scale + offset) mod n, or
  /// offset - i with a negative scale; the constants, made before the loops.
  struct Order {
    int64_t n;
    Value scale, offset, size;
  };

  Order makeOrder(OpBuilder &b, Location loc, int64_t n, Value size) {
    auto index = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v).getResult();
    };
    if (order == "reverse")
      return {n, Value(), index(n - 1), Value()};
    if (order == "shuffle" && n > 2)
      return {n, index(shuffleMultiplier(n)), Value(), size};
    return {n, Value(), Value(), Value()};
  }

  Value permute(OpBuilder &b, Location loc, Value i, const Order &o) {
    if (o.offset)
      return arith::SubIOp::create(b, loc, o.offset, i);
    if (o.scale) {
      Value scaled = arith::MulIOp::create(b, loc, i, o.scale);
      return arith::RemUIOp::create(b, loc, scaled, o.size);
    }
    return i;
  }

  /// Replaces the kernel by two nested scf.for loops: every block in turn,
  /// every thread of it in turn, each in the pass's order.
  void emulate(IRRewriter &rewriter, scf::ForallOp grid,
               scf::ForallOp threads) {
    Location loc = grid.getLoc();
    rewriter.setInsertionPoint(grid);
    auto index = [&](int64_t v) {
      return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
    };
    int64_t blocks = grid.getStaticUpperBound()[0];
    int64_t width = threads.getStaticUpperBound()[0];
    Value zero = index(0), one = index(1), blockCount = index(blocks),
          threadCount = index(width);
    Order blockOrder = makeOrder(rewriter, loc, blocks, blockCount);
    Order threadOrder = makeOrder(rewriter, loc, width, threadCount);
    auto outer = scf::ForOp::create(rewriter, loc, zero, blockCount, one);
    rewriter.setInsertionPointToStart(outer.getBody());
    Value block = permute(rewriter, loc, outer.getInductionVar(), blockOrder);
    auto inner = scf::ForOp::create(rewriter, loc, zero, threadCount, one);
    rewriter.setInsertionPointToStart(inner.getBody());
    Value thread = permute(rewriter, loc, inner.getInductionVar(), threadOrder);
    rewriter.replaceAllUsesWith(grid.getInductionVar(0), block);
    Block *body = threads.getBody();
    rewriter.eraseOp(body->getTerminator());
    rewriter.inlineBlockBefore(body, inner.getBody()->getTerminator(),
                               ValueRange{thread});
    rewriter.eraseOp(grid);
  }
};

} // namespace
