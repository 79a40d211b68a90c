//===- CommStreamTest.cpp - Collectives of GPU code, ordered by streams ---===//
//
// Compiled CUDA programs call tsrt_* with their compute stream, and the
// runtime orders each collective on its communication stream with events,
// never blocking the host. These tests run that against FakeCudart.c in
// deferred mode, where a held stream runs nothing until something needs it,
// and FakeNccl.c, a one-rank NCCL plugin whose collectives are work queued
// on the stream they are given: a collective that does not wait for the
// compute stream copies garbage, and work that does not wait for the
// collective reads its result before it is written. "Kernels" are functions
// queued on the compute stream (fakeCudaEnqueue). The fake's device memory
// is host memory, so a test may look at it directly to see what has run.
//
// The world has a timeout, so every collective goes through the device
// watchdog (CommNccl.cpp), and each test ends by checking that the watchdog
// has let go of them all. The watchdog's own tests make collectives hang
// with a gate of the fake runtime (fakeNcclHang), which blocks the host's
// synchronization as a hung NCCL kernel does.
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "FakeStreams.h"
#include "RuntimeInternal.h"
#include "tessera-runtime/Comm.h"
#include "tessera-runtime/Device.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <thread>
#include <vector>

namespace {

/// The fake NCCL plugin, the one TESSERA_COMM_NCCL_PLUGIN names.
void *fakeNccl() {
  static void *handle = dlopen(TSR_TEST_FAKE_NCCL, RTLD_NOW | RTLD_LOCAL);
  return handle;
}

void *ncclLastStream() {
  return symbol<void *()>(fakeNccl(), "fakeNcclLastStream")();
}
std::string ncclLastCall() {
  return symbol<const char *()>(fakeNccl(), "fakeNcclLastCall")();
}
int64_t ncclCalls() { return symbol<int64_t()>(fakeNccl(), "fakeNcclCalls")(); }
void ncclHang(int on) { symbol<void(int)>(fakeNccl(), "fakeNcclHang")(on); }
void ncclSetAsyncError(const char *message) {
  symbol<void(const char *)>(fakeNccl(), "fakeNcclSetAsyncError")(message);
}
int64_t ncclAborts() {
  return symbol<int64_t()>(fakeNccl(), "fakeNcclAborts")();
}

/// Waits up to 2 s for the device watchdog to see every collective done
/// (it polls every 50 ms) and returns how many it still watches.
size_t watchedAfterPolls() {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (tsr::watchedDeviceCollectives() > 0 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return tsr::watchedDeviceCollectives();
}

/// A kernel that only says it ran.
void runMark(void *arg) { *static_cast<bool *>(arg) = true; }

std::vector<float> iota(size_t n, float first) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i)
    values[i] = first + static_cast<float>(i);
  return values;
}

/// What a device buffer holds now (the fake's device memory is host memory).
std::vector<float> peek(const float *buffer, size_t n) {
  return std::vector<float>(buffer, buffer + n);
}

/// Whether a device buffer still holds the fake's fresh-memory garbage
/// (0xA5 bytes): nothing has written it.
bool untouched(const float *buffer, size_t n) {
  const auto *bytes = reinterpret_cast<const unsigned char *>(buffer);
  for (size_t i = 0; i < n * sizeof(float); ++i)
    if (bytes[i] != 0xA5)
      return false;
  return true;
}

/// The group the fake NCCL world is bound to, one with no communicator
/// (and no mesh registered): a group of one rank, and the one of a test's
/// own communicator (CommStream::commWithTimeout).
constexpr int64_t kAxis = 1;
constexpr int64_t kAlone = 2;
constexpr int64_t kOwnAxis = 4;
/// The world's watchdog timeout: long enough never to fire in a test.
constexpr double kWorldTimeout = 5;
constexpr size_t kCount = 64;
constexpr size_t kBytes = kCount * sizeof(float);

class CommStream : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    if (!kFakeLoaded)
      return;
    setenv("TESSERA_COMM_NCCL_PLUGIN", TSR_TEST_FAKE_NCCL, 1);
    tsr_comm_options_t options = {kWorldTimeout, 0};
    if (tsr_comm_init(TSR_COMM_NCCL, &options, &world) != TSR_OK)
      initError = tsr_last_error();
    else
      tsr_comm_bind_axis(kAxis, world);
  }

  static void TearDownTestSuite() {
    tsr_comm_bind_axis(kAxis, nullptr);
    tsr_comm_destroy(world);
    world = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(kFakeLoaded) << dlerror();
    ASSERT_TRUE(world) << initError;
    setDeferred(1);
    compute = mgpuStreamCreate();
    communication = tsr::communicationStream();
    ASSERT_TRUE(compute && communication) << tsr_last_error();
  }

  void TearDown() override {
    ncclHang(0);
    ncclSetAsyncError(nullptr);
    setDeferred(0);
    // Every stream has run to its end: the watchdog gives every event back.
    EXPECT_EQ(watchedAfterPolls(), 0u);
    if (own) {
      tsr_comm_bind_axis(kOwnAxis, nullptr);
      tsr_comm_destroy(own);
    }
    for (void *buffer : buffers)
      tsr_device_free(buffer);
  }

  /// A communicator of its own for the test, with the watchdog's `timeout`
  /// (0: none), bound to kOwnAxis; destroyed after the test.
  tsr_comm_t *commWithTimeout(double timeout) {
    tsr_comm_options_t options = {timeout, 0};
    if (tsr_comm_init(TSR_COMM_NCCL, &options, &own) != TSR_OK) {
      ADD_FAILURE() << tsr_last_error();
      return nullptr;
    }
    tsr_comm_bind_axis(kOwnAxis, own);
    return own;
  }

  /// kCount floats of fresh device memory, freed after the test.
  float *device() {
    void *buffer = nullptr;
    EXPECT_EQ(tsr_device_alloc(kBytes, &buffer), TSR_OK) << tsr_last_error();
    buffers.push_back(buffer);
    return static_cast<float *>(buffer);
  }

  /// Queues the copy of `buffer` into `host` on the compute stream: what
  /// the program does with a result.
  void consume(std::vector<float> &host, const float *buffer) {
    host.assign(kCount, -1.0f);
    ASSERT_EQ(tsr_device_memcpy(host.data(), buffer, kBytes, compute), TSR_OK)
        << tsr_last_error();
  }

  void finish() {
    ASSERT_EQ(tsr_stream_synchronize(compute), TSR_OK) << tsr_last_error();
  }

  static tsr_comm_t *world;
  static std::string initError;
  tsr_comm_t *own = nullptr;
  void *compute = nullptr, *communication = nullptr;
  std::vector<void *> buffers;
};

tsr_comm_t *CommStream::world = nullptr;
std::string CommStream::initError;

} // namespace

TEST_F(CommStream, ThreeKeptStreams) {
  void *transfer = tsr::transferStream();
  ASSERT_NE(transfer, nullptr) << tsr_last_error();
  EXPECT_EQ(mgpuStreamCreate(), tsr::computeStream());
  EXPECT_EQ(mgpuStreamCreate(), compute);
  EXPECT_EQ(tsr::communicationStream(), communication);
  EXPECT_EQ(tsr::transferStream(), transfer);
  EXPECT_NE(compute, communication);
  EXPECT_NE(compute, transfer);
  EXPECT_NE(communication, transfer);
}

// The harness itself: the collective issued straight to the communicator
// on the communication stream, without the runtime's events, runs at once,
// before the producer the held compute stream has not run, and copies the
// garbage of fresh memory. AllReduceWaitsForTheProducer would see this if
// the runtime did not make the communication stream wait.
TEST_F(CommStream, FakeCatchesAMissingEvent) {
  float *send = device(), *recv = device();
  Fill producer{send, iota(kCount, 1)};
  hold(compute);
  enqueue(compute, runFill, &producer);
  ASSERT_EQ(tsr_comm_all_reduce(world, send, recv, kCount, TSR_DTYPE_FLOAT32,
                                TSR_REDUCE_SUM, communication),
            TSR_OK)
      << tsr_last_error();
  finish();
  EXPECT_EQ(peek(send, kCount), producer.values);
  EXPECT_TRUE(untouched(recv, kCount));
}

TEST_F(CommStream, AllReduceWaitsForTheProducer) {
  float *send = device(), *recv = device();
  Fill producer{send, iota(kCount, 1)};
  hold(compute);
  enqueue(compute, runFill, &producer);
  int64_t calls = ncclCalls(), waits = streamWaits(), blocked = hostWaits();
  tsrt_all_reduce(0, kAxis, send, recv, kCount, TSR_DTYPE_FLOAT32,
                  TSR_REDUCE_SUM, compute);
  EXPECT_EQ(ncclCalls(), calls + 1);
  EXPECT_EQ(ncclLastCall(), "all_reduce");
  EXPECT_EQ(ncclLastStream(), communication);
  EXPECT_NE(ncclLastStream(), compute);
  EXPECT_NE(ncclLastStream(), nullptr);
  // The communication stream waits for the compute stream, which waits
  // for the collective; the host waited for nothing.
  EXPECT_EQ(streamWaits(), waits + 2);
  EXPECT_EQ(hostWaits(), blocked);
  // The communication stream is not held, yet the collective has not run:
  // it waits for the producer. Without that wait it would have run at
  // once, on garbage (FakeCatchesAMissingEvent), and so would fail here and
  // below.
  EXPECT_GT(pending(communication), 0);
  EXPECT_TRUE(untouched(recv, kCount));
  // Not done, so the watchdog holds it.
  EXPECT_EQ(tsr::watchedDeviceCollectives(), 1u);
  std::vector<float> host;
  consume(host, recv);
  EXPECT_EQ(host, std::vector<float>(kCount, -1.0f));
  finish();
  EXPECT_EQ(host, producer.values);
}

TEST_F(CommStream, ConsumerWaitsForTheCollective) {
  float *send = device(), *recv = device();
  Fill producer{send, iota(kCount, 10)};
  hold(communication);
  enqueue(compute, runFill, &producer);
  EXPECT_EQ(peek(send, kCount), producer.values);
  int64_t blocked = hostWaits();
  tsrt_all_reduce(0, kAxis, send, recv, kCount, TSR_DTYPE_FLOAT32,
                  TSR_REDUCE_MAX, compute);
  EXPECT_EQ(hostWaits(), blocked);
  std::vector<float> host;
  consume(host, recv);
  // The compute stream waits for the collective, on the held stream: the
  // consumer has not run (without the wait it would have read garbage).
  EXPECT_EQ(host, std::vector<float>(kCount, -1.0f));
  EXPECT_GT(pending(compute), 0);
  EXPECT_TRUE(untouched(recv, kCount));
  finish();
  EXPECT_EQ(host, producer.values);
}

TEST_F(CommStream, StartStagesTheSendDataAndOverlaps) {
  float *send = device(), *recv = device();
  Fill producer{send, iota(kCount, 1)};
  Fill overwrite{send, iota(kCount, 1000)};
  hold(communication);
  enqueue(compute, runFill, &producer);
  size_t before = 0, during = 0, after = 0;
  tsr_memory_stats(&before, nullptr);
  int64_t blocked = hostWaits();
  tsrt_all_reduce_start(1, kAxis, send, recv, kCount, TSR_DTYPE_FLOAT32,
                        TSR_REDUCE_SUM, compute);
  EXPECT_EQ(ncclLastStream(), communication);
  // The send data is in a staging block of the device pool.
  tsr_memory_stats(&during, nullptr);
  EXPECT_EQ(during, before + kBytes);
  // Compiled code may overwrite `send` at once, and the compute stream
  // goes on while the collective waits: the overlap.
  enqueue(compute, runFill, &overwrite);
  bool independentRan = false;
  enqueue(compute, runMark, &independentRan);
  EXPECT_TRUE(independentRan);
  EXPECT_EQ(peek(send, kCount), overwrite.values);
  EXPECT_TRUE(untouched(recv, kCount));
  tsrt_wait(recv, compute);
  EXPECT_EQ(hostWaits(), blocked);
  tsr_memory_stats(&after, nullptr);
  EXPECT_EQ(after, before);
  std::vector<float> host;
  consume(host, recv);
  EXPECT_EQ(host, std::vector<float>(kCount, -1.0f));
  finish();
  // The values `send` held at the start, not the overwrite.
  EXPECT_EQ(host, producer.values);
}

// Every start form stages its send data, until its wait, unless it is in
// place (compiled code leaves `recv`, and so `send`, alone until the wait).
TEST_F(CommStream, StartFormsStageUnlessInPlace) {
  float *buffer = device(), *scattered = device(), *gathered = device();
  Fill producer{buffer, iota(kCount, 5)};
  hold(communication);
  enqueue(compute, runFill, &producer);
  size_t before = 0, during = 0;
  tsr_memory_stats(&before, nullptr);
  tsrt_reduce_scatter_start(2, kAxis, buffer, scattered, kCount,
                            TSR_DTYPE_FLOAT32, TSR_REDUCE_SUM, compute);
  EXPECT_EQ(ncclLastCall(), "reduce_scatter");
  tsrt_all_gather_start(3, kAxis, buffer, gathered, kCount, TSR_DTYPE_FLOAT32,
                        compute);
  EXPECT_EQ(ncclLastCall(), "all_gather");
  EXPECT_EQ(ncclLastStream(), communication);
  tsr_memory_stats(&during, nullptr);
  EXPECT_EQ(during, before + 2 * kBytes);
  tsrt_wait(gathered, compute);
  tsrt_wait(scattered, compute);
  tsr_memory_stats(&during, nullptr);
  EXPECT_EQ(during, before);
  tsrt_all_reduce_start(4, kAxis, buffer, buffer, kCount, TSR_DTYPE_FLOAT32,
                        TSR_REDUCE_SUM, compute);
  tsr_memory_stats(&during, nullptr);
  EXPECT_EQ(during, before);
  tsrt_wait(buffer, compute);
  std::vector<float> host;
  consume(host, buffer);
  EXPECT_EQ(host, std::vector<float>(kCount, -1.0f));
  finish();
  EXPECT_EQ(host, producer.values);
  EXPECT_EQ(peek(scattered, kCount), producer.values);
  EXPECT_EQ(peek(gathered, kCount), producer.values);
}

TEST_F(CommStream, OtherCollectivesOrderLikeAllReduce) {
  float *send = device(), *toAll = device(), *permuted = device(),
        *broadcast = device();
  Fill producer{send, iota(kCount, 3)};
  hold(communication);
  enqueue(compute, runFill, &producer);
  tsrt_all_to_all(4, kAxis, send, toAll, kCount, TSR_DTYPE_FLOAT32, compute);
  EXPECT_EQ(ncclLastCall(), "all_to_all");
  EXPECT_EQ(ncclLastStream(), communication);
  tsrt_permute(5, kAxis, send, permuted, kCount, TSR_DTYPE_FLOAT32, kCount, 0,
               0, compute);
  EXPECT_EQ(ncclLastCall(), "recv");
  EXPECT_EQ(ncclLastStream(), communication);
  tsrt_broadcast(6, kAxis, send, broadcast, kCount, TSR_DTYPE_FLOAT32, 0,
                 compute);
  EXPECT_EQ(ncclLastCall(), "broadcast");
  EXPECT_EQ(ncclLastStream(), communication);
  std::vector<float> a, b, c;
  consume(a, toAll);
  consume(b, permuted);
  consume(c, broadcast);
  EXPECT_EQ(a, std::vector<float>(kCount, -1.0f));
  EXPECT_TRUE(untouched(toAll, kCount) && untouched(permuted, kCount) &&
              untouched(broadcast, kCount));
  finish();
  EXPECT_EQ(a, producer.values);
  EXPECT_EQ(b, producer.values);
  EXPECT_EQ(c, producer.values);
}

// A group without a communicator copies on the compute stream, in order
// with its kernels: with the stream held nothing is copied until it runs
// (a copy on the host would have happened during the call).
TEST_F(CommStream, GroupOfOneCopiesOnTheComputeStream) {
  float *send = device(), *scattered = device(), *gathered = device(),
        *broadcast = device();
  Fill producer{send, iota(kCount, 7)};
  hold(compute);
  enqueue(compute, runFill, &producer);
  int64_t calls = ncclCalls(), waits = streamWaits(), blocked = hostWaits();
  tsrt_reduce_scatter(7, kAlone, send, scattered, kCount, TSR_DTYPE_FLOAT32,
                      TSR_REDUCE_SUM, compute);
  tsrt_all_gather(8, kAlone, scattered, gathered, kCount, TSR_DTYPE_FLOAT32,
                  compute);
  tsrt_broadcast(9, kAlone, send, broadcast, kCount, TSR_DTYPE_FLOAT32, 0,
                 compute);
  EXPECT_TRUE(untouched(scattered, kCount) && untouched(gathered, kCount) &&
              untouched(broadcast, kCount));
  EXPECT_EQ(pending(compute), 4);
  EXPECT_EQ(ncclCalls(), calls);
  EXPECT_EQ(streamWaits(), waits);
  EXPECT_EQ(hostWaits(), blocked);
  finish();
  EXPECT_EQ(peek(scattered, kCount), producer.values);
  EXPECT_EQ(peek(gathered, kCount), producer.values);
  EXPECT_EQ(peek(broadcast, kCount), producer.values);
}

// Alone, an asynchronous collective's copy is queued on the compute stream
// before anything compiled code queues after the start: no staging, and
// the wait has no event to wait on.
TEST_F(CommStream, GroupOfOneStartIsACopyInOrder) {
  float *send = device(), *recv = device();
  Fill producer{send, iota(kCount, 2)};
  Fill overwrite{send, iota(kCount, 500)};
  hold(compute);
  enqueue(compute, runFill, &producer);
  size_t before = 0, during = 0;
  tsr_memory_stats(&before, nullptr);
  int64_t waits = streamWaits();
  tsrt_reduce_scatter_start(10, kAlone, send, recv, kCount, TSR_DTYPE_FLOAT32,
                            TSR_REDUCE_SUM, compute);
  tsr_memory_stats(&during, nullptr);
  EXPECT_EQ(during, before);
  enqueue(compute, runFill, &overwrite);
  tsrt_wait(recv, compute);
  EXPECT_EQ(streamWaits(), waits);
  EXPECT_TRUE(untouched(recv, kCount));
  finish();
  EXPECT_EQ(peek(recv, kCount), producer.values);
  EXPECT_EQ(peek(send, kCount), overwrite.values);
}

TEST_F(CommStream, WaitWithoutStartExits) {
  // Earlier tests may have started the device watchdog's thread.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float *recv = device();
  EXPECT_EXIT(tsrt_wait(recv, compute), ::testing::ExitedWithCode(1),
              "tsrt_wait: no collective in flight writes");
}

//===----------------------------------------------------------------------===//
// The device watchdog
//===----------------------------------------------------------------------===//

// A collective that never completes on the device (a peer died): the host
// blocks in the step's synchronization, and the watchdog ends the process
// once the collective has waited its timeout on the communication stream.
// The fake NCCL says when it is aborted.
TEST_F(CommStream, DeviceWatchdogEndsAHungCollective) {
  // The watchdog's thread may run in this process already: a fork would
  // copy its locks, not the thread.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float *send = device(), *recv = device();
  EXPECT_EXIT(
      {
        commWithTimeout(0.3);
        tsr_comm_describe_collective(20, "all_reduce #0 (the loss)");
        ncclHang(1);
        tsrt_all_reduce(20, kOwnAxis, send, recv, kCount, TSR_DTYPE_FLOAT32,
                        TSR_REDUCE_SUM, compute);
        tsr_stream_synchronize(compute);
      },
      ::testing::ExitedWithCode(1),
      "tessera-run: rank 0: all_reduce #0 \\(the loss\\) did not complete on "
      "the device within 0\\.3 s \\(a peer stopped, died or never issued "
      "it\\); aborting the NCCL communicator\nfake NCCL: communicator "
      "aborted");
}

// The deadline starts when the communication stream reaches the collective:
// one waiting for a compute stream busy for three times its timeout (a long
// backward pass) completes, and nothing is aborted.
TEST_F(CommStream, DeviceDeadlineStartsWhenTheStreamReachesIt) {
  ASSERT_TRUE(commWithTimeout(0.3));
  float *send = device(), *recv = device();
  Fill producer{send, iota(kCount, 4)};
  hold(compute);
  enqueue(compute, runFill, &producer);
  int64_t aborts = ncclAborts();
  tsrt_all_reduce(21, kOwnAxis, send, recv, kCount, TSR_DTYPE_FLOAT32,
                  TSR_REDUCE_SUM, compute);
  EXPECT_EQ(tsr::watchedDeviceCollectives(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  EXPECT_EQ(tsr::watchedDeviceCollectives(), 1u);
  EXPECT_TRUE(untouched(recv, kCount));
  release(compute);
  finish();
  EXPECT_EQ(peek(recv, kCount), producer.values);
  EXPECT_EQ(watchedAfterPolls(), 0u);
  EXPECT_EQ(ncclAborts(), aborts);
}

// NCCL reports a failure of the communicator (a peer's process exited)
// while its collective hangs: the watchdog ends the process at its next
// poll, long before the timeout.
TEST_F(CommStream, DeviceWatchdogEndsOnAnAsyncError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float *send = device(), *recv = device();
  auto start = std::chrono::steady_clock::now();
  EXPECT_EXIT(
      {
        commWithTimeout(30);
        tsr_comm_describe_collective(22, "all_reduce #1 (bucket 0: fc.weight)");
        ncclHang(1);
        tsrt_all_reduce(22, kOwnAxis, send, recv, kCount, TSR_DTYPE_FLOAT32,
                        TSR_REDUCE_SUM, compute);
        ncclSetAsyncError("ncclCommGetAsyncError: remote process exited or "
                          "there was a network error (fake: rank 1 is gone)");
        tsr_stream_synchronize(compute);
      },
      ::testing::ExitedWithCode(1),
      "tessera-run: rank 0: all_reduce #1 \\(bucket 0: fc\\.weight\\): NCCL "
      "failed on the device: ncclCommGetAsyncError: remote process exited "
      "or there was a network error \\(fake: rank 1 is gone\\)\nfake NCCL: "
      "communicator aborted");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
}

// Without a timeout nothing is watched: no events, no thread's work.
TEST_F(CommStream, ZeroTimeoutWatchesNothing) {
  ASSERT_TRUE(commWithTimeout(0));
  float *send = device(), *recv = device();
  Fill producer{send, iota(kCount, 9)};
  hold(compute);
  enqueue(compute, runFill, &producer);
  tsrt_all_reduce(23, kOwnAxis, send, recv, kCount, TSR_DTYPE_FLOAT32,
                  TSR_REDUCE_SUM, compute);
  EXPECT_EQ(ncclLastStream(), communication);
  EXPECT_EQ(tsr::watchedDeviceCollectives(), 0u);
  finish();
  EXPECT_EQ(peek(recv, kCount), producer.values);
  EXPECT_EQ(tsr::watchedDeviceCollectives(), 0u);
}

// A communicator destroyed with collectives in flight takes them off the
// watchdog, and their events go back to the pool.
TEST_F(CommStream, DestroyedCommunicatorIsNoLongerWatched) {
  tsr_comm_t *comm = commWithTimeout(30);
  ASSERT_TRUE(comm);
  float *send = device(), *recv = device();
  Fill producer{send, iota(kCount, 6)};
  hold(compute);
  enqueue(compute, runFill, &producer);
  tsrt_all_reduce(24, kOwnAxis, send, recv, kCount, TSR_DTYPE_FLOAT32,
                  TSR_REDUCE_SUM, compute);
  EXPECT_EQ(tsr::watchedDeviceCollectives(), 1u);
  tsr_comm_bind_axis(kOwnAxis, nullptr);
  tsr_comm_destroy(comm);
  own = nullptr;
  EXPECT_EQ(tsr::watchedDeviceCollectives(), 0u);
  finish();
  EXPECT_EQ(peek(recv, kCount), producer.values);
}
