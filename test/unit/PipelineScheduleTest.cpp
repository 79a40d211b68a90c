//===- PipelineScheduleTest.cpp - The pipeline schedule generator ---------===//
//
// Every schedule the generator knows, for P = 1..8 ranks, M = 1..16
// micro-batches and (interleaved) V = 2..4 chunks per rank: every rank runs
// each of its chunks' passes of each micro-batch exactly once, the
// dependencies hold (an independent simulation of the generated order
// finishes and gives the generator's timeline), the micro-batches in flight
// stay within each schedule's limit, and with equal stages GPipe and 1F1B
// have the textbook bubble (P - 1) / (M + P - 1) that the zero-bubble
// schedules beat. V-Half holds at most 0.6x 1F1B's activations. PipeDream
// opens each step with the previous one's last micro-batches. DualPipeV
// (M >= 2P) holds at most 2P + 1 half-stage chunk-micro-batches. A corrupted
// order is a deadlock the simulation names.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Parallel/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace mlir::tessera::pipeline;

namespace {

const char *const kKinds[] = {"gpipe", "1f1b",   "interleaved", "zb-h1",
                              "zb-v",  "v-half", "dualpipev"};

/// Seconds that differ between chunks, so that no order can rely on ties.
ChunkSeconds unequal(const Shape &shape) {
  ChunkSeconds out;
  for (int64_t c = 0; c < shape.getNumChunks(); ++c) {
    out.forward.push_back(1.0 + 0.25 * double(c % 3));
    out.backward.push_back(1.0 + 0.5 * double((c * 7) % 3));
    out.weight.push_back(shape.splitBackward ? 0.75 + 0.125 * double(c % 2)
                                             : 0.0);
  }
  return out;
}

/// The most chunk-micro-batches a rank of `kind` may hold.
int64_t limitOf(const std::string &kind, const Shape &shape, int64_t rank) {
  int64_t p = shape.stages, m = shape.microBatches, v = shape.virtualStages;
  if (kind == "gpipe")
    return m;
  if (kind == "1f1b")
    return std::min(p - rank, m);
  if (kind == "zb-h1")
    return std::min(p, m);
  if (kind == "interleaved")
    return std::min(2 * (p - rank - 1) + (v - 1) * p + 1, m * v);
  if (kind == "zb-v")
    return std::min(2 * p, 2 * m);
  if (kind == "dualpipev")
    return 2 * p + 1; // DualPipe's P + 1 half-stages

  return std::min(std::max<int64_t>(p, 2), 2 * m); // v-half
}

TEST(PipelineSchedule, EveryCombinationRunsOnceAndHoldsItsLimit) {
  for (const char *kind : kKinds) {
    for (int64_t v : {0, 3, 4}) {
      if (v && std::string(kind) != "interleaved")
        continue;
      for (int64_t p = 1; p <= 8; ++p) {
        for (int64_t m = 1; m <= 16; ++m) {
          SCOPED_TRACE(std::string(kind) + " P=" + std::to_string(p) +
                       " M=" + std::to_string(m) + " V=" + std::to_string(v));
          Shape shape;
          std::string refused = getScheduleShape(kind, p, v, m, shape);
          if (std::string(kind) == "interleaved" && m > p && m % p) {
            EXPECT_NE(refused.find("serves up to"), std::string::npos)
                << refused;
            continue;
          }
          if (std::string(kind) == "dualpipev" && m < 2 * p) {
            EXPECT_NE(refused.find("needs at least"), std::string::npos)
                << refused;
            continue;
          }
          ASSERT_EQ(refused, "");
          ChunkSeconds seconds = unequal(shape);
          Schedule schedule;
          Timeline generated, simulated;
          ASSERT_EQ(
              generateSchedule(kind, shape, seconds, 0.1, schedule, generated),
              "");
          ASSERT_EQ(static_cast<int64_t>(schedule.size()), p);
          int64_t phases = shape.splitBackward ? 3 : 2;
          for (const auto &actions : schedule)
            EXPECT_EQ(static_cast<int64_t>(actions.size()),
                      phases * m * shape.virtualStages);
          // simulateSchedule checks that each action runs exactly once
          // and that the order can run.
          ASSERT_EQ(simulateSchedule(shape, schedule, seconds, 0.1, simulated),
                    "");
          EXPECT_DOUBLE_EQ(simulated.makespan, generated.makespan);
          for (int64_t r = 0; r < p; ++r) {
            EXPECT_LE(simulated.peakInFlight[r], limitOf(kind, shape, r))
                << "rank " << r;
            EXPECT_DOUBLE_EQ(simulated.busy[r], generated.busy[r]);
          }
        }
      }
    }
  }
}

TEST(PipelineSchedule, InOrderSchedulesDoNotDependOnTimes) {
  for (const char *kind : {"gpipe", "1f1b", "interleaved", "dualpipev"}) {
    for (int64_t p : {2, 3, 4}) {
      for (int64_t m : {int64_t(1), int64_t(2), p, 2 * p}) {
        if (std::string(kind) == "dualpipev")
          m += 2 * p + 1; // It serves M >= 2P.
        Shape shape;
        ASSERT_EQ(getScheduleShape(kind, p, 0, m, shape), "");
        Schedule a, b;
        Timeline ta, tb;
        ASSERT_EQ(generateSchedule(kind, shape, unequal(shape), 0.1, a, ta),
                  "");
        ASSERT_EQ(
            generateSchedule(kind, shape,
                             ChunkSeconds::uniform(shape.getNumChunks(), 1, 2),
                             0, b, tb),
            "");
        EXPECT_EQ(a, b) << kind << " P=" << p << " M=" << m;
      }
    }
  }
}

TEST(PipelineSchedule, EqualStagesHaveTheTextbookBubble) {
  for (const char *kind : {"gpipe", "1f1b"}) {
    for (int64_t p : {2, 4, 8}) {
      for (int64_t m : {1, 4, 6, 8, 16}) {
        Shape shape;
        ASSERT_EQ(getScheduleShape(kind, p, 0, m, shape), "");
        Schedule schedule;
        Timeline timeline;
        ASSERT_EQ(generateSchedule(kind, shape,
                                   ChunkSeconds::uniform(p, 1.0, 2.0), 0,
                                   schedule, timeline),
                  "");
        double want = double(p - 1) / double(m + p - 1);
        for (int64_t s = 0; s < p; ++s)
          EXPECT_NEAR(timeline.bubble[s], want, 1e-12)
              << kind << " P=" << p << " M=" << m << " stage " << s;
        EXPECT_NEAR(timeline.makespan, 3.0 * double(m + p - 1), 1e-9);
        EXPECT_EQ(timeline.peakInFlight[0],
                  std::string(kind) == "gpipe" ? m : std::min(p, m));
      }
    }
  }
}

/// The step time of `kind` on P ranks and M micro-batches when a stage's
/// forward, input-gradient and weight-gradient passes take one unit each.
double makespan(const char *kind, int64_t p, int64_t m, int64_t &peak) {
  Shape shape;
  EXPECT_EQ(getScheduleShape(kind, p, 0, m, shape), "");
  double v = double(shape.virtualStages);
  ChunkSeconds seconds =
      shape.splitBackward
          ? ChunkSeconds::uniform(shape.getNumChunks(), 1 / v, 1 / v, 1 / v)
          : ChunkSeconds::uniform(shape.getNumChunks(), 1 / v, 2 / v);
  Schedule schedule;
  Timeline timeline;
  EXPECT_EQ(generateSchedule(kind, shape, seconds, 0, schedule, timeline), "");
  peak = 0;
  for (int64_t held : timeline.peakInFlight)
    peak = std::max(peak, held);
  return timeline.makespan;
}

TEST(PipelineSchedule, SplitAndInterleavedSchedulesShrinkTheBubble) {
  for (int64_t p : {2, 4, 8}) {
    for (int64_t m : {p, 2 * p, 4 * p}) {
      SCOPED_TRACE("P=" + std::to_string(p) + " M=" + std::to_string(m));
      int64_t peak1f1b, peakH1, peakV, peakInterleaved;
      double oneF = makespan("1f1b", p, m, peak1f1b);
      // 3M units of work per rank; 1F1B idles 3 (P - 1).
      EXPECT_DOUBLE_EQ(oneF, 3.0 * double(m + p - 1));
      EXPECT_LT(makespan("zb-h1", p, m, peakH1), oneF);
      EXPECT_LT(makespan("zb-v", p, m, peakV), oneF);
      EXPECT_LT(makespan("interleaved", p, m, peakInterleaved), oneF);
      // ZB-H1 keeps 1F1B's peak; ZB-V holds as much in chunks of half a
      // stage.
      EXPECT_EQ(peakH1, peak1f1b);
      EXPECT_EQ(peakV, 2 * peak1f1b);
    }
  }
  // With M >= 2P, ZB-V's bubble is under a third of 1F1B's.
  int64_t peak;
  EXPECT_LT(makespan("zb-v", 4, 16, peak) - 48.0, (57.0 - 48.0) / 3);
}

TEST(PipelineSchedule, VHalfHoldsAtMostSixTenthsOfOneFOneB) {
  for (int64_t p : {2, 4, 6, 8}) {
    for (int64_t m : {p, 2 * p, int64_t(16)}) {
      int64_t peak1f1b, peakHalf;
      makespan("1f1b", p, m, peak1f1b);
      makespan("v-half", p, m, peakHalf);
      // Its peak is in chunks, half a stage each.
      EXPECT_LE(double(peakHalf) / 2, 0.6 * double(peak1f1b))
          << "P=" << p << " M=" << m;
    }
  }
}

TEST(PipelineSchedule, OneFOneBAndInterleavedFollowTheirTextbookOrder) {
  Shape shape;
  ASSERT_EQ(getScheduleShape("1f1b", 4, 0, 8, shape), "");
  Schedule oneF;
  Timeline timeline;
  ASSERT_EQ(generateSchedule("1f1b", shape, ChunkSeconds::uniform(4, 1, 2), 0,
                             oneF, timeline),
            "");
  // Stage 1 of 1F1B: two warm-up forwards, then one forward and one
  // backward in turn.
  std::vector<Action> want = {
      {Phase::Forward, 0},  {Phase::Forward, 1},  {Phase::Forward, 2},
      {Phase::Backward, 0}, {Phase::Forward, 3},  {Phase::Backward, 1},
      {Phase::Forward, 4},  {Phase::Backward, 2}, {Phase::Forward, 5},
      {Phase::Backward, 3}, {Phase::Forward, 6},  {Phase::Backward, 4},
      {Phase::Forward, 7},  {Phase::Backward, 5}, {Phase::Backward, 6},
      {Phase::Backward, 7}};
  EXPECT_EQ(oneF[1], want);

  // Megatron's interleaved 1F1B on rank 0 of P = 2, V = 2, M = 4:
  // 2 (P - 1) + (V - 1) P = 4 warm-up forwards, micro-batches in groups of
  // P per chunk.
  ASSERT_EQ(getScheduleShape("interleaved", 2, 2, 4, shape), "");
  Schedule interleaved;
  ASSERT_EQ(generateSchedule("interleaved", shape,
                             ChunkSeconds::uniform(4, 1, 2), 0, interleaved,
                             timeline),
            "");
  std::vector<std::string> names;
  for (const Action &a : interleaved[0])
    names.push_back(getActionName(a, 2));
  std::vector<std::string> megatron = {
      "F0.0", "F1.0", "F0.1", "F1.1", "F2.0", "B0.1", "F3.0", "B1.1",
      "F2.1", "B0.0", "F3.1", "B1.0", "B2.1", "B3.1", "B2.0", "B3.0"};
  EXPECT_EQ(names, megatron);
}

TEST(PipelineSchedule, PipeDreamFinishesThePreviousStepsMicroBatches) {
  for (int64_t p = 1; p <= 8; ++p) {
    for (int64_t m = p; m <= 16; ++m) {
      Shape shape;
      ASSERT_EQ(getScheduleShape("pipedream", p, 0, m, shape), "");
      ASSERT_TRUE(shape.asynchronous);
      Schedule schedule;
      Timeline timeline;
      ASSERT_EQ(generateSchedule("pipedream", shape, unequal(shape), 0.1,
                                 schedule, timeline),
                "")
          << "P=" << p << " M=" << m;
      for (int64_t r = 0; r < p; ++r) {
        // B(i - (P - r)), F(i): every micro-batch of this step forwarded
        // once, and backwarded here or (the last P - r) in the next step.
        ASSERT_EQ(static_cast<int64_t>(schedule[r].size()), 2 * m);
        for (int64_t i = 0; i < m; ++i) {
          EXPECT_EQ(schedule[r][2 * i], (Action{Phase::Backward, i - (p - r)}));
          EXPECT_EQ(schedule[r][2 * i + 1], (Action{Phase::Forward, i}));
        }
        EXPECT_EQ(timeline.peakInFlight[r], p - r)
            << "P=" << p << " rank " << r;
        EXPECT_EQ(timeline.blocks[r].size(), schedule[r].size());
      }
    }
  }
  Shape shape;
  EXPECT_EQ(getScheduleShape("pipedream", 4, 0, 2, shape),
            "schedule 'pipedream' keeps up to 4 micro-batches in flight "
            "across steps and needs at least as many per step, got 2 "
            "(--micro-batches=4 would work)");
}

TEST(PipelineSchedule, VShapePlacesTheFirstAndLastChunkOnRankZero) {
  Shape shape;
  ASSERT_EQ(getScheduleShape("zb-v", 4, 0, 8, shape), "");
  EXPECT_EQ(shape.virtualStages, 2);
  EXPECT_EQ(shape.getRank(0), 0);
  EXPECT_EQ(shape.getRank(7), 0);
  EXPECT_EQ(shape.getRank(3), 3);
  EXPECT_EQ(shape.getRank(4), 3);
  for (int64_t c = 0; c < 8; ++c)
    EXPECT_EQ(shape.getChunk(shape.getRank(c), shape.getLocalChunk(c)), c);
  ASSERT_EQ(getScheduleShape("interleaved", 4, 3, 8, shape), "");
  EXPECT_EQ(shape.getRank(5), 1);
  EXPECT_EQ(shape.getLocalChunk(5), 1);
  for (int64_t c = 0; c < 12; ++c)
    EXPECT_EQ(shape.getChunk(shape.getRank(c), shape.getLocalChunk(c)), c);
}

TEST(PipelineSchedule, CorruptedOrderDeadlocks) {
  Shape shape;
  ASSERT_EQ(getScheduleShape("1f1b", 2, 0, 2, shape), "");
  Schedule schedule;
  Timeline timeline;
  ChunkSeconds seconds = ChunkSeconds::uniform(2, 1, 2);
  ASSERT_EQ(generateSchedule("1f1b", shape, seconds, 0, schedule, timeline),
            "");
  // Stage 0 waits for backward 0 of stage 1 before it forwards micro-batch
  // 1, which stage 1 now wants to forward first.
  std::swap(schedule[0][1], schedule[0][2]); // F0 B0 F1 B1
  std::swap(schedule[1][1], schedule[1][2]); // F0 F1 B0 B1
  std::string error = simulateSchedule(shape, schedule, seconds, 0, timeline);
  EXPECT_NE(error.find("the pipeline schedule deadlocks"), std::string::npos)
      << error;
  EXPECT_NE(error.find("stage 0 waits to run the backward pass of "
                       "micro-batch 0; stage 1 waits to run the forward pass "
                       "of micro-batch 1"),
            std::string::npos)
      << error;
  // A weight-gradient pass before its backward pass.
  ASSERT_EQ(getScheduleShape("zb-h1", 2, 0, 2, shape), "");
  ASSERT_EQ(generateSchedule("zb-h1", shape, ChunkSeconds::uniform(2, 1, 1, 1),
                             0, schedule, timeline),
            "");
  auto &last = schedule[1];
  auto w = std::find(last.begin(), last.end(), Action{Phase::Weight, 0});
  last.erase(w);
  last.insert(last.begin(), Action{Phase::Weight, 0});
  error = simulateSchedule(shape, schedule, ChunkSeconds::uniform(2, 1, 1, 1),
                           0, timeline);
  EXPECT_NE(error.find("stage 1 waits to run the weight-gradient pass of "
                       "micro-batch 0"),
            std::string::npos)
      << error;
}

TEST(PipelineSchedule, MalformedListsAndOptionsAreErrors) {
  Shape shape;
  EXPECT_EQ(getScheduleShape("zigzag", 2, 0, 2, shape),
            "unknown pipeline schedule 'zigzag' (known: gpipe, 1f1b, "
            "interleaved, zb-h1, zb-v, v-half, dualpipev, pipedream)");
  EXPECT_EQ(getScheduleShape("1f1b", 0, 0, 2, shape),
            "a pipeline needs at least one stage and one micro-batch, got 0 "
            "and 2");
  EXPECT_EQ(getScheduleShape("1f1b", 2, 2, 2, shape),
            "schedule '1f1b' runs 1 model chunk(s) per rank, got "
            "--virtual-stages=2 (interleaved runs several)");
  EXPECT_EQ(getScheduleShape("zb-v", 2, 3, 2, shape),
            "schedule 'zb-v' runs 2 model chunk(s) per rank, got "
            "--virtual-stages=3");
  EXPECT_EQ(getScheduleShape("interleaved", 2, 1, 2, shape),
            "schedule 'interleaved' needs at least 2 model chunks per rank, "
            "got --virtual-stages=1 (1f1b runs one)");
  EXPECT_EQ(getScheduleShape("interleaved", 4, 2, 6, shape),
            "schedule 'interleaved' on 4 stages serves up to 4 micro-batches "
            "or a multiple of 4, got 6 (4 or 8 would work)");
  ASSERT_EQ(getScheduleShape("gpipe", 2, 0, 2, shape), "");
  Schedule schedule;
  Timeline timeline;
  ChunkSeconds seconds = ChunkSeconds::uniform(2, 1, 1);
  ASSERT_EQ(generateSchedule("gpipe", shape, seconds, 0, schedule, timeline),
            "");
  Schedule twice = schedule;
  twice[0][1] = twice[0][0];
  EXPECT_EQ(simulateSchedule(shape, twice, seconds, 0, timeline),
            "stage 0 runs the forward pass of micro-batch 0 twice");
  Schedule missing = schedule;
  missing[1].pop_back();
  EXPECT_EQ(simulateSchedule(shape, missing, seconds, 0, timeline),
            "stage 1 never runs the backward pass of micro-batch 1");
  Schedule weight = schedule;
  weight[1].push_back({Phase::Weight, 0});
  EXPECT_EQ(simulateSchedule(shape, weight, seconds, 0, timeline),
            "stage 1 runs the weight-gradient pass of micro-batch 0, which "
            "does not exist");
}

} // namespace
