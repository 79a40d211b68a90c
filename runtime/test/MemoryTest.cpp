//===- MemoryTest.cpp - Allocation functions and memory accounting --------===//

#include "Fixtures.h"

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

/// A step that frees its first buffer before allocating a third of another
/// size: reuse by size needs all three blocks, more than were ever live at
/// once, and the runtime keeps them (up to twice that), so the second step
/// gets the first one's blocks back and faults in no new memory.
TEST(Memory, ReusesFreedBlocksAcrossSteps) {
  const size_t sizes[] = {(51u << 20) + 64, (40u << 20) + 64, (10u << 20) + 64};
  auto step = [&] {
    std::vector<void *> blocks;
    void *a = _mlir_memref_to_llvm_alloc(sizes[0]);
    void *b = _mlir_memref_to_llvm_alloc(sizes[1]);
    std::memset(a, 1, sizes[0]);
    std::memset(b, 2, sizes[1]);
    _mlir_memref_to_llvm_free(a);
    void *c = _mlir_memref_to_llvm_alloc(sizes[2]);
    std::memset(c, 3, sizes[2]);
    _mlir_memref_to_llvm_free(b);
    _mlir_memref_to_llvm_free(c);
    return std::vector<void *>{a, b, c};
  };
  std::vector<void *> first = step();
  EXPECT_EQ(step(), first);
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
