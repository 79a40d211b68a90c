//===- Offload.cpp - Copy saved activations to host memory and back -------===//
//
// The apply half of activation offload: every forward op marked
// tsr.remat = "offload" (by tsr-remat-plan under a memory budget) has its
// result copied to host memory while the forward pass goes on and copied
// back before the backward pass first reads it, so that its device buffer
// is free in between. Where each copy starts and where the step waits for
// it comes from the cost model: a copy takes bytes / host-bandwidth
// seconds on the runtime's one transfer queue (copies run in the order they
// start), the ops around it take their roofline time, and a wait goes
// where the compute since the copy started covers the copy, so that the
// transfer overlaps compute whenever the step has enough of it.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Remat/Passes.h"
#include "tessera/Transforms/Remat/Remat.h"

#include "tessera/Analysis/CostModel.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

namespace mlir::tessera {
#define GEN_PASS_DEF_TSROFFLOAD
#include "tessera/Transforms/Remat/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

bool isBackward(Operation *op) { return op->hasAttr(tsr::attr::kBackward); }

bool isMarked(Operation *op) {
  auto mark = op->getAttrOfType<StringAttr>(tsr::attr::kRemat);
  return mark && mark.getValue() == "offload";
}

/// Forward views of a value (reshapes and the like, through which the
/// backward pass may read it): they are cloned onto the prefetched value.
bool isForwardView(Operation *op) { return !isBackward(op) && isRematView(op); }

/// One value to offload and what the placement needs to know of it.
struct Transfer {
  Operation *producer;
  /// The forward views of the producer's result, in program order.
  SmallVector<Operation *> views;
  /// The last forward op reading the result or a view of it (or the
  /// producer), and the first backward op reading either.
  Operation *lastForward = nullptr;
  Operation *firstBackward = nullptr;
  int64_t bytes = 0;
};

/// Where each op of the body starts and ends by the cost model, in
/// seconds from the body's start.
struct Timeline {
  DenseMap<Operation *, double> start, end;
};

Timeline buildTimeline(Block &body, const CostModel &costs, double bandwidth) {
  Timeline timeline;
  double now = 0;
  for (Operation &op : body) {
    timeline.start[&op] = now;
    double written = 0;
    for (Value r : op.getResults())
      written += tsr::getStaticTensorBytes(r.getType());
    // As tsr-remat-plan's graph: the roofline, at least writing the
    // results once.
    now += std::max(costs.getComputeCost(&op).seconds, written / bandwidth);
    timeline.end[&op] = now;
  }
  return timeline;
}

std::optional<Transfer> analyze(Operation *producer) {
  Transfer t{producer};
  if (producer->getNumResults() != 1)
    return std::nullopt;
  t.bytes = tsr::getStaticTensorBytes(producer->getResult(0).getType());
  auto later = [](Operation *a, Operation *b) {
    return !a || a->isBeforeInBlock(b) ? b : a;
  };
  auto earlier = [](Operation *a, Operation *b) {
    return !a || b->isBeforeInBlock(a) ? b : a;
  };
  t.lastForward = producer;
  SmallVector<Value> worklist = {producer->getResult(0)};
  Block *body = producer->getBlock();
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      Operation *top = body->findAncestorOpInBlock(*user);
      if (!top)
        continue;
      if (isBackward(top)) {
        t.firstBackward = earlier(t.firstBackward, top);
        continue;
      }
      t.lastForward = later(t.lastForward, top);
      if (isForwardView(top)) {
        t.views.push_back(top);
        worklist.push_back(top->getResult(0));
      }
    }
  }
  // A value the forward pass still reads after the backward pass first
  // does is never free of the step.
  if (!t.firstBackward || !t.lastForward->isBeforeInBlock(t.firstBackward))
    return std::nullopt;
  // Offloading frees the buffer only for ops between the last forward read
  // and the first backward one: without one that allocates, it cannot
  // lower the peak.
  bool allocates = false;
  for (Operation *op = t.lastForward->getNextNode();
       op != t.firstBackward && !allocates; op = op->getNextNode())
    allocates = op->getNumResults() > 0 && !isForwardView(op);
  if (!allocates)
    return std::nullopt;
  llvm::sort(t.views,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return t;
}

} // namespace

int64_t mlir::tessera::applyOffload(func::FuncOp f, const CostModel &costs,
                                    const OffloadOptions &options,
                                    int64_t firstTransfer) {
  Block &body = f.getBody().front();
  SmallVector<Transfer> transfers;
  for (Operation &op : body) {
    if (!isMarked(&op))
      continue;
    op.removeAttr(tsr::attr::kRemat);
    if (std::optional<Transfer> t = analyze(&op))
      transfers.push_back(std::move(*t));
  }
  if (transfers.empty())
    return firstTransfer;
  Timeline timeline = buildTimeline(body, costs, options.bandwidth);
  // Where the backward pass starts: its first op that reads anything (its
  // constants are hoisted to the top with the forward pass's).
  Operation *firstBackwardOp = nullptr;
  for (Operation &op : body)
    if (isBackward(&op) && op.getNumOperands() > 0) {
      firstBackwardOp = &op;
      break;
    }

  // The times of the ops that were there before any transfer was placed.
  auto startOf = [&](Operation *op) -> std::optional<double> {
    auto it = timeline.start.find(op);
    if (it == timeline.start.end())
      return std::nullopt;
    return it->second;
  };
  // The first op from `from` on (at the latest `limit`) that starts once
  // `time` has passed: where a wait for a copy that ends then blocks least.
  auto firstStartingAfter = [&](Operation *from, Operation *limit,
                                double time) {
    for (Operation *op = from; op != limit; op = op->getNextNode())
      if (std::optional<double> start = startOf(op); start && *start >= time)
        return op;
    return limit;
  };

  // Out: each copy starts as its value is made, behind the copies before
  // it on the queue, and the step waits for it at the first op that starts
  // once the copy has completed (not before the forward pass's last read of
  // the value, and at the latest where the backward pass starts).
  struct Placement {
    Operation *waitOut, *startIn;
    double copy, outEnd, exposed;
  };
  SmallVector<Placement> placements;
  double queueFree = 0;
  for (Transfer &t : transfers) {
    double copy = double(t.bytes) / options.hostBandwidth;
    double outEnd = std::max(timeline.end[t.producer], queueFree) + copy;
    queueFree = outEnd;
    // The backward pass's first op bounds the wait, unless the forward
    // pass reads the value after it.
    Operation *limit =
        firstBackwardOp && t.lastForward->isBeforeInBlock(firstBackwardOp)
            ? firstBackwardOp
            : t.firstBackward;
    Operation *waitOut =
        firstStartingAfter(t.lastForward->getNextNode(), limit, outEnd);
    if (t.firstBackward->isBeforeInBlock(waitOut))
      waitOut = t.firstBackward;
    placements.push_back({waitOut, nullptr, copy, outEnd,
                          std::max(0.0, outEnd - timeline.start[waitOut])});
  }

  // Back: as late as possible on the one queue, the last needed first:
  // each copy ends when the backward pass first reads its value or when the
  // next copy starts, whichever is earlier, and starts at the last op
  // before that by its time, but not before the step waited for the copy
  // out. A wait that blocked delays every later op by as much (`shift`).
  SmallVector<unsigned> byNeed =
      llvm::to_vector(llvm::seq<unsigned>(0, transfers.size()));
  llvm::stable_sort(byNeed, [&](unsigned a, unsigned b) {
    return transfers[b].firstBackward->isBeforeInBlock(
        transfers[a].firstBackward);
  });
  double nextStart = std::numeric_limits<double>::infinity();
  for (unsigned i : byNeed) {
    Transfer &t = transfers[i];
    Placement &at = placements[i];
    double deadline = std::min(timeline.start[t.firstBackward], nextStart);
    Operation *startIn = t.firstBackward;
    while (startIn != at.waitOut) {
      std::optional<double> start = startOf(startIn);
      if (start && *start <= deadline - at.copy)
        break;
      startIn = startIn->getPrevNode();
    }
    at.startIn = startIn;
    double shift = at.exposed;
    double inStart =
        std::max(startOf(startIn).value_or(timeline.start[at.waitOut]) + shift,
                 at.outEnd);
    at.exposed += std::max(0.0, inStart + at.copy - (deadline + shift));
    nextStart = inStart - shift;
  }

  OpBuilder b(f.getContext());
  int64_t number = firstTransfer;
  for (auto [t, at] : llvm::zip(transfers, placements)) {
    Location loc = t.producer->getLoc();
    Value value = t.producer->getResult(0);
    double copy = at.copy, exposed = at.exposed;
    Operation *waitOut = at.waitOut, *startIn = at.startIn;

    b.setInsertionPointAfter(t.producer);
    auto start = tsr::OffloadStartOp::create(
        b, loc, Type(), ValueRange{}, value, number, b.getF64FloatAttr(copy),
        b.getF64FloatAttr(exposed));
    b.setInsertionPoint(waitOut);
    tsr::OffloadWaitOp::create(b, loc, Type(), ValueRange{}, value, number);
    b.setInsertionPoint(startIn);
    auto prefetch = tsr::PrefetchStartOp::create(b, loc, value.getType(),
                                                 ValueRange{}, Value(), number);
    b.setInsertionPoint(t.firstBackward);
    auto back = tsr::PrefetchWaitOp::create(
        b, loc, value.getType(), ValueRange{}, prefetch.getResult(), number);
    prefetch->setAttr(tsr::attr::kBackward, b.getUnitAttr());
    back->setAttr(tsr::attr::kBackward, b.getUnitAttr());
    start->setAttr(tsr::attr::kReason,
                   b.getStringAttr(llvm::formatv(
                       "saved for the backward pass; {0} bytes to host memory "
                       "and back, each copy {1:e3} s at {2:e3} bytes/s, "
                       "{3:e3} s of it not overlapped by compute",
                       t.bytes, copy, options.hostBandwidth, exposed)));

    // The backward pass reads the prefetched value, through clones of
    // the forward views it read.
    IRMapping map;
    map.map(value, back.getResult());
    auto readsBackward = [&](OpOperand &use) {
      Operation *top = body.findAncestorOpInBlock(*use.getOwner());
      return top && isBackward(top) && top != back;
    };
    b.setInsertionPointAfter(back);
    SmallVector<Operation *> clones;
    for (Operation *view : t.views) {
      Operation *clone = b.clone(*view, map);
      clone->setAttr(tsr::attr::kBackward, b.getUnitAttr());
      clones.push_back(clone);
    }
    auto readsOriginal = [&](OpOperand &use) {
      return readsBackward(use) && !llvm::is_contained(clones, use.getOwner());
    };
    for (auto [view, clone] : llvm::zip(t.views, clones))
      view->getResult(0).replaceUsesWithIf(clone->getResult(0), readsOriginal);
    value.replaceUsesWithIf(back.getResult(), [&](OpOperand &use) {
      return use.getOwner() != back && readsOriginal(use);
    });
    for (Operation *clone : llvm::reverse(clones))
      if (clone->use_empty())
        clone->erase();
    ++number;
  }
  return number;
}

namespace {

struct TsrOffloadPass : tessera::impl::TsrOffloadBase<TsrOffloadPass> {
  using Base::Base;

  void runOnOperation() override {
    if (hostBandwidth <= 0 || bandwidth <= 0 || peakFlops <= 0) {
      getOperation().emitError(
          "tsr-offload needs positive bandwidths and peak FLOP/s");
      return signalPassFailure();
    }
    CostModel costs({peakFlops, bandwidth}, {});
    OffloadOptions options{hostBandwidth, bandwidth};
    int64_t next = 0;
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (!f.isExternal())
        next = applyOffload(f, costs, options, next);
  }
};

} // namespace

SmallVector<Operation *> mlir::tessera::getOffloadCandidates(func::FuncOp f) {
  SmallVector<Operation *> candidates;
  for (Operation &op : f.getBody().front()) {
    if (isBackward(&op) || op.getNumResults() != 1 ||
        !isa<tsr::TsrDialect>(op.getDialect()) || op.hasAttr("async") ||
        op.hasTrait<OpTrait::ConstantLike>() || isForwardView(&op) ||
        isa<tsr::WaitOp, tsr::IdentityOp, tsr::SliceOp, tsr::LocalShardOp,
            tsr::PrefetchWaitOp>(op) ||
        !isa<RankedTensorType>(op.getResult(0).getType()))
      continue;
    if (analyze(&op))
      candidates.push_back(&op);
  }
  llvm::stable_sort(candidates, [](Operation *a, Operation *b) {
    return tsr::getStaticTensorBytes(a->getResult(0).getType()) >
           tsr::getStaticTensorBytes(b->getResult(0).getType());
  });
  return candidates;
}
