//===- MemoryTest.cpp - Allocation functions and memory accounting --------===//

#include "ArenaPlan.h"
#include "Fixtures.h"

#include <random>
#include <thread>

using namespace tsr::test;

namespace {

size_t currentBytes() {
  size_t current = 0;
  tsr_memory_stats(&current, nullptr);
  return current;
}

size_t peakBytes() {
  size_t peak = 0;
  tsr_memory_stats(nullptr, &peak);
  return peak;
}

} // namespace

TEST(Memory, CountsRequestedBytesAndPeak) {
  size_t base = currentBytes();
  tsr_memory_reset_peak();
  EXPECT_EQ(peakBytes(), base);
  void *a = _mlir_memref_to_llvm_alloc(100);
  void *b = _mlir_memref_to_llvm_aligned_alloc(64, 1000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(currentBytes(), base + 1100);
  std::memset(a, 1, 100);
  std::memset(b, 2, 1000);
  _mlir_memref_to_llvm_free(a);
  EXPECT_EQ(currentBytes(), base + 1000);
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(nullptr);
  EXPECT_EQ(currentBytes(), base);
  EXPECT_EQ(peakBytes(), base + 1100);
  tsr_memory_reset_peak();
  EXPECT_EQ(peakBytes(), base);
}

TEST(Memory, AlignsAsAsked) {
  for (size_t alignment : {1, 2, 8, 16, 32, 64, 128, 4096, 1 << 16}) {
    for (size_t size : {0, 1, 7, 64, 5000}) {
      void *p = _mlir_memref_to_llvm_aligned_alloc(alignment, size);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u)
          << alignment << " " << size;
      std::memset(p, 0xAB, size);
      _mlir_memref_to_llvm_free(p);
    }
  }
  void *p = _mlir_memref_to_llvm_alloc(3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  _mlir_memref_to_llvm_free(p);
  EXPECT_EQ(_mlir_memref_to_llvm_aligned_alloc(24, 8), nullptr);
  EXPECT_EQ(_mlir_memref_to_llvm_alloc(~size_t(0) - 8), nullptr);
}

namespace {
/// One call of the arena model (ArenaModel.c) on allocation script
/// `pattern`: whether every block kept its bytes, and the blocks' pointers.
struct ArenaRun {
  bool intact = false;
  std::vector<int64_t> addresses;
};

ArenaRun runArenaModel(tsr_artifact_t *artifact, int64_t pattern) {
  TensorPtr input = makeTensor<int64_t>(TSR_DTYPE_INT64, {}, {pattern});
  tsr_tensor_t *intact = nullptr, *addresses = nullptr;
  EXPECT_EQ(tsr_artifact_create_output(artifact, 0, &intact), TSR_OK);
  EXPECT_EQ(tsr_artifact_create_output(artifact, 1, &addresses), TSR_OK);
  TensorPtr ownIntact(intact), ownAddresses(addresses);
  const tsr_tensor_t *inputs[] = {input.get()};
  tsr_tensor_t *outputs[] = {intact, addresses};
  EXPECT_EQ(tsr_artifact_invoke(artifact, inputs, 1, outputs, 2), TSR_OK)
      << tsr_last_error();
  return {elements<int64_t>(intact)[0] == 1, elements<int64_t>(addresses)};
}

size_t arenaBytes() {
  size_t bytes = 0;
  tsr_memory_arena_stats(&bytes);
  return bytes;
}
} // namespace

/// The first call of a program is recorded and planned; the next calls that
/// repeat it get the same blocks from the arena, and a call that departs
/// from the plan (another allocation script from its fourth event on) gets
/// malloc's blocks from there, never memory a live block holds, and becomes
/// the plan. Every call checks its blocks' bytes before each free.
TEST(Memory, ServesRepeatedCallsFromAPlannedArena) {
  ArtifactPtr artifact = loadArtifact(TSR_TEST_ARENA_ARTIFACT);
  ASSERT_TRUE(artifact);
  ArenaRun first = runArenaModel(artifact.get(), 0);
  EXPECT_TRUE(first.intact);
  // Blocks of 1000, 3000, 500, 2000 and 4000 bytes (each 48 + 63 more for
  // its header and alignment, rounded to 64): at most 4000 + 2000 + 3000 +
  // 500 bytes are live at once, the arena is at least one page.
  EXPECT_GE(arenaBytes(), 4096u);
  ArenaRun second = runArenaModel(artifact.get(), 0);
  ArenaRun third = runArenaModel(artifact.get(), 0);
  EXPECT_TRUE(second.intact);
  EXPECT_TRUE(third.intact);
  EXPECT_EQ(second.addresses, third.addresses);
  // Block 2 (500 bytes) is allocated after block 0 (1000) is freed and fits
  // where block 0 was; blocks 1 and 3, live together, do not overlap.
  EXPECT_NE(second.addresses[1], second.addresses[3]);

  ArenaRun departed = runArenaModel(artifact.get(), 1);
  EXPECT_TRUE(departed.intact);
  EXPECT_EQ(departed.addresses[0], second.addresses[0]);
  ArenaRun replanned = runArenaModel(artifact.get(), 1);
  ArenaRun again = runArenaModel(artifact.get(), 1);
  EXPECT_TRUE(replanned.intact);
  EXPECT_TRUE(again.intact);
  EXPECT_EQ(replanned.addresses, again.addresses);
  // Back to the first script: departs at once, then repeats.
  EXPECT_TRUE(runArenaModel(artifact.get(), 0).intact);
  ArenaRun back = runArenaModel(artifact.get(), 0);
  EXPECT_TRUE(back.intact);
  EXPECT_EQ(runArenaModel(artifact.get(), 0).addresses, back.addresses);
}

/// A freed block leaves a gap the plan reuses: a (128 bytes) and b (64)
/// live, a freed, c (64) goes where a was; d (192) comes after all are
/// freed. The arena equals the peak.
TEST(ArenaPlan, ReusesWhatFreedBlocksLeave) {
  using E = tsr::ArenaEvent;
  std::vector<E> events = {{128, 0, false}, {64, 1, false}, {0, 0, true},
                           {64, 2, false},  {0, 2, true},   {0, 1, true},
                           {192, 3, false}, {0, 3, true}};
  tsr::ArenaPlan plan;
  ASSERT_TRUE(tsr::planArena(events, 64, plan));
  EXPECT_EQ(plan.peak, 192u);
  EXPECT_EQ(plan.bytes, 192u);
  ASSERT_EQ(plan.offsets.size(), 4u);
  // b and c live together; c goes where a was.
  EXPECT_EQ(plan.offsets[2], plan.offsets[0]);
  EXPECT_NE(plan.offsets[1], plan.offsets[2]);
  EXPECT_EQ(plan.events, events);
}

TEST(ArenaPlan, RejectsCallsItCannotPlan) {
  tsr::ArenaPlan plan;
  // Never freed, freed twice, freeing an unknown block, blocks out of order.
  EXPECT_FALSE(tsr::planArena({{64, 0, false}}, 64, plan));
  EXPECT_FALSE(
      tsr::planArena({{64, 0, false}, {0, 0, true}, {0, 0, true}}, 64, plan));
  EXPECT_FALSE(tsr::planArena({{0, 0, true}}, 64, plan));
  EXPECT_FALSE(tsr::planArena({{64, 1, false}, {0, 1, true}}, 64, plan));
  EXPECT_TRUE(plan.events.empty());
  EXPECT_EQ(plan.bytes, 0u);
  EXPECT_TRUE(tsr::planArena({}, 64, plan));
  EXPECT_EQ(plan.bytes, 0u);
}

/// Random calls (sizes from 1 byte to 1 MB, up to 40 blocks live): no two
/// blocks that are live at the same time share a byte, every offset is
/// aligned, and the arena is at least the peak. (How close it comes to the
/// peak is a property of real calls, not random ones: bench/gpt2.py prints
/// it.)
TEST(ArenaPlan, NeverOverlapsLiveBlocks) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<tsr::ArenaEvent> events;
    std::vector<uint32_t> live;
    uint32_t blocks = 0;
    int steps = 50 + int(random() % 400);
    for (int i = 0; i < steps || !live.empty(); ++i) {
      bool allocate = i < steps &&
                      (live.empty() || (live.size() < 40 && random() % 2 == 0));
      if (allocate) {
        uint64_t bytes = 1 + random() % (uint64_t(1) << (random() % 21));
        events.push_back({bytes, blocks, false});
        live.push_back(blocks++);
        continue;
      }
      size_t pick = random() % live.size();
      events.push_back({0, live[pick], true});
      live.erase(live.begin() + pick);
    }
    tsr::ArenaPlan plan;
    ASSERT_TRUE(tsr::planArena(events, 64, plan)) << trial;
    std::vector<uint64_t> size(blocks);
    std::vector<bool> alive(blocks, false);
    for (const tsr::ArenaEvent &event : events) {
      if (event.isFree) {
        alive[event.block] = false;
        continue;
      }
      uint32_t b = event.block;
      size[b] = (event.bytes + 63) / 64 * 64;
      EXPECT_EQ(plan.offsets[b] % 64, 0u);
      EXPECT_LE(plan.offsets[b] + size[b], plan.bytes);
      for (uint32_t other = 0; other < b; ++other)
        if (alive[other])
          EXPECT_TRUE(plan.offsets[b] + size[b] <= plan.offsets[other] ||
                      plan.offsets[other] + size[other] <= plan.offsets[b])
              << "trial " << trial << ": blocks " << other << " and " << b;
      alive[b] = true;
    }
    EXPECT_GE(plan.bytes, plan.peak);
  }
}

TEST(Memory, IsThreadSafe) {
  size_t base = currentBytes();
  tsr_memory_reset_peak();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 20000; ++i) {
        void *p = _mlir_memref_to_llvm_aligned_alloc(32, 10 + i % 50);
        _mlir_memref_to_llvm_free(p);
      }
    });
  }
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(currentBytes(), base);
  EXPECT_GE(peakBytes(), base + 10);
  EXPECT_LE(peakBytes(), base + 4 * 59);
}

TEST(Memory, CountsTensorsSeparately) {
  size_t compiledBefore = currentBytes();
  size_t before = 0, peak = 0;
  tsr_tensor_memory_stats(&before, nullptr);
  int64_t shape[] = {10, 10};
  tsr_tensor_t *tensor = nullptr;
  ASSERT_EQ(tsr_tensor_create(TSR_DTYPE_FLOAT64, 2, shape, &tensor), TSR_OK);
  size_t during = 0;
  tsr_tensor_memory_stats(&during, &peak);
  EXPECT_EQ(during, before + 800);
  EXPECT_GE(peak, before + 800);
  tsr_tensor_destroy(tensor);
  size_t after = 0;
  tsr_tensor_memory_stats(&after, nullptr);
  EXPECT_EQ(after, before);
  EXPECT_EQ(currentBytes(), compiledBefore);
}

namespace {
/// A ranked memref descriptor of rank 2 as MLIR's LLVM lowering lays it out.
struct Descriptor2D {
  void *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
};
} // namespace

// memrefCopy, which compiled code calls for memref.copy between strided
// layouts: a transposed view of a 3x4 float matrix (strides [1, 4], offset
// 0) into a contiguous 4x3 buffer, and a 2x2 window at offset 5 of the same
// matrix (strides [4, 1]); rank 0 copies one element, an empty shape none.
TEST(Memory, MemrefCopyFollowsStridesAndOffsets) {
  float source[12], transposed[12] = {}, window[4] = {};
  for (int i = 0; i < 12; ++i)
    source[i] = float(i);
  Descriptor2D srcT{source, source, 0, {4, 3}, {1, 4}};
  Descriptor2D dstT{transposed, transposed, 0, {4, 3}, {3, 1}};
  tsr_unranked_memref_t src{2, &srcT}, dst{2, &dstT};
  memrefCopy(sizeof(float), &src, &dst);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(transposed[r * 3 + c], source[c * 4 + r]) << r << " " << c;

  Descriptor2D srcW{source, source, 5, {2, 2}, {4, 1}};
  Descriptor2D dstW{window, window, 0, {2, 2}, {2, 1}};
  src = {2, &srcW};
  dst = {2, &dstW};
  memrefCopy(sizeof(float), &src, &dst);
  EXPECT_EQ(window[0], 5.0f);
  EXPECT_EQ(window[1], 6.0f);
  EXPECT_EQ(window[2], 9.0f);
  EXPECT_EQ(window[3], 10.0f);

  struct {
    void *allocated, *aligned;
    int64_t offset;
  } scalarSrc{source, source, 7}, scalarDst{window, window, 3};
  src = {0, &scalarSrc};
  dst = {0, &scalarDst};
  memrefCopy(sizeof(float), &src, &dst);
  EXPECT_EQ(window[3], 7.0f);

  Descriptor2D empty{source, source, 0, {0, 3}, {3, 1}};
  Descriptor2D untouched{window, window, 0, {0, 3}, {3, 1}};
  src = {2, &empty};
  dst = {2, &untouched};
  memrefCopy(sizeof(float), &src, &dst);
  EXPECT_EQ(window[0], 5.0f);
}
