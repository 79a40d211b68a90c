//===- PipelineSchedule.h - Static pipeline schedules -----------*- C++ -*-===//
//
// The per-rank order of the forward, backward and weight-gradient
// computations of a pipeline-parallel step, generated from rules by one
// generator, and the simulation that times any such order and checks that
// it can run.
//
// The model is cut into C = P x V consecutive chunks (V "virtual stages"
// per rank). Chunk c runs on rank c mod P (interleaved placement, Narayanan
// et al. 2021) or, for the V-shaped schedules (V = 2), on rank c for c < P
// and 2P - 1 - c after (Qi et al. 2024), so rank 0 holds the first and the
// last chunk. Each chunk has three actions per micro-batch: F (forward),
// B (backward: with a split backward only the gradient of its inputs) and,
// with a split backward, W (the gradient of its weights).
//
// A schedule is a few rules, which one generator plays out in simulated
// time with the cost model's estimate of every action:
//   - placement: interleaved or V-shaped;
//   - each rank's order of F actions and of B actions, given by a key: the
//     time the action would start in an ideal pipeline that takes a new
//     micro-batch every unit (Megatron's groups of P micro-batches per
//     chunk for the interleaved schedule);
//   - per rank, a limit on the chunk-micro-batches it holds activations
//     for: a chunk's F starts one, its B ends it (its W with a split
//     backward);
//   - in order (each rank runs its F and B actions in their order; a rank
//     under its limit waits for its next F: the static 1F1B rule) or by
//     readiness (the first ready by key, B before F; the limit then gates
//     only new micro-batches, which reserve room for all their chunks on
//     the rank, so one in flight can always go on);
//   - with a split backward, a W runs whenever the rank would otherwise
//     wait (zero-bubble), or when the limit blocks its next F.
//
//   gpipe        V = 1, in order, limit M: all forwards, then all
//                backwards (Huang et al., GPipe, 2019)
//   1f1b         V = 1, in order, limit min(P - r, M) on rank r
//                (PipeDream-Flush, Narayanan et al. 2021)
//   interleaved  V >= 2, in order, limit Megatron's warm-up + 1:
//                2 (P - r - 1) + (V - 1) P + 1 chunk-micro-batches
//   zb-h1        1f1b with a split backward: B still limited to
//                min(P - r, M), W deferred within min(P, M) (Qi et al.,
//                ICLR 2024)
//   zb-v         V-shaped, split, by readiness, limit 2P chunk-micro-
//                batches: 1F1B's activation memory (Qi et al. 2024)
//   v-half       as zb-v with limit P: half of it (Qi et al., NeurIPS 2024)
//   dualpipev    V-shaped and split, DeepSeek's DualPipeV order (DualPipe
//                cut in half, 2025; M >= 2P): warm-up forwards, then each
//                rank alternates F(0) B(1) F(1) B(0), deferring weight
//                gradients at the ends (generated directly)
//   pipedream    asynchronous 1F1B without a flush (Narayanan et al.,
//                SOSP 2019): rank r runs B(i - (P - r)), F(i) for
//                i = 0 .. M - 1, the previous step's last P - r micro-
//                batches finishing first (generated directly, not by the
//                rules above)
//
// The simulation runs every rank's list against the dependencies (F of
// chunk c after F of chunk c - 1; B of chunk c after its F and the B of
// chunk c + 1; W after its B) with each action's time, a `link` time for
// every message between ranks, and reports the step's time, each rank's
// busy time, bubble and peak micro-batches in flight. A list that cannot
// finish is a deadlock, reported with what every stuck rank waits for.
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

enum class Phase { Forward, Backward, Weight };

/// One computation of a rank: a phase of micro-batch `microBatch` on the
/// rank's chunk `chunk` (0 to V - 1, in model order).
struct Action {
  Phase phase;
  int64_t microBatch;
  int64_t chunk = 0;
  bool operator==(const Action &other) const {
    return phase == other.phase && microBatch == other.microBatch &&
           chunk == other.chunk;
  }
};

/// Every rank's actions, in the order it runs them.
using Schedule = std::vector<std::vector<Action>>;

/// The shape of a pipeline: how the model's chunks sit on the ranks.
struct Shape {
  int64_t stages = 1, virtualStages = 1, microBatches = 1;
  bool vShape = false, splitBackward = false;
  /// PipeDream: no flush. Rank r ends a step with the last P - r
  /// micro-batches in flight, whose backward passes open the next step
  /// (actions of micro-batches -1, -2, ...: the previous step's last).
  bool asynchronous = false;

  int64_t getNumChunks() const { return stages * virtualStages; }
  /// The rank that runs model chunk `chunk` (0 to C - 1).
  int64_t getRank(int64_t chunk) const;
  /// Chunk `chunk` as the rank's own chunk index (0 to V - 1).
  int64_t getLocalChunk(int64_t chunk) const;
  /// The model chunk that is rank `rank`'s chunk `local`.
  int64_t getChunk(int64_t rank, int64_t local) const;
};

/// Estimated seconds per micro-batch of every model chunk's forward,
/// backward and (split backward) weight-gradient pass.
struct ChunkSeconds {
  std::vector<double> forward, backward, weight;
  /// Every action of every chunk takes `forward`, `backward`, `weight`.
  static ChunkSeconds uniform(int64_t chunks, double forward, double backward,
                              double weight = 0);
};

/// The schedules the generator knows, for messages.
llvm::StringRef getScheduleNames();

/// The shape schedule `kind` gives `stages` ranks, `microBatches`
/// micro-batches and `virtualStages` chunks per rank (0: the kind's
/// default), or an error message saying what would work.
std::string getScheduleShape(llvm::StringRef kind, int64_t stages,
                             int64_t virtualStages, int64_t microBatches,
                             Shape &out);

/// What a simulation found.
struct Timeline {
  struct Block {
    Action action;
    double start, end;
  };
  /// Per rank, its actions with their start and end times.
  std::vector<std::vector<Block>> blocks;
  double makespan = 0;
  /// Per rank: seconds busy, the idle fraction of the makespan, and the
  /// most chunk-micro-batches whose activations it holds at once.
  std::vector<double> busy, bubble;
  std::vector<int64_t> peakInFlight;
};

/// Generates schedule `kind` for `shape` (from getScheduleShape) with the
/// chunks' times and `link` seconds per message, and its timeline.
std::string generateSchedule(llvm::StringRef kind, const Shape &shape,
                             const ChunkSeconds &seconds, double link,
                             Schedule &out, Timeline &timeline);

/// Simulates `schedule` on `shape`. Returns an error message if an action
/// runs twice or never, or the ranks deadlock.
std::string simulateSchedule(const Shape &shape, const Schedule &schedule,
                             const ChunkSeconds &seconds, double link,
                             Timeline &out);

/// "F3" (forward of micro-batch 3), "B3.1" (backward of micro-batch 3 on
/// the rank's chunk 1 when it has several), "W3".
std::string getActionName(const Action &action, int64_t virtualStages);

} // namespace mlir::tessera::pipeline

#endif // TESSERA_TRANSFORMS_PARALLEL_PIPELINESCHEDULE_H
