//===- RematSolver.h - Which activations to recompute under a budget -*- C++
//-*-===//
//
// The rematerialization problem of one training step, apart from the IR: a
// program of nodes in execution order (the forward pass, then the backward
// pass and whatever follows it), each with the bytes of its results and
// the time it takes. A schedule recomputes some forward nodes once each,
// in a stage of the backward pass (the stage of a node is the point right
// before it runs); every value lives from the computation that makes it to
// its last use. Two solvers pick the recomputations that fit a budget at
// the least added time: an exact MILP (Checkmate's formulation, Jain et al.
// 2020, restricted to what tsr-remat applies: each forward node recomputed
// at most once, in the backward pass) solved with COIN-OR CBC, and a fast
// beam search for graphs too large for it.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_TRANSFORMS_REMAT_REMATSOLVER_H
#define TESSERA_TRANSFORMS_REMAT_REMATSOLVER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace mlir::tessera::remat {

struct Node {
  /// The bytes its results take.
  int64_t bytes = 0;
  /// The time one computation takes (any unit; the objective sums it).
  double cost = 0;
  /// The nodes whose results it reads (each earlier than itself).
  llvm::SmallVector<int, 4> operands;
  /// Whether the backward pass may compute it again (a forward node).
  bool recomputable = false;
  /// Whether its results outlive the program (returned).
  bool liveOut = false;
};

struct Graph {
  /// In execution order; the first `numForward` are the forward pass.
  std::vector<Node> nodes;
  int numForward = 0;
};

/// A schedule: for each node, the stage (a node index >= numForward) right
/// before which it is recomputed, or -1.
using Stages = std::vector<int>;

/// The stages at which a set of recomputed nodes is first needed: the
/// earliest backward node that reads it, directly or through the
/// recomputation of another node of the set (what tsr-remat does).
Stages firstNeedStages(const Graph &graph, const std::vector<bool> &recompute);

struct Simulation {
  int64_t peakBytes = 0;
  double addedCost = 0;
};

/// Runs the schedule on the graph: the most bytes live at once and the
/// time the recomputations add.
Simulation simulate(const Graph &graph, const Stages &stages);

struct Solution {
  Stages stages;
  Simulation result;
};

/// The fast method, a beam search over greedy steps: from keeping
/// everything and from the `seeds` (sets of recomputed nodes), each step
/// recomputes one more value live at the peak only because the backward pass
/// reads it (with the forward producers only it reads), trying the `tried`
/// that free the most bytes per second of recomputation and keeping the
/// `width` schedules that removed the most bytes over budget (summed over the
/// run) per second. A schedule that fits loses every recomputation the budget
/// does not need, costliest first; the cheapest wins. Nothing when no
/// schedule meets the budget.
std::optional<Solution> solveBeam(const Graph &graph, int64_t budget, int width,
                                  int tried,
                                  llvm::ArrayRef<std::vector<bool>> seeds = {});

struct MilpResult {
  enum class Status { Optimal, Infeasible, Stopped } status;
  /// The best schedule found (Optimal, or Stopped with one found).
  std::optional<Solution> solution;
  /// The proven lower bound on the recomputation time (seconds).
  double bound = 0;
  /// The model's binary variables.
  int binaries = 0;
};

/// Solves the MILP with CBC, exploring at most `maxNodes` branch-and-bound
/// nodes (deterministic, unlike a time limit).
MilpResult solveMilp(const Graph &graph, int64_t budget, int maxNodes);

} // namespace mlir::tessera::remat

#endif // TESSERA_TRANSFORMS_REMAT_REMATSOLVER_H
