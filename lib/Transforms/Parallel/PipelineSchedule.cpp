//===- PipelineSchedule.cpp - Static pipeline schedules -------------------===//
#include "tessera/Transforms/Parallel/PipelineSchedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <deque>

using namespace mlir::tessera::pipeline;

int64_t Shape::getRank(int64_t chunk) const {
  if (vShape)
    return chunk < stages ? chunk : 2 * stages - 1 - chunk;
  return chunk % stages;
}

int64_t Shape::getLocalChunk(int64_t chunk) const { return chunk / stages; }

int64_t Shape::getChunk(int64_t rank, int64_t local) const {
  if (vShape && local % 2 == 1)
    return (local + 1) * stages - 1 - rank;
  return local * stages + rank;
}

ChunkSeconds ChunkSeconds::uniform(int64_t chunks, double forward,
                                   double backward, double weight) {
  ChunkSeconds out;
  out.forward.assign(chunks, forward);
  out.backward.assign(chunks, backward);
  out.weight.assign(chunks, weight);
  return out;
}

llvm::StringRef mlir::tessera::pipeline::getScheduleNames() {
  return "gpipe, 1f1b, interleaved, zb-h1, zb-v, v-half, dualpipev, "
         "pipedream";
}

std::string mlir::tessera::pipeline::getActionName(const Action &action,
                                                   int64_t virtualStages) {
  const char *letter = action.phase == Phase::Forward    ? "F"
                       : action.phase == Phase::Backward ? "B"
                                                         : "W";
  std::string name = letter + std::to_string(action.microBatch);
  if (virtualStages > 1)
    name += "." + std::to_string(action.chunk);
  return name;
}

std::string mlir::tessera::pipeline::getScheduleShape(llvm::StringRef kind,
                                                      int64_t stages,
                                                      int64_t virtualStages,
                                                      int64_t microBatches,
                                                      Shape &out) {
  if (stages < 1 || microBatches < 1)
    return "a pipeline needs at least one stage and one micro-batch, got " +
           std::to_string(stages) + " and " + std::to_string(microBatches);
  out = Shape();
  out.stages = stages;
  out.microBatches = microBatches;
  auto fixed = [&](int64_t v) -> std::string {
    if (virtualStages != 0 && virtualStages != v)
      return "schedule '" + kind.str() + "' runs " + std::to_string(v) +
             " model chunk(s) per rank, got --virtual-stages=" +
             std::to_string(virtualStages) +
             (v == 1 ? " (interleaved runs several)" : "");
    out.virtualStages = v;
    return "";
  };
  if (kind == "gpipe" || kind == "1f1b")
    return fixed(1);
  if (kind == "zb-h1") {
    out.splitBackward = true;
    return fixed(1);
  }
  if (kind == "pipedream") {
    // Rank r ends a step with P - r micro-batches in flight, which the
    // next step's first backward passes finish.
    if (microBatches < stages)
      return "schedule 'pipedream' keeps up to " + std::to_string(stages) +
             " micro-batches in flight across steps and needs at least as "
             "many per step, got " +
             std::to_string(microBatches) +
             " (--micro-batches=" + std::to_string(stages) + " would work)";
    out.asynchronous = true;
    return fixed(1);
  }
  if (kind == "zb-v" || kind == "v-half") {
    out.vShape = true;
    out.splitBackward = true;
    return fixed(2);
  }
  if (kind == "dualpipev") {
    // Its steady state pairs each rank's two chunks, which needs 2P
    // micro-batches in flight.
    if (microBatches < 2 * stages)
      return "schedule 'dualpipev' on " + std::to_string(stages) +
             " stages needs at least " + std::to_string(2 * stages) +
             " micro-batches, got " + std::to_string(microBatches) +
             " (--micro-batches=" + std::to_string(2 * stages) + " would work)";
    out.vShape = true;
    out.splitBackward = true;
    return fixed(2);
  }
  if (kind == "interleaved") {
    if (virtualStages == 1)
      return "schedule 'interleaved' needs at least 2 model chunks per rank, "
             "got --virtual-stages=1 (1f1b runs one)";
    if (virtualStages < 0)
      return "--virtual-stages must be positive, got " +
             std::to_string(virtualStages);
    out.virtualStages = virtualStages == 0 ? 2 : virtualStages;
    // Megatron's groups of P micro-batches per chunk: a last, partial group
    // after full ones leaves the warm-up counts wrong (the ranks deadlock).
    if (microBatches > stages && microBatches % stages != 0) {
      int64_t below = microBatches / stages * stages;
      return "schedule 'interleaved' on " + std::to_string(stages) +
             " stages serves up to " + std::to_string(stages) +
             " micro-batches or a multiple of " + std::to_string(stages) +
             ", got " + std::to_string(microBatches) + " (" +
             std::to_string(below) + " or " + std::to_string(below + stages) +
             " would work)";
    }
    return "";
  }
  return "unknown pipeline schedule '" + kind.str() +
         "' (known: " + getScheduleNames().str() + ")";
}

namespace {

const char *phaseName(Phase phase) {
  return phase == Phase::Forward    ? "forward"
         : phase == Phase::Backward ? "backward"
                                    : "weight-gradient";
}

std::string describe(const Shape &shape, int64_t rank, const Action &a) {
  std::string text = std::string("the ") + phaseName(a.phase) +
                     " pass of micro-batch " + std::to_string(a.microBatch);
  if (shape.virtualStages > 1)
    text += " on chunk " + std::to_string(a.chunk);
  return text;
}

/// Runs actions against the dependencies in simulated time.
class Engine {
public:
  Engine(const Shape &shape, const ChunkSeconds &seconds, double link)
      : shape(shape), seconds(seconds), link(link),
        chunks(shape.getNumChunks()), m(shape.microBatches),
        forwardEnd(chunks * m, -1), backwardEnd(chunks * m, -1),
        weightEnd(chunks * m, -1), free(shape.stages, 0),
        heldForward(shape.stages, 0), heldWeights(shape.stages, 0) {
    timeline.blocks.assign(shape.stages, {});
    timeline.busy.assign(shape.stages, 0);
    timeline.bubble.assign(shape.stages, 0);
    timeline.peakInFlight.assign(shape.stages, 0);
  }

  int64_t chunkOf(int64_t rank, const Action &a) const {
    return shape.getChunk(rank, a.chunk);
  }

  /// When `a` of `rank` could start for its inputs, or -1 while one has
  /// not run.
  double ready(int64_t rank, const Action &a) const {
    int64_t c = chunkOf(rank, a), j = a.microBatch;
    auto from = [&](double end, int64_t source) {
      if (end < 0)
        return -1.0;
      return end + (shape.getRank(source) != rank ? link : 0.0);
    };
    switch (a.phase) {
    case Phase::Forward:
      return c == 0 ? 0.0 : from(forwardEnd[(c - 1) * m + j], c - 1);
    case Phase::Backward: {
      double own = forwardEnd[c * m + j];
      if (own < 0 || c + 1 == chunks)
        return own;
      double next = from(backwardEnd[(c + 1) * m + j], c + 1);
      return next < 0 ? -1.0 : std::max(own, next);
    }
    case Phase::Weight:
      return backwardEnd[c * m + j];
    }
    return -1;
  }

  void run(int64_t rank, const Action &a, double start) {
    int64_t c = chunkOf(rank, a), j = a.microBatch;
    double time = a.phase == Phase::Forward    ? seconds.forward[c]
                  : a.phase == Phase::Backward ? seconds.backward[c]
                                               : seconds.weight[c];
    double end = start + time;
    (a.phase == Phase::Forward    ? forwardEnd
     : a.phase == Phase::Backward ? backwardEnd
                                  : weightEnd)[c * m + j] = end;
    free[rank] = end;
    timeline.busy[rank] += time;
    timeline.blocks[rank].push_back({a, start, end});
    if (a.phase == Phase::Forward) {
      ++heldForward[rank];
      ++heldWeights[rank];
      timeline.peakInFlight[rank] =
          std::max(timeline.peakInFlight[rank], heldWeights[rank]);
    } else if (a.phase == Phase::Backward) {
      --heldForward[rank];
      if (!shape.splitBackward)
        --heldWeights[rank];
    } else {
      --heldWeights[rank];
    }
  }

  /// Runs each rank's list in its order, every action as soon as its
  /// inputs and its rank are free (micro-batches shifted by `offset`),
  /// until every list is done or every rank waits. Returns how far each
  /// rank got.
  std::vector<size_t> follow(const Schedule &schedule, int64_t offset = 0) {
    std::vector<size_t> next(shape.stages, 0);
    for (bool progress = true; progress;) {
      progress = false;
      for (int64_t r = 0; r < shape.stages; ++r)
        for (; next[r] < schedule[r].size(); ++next[r]) {
          Action a = schedule[r][next[r]];
          a.microBatch += offset;
          double at = ready(r, a);
          if (at < 0)
            break;
          run(r, a, std::max(at, free[r]));
          progress = true;
        }
    }
    return next;
  }

  void finish(Timeline &out) {
    for (double end : free)
      timeline.makespan = std::max(timeline.makespan, end);
    for (int64_t r = 0; r < shape.stages; ++r)
      timeline.bubble[r] = timeline.makespan > 0
                               ? 1.0 - timeline.busy[r] / timeline.makespan
                               : 0.0;
    out = std::move(timeline);
  }

  const Shape &shape;
  const ChunkSeconds &seconds;
  double link;
  int64_t chunks, m;
  std::vector<double> forwardEnd, backwardEnd, weightEnd;
  std::vector<double> free;
  /// Per rank: chunk-micro-batches forwarded and not yet backwarded, and
  /// not yet released (their W run, or their B without a split backward).
  std::vector<int64_t> heldForward, heldWeights;
  Timeline timeline;
};

/// The rules of one schedule (see the header).
struct Rules {
  /// Per rank: the most chunk-micro-batches forwarded and not backwarded,
  /// and forwarded and not released.
  std::vector<int64_t> forwardLimit, weightLimit;
  bool forwardFirst = true;
  /// Whether each rank runs its F and its B actions in their order (else
  /// the first ready by key; the limits then gate only a rank's first
  /// chunk, so a micro-batch in flight can always go on).
  bool inOrder = true;
  /// Per rank, the order of its F actions and of its B actions.
  std::vector<std::vector<Action>> forwards, backwards;
};

/// Sorts each rank's actions of `phase` by `key(chunk, micro-batch)`, ties
/// to the later chunk.
template <typename Key>
std::vector<std::vector<Action>> orderBy(const Shape &shape, Phase phase,
                                         Key key) {
  std::vector<std::vector<Action>> out(shape.stages);
  for (int64_t r = 0; r < shape.stages; ++r) {
    for (int64_t v = 0; v < shape.virtualStages; ++v)
      for (int64_t j = 0; j < shape.microBatches; ++j)
        out[r].push_back({phase, j, v});
    llvm::sort(out[r], [&](const Action &a, const Action &b) {
      int64_t ca = shape.getChunk(r, a.chunk), cb = shape.getChunk(r, b.chunk);
      int64_t ka = key(ca, a.microBatch), kb = key(cb, b.microBatch);
      return ka != kb ? ka < kb : ca > cb;
    });
  }
  return out;
}

Rules getRules(llvm::StringRef kind, const Shape &shape) {
  Rules rules;
  int64_t p = shape.stages, v = shape.virtualStages, m = shape.microBatches,
          c = shape.getNumChunks();
  rules.forwardLimit.assign(p, m * v);
  if (kind == "1f1b" || kind == "zb-h1")
    for (int64_t r = 0; r < p; ++r)
      rules.forwardLimit[r] = std::min(p - r, m);
  if (kind == "interleaved")
    for (int64_t r = 0; r < p; ++r)
      rules.forwardLimit[r] =
          std::min(2 * (p - r - 1) + (v - 1) * p + 1, m * v);
  rules.weightLimit = rules.forwardLimit;
  if (kind == "zb-h1")
    rules.weightLimit.assign(p, std::min(p, m));

  if (kind == "interleaved") {
    // Megatron's order: groups of P micro-batches, chunk by chunk.
    rules.forwards = orderBy(shape, Phase::Forward, [&](int64_t ch, int64_t j) {
      return ((j / p) * v + ch / p) * p + j % p;
    });
    rules.backwards =
        orderBy(shape, Phase::Backward, [&](int64_t ch, int64_t j) {
          return ((j / p) * v + (v - 1 - ch / p)) * p + j % p;
        });
    return rules;
  }
  // The ideal start of each action when a new micro-batch enters every
  // unit and each chunk takes one unit per pass.
  rules.forwards = orderBy(shape, Phase::Forward,
                           [&](int64_t ch, int64_t j) { return j + ch; });
  rules.backwards = orderBy(shape, Phase::Backward, [&](int64_t ch, int64_t j) {
    return j + 2 * c - 2 - ch;
  });
  if (shape.vShape) {
    rules.forwardLimit.assign(p, kind == "v-half" ? std::max<int64_t>(p, 2)
                                                  : 2 * p);
    rules.weightLimit = rules.forwardLimit;
    rules.forwardFirst = false;
    rules.inOrder = false;
  }
  return rules;
}

} // namespace

/// PipeDream's steady state, one step of it: rank r runs, for i = 0 ..
/// M - 1, the backward pass of micro-batch i - (P - r) (negative: one of
/// the previous step's last P - r, in flight since) and the forward pass of
/// micro-batch i. The previous step's passes count as done at time 0.
static std::string generatePipeDream(const Shape &shape,
                                     const ChunkSeconds &seconds, double link,
                                     Schedule &out, Timeline &timeline) {
  int64_t p = shape.stages, m = shape.microBatches;
  out.assign(p, {});
  for (int64_t r = 0; r < p; ++r)
    for (int64_t i = 0; i < m; ++i) {
      out[r].push_back({Phase::Backward, i - (p - r)});
      out[r].push_back({Phase::Forward, i});
    }
  // Micro-batch j runs as j + P in an engine of M + P micro-batches.
  Shape offset = shape;
  offset.microBatches = m + p;
  Engine engine(offset, seconds, link);
  for (int64_t c = 0; c < p; ++c) {
    for (int64_t j = -p; j < 0; ++j) {
      engine.forwardEnd[c * (m + p) + j + p] = 0;
      if (j < -(p - c))
        engine.backwardEnd[c * (m + p) + j + p] = 0;
    }
    engine.heldForward[c] = engine.heldWeights[c] = p - c;
  }
  std::vector<size_t> next = engine.follow(out, p);
  for (int64_t r = 0; r < p; ++r)
    if (next[r] < out[r].size())
      return "schedule 'pipedream' deadlocks"; // Not for these orders.
  for (int64_t r = 0; r < p; ++r)
    for (Timeline::Block &block : engine.timeline.blocks[r])
      block.action.microBatch -= p;
  engine.finish(timeline);
  return "";
}

/// DualPipeV (DeepSeek's DualPipe cut in half, 2025) on the V-shaped
/// chunks: rank r's order, chunk 0 its first half of the V and chunk 1 its
/// second, with F(v) and B(v) the next micro-batch's pass on chunk v and W
/// the oldest deferred weight-gradient pass:
///   2(P-r-1) x F(0); r+1 x [F(0) F(1)]; P-r-1 x [B(1)* W F(1)];
///   M-2P+r+1 x [F(0) B(1) F(1) B(0)]; P-r-1 x [B(1) F(1) B(0)];
///   r+1 x [B(1) B(0)], deferring W from the middle on; P-r-1 x [W B(0)*];
///   r+1 x W
/// where B* defers its W and every other B runs its W right after it.
/// DualPipe overlaps each F(0) B(1) pair's compute with the other's
/// communication; here they run one after the other.
static std::string generateDualPipeV(const Shape &shape,
                                     const ChunkSeconds &seconds, double link,
                                     Schedule &out, Timeline &timeline) {
  int64_t p = shape.stages, m = shape.microBatches;
  out.assign(p, {});
  for (int64_t r = 0; r < p; ++r) {
    std::vector<Action> &list = out[r];
    int64_t forwardNext[2] = {0, 0}, backwardNext[2] = {0, 0};
    std::deque<Action> deferred;
    auto forward = [&](int64_t v) {
      list.push_back({Phase::Forward, forwardNext[v]++, v});
    };
    auto backward = [&](int64_t v, bool defer = false) {
      int64_t j = backwardNext[v]++;
      list.push_back({Phase::Backward, j, v});
      (defer ? deferred.push_back({Phase::Weight, j, v})
             : list.push_back({Phase::Weight, j, v}));
    };
    auto weight = [&] {
      list.push_back(deferred.front());
      deferred.pop_front();
    };
    int64_t before = p - r - 1, after = r + 1;
    for (int64_t i = 0; i < 2 * before; ++i)
      forward(0);
    for (int64_t i = 0; i < after; ++i) {
      forward(0);
      forward(1);
    }
    for (int64_t i = 0; i < before; ++i) {
      backward(1, /*defer=*/true);
      weight();
      forward(1);
    }
    for (int64_t i = 0; i < m - 2 * p + r + 1; ++i) {
      forward(0);
      backward(1);
      forward(1);
      backward(0);
    }
    for (int64_t i = 0; i < before; ++i) {
      backward(1);
      forward(1);
      backward(0);
    }
    bool defer = false;
    for (int64_t i = 0; i < after; ++i) {
      defer |= i == after / 2 && r % 2 == 1;
      backward(1, defer);
      defer |= i == after / 2 && r % 2 == 0;
      backward(0, defer);
    }
    for (int64_t i = 0; i < before; ++i) {
      weight();
      backward(0, /*defer=*/true);
    }
    while (!deferred.empty())
      weight();
  }
  Engine engine(shape, seconds, link);
  std::vector<size_t> next = engine.follow(out);
  for (int64_t r = 0; r < p; ++r)
    if (next[r] < out[r].size())
      return "schedule 'dualpipev' deadlocks"; // Not for these orders.
  engine.finish(timeline);
  return "";
}

std::string mlir::tessera::pipeline::generateSchedule(
    llvm::StringRef kind, const Shape &shape, const ChunkSeconds &seconds,
    double link, Schedule &out, Timeline &timeline) {
  if (shape.asynchronous)
    return generatePipeDream(shape, seconds, link, out, timeline);
  if (kind == "dualpipev")
    return generateDualPipeV(shape, seconds, link, out, timeline);
  Rules rules = getRules(kind, shape);
  int64_t p = shape.stages;
  Engine engine(shape, seconds, link);
  // Per rank: which of its F and B actions have run, and its W passes
  // waiting to run, oldest first.
  std::vector<std::vector<bool>> forwardDone(p), backwardDone(p);
  for (int64_t r = 0; r < p; ++r) {
    forwardDone[r].assign(rules.forwards[r].size(), false);
    backwardDone[r].assign(rules.backwards[r].size(), false);
  }
  std::vector<std::deque<Action>> weights(p);
  // Per rank: the forwards of its later chunks that the micro-batches it
  // has started still need (rules that run out of order only).
  std::vector<int64_t> reserved(p, 0);
  out.assign(p, {});
  size_t remaining = size_t(shape.getNumChunks() * shape.microBatches) *
                     (shape.splitBackward ? 3 : 2);

  // The action of `list` the rules consider next on rank `r` at time `t`
  // (its index, or -1) and when its inputs are ready (-1: not yet known).
  // In order: the first not run. Otherwise the first, by key, that is
  // ready by `t`, else the one ready soonest.
  auto candidate = [&](int64_t r, double t, const std::vector<Action> &list,
                       const std::vector<bool> &done,
                       llvm::function_ref<bool(const Action &)> allowed,
                       double &ready) -> int64_t {
    ready = -1;
    int64_t soonest = -1;
    for (auto [i, a] : llvm::enumerate(list)) {
      if (done[i])
        continue;
      if (!allowed(a)) {
        if (rules.inOrder)
          return -1;
        continue;
      }
      double at = engine.ready(r, a);
      if (rules.inOrder) {
        ready = at;
        return int64_t(i);
      }
      if (at >= 0 && at <= t) {
        ready = at;
        return int64_t(i);
      }
      if (at >= 0 && (soonest < 0 || at < ready)) {
        soonest = int64_t(i);
        ready = at;
      }
    }
    return soonest;
  };

  while (remaining) {
    int64_t bestRank = -1;
    double bestStart = 0;
    Action best{Phase::Forward, 0};
    for (int64_t r = 0; r < p; ++r) {
      double t = engine.free[r];
      auto mayForward = [&](const Action &a) {
        if (rules.inOrder)
          return engine.heldForward[r] < rules.forwardLimit[r] &&
                 engine.heldWeights[r] < rules.weightLimit[r];
        // A new micro-batch needs room for all its chunks on this rank.
        return a.chunk != 0 ||
               engine.heldWeights[r] + reserved[r] + shape.virtualStages <=
                   rules.weightLimit[r];
      };
      double forwardReady, backwardReady;
      int64_t forward = candidate(r, t, rules.forwards[r], forwardDone[r],
                                  mayForward, forwardReady);
      int64_t backward = candidate(
          r, t, rules.backwards[r], backwardDone[r],
          [](const Action &) { return true; }, backwardReady);
      // The action the rules pick and when its inputs are ready.
      const Action *pick = nullptr;
      double at = -1;
      if (rules.forwardFirst) {
        if (forward >= 0) {
          pick = &rules.forwards[r][forward];
          at = forwardReady;
        } else if (backward >= 0) {
          pick = &rules.backwards[r][backward];
          at = backwardReady;
        }
      } else if (backward >= 0 && backwardReady >= 0 &&
                 (forward < 0 || forwardReady < 0 ||
                  std::max(backwardReady, t) <= std::max(forwardReady, t))) {
        pick = &rules.backwards[r][backward];
        at = backwardReady;
      } else if (forward >= 0 && forwardReady >= 0) {
        pick = &rules.forwards[r][forward];
        at = forwardReady;
      }
      double start = -1;
      Action action{Phase::Forward, 0};
      if (pick && at >= 0 && at <= t) {
        start = t;
        action = *pick;
      } else if (!weights[r].empty()) {
        // Fill the wait with a weight-gradient pass.
        start = t;
        action = weights[r].front();
      } else if (pick && at >= 0) {
        start = at;
        action = *pick;
      }
      if (start < 0)
        continue;
      if (bestRank < 0 || start < bestStart) {
        bestRank = r;
        bestStart = start;
        best = action;
      }
    }
    if (bestRank < 0) {
      std::string message = "schedule '" + kind.str() + "' cannot serve " +
                            std::to_string(p) + " stages with " +
                            std::to_string(shape.microBatches) +
                            " micro-batches: its ranks deadlock";
      return message;
    }
    engine.run(bestRank, best, bestStart);
    out[bestRank].push_back(best);
    --remaining;
    auto mark = [&](const std::vector<Action> &list, std::vector<bool> &done) {
      for (auto [i, a] : llvm::enumerate(list))
        if (a == best)
          done[i] = true;
    };
    if (best.phase == Phase::Forward) {
      mark(rules.forwards[bestRank], forwardDone[bestRank]);
      if (!rules.inOrder)
        reserved[bestRank] += best.chunk == 0 ? shape.virtualStages - 1 : -1;
    } else if (best.phase == Phase::Backward) {
      mark(rules.backwards[bestRank], backwardDone[bestRank]);
      if (shape.splitBackward)
        weights[bestRank].push_back(
            {Phase::Weight, best.microBatch, best.chunk});
    } else {
      weights[bestRank].pop_front();
    }
  }
  engine.finish(timeline);
  return "";
}

std::string mlir::tessera::pipeline::simulateSchedule(
    const Shape &shape, const Schedule &schedule, const ChunkSeconds &seconds,
    double link, Timeline &out) {
  int64_t p = shape.stages, m = shape.microBatches, v = shape.virtualStages;
  if (static_cast<int64_t>(schedule.size()) != p)
    return "the schedule has " + std::to_string(schedule.size()) +
           " rank(s), the pipeline " + std::to_string(p);
  std::vector<Phase> phases = {Phase::Forward, Phase::Backward};
  if (shape.splitBackward)
    phases.push_back(Phase::Weight);
  for (int64_t r = 0; r < p; ++r) {
    std::vector<int> seen(3 * m * v, 0);
    for (const Action &a : schedule[r]) {
      if (a.microBatch < 0 || a.microBatch >= m || a.chunk < 0 ||
          a.chunk >= v || (a.phase == Phase::Weight && !shape.splitBackward))
        return "stage " + std::to_string(r) + " runs " + describe(shape, r, a) +
               ", which does not exist";
      int &count = seen[(int(a.phase) * v + a.chunk) * m + a.microBatch];
      if (++count == 2)
        return "stage " + std::to_string(r) + " runs " + describe(shape, r, a) +
               " twice";
    }
    for (int64_t c = 0; c < v; ++c)
      for (int64_t j = 0; j < m; ++j)
        for (Phase phase : phases)
          if (!seen[(int(phase) * v + c) * m + j])
            return "stage " + std::to_string(r) + " never runs " +
                   describe(shape, r, {phase, j, c});
  }

  Engine engine(shape, seconds, link);
  std::vector<size_t> next = engine.follow(schedule);
  std::string message = "the pipeline schedule deadlocks:";
  for (int64_t r = 0; r < p; ++r)
    if (next[r] < schedule[r].size())
      message += " stage " + std::to_string(r) + " waits to run " +
                 describe(shape, r, schedule[r][next[r]]) + ";";
  if (message.back() == ';') {
    message.pop_back();
    return message;
  }
  engine.finish(out);
  return "";
}
