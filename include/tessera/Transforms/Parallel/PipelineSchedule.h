//===- PipelineSchedule.h - Static pipeline schedules -----------*- C++ -*-===//
//
// The per-stage order of forward and backward micro-batch computations of a
// pipeline-parallel step, generated from one rule, and the simulation that
// times it and checks that it can run.
//
// The rule: a stage runs the forward pass of its next micro-batch while
// fewer than `limit(s)` micro-batches are in flight on it (forwarded, not
// yet backwarded) and forwards remain; otherwise the backward pass of its
// oldest micro-batch in flight. A schedule is its limits:
//
//   gpipe  limit(s) = M          all forwards, then all backwards
//                                (Huang et al., GPipe, 2019)
//   1f1b   limit(s) = min(P - s, M)   P - s - 1 warm-up forwards, then one
//                                forward and one backward in turn
//                                (PipeDream-Flush, Narayanan et al. 2021)
//
// for P stages and M micro-batches. The simulation runs every stage's list
// against the dependencies (forward m of stage s after forward m of stage
// s - 1; backward m of stage s after its own forward m and backward m of
// stage s + 1) with each action's estimated time, and reports the step's
// time, each stage's busy time and bubble, and its peak number of
// micro-batches in flight (whose activations it holds). A list that cannot
// finish (an action waiting on one that never runs) is a deadlock, reported
// with what every stuck stage waits for.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_TRANSFORMS_PARALLEL_PIPELINESCHEDULE_H
#define TESSERA_TRANSFORMS_PARALLEL_PIPELINESCHEDULE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tessera::pipeline {

enum class Phase { Forward, Backward };

/// One computation of a stage: the forward or backward pass of a
/// micro-batch.
struct Action {
  Phase phase;
  int64_t microBatch;
  bool operator==(const Action &other) const {
    return phase == other.phase && microBatch == other.microBatch;
  }
};

/// Every stage's actions, in the order it runs them.
using Schedule = std::vector<std::vector<Action>>;

/// The schedules the generator knows, for messages ("gpipe, 1f1b").
llvm::StringRef getScheduleNames();

/// The schedule `kind` for `stages` stages and `microBatches` micro-batches,
/// or an error message (unknown kind, sizes below 1).
std::string generateSchedule(llvm::StringRef kind, int64_t stages,
                             int64_t microBatches, Schedule &out);

/// What the simulation of a schedule found.
struct Timeline {
  struct Block {
    Action action;
    double start, end;
  };
  /// Per stage, its actions with their start and end times.
  std::vector<std::vector<Block>> blocks;
  double makespan = 0;
  /// Per stage: seconds busy, the idle fraction of the makespan, and the
  /// most micro-batches in flight at once.
  std::vector<double> busy, bubble;
  std::vector<int64_t> peakInFlight;
};

/// Simulates `schedule` with per-stage forward and backward times (seconds
/// per micro-batch) and `link` seconds for every message between stages.
/// Returns an error message if an action runs twice or never, or the
/// stages deadlock.
std::string simulateSchedule(const Schedule &schedule, int64_t microBatches,
                             llvm::ArrayRef<double> forwardSeconds,
                             llvm::ArrayRef<double> backwardSeconds,
                             double link, Timeline &out);

} // namespace mlir::tessera::pipeline

#endif // TESSERA_TRANSFORMS_PARALLEL_PIPELINESCHEDULE_H
