//===- Remat.h - Rematerialization, callable from other passes --*- C++ -*-===//
//
// The two halves of tsr-remat-plan and tsr-remat as functions, so that a
// planner can try a policy on a copy of a function and measure it, and the
// graph the solvers of RematSolver.h decide on.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_TRANSFORMS_REMAT_REMAT_H
#define TESSERA_TRANSFORMS_REMAT_REMAT_H

#include "tessera/Transforms/Remat/RematSolver.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tessera {

class CostModel;

/// Marks with tsr.remat = "recompute" the forward ops of `f` that the
/// backward pass repeats under `policy` ("selective" or "full"; "none"
/// marks nothing).
void planRemat(func::FuncOp f, StringRef policy);

/// Clones the ops of `f` marked "recompute" before their first backward use,
/// reading other forward values through tsr.remat_barrier, and drops the marks.
void applyRemat(func::FuncOp f);

/// Whether `op`'s result is a view of its operand's buffer (a reshape,
/// stop_gradient or remat_barrier): the remat graph reads through it to
/// the operand, and tsr-offload clones it onto a prefetched value.
bool isRematView(Operation *op);

/// The rematerialization problem of `f` (RematSolver.h): one node per op
/// but views (their readers read what they view), constants and the
/// terminator; forward nodes up to the first backward op; bytes of the
/// results; the cost model's time, at least writing the results at
/// `bandwidth` bytes per second.
remat::Graph buildRematGraph(func::FuncOp f, const CostModel &costs,
                             double bandwidth);

/// The schedule a fixed policy ("selective", "full") gives `graph`, the
/// graph of buildRematGraph(f): what planRemat marks, recomputed where
/// first needed. `f` is left as it was.
remat::Stages getPolicyStages(func::FuncOp f, const remat::Graph &graph,
                              StringRef policy);

/// What the fixed policies recompute, as seeds of remat::solveBeam.
std::vector<std::vector<bool>> getPolicySeeds(func::FuncOp f,
                                              const remat::Graph &graph);

/// Marks with tsr.remat = "recompute" the ops of the nodes `stages`
/// recomputes (`stages` solves buildRematGraph(f)), and the forward views
/// of them.
void markRemat(func::FuncOp f, const remat::Stages &stages);

/// What tsr-offload places transfers by: the host link's bytes/s (one copy
/// queue) and the device memory's, which with the cost model's FLOP/s times
/// the ops the copies overlap.
struct OffloadOptions {
  double hostBandwidth;
  double bandwidth;
};

/// The forward ops of `f` whose result tsr-remat-plan may offload: one
/// result, read (directly or through forward views) by the backward pass,
/// neither a view nor an async collective; largest result first.
SmallVector<Operation *> getOffloadCandidates(func::FuncOp f);

/// Copies the result of every op of `f` marked tsr.remat = "offload" to
/// host memory after it is made and back before the backward pass first
/// reads it (tsr.offload_start, tsr.offload_wait, tsr.prefetch_start,
/// tsr.prefetch_wait), the waits placed where the cost model says the
/// copies have completed, and drops the marks. Transfers are numbered from
/// `firstTransfer`; returns the next free number.
int64_t applyOffload(func::FuncOp f, const CostModel &costs,
                     const OffloadOptions &options, int64_t firstTransfer);

} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_REMAT_REMAT_H
