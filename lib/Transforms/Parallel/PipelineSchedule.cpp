//===- PipelineSchedule.cpp - Static pipeline schedules -------------------===//
#include "tessera/Transforms/Parallel/PipelineSchedule.h"

#include "llvm/ADT/ArrayRef.h"

#include <algorithm>

using namespace mlir::tessera::pipeline;

namespace {

const char *phaseName(Phase phase) {
  return phase == Phase::Forward ? "forward" : "backward";
}

} // namespace

llvm::StringRef mlir::tessera::pipeline::getScheduleNames() {
  return "gpipe, 1f1b";
}

std::string mlir::tessera::pipeline::generateSchedule(llvm::StringRef kind,
                                                      int64_t stages,
                                                      int64_t microBatches,
                                                      Schedule &out) {
  if (stages < 1 || microBatches < 1)
    return "a pipeline needs at least one stage and one micro-batch, got " +
           std::to_string(stages) + " and " + std::to_string(microBatches);
  std::vector<int64_t> limit(stages);
  for (int64_t s = 0; s < stages; ++s) {
    if (kind == "gpipe")
      limit[s] = microBatches;
    else if (kind == "1f1b")
      limit[s] = std::min(stages - s, microBatches);
    else
      return "unknown pipeline schedule '" + kind.str() +
             "' (known: " + getScheduleNames().str() + ")";
  }
  out.assign(stages, {});
  for (int64_t s = 0; s < stages; ++s) {
    int64_t nextForward = 0, nextBackward = 0;
    while (nextBackward < microBatches) {
      bool forward =
          nextForward < microBatches && nextForward - nextBackward < limit[s];
      if (forward)
        out[s].push_back({Phase::Forward, nextForward++});
      else
        out[s].push_back({Phase::Backward, nextBackward++});
    }
  }
  return "";
}

std::string mlir::tessera::pipeline::simulateSchedule(
    const Schedule &schedule, int64_t microBatches,
    llvm::ArrayRef<double> forwardSeconds,
    llvm::ArrayRef<double> backwardSeconds, double link, Timeline &out) {
  auto stages = static_cast<int64_t>(schedule.size());
  // End time of each action, -1 until it has run.
  std::vector<std::vector<double>> forwardEnd(
      stages, std::vector<double>(microBatches, -1)),
      backwardEnd = forwardEnd;
  for (int64_t s = 0; s < stages; ++s) {
    std::vector<int> seen(2 * microBatches, 0);
    for (const Action &a : schedule[s]) {
      if (a.microBatch < 0 || a.microBatch >= microBatches)
        return "stage " + std::to_string(s) + " runs the " +
               phaseName(a.phase) + " pass of micro-batch " +
               std::to_string(a.microBatch) + ", which does not exist";
      int &count = seen[2 * a.microBatch + (a.phase == Phase::Backward)];
      if (++count == 2)
        return "stage " + std::to_string(s) + " runs the " +
               phaseName(a.phase) + " pass of micro-batch " +
               std::to_string(a.microBatch) + " twice";
    }
    for (int64_t m = 0; m < microBatches; ++m)
      for (Phase phase : {Phase::Forward, Phase::Backward})
        if (!seen[2 * m + (phase == Phase::Backward)])
          return "stage " + std::to_string(s) + " never runs the " +
                 phaseName(phase) + " pass of micro-batch " + std::to_string(m);
  }

  out = Timeline();
  out.blocks.assign(stages, {});
  out.busy.assign(stages, 0);
  out.bubble.assign(stages, 0);
  out.peakInFlight.assign(stages, 0);
  std::vector<size_t> next(stages, 0);
  std::vector<double> free(stages, 0);
  std::vector<int64_t> inFlight(stages, 0);
  size_t remaining = 0;
  for (const auto &list : schedule)
    remaining += list.size();
  while (remaining) {
    bool progress = false;
    for (int64_t s = 0; s < stages; ++s) {
      while (next[s] < schedule[s].size()) {
        const Action &a = schedule[s][next[s]];
        int64_t m = a.microBatch;
        // When the inputs it waits for are ready: 0 if none, -1 if not yet.
        double ready = 0;
        auto after = [&](double end, bool message) {
          if (end < 0 || ready < 0)
            ready = -1;
          else
            ready = std::max(ready, end + (message ? link : 0));
        };
        if (a.phase == Phase::Forward) {
          if (s > 0)
            after(forwardEnd[s - 1][m], true);
        } else {
          after(forwardEnd[s][m], false);
          if (s + 1 < stages)
            after(backwardEnd[s + 1][m], true);
        }
        if (ready < 0)
          break;
        double start = std::max(ready, free[s]);
        double seconds =
            a.phase == Phase::Forward ? forwardSeconds[s] : backwardSeconds[s];
        double end = start + seconds;
        (a.phase == Phase::Forward ? forwardEnd : backwardEnd)[s][m] = end;
        free[s] = end;
        out.busy[s] += seconds;
        out.blocks[s].push_back({a, start, end});
        inFlight[s] += a.phase == Phase::Forward ? 1 : -1;
        out.peakInFlight[s] = std::max(out.peakInFlight[s], inFlight[s]);
        ++next[s];
        --remaining;
        progress = true;
      }
    }
    if (progress)
      continue;
    std::string message = "the pipeline schedule deadlocks:";
    for (int64_t s = 0; s < stages; ++s) {
      if (next[s] == schedule[s].size())
        continue;
      const Action &a = schedule[s][next[s]];
      message += " stage " + std::to_string(s) + " waits to run the " +
                 phaseName(a.phase) + " pass of micro-batch " +
                 std::to_string(a.microBatch) + ";";
    }
    message.pop_back();
    return message;
  }
  for (int64_t s = 0; s < stages; ++s)
    out.makespan = std::max(out.makespan, free[s]);
  for (int64_t s = 0; s < stages; ++s)
    out.bubble[s] = out.makespan > 0 ? 1.0 - out.busy[s] / out.makespan : 0.0;
  return "";
}
