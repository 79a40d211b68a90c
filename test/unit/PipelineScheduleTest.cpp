//===- PipelineScheduleTest.cpp - The pipeline schedule generator ---------===//
//
// Every schedule the generator knows, for P = 1..8 stages and M = 1..16
// micro-batches: every stage runs each micro-batch's forward and backward
// pass exactly once, the dependencies hold (the simulation finishes), the
// micro-batches in flight match the schedule's limit, and with equal stages
// the bubble is the textbook (P - 1) / (M + P - 1). A corrupted order is a
// deadlock the simulation names.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Parallel/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace mlir::tessera::pipeline;

namespace {

TEST(PipelineSchedule, EveryCombinationRunsAndHoldsItsLimit) {
  for (const char *kind : {"gpipe", "1f1b"}) {
    for (int64_t p = 1; p <= 8; ++p) {
      for (int64_t m = 1; m <= 16; ++m) {
        SCOPED_TRACE(std::string(kind) + " P=" + std::to_string(p) +
                     " M=" + std::to_string(m));
        Schedule schedule;
        ASSERT_EQ(generateSchedule(kind, p, m, schedule), "");
        ASSERT_EQ(static_cast<int64_t>(schedule.size()), p);
        for (const auto &actions : schedule)
          EXPECT_EQ(static_cast<int64_t>(actions.size()), 2 * m);
        // Unequal stages: the order must not depend on the times.
        std::vector<double> forward, backward;
        for (int64_t s = 0; s < p; ++s) {
          forward.push_back(1.0 + 0.25 * s);
          backward.push_back(2.0 + 0.5 * ((s * 7) % 3));
        }
        Timeline timeline;
        ASSERT_EQ(simulateSchedule(schedule, m, forward, backward, 0.1,
                                   timeline),
                  "");
        for (int64_t s = 0; s < p; ++s) {
          int64_t limit =
              std::string(kind) == "gpipe" ? m : std::min(p - s, m);
          EXPECT_EQ(timeline.peakInFlight[s], limit) << "stage " << s;
        }
      }
    }
  }
}

TEST(PipelineSchedule, EqualStagesHaveTheTextbookBubble) {
  for (const char *kind : {"gpipe", "1f1b"}) {
    for (int64_t p : {2, 4, 8}) {
      for (int64_t m : {1, 4, 6, 8, 16}) {
        Schedule schedule;
        ASSERT_EQ(generateSchedule(kind, p, m, schedule), "");
        std::vector<double> forward(p, 1.0), backward(p, 2.0);
        Timeline timeline;
        ASSERT_EQ(simulateSchedule(schedule, m, forward, backward, 0.0,
                                   timeline),
                  "");
        double want = double(p - 1) / double(m + p - 1);
        for (int64_t s = 0; s < p; ++s)
          EXPECT_NEAR(timeline.bubble[s], want, 1e-12)
              << kind << " P=" << p << " M=" << m << " stage " << s;
        EXPECT_NEAR(timeline.makespan, 3.0 * double(m + p - 1), 1e-9);
      }
    }
  }
}

TEST(PipelineSchedule, OneFOneBHoldsFewerMicroBatchesThanGPipe) {
  Schedule gpipe, oneF;
  ASSERT_EQ(generateSchedule("gpipe", 4, 8, gpipe), "");
  ASSERT_EQ(generateSchedule("1f1b", 4, 8, oneF), "");
  std::vector<double> forward(4, 1.0), backward(4, 2.0);
  Timeline a, b;
  ASSERT_EQ(simulateSchedule(gpipe, 8, forward, backward, 0, a), "");
  ASSERT_EQ(simulateSchedule(oneF, 8, forward, backward, 0, b), "");
  EXPECT_EQ(a.peakInFlight[0], 8);
  EXPECT_EQ(b.peakInFlight[0], 4);
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
}

TEST(PipelineSchedule, CorruptedOrderDeadlocks) {
  Schedule schedule;
  ASSERT_EQ(generateSchedule("1f1b", 2, 2, schedule), "");
  // Stage 0 waits for backward 0 of stage 1 before it forwards micro-batch
  // 1, which stage 1 now wants to forward first.
  std::swap(schedule[0][1], schedule[0][2]); // F0 B0 F1 B1
  std::swap(schedule[1][1], schedule[1][2]); // F0 F1 B0 B1
  Timeline timeline;
  std::string error =
      simulateSchedule(schedule, 2, {1, 1}, {2, 2}, 0, timeline);
  EXPECT_NE(error.find("the pipeline schedule deadlocks"), std::string::npos)
      << error;
  EXPECT_NE(error.find("stage 0 waits to run the backward pass of "
                       "micro-batch 0; stage 1 waits to run the forward pass "
                       "of micro-batch 1"),
            std::string::npos)
      << error;
}

TEST(PipelineSchedule, MalformedListsAndOptionsAreErrors) {
  Schedule schedule;
  EXPECT_EQ(generateSchedule("zigzag", 2, 2, schedule),
            "unknown pipeline schedule 'zigzag' (known: gpipe, 1f1b)");
  EXPECT_EQ(generateSchedule("1f1b", 0, 2, schedule),
            "a pipeline needs at least one stage and one micro-batch, got 0 "
            "and 2");
  ASSERT_EQ(generateSchedule("gpipe", 2, 2, schedule), "");
  Timeline timeline;
  Schedule twice = schedule;
  twice[0][1] = twice[0][0];
  EXPECT_EQ(simulateSchedule(twice, 2, {1, 1}, {1, 1}, 0, timeline),
            "stage 0 runs the forward pass of micro-batch 0 twice");
  Schedule missing = schedule;
  missing[1].pop_back();
  EXPECT_EQ(simulateSchedule(missing, 2, {1, 1}, {1, 1}, 0, timeline),
            "stage 1 never runs the backward pass of micro-batch 1");
}

} // namespace
