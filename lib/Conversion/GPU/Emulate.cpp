//===- Emulate.cpp - tsr-gpu-map's kernels as CPU loops, in a chosen order ===//
#include "tessera/Conversion/GPU/Passes.h"

#include "Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
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

  /// Stack buffers at the function's entry (not in a loop, where each
  /// iteration would take more stack), shared by the kernels, which run one
  /// after another: a kernel's i-th buffer of a type is the i-th of the pool.
  struct StackPool {
    Block *entry = nullptr;
    llvm::DenseMap<Type, SmallVector<Value>> buffers;
    llvm::DenseMap<Type, unsigned> taken;

    Value take(OpBuilder &b, Location loc, MemRefType type) {
      SmallVector<Value> &list = buffers[type];
      unsigned &next = taken[type];
      if (next == list.size()) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(entry);
        list.push_back(memref::AllocaOp::create(b, loc, type));
      }
      return list[next++];
    }
  };

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
    StackPool pool;
    pool.entry = &getOperation().getBody().front();
    for (const tessera::Kernel &kernel : *kernels) {
      pool.taken.clear();
      if (failed(emulate(rewriter, kernel, pool)))
        return signalPassFailure();
    }
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

  /// The ops of a thread body between two points where its threads meet (a
  /// gpu.barrier or gpu.subgroup_reduce, or none at the end).
  struct Phase {
    SmallVector<Operation *> ops;
    Operation *end = nullptr;
  };

  /// Replaces the kernel by scf.for loops: every block in turn and, within
  /// it, every thread in turn, each in the pass's order. The thread body
  /// runs in phases split where its threads meet: every thread runs a phase
  /// before any runs the next, which is what a gpu.barrier guarantees. A
  /// phase that ends in a gpu.subgroup_reduce stores each thread's value in
  /// a buffer of one element per thread, and each warp's 32 elements are
  /// then combined as upstream's shuffle lowering combines them (at offsets
  /// 1, 2, ..., 16, lane i takes `mine (+) theirs` from lane i ^ offset);
  /// later phases read their thread's result there. A later phase
  /// recomputes the pure values it uses from earlier ones and reads the
  /// others (a load's result) where their phase stored them, an element
  /// per thread. Workgroup
  /// buffers become stack buffers, reused by every block.
  LogicalResult emulate(IRRewriter &rewriter, const tessera::Kernel &kernel,
                        StackPool &pool) {
    scf::ForallOp grid = kernel.grid, threads = kernel.threads;
    Location loc = grid.getLoc();
    int64_t blocks = grid.getStaticUpperBound()[0];
    int64_t width = threads.getStaticUpperBound()[0];
    Block *body = threads.getBody();

    SmallVector<Phase> phases(1);
    llvm::DenseMap<Operation *, unsigned> phaseOf;
    for (Operation &op : body->without_terminator()) {
      phaseOf[&op] = phases.size() - 1;
      if (isa<gpu::BarrierOp, gpu::SubgroupReduceOp>(op)) {
        phases.back().end = &op;
        phases.emplace_back();
      } else {
        phases.back().ops.push_back(&op);
      }
    }
    for (Phase &phase : phases)
      if (auto reduce = dyn_cast_or_null<gpu::SubgroupReduceOp>(phase.end)) {
        if (reduce.getClusterSize() || width % tessera::kWarpSize != 0)
          return reduce.emitError("tsr-gpu-emulate: a gpu.subgroup_reduce "
                                  "must reduce whole warps of ")
                 << tessera::kWarpSize << " threads (the kernel has " << width
                 << ")";
      }

    // For each phase, the ops of earlier phases it recomputes (pure ones),
    // the subgroup reductions whose results it reads and the other ops
    // whose results it reads from where their phase kept them (`kept`: a
    // buffer of one element per thread for each result, a register that
    // lives across the barrier on the GPU).
    SmallVector<llvm::SetVector<Operation *>> needed(phases.size());
    llvm::SetVector<Operation *> kept;
    for (auto [p, phase] : llvm::enumerate(phases)) {
      SmallVector<Value> worklist;
      for (Operation *op : phase.ops)
        op->walk([&](Operation *user) {
          llvm::append_range(worklist, user->getOperands());
        });
      while (!worklist.empty()) {
        Operation *def = worklist.pop_back_val().getDefiningOp();
        if (!def || def->getBlock() != body || phaseOf[def] >= p ||
            !needed[p].insert(def) || isa<gpu::SubgroupReduceOp>(def))
          continue;
        if (isPure(def) && def->getNumRegions() == 0) {
          llvm::append_range(worklist, def->getOperands());
          continue;
        }
        for (Type type : def->getResultTypes())
          if (!isa<IntegerType, IndexType, FloatType, VectorType>(type))
            return def->emitError("tsr-gpu-emulate: a value that a thread "
                                  "uses after a gpu.barrier or "
                                  "gpu.subgroup_reduce must be a scalar or "
                                  "a vector, or come from pure ops (it is "
                                  "recomputed); this one is ")
                   << type;
        kept.insert(def);
      }
    }

    rewriter.setInsertionPoint(grid);
    auto index = [&](int64_t v) {
      return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
    };
    Value zero = index(0), one = index(1), blockCount = index(blocks),
          threadCount = index(width);
    Order blockOrder = makeOrder(rewriter, loc, blocks, blockCount);
    Order threadOrder = makeOrder(rewriter, loc, width, threadCount);
    IRMapping shared;
    for (memref::AllocaOp alloca : kernel.workgroup) {
      MemRefType type = alloca.getType();
      shared.map(
          alloca.getResult(),
          pool.take(rewriter, loc,
                    MemRefType::get(type.getShape(), type.getElementType())));
    }
    llvm::DenseMap<Operation *, Value> lanes;
    for (Phase &phase : phases)
      if (auto reduce = dyn_cast_or_null<gpu::SubgroupReduceOp>(phase.end))
        lanes[reduce] = pool.take(rewriter, loc,
                                  MemRefType::get({width}, reduce.getType()));
    llvm::DenseMap<Value, Value> keep;
    for (Operation *def : kept)
      for (Value result : def->getResults())
        keep[result] = pool.take(rewriter, loc,
                                 MemRefType::get({width}, result.getType()));
    Lanes warp{zero,
               one,
               index(tessera::kWarpSize),
               index(width / tessera::kWarpSize),
               {}};
    for (int64_t offset = 1; offset < tessera::kWarpSize; offset *= 2)
      warp.offsets.push_back(index(offset));

    auto outer = scf::ForOp::create(rewriter, loc, zero, blockCount, one);
    rewriter.setInsertionPointToStart(outer.getBody());
    Value block = permute(rewriter, loc, outer.getInductionVar(), blockOrder);
    for (auto [p, phase] : llvm::enumerate(phases)) {
      auto inner = scf::ForOp::create(rewriter, loc, zero, threadCount, one);
      rewriter.setInsertionPointToStart(inner.getBody());
      Value thread =
          permute(rewriter, loc, inner.getInductionVar(), threadOrder);
      IRMapping map = shared;
      map.map(grid.getInductionVar(0), block);
      map.map(threads.getInductionVar(0), thread);
      for (Operation *def : needed[p]) {
        if (isa<gpu::SubgroupReduceOp>(def))
          map.map(def->getResult(0),
                  memref::LoadOp::create(rewriter, loc, lanes[def], thread));
        if (kept.contains(def))
          for (Value result : def->getResults())
            map.map(result, memref::LoadOp::create(rewriter, loc, keep[result],
                                                   thread));
      }
      for (Operation &op : body->without_terminator())
        if (needed[p].contains(&op) && !isa<gpu::SubgroupReduceOp>(op) &&
            !kept.contains(&op))
          rewriter.clone(op, map);
      for (Operation *op : phase.ops) {
        rewriter.clone(*op, map);
        if (kept.contains(op))
          for (Value result : op->getResults())
            memref::StoreOp::create(rewriter, loc, map.lookup(result),
                                    keep[result], thread);
      }
      auto reduce = dyn_cast_or_null<gpu::SubgroupReduceOp>(phase.end);
      if (reduce)
        memref::StoreOp::create(rewriter, loc, map.lookup(reduce.getValue()),
                                lanes[reduce], thread);
      rewriter.setInsertionPointAfter(inner);
      if (reduce)
        butterfly(rewriter, loc, lanes[reduce], warp, reduce.getOp());
    }
    rewriter.eraseOp(grid);
    return success();
  }

  /// The constants of a kernel's butterflies, made before its loops.
  struct Lanes {
    Value zero, one, warpSize, warps;
    SmallVector<Value> offsets;
  };

  /// Combines the elements of `lanes` within each warp as upstream's
  /// shuffle lowering of gpu.subgroup_reduce does, leaving every element
  /// its warp's result.
  void butterfly(IRRewriter &rewriter, Location loc, Value lanes,
                 const Lanes &c, gpu::AllReduceOperation kind) {
    vector::CombiningKind combining = gpu::convertReductionKind(kind);
    auto warps = scf::ForOp::create(rewriter, loc, c.zero, c.warps, c.one);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(warps.getBody());
    Value base = arith::MulIOp::create(rewriter, loc, warps.getInductionVar(),
                                       c.warpSize);
    for (Value offset : c.offsets) {
      auto lane = scf::ForOp::create(rewriter, loc, c.zero, c.warpSize, c.one);
      rewriter.setInsertionPointToStart(lane.getBody());
      Value mine = lane.getInductionVar();
      Value theirs = arith::XOrIOp::create(rewriter, loc, mine, offset);
      Value lower = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, mine, theirs);
      auto pair = scf::IfOp::create(rewriter, loc, lower);
      rewriter.setInsertionPoint(pair.thenBlock()->getTerminator());
      Value i = arith::AddIOp::create(rewriter, loc, base, mine);
      Value j = arith::AddIOp::create(rewriter, loc, base, theirs);
      Value a = memref::LoadOp::create(rewriter, loc, lanes, i);
      Value b = memref::LoadOp::create(rewriter, loc, lanes, j);
      memref::StoreOp::create(
          rewriter, loc,
          vector::makeArithReduction(rewriter, loc, combining, a, b), lanes, i);
      memref::StoreOp::create(
          rewriter, loc,
          vector::makeArithReduction(rewriter, loc, combining, b, a), lanes, j);
      rewriter.setInsertionPointAfter(lane);
    }
  }
};

} // namespace
