//===- OffloadTest.cpp - Host pool, transfer thread, device capacity ------===//

#include "Fixtures.h"

#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

namespace {

/// A buffer of `n` floats 0.5, 1.5, ...
std::vector<float> ramp(size_t n) {
  std::vector<float> values(n);
  std::iota(values.begin(), values.end(), 0.5f);
  return values;
}

/// One transfer there and back: the buffer is overwritten in between, as
/// compiled code reuses a freed buffer.
void roundTrip(int64_t number, std::vector<float> &device) {
  int64_t bytes = static_cast<int64_t>(device.size() * sizeof(float));
  tsrt_offload_start(number, device.data(), bytes, nullptr);
  tsrt_offload_wait(number, device.data(), nullptr);
  std::fill(device.begin(), device.end(), -1.0f);
  tsrt_prefetch_start(number, device.data(), bytes, nullptr);
  tsrt_prefetch_wait(number, device.data(), nullptr);
}

} // namespace

TEST(Offload, RoundTripsBitForBit) {
  // Empty, small (malloc'd) and over 1 MiB (mapped) blocks.
  for (size_t n : {size_t(0), size_t(3), size_t(1000), size_t(600000)}) {
    std::vector<float> device = ramp(n), expected = device;
    roundTrip(100, device);
    EXPECT_EQ(device, expected) << n << " floats";
  }
}

TEST(Offload, RepeatsStepAfterStepAndCountsTheHostPool) {
  tsr_transfer_reset_stats();
  tsr_host_pool_reset_peak();
  size_t before = 0;
  tsr_host_pool_stats(&before, nullptr);
  std::vector<float> a = ramp(4096), b = ramp(1024);
  std::vector<float> ea = a, eb = b;
  for (int step = 0; step < 3; ++step) {
    // Two values in flight at once, completed in another order.
    tsrt_offload_start(7, a.data(), a.size() * sizeof(float), nullptr);
    tsrt_offload_start(8, b.data(), b.size() * sizeof(float), nullptr);
    tsrt_offload_wait(8, b.data(), nullptr);
    tsrt_offload_wait(7, a.data(), nullptr);
    std::fill(a.begin(), a.end(), 0.0f);
    std::fill(b.begin(), b.end(), 0.0f);
    tsrt_prefetch_start(8, b.data(), b.size() * sizeof(float), nullptr);
    tsrt_prefetch_start(7, a.data(), a.size() * sizeof(float), nullptr);
    tsrt_prefetch_wait(7, a.data(), nullptr);
    tsrt_prefetch_wait(8, b.data(), nullptr);
    EXPECT_EQ(a, ea);
    EXPECT_EQ(b, eb);
  }
  tsr_transfer_stats_t stats{};
  tsr_transfer_stats(&stats);
  EXPECT_EQ(stats.transfers, 6u);
  EXPECT_EQ(stats.bytes_to_host, 3 * (4096 + 1024) * sizeof(float));
  EXPECT_EQ(stats.bytes_to_device, stats.bytes_to_host);
  // The two blocks are kept from step to step, not allocated again.
  size_t current = 0, peak = 0;
  tsr_host_pool_stats(&current, &peak);
  EXPECT_EQ(current - before, (4096 + 1024) * sizeof(float));
  EXPECT_EQ(peak, current);
}

TEST(Offload, EmulatesTheHostLinkAndMeasuresWhatComputeHid) {
  // 8 MiB at 200 MB/s: each copy lasts at least 41.9 ms.
  constexpr double kRate = 200e6;
  std::vector<float> device = ramp(2 << 20);
  int64_t bytes = static_cast<int64_t>(device.size() * sizeof(float));
  double copy = bytes / kRate;
  ASSERT_EQ(tsr_set_host_bandwidth(kRate), TSR_OK);

  // Waiting at once: the wait lasts the copy (less only the call's own
  // time), so nearly nothing is hidden.
  tsr_transfer_reset_stats();
  tsrt_offload_start(200, device.data(), bytes, nullptr);
  tsrt_offload_wait(200, device.data(), nullptr);
  tsr_transfer_stats_t stats{};
  tsr_transfer_stats(&stats);
  EXPECT_GE(stats.busy_seconds, copy);
  EXPECT_GE(stats.waited_seconds, 0.5 * copy);

  // "Compute" until the copy is done (the thread counts its time when it
  // completes) before the wait: the wait blocks for no time at all.
  tsr_transfer_reset_stats();
  tsrt_prefetch_start(200, device.data(), bytes, nullptr);
  do {
    std::this_thread::sleep_for(std::chrono::duration<double>(copy / 4));
    tsr_transfer_stats(&stats);
  } while (stats.busy_seconds == 0);
  tsrt_prefetch_wait(200, device.data(), nullptr);
  tsr_transfer_stats(&stats);
  EXPECT_GE(stats.busy_seconds, copy);
  EXPECT_EQ(stats.waited_seconds, 0.0);
  ASSERT_EQ(tsr_set_host_bandwidth(0), TSR_OK);
  EXPECT_EQ(tsr_set_host_bandwidth(-1), TSR_ERROR_INVALID_ARGUMENT);
}

TEST(Offload, MisuseEndsTheProcessNamingTheTransfer) {
  // Earlier tests in this process may have started the transfer thread: a
  // fork would copy the runtime's record of it, not the thread, and a wait
  // in the child would never return.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float x[4] = {1, 2, 3, 4}, y[4];
  EXPECT_EXIT(tsrt_offload_wait(300, x, nullptr), testing::ExitedWithCode(1),
              "tessera-run: rank 0: transfer 300: tsrt_offload_wait with no "
              "copy to host memory in flight");
  EXPECT_EXIT(
      {
        tsrt_offload_start(301, x, sizeof x, nullptr);
        tsrt_offload_start(301, x, sizeof x, nullptr);
      },
      testing::ExitedWithCode(1),
      "transfer 301: started again before its copy back completed");
  EXPECT_EXIT(tsrt_prefetch_start(302, y, sizeof y, nullptr),
              testing::ExitedWithCode(1),
              "transfer 302: tsrt_prefetch_start of a value not on the host");
  EXPECT_EXIT(
      {
        tsrt_offload_start(303, x, sizeof x, nullptr);
        tsrt_offload_wait(303, x, nullptr);
        tsrt_prefetch_start(303, y, 8, nullptr);
      },
      testing::ExitedWithCode(1),
      "transfer 303: copied back as 8 bytes, offloaded as 16");
  EXPECT_EXIT(
      {
        tsrt_offload_start(304, x, sizeof x, nullptr);
        tsrt_offload_wait(304, y, nullptr);
      },
      testing::ExitedWithCode(1),
      "transfer 304: tsrt_offload_wait on another buffer than the one its "
      "copy reads");
  EXPECT_EXIT(tsrt_prefetch_wait(305, y, nullptr), testing::ExitedWithCode(1),
              "transfer 305: tsrt_prefetch_wait with no copy back in flight");
  EXPECT_EXIT(tsrt_offload_start(-1, x, sizeof x, nullptr),
              testing::ExitedWithCode(1),
              "tsrt_offload_start: transfer number -1 out of range");
  EXPECT_EXIT(tsrt_offload_start(306, x, -4, nullptr),
              testing::ExitedWithCode(1),
              "transfer 306: a negative size \\(-4 bytes\\)");
  // More than any machine maps: the block cannot be allocated (no copy is
  // queued, so nothing reads past `x`).
  EXPECT_EXIT(tsrt_offload_start(307, x, INT64_MAX, nullptr),
              testing::ExitedWithCode(1),
              "transfer 307: cannot allocate 9223372036854775807 bytes of "
              "host memory");
  // A wait on a stream has no event of the transfer thread's copy to wait
  // for (this process has no CUDA: the check comes first).
  EXPECT_EXIT(
      {
        tsrt_offload_start(308, x, sizeof x, nullptr);
        tsrt_offload_wait(308, x, x);
      },
      testing::ExitedWithCode(1),
      "transfer 308: tsrt_offload_wait on a stream, for a transfer started "
      "without one");
}

TEST(Offload, DevicePoolCapacityStopsAnAllocationPastIt) {
  size_t code = 0, held = 0;
  tsr_memory_stats(&code, nullptr);
  tsr_tensor_memory_stats(&held, nullptr);
  ASSERT_EQ(tsr_memory_set_device_capacity(code + held + 4096), TSR_OK);
  void *fits = _mlir_memref_to_llvm_alloc(4000);
  EXPECT_NE(fits, nullptr);
  _mlir_memref_to_llvm_free(fits);
  EXPECT_EXIT(_mlir_memref_to_llvm_alloc(5000), testing::ExitedWithCode(1),
              "the device pool of [0-9]+ bytes \\(--device-memory\\) cannot "
              "hold 5000 bytes more");
  ASSERT_EQ(tsr_memory_set_device_capacity(0), TSR_OK);
  void *unlimited = _mlir_memref_to_llvm_alloc(5000);
  EXPECT_NE(unlimited, nullptr);
  _mlir_memref_to_llvm_free(unlimited);
}
