//===- OffloadStreamTest.cpp - Offload of GPU code, ordered by streams ----===//
//
// Compiled CUDA programs call tsrt_offload_* and tsrt_prefetch_* with their
// compute stream, and the runtime copies on its transfer stream between
// device memory and pinned host blocks, ordering the two streams with
// events and never blocking the host. These tests run that against
// FakeCudart.c in deferred mode, where a held stream runs nothing until
// something needs it: a copy that does not wait for its producer copies
// the fake's fresh-memory garbage, and a kernel that does not wait for a
// copy reads or overwrites its buffer too early. "Kernels" are functions
// queued on the compute stream (fakeCudaEnqueue); the fake's device memory
// is host memory, so a test may look at it directly to see what has run.
// Their own binary: the fake must be loaded before the runtime first uses
// CUDA, which tessera-runtime-tests runs without.
//
//===----------------------------------------------------------------------===//

#include "FakeStreams.h"
#include "RuntimeInternal.h"
#include "tessera-runtime/Device.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <vector>

/// Read by AddressSanitizer where the test is built with it (and by nothing
/// otherwise): the fake's cudaMallocHost of more than any machine has must
/// fail as CUDA's does, not abort the process.
extern "C" const char *__asan_default_options() {
  return "allocator_may_return_null=1";
}

namespace {

int64_t livePinned() {
  return symbol<int64_t()>(fakeCudart(), "fakeCudaLivePinned")();
}

/// The threads of this process: the device path starts none.
size_t threadCount() {
  size_t count = 0;
  if (DIR *dir = opendir("/proc/self/task")) {
    while (dirent *entry = readdir(dir))
      count += entry->d_name[0] != '.';
    closedir(dir);
  }
  return count;
}

constexpr size_t kCount = 256;
constexpr int64_t kBytes = kCount * sizeof(float);

/// A kernel copying `src` into `seen` (host memory), and saying it ran.
struct Read {
  explicit Read(const float *src) : src(src) {}
  const float *src;
  std::vector<float> seen;
  bool ran = false;
};

void runRead(void *arg) {
  auto *read = static_cast<Read *>(arg);
  read->seen.assign(read->src, read->src + kCount);
  read->ran = true;
}

std::vector<float> iota(float first) {
  std::vector<float> values(kCount);
  for (size_t i = 0; i < kCount; ++i)
    values[i] = first + static_cast<float>(i);
  return values;
}

/// What a device buffer holds now (the fake's device memory is host memory).
std::vector<float> peek(const float *buffer) {
  return std::vector<float>(buffer, buffer + kCount);
}

class OffloadStream : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(kFakeLoaded) << dlerror();
    setDeferred(1);
    compute = mgpuStreamCreate();
    transfer = tsr::transferStream();
    ASSERT_TRUE(compute && transfer) << tsr_last_error();
  }

  void TearDown() override {
    setDeferred(0);
    for (void *buffer : buffers)
      tsr_device_free(buffer);
  }

  /// A device buffer of kCount floats (the fake fills it with garbage),
  /// freed after the test.
  float *device() {
    void *buffer = nullptr;
    EXPECT_EQ(tsr_device_alloc(kBytes, &buffer), TSR_OK) << tsr_last_error();
    buffers.push_back(buffer);
    return static_cast<float *>(buffer);
  }

  /// Queues a kernel on the compute stream writing `fill`.
  void kernel(Fill &fill) { enqueue(compute, runFill, &fill); }
  void kernel(Read &read) { enqueue(compute, runRead, &read); }

  /// Runs the compute stream's queue to its end (and what it waits for).
  void finish() { ASSERT_EQ(tsr_stream_synchronize(compute), TSR_OK); }

  void *compute = nullptr, *transfer = nullptr;
  std::vector<void *> buffers;
};

// A whole transfer with the compute stream held throughout: nothing runs
// until the end, when each copy and kernel runs only once what it waits for
// has. The value's buffer is overwritten after the copy out, as a freed
// buffer is reused, and the value comes back into another buffer.
TEST_F(OffloadStream, RoundTripGivesTheOriginalBytes) {
  float *value = device(), *back = device();
  Fill producer{value, iota(1)}, reuse{value, std::vector<float>(kCount, -1)};
  Read consumer{back};
  hold(compute);
  kernel(producer);
  tsrt_offload_start(0, value, kBytes, compute);
  tsrt_offload_wait(0, value, compute);
  kernel(reuse);
  tsrt_prefetch_start(0, back, kBytes, compute);
  tsrt_prefetch_wait(0, back, compute);
  kernel(consumer);
  EXPECT_FALSE(consumer.ran);
  finish();
  ASSERT_TRUE(consumer.ran);
  EXPECT_EQ(consumer.seen, producer.values);
  EXPECT_EQ(peek(value), reuse.values);
}

// The copy to the host is queued on the transfer stream, which must wait
// for the kernel that makes the value: while the compute stream is held,
// the copy has not run, though the transfer stream itself is free to run.
TEST_F(OffloadStream, TheCopyOutWaitsForTheProducer) {
  float *value = device(), *back = device();
  Fill producer{value, iota(10)};
  hold(compute);
  kernel(producer);
  tsrt_offload_start(1, value, kBytes, compute);
  // A wait for the compute stream, the copy and the event's record.
  EXPECT_GE(pending(transfer), 2);
  release(compute);
  EXPECT_EQ(pending(transfer), 0);
  tsrt_offload_wait(1, value, compute);
  tsrt_prefetch_start(1, back, kBytes, compute);
  tsrt_prefetch_wait(1, back, compute);
  finish();
  EXPECT_EQ(peek(back), producer.values);
}

// After tsrt_offload_wait the compute stream may overwrite the buffer, but
// only once the copy out has read it: with the transfer stream held, a
// kernel queued after the wait does not run.
TEST_F(OffloadStream, TheBufferIsReusedOnlyAfterTheCopyOut) {
  float *value = device(), *back = device();
  Fill producer{value, iota(20)}, reuse{value, std::vector<float>(kCount, -1)};
  kernel(producer);
  hold(transfer);
  tsrt_offload_start(2, value, kBytes, compute);
  tsrt_offload_wait(2, value, compute);
  kernel(reuse);
  EXPECT_EQ(peek(value), producer.values);
  release(transfer);
  EXPECT_EQ(peek(value), reuse.values);
  tsrt_prefetch_start(2, back, kBytes, compute);
  tsrt_prefetch_wait(2, back, compute);
  finish();
  EXPECT_EQ(peek(back), producer.values);
}

// The copy back waits for the work queued on the compute stream before it:
// the destination buffer was allocated there, and a kernel queued earlier
// may still write it.
TEST_F(OffloadStream, TheCopyBackWaitsForEarlierWork) {
  float *value = device(), *back = device();
  Fill producer{value, iota(30)}, earlier{back, std::vector<float>(kCount, 7)};
  Read consumer{back};
  kernel(producer);
  tsrt_offload_start(3, value, kBytes, compute);
  tsrt_offload_wait(3, value, compute);
  hold(compute);
  kernel(earlier);
  tsrt_prefetch_start(3, back, kBytes, compute);
  EXPECT_GE(pending(transfer), 2);
  release(compute);
  tsrt_prefetch_wait(3, back, compute);
  kernel(consumer);
  finish();
  ASSERT_TRUE(consumer.ran);
  EXPECT_EQ(consumer.seen, producer.values);
}

// The backward pass's kernel reads the prefetched buffer only once the copy
// back has written it: with the transfer stream held, it does not run, and
// when it runs it sees the value, not the buffer's garbage.
TEST_F(OffloadStream, TheConsumerWaitsForThePrefetch) {
  float *value = device(), *back = device();
  Fill producer{value, iota(35)};
  Read consumer{back};
  kernel(producer);
  tsrt_offload_start(6, value, kBytes, compute);
  tsrt_offload_wait(6, value, compute);
  hold(transfer);
  tsrt_prefetch_start(6, back, kBytes, compute);
  tsrt_prefetch_wait(6, back, compute);
  kernel(consumer);
  EXPECT_FALSE(consumer.ran);
  EXPECT_NE(peek(back), producer.values);
  release(transfer);
  finish();
  ASSERT_TRUE(consumer.ran);
  EXPECT_EQ(consumer.seen, producer.values);
}

// The four calls only enqueue: the host waits for no stream, and no thread
// copies (the transfer thread of CPU code is never started).
TEST_F(OffloadStream, TheHostNeverWaits) {
  float *value = device(), *back = device();
  Fill producer{value, iota(40)};
  size_t threads = threadCount();
  hold(compute);
  kernel(producer);
  int64_t waits = hostWaits();
  tsrt_offload_start(4, value, kBytes, compute);
  tsrt_offload_wait(4, value, compute);
  tsrt_prefetch_start(4, back, kBytes, compute);
  tsrt_prefetch_wait(4, back, compute);
  EXPECT_EQ(hostWaits(), waits);
  EXPECT_EQ(threadCount(), threads);
  finish();
  EXPECT_EQ(peek(back), producer.values);
}

// Step after step a transfer keeps its pinned block, counted in the host
// pool, and the statistics count each step's copies (no host time: the
// host neither copies nor waits). A block freed and allocated again would
// leave the counts as they are, but cudaFreeHost synchronizes the device:
// the host would wait.
TEST_F(OffloadStream, ASecondStepReusesThePinnedBlock) {
  float *value = device(), *back = device();
  tsr_transfer_reset_stats();
  int64_t pinned = livePinned();
  size_t poolBefore = 0;
  tsr_host_pool_stats(&poolBefore, nullptr);
  for (int step = 0; step < 2; ++step) {
    Fill producer{value, iota(100 * (step + 1))};
    Read consumer{back};
    kernel(producer);
    int64_t waits = hostWaits();
    tsrt_offload_start(5, value, kBytes, compute);
    tsrt_offload_wait(5, value, compute);
    tsrt_prefetch_start(5, back, kBytes, compute);
    tsrt_prefetch_wait(5, back, compute);
    EXPECT_EQ(hostWaits(), waits) << "step " << step;
    kernel(consumer);
    finish();
    EXPECT_EQ(consumer.seen, producer.values) << "step " << step;
    EXPECT_EQ(livePinned(), pinned + 1) << "step " << step;
    size_t pool = 0;
    tsr_host_pool_stats(&pool, nullptr);
    EXPECT_EQ(pool - poolBefore, static_cast<size_t>(kBytes));
  }
  tsr_transfer_stats_t stats{};
  tsr_transfer_stats(&stats);
  EXPECT_EQ(stats.transfers, 2u);
  EXPECT_EQ(stats.bytes_to_host, 2u * kBytes);
  EXPECT_EQ(stats.bytes_to_device, 2u * kBytes);
  EXPECT_EQ(stats.busy_seconds, 0.0);
  EXPECT_EQ(stats.waited_seconds, 0.0);
}

// Misuse on the device path ends the process with the CPU path's lines,
// and so does a transfer whose calls do not all pass a stream.
TEST_F(OffloadStream, MisuseEndsTheProcessNamingTheTransfer) {
  // The fake's streams hold no thread, but a fork would copy its lock.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float *x = device(), *y = device();
  EXPECT_EXIT(tsrt_offload_wait(400, x, compute), testing::ExitedWithCode(1),
              "tessera-run: rank 0: transfer 400: tsrt_offload_wait with no "
              "copy to host memory in flight");
  EXPECT_EXIT(
      {
        tsrt_offload_start(401, x, kBytes, compute);
        tsrt_offload_start(401, x, kBytes, compute);
      },
      testing::ExitedWithCode(1),
      "transfer 401: started again before its copy back completed");
  EXPECT_EXIT(tsrt_prefetch_start(402, y, kBytes, compute),
              testing::ExitedWithCode(1),
              "transfer 402: tsrt_prefetch_start of a value not on the host");
  EXPECT_EXIT(
      {
        tsrt_offload_start(403, x, kBytes, compute);
        tsrt_offload_wait(403, x, compute);
        tsrt_prefetch_start(403, y, 8, compute);
      },
      testing::ExitedWithCode(1),
      "transfer 403: copied back as 8 bytes, offloaded as 1024");
  EXPECT_EXIT(
      {
        tsrt_offload_start(404, x, kBytes, compute);
        tsrt_offload_wait(404, y, compute);
      },
      testing::ExitedWithCode(1),
      "transfer 404: tsrt_offload_wait on another buffer than the one its "
      "copy reads");
  EXPECT_EXIT(
      {
        tsrt_offload_start(405, x, kBytes, compute);
        tsrt_offload_wait(405, x, compute);
        tsrt_prefetch_start(405, y, kBytes, compute);
        tsrt_prefetch_wait(405, x, compute);
      },
      testing::ExitedWithCode(1),
      "transfer 405: tsrt_prefetch_wait on another buffer than the one its "
      "copy writes");
  EXPECT_EXIT(tsrt_prefetch_wait(406, y, compute), testing::ExitedWithCode(1),
              "transfer 406: tsrt_prefetch_wait with no copy back in flight");
  EXPECT_EXIT(
      {
        tsrt_offload_start(407, x, kBytes, compute);
        tsrt_offload_wait(407, x, nullptr);
      },
      testing::ExitedWithCode(1),
      "transfer 407: tsrt_offload_wait without a stream, for a transfer "
      "started on one");
  EXPECT_EXIT(
      {
        tsrt_offload_start(408, x, kBytes, compute);
        tsrt_offload_wait(408, x, compute);
        tsrt_prefetch_start(408, y, kBytes, nullptr);
      },
      testing::ExitedWithCode(1),
      "transfer 408: tsrt_prefetch_start without a stream, for a transfer "
      "started on one");
  EXPECT_EXIT(tsrt_offload_start(409, x, -4, compute),
              testing::ExitedWithCode(1),
              "transfer 409: a negative size \\(-4 bytes\\)");
  // The fake's cudaMallocHost cannot allocate this much: no copy is
  // queued, so nothing reads past `x`.
  EXPECT_EXIT(tsrt_offload_start(410, x, INT64_MAX, compute),
              testing::ExitedWithCode(1),
              "transfer 410: cannot allocate 9223372036854775807 bytes of "
              "pinned host memory: cudaMallocHost: fake CUDA error");
}

} // namespace
