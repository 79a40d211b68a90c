//===- CommTest.cpp - Communicators in one process ------------------------===//
//
// The paths that need no launcher: argument checks, unbound axes (size 1:
// collectives copy), a one-rank MPI world, the TCP bootstrap between forked
// processes, and the GPU side, which skips without a device.
//
//===----------------------------------------------------------------------===//

#include "tessera-runtime/Comm.h"
#include "tessera-runtime/Device.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

// This binary runs OpenMPI inside the test process (MPI_Init in
// CommMpiSelf): OpenMPI keeps allocations until exit that LeakSanitizer
// would report as leaks, from plugins it has already unloaded (so they
// cannot be suppressed by library name). Leak checking of the runtime itself
// is tessera-runtime-tests' job.
extern "C" const char *__asan_default_options() { return "detect_leaks=0"; }

namespace {

// CommRawEnums.c: calls with any int where Comm.h takes an enum.
extern "C" tsr_status_t commInitRaw(int backend, tsr_comm_t **out_comm);
extern "C" tsr_status_t allReduceRaw(tsr_comm_t *comm, void *data, size_t count,
                                     int dtype, int op);

TEST(CommArguments, NullCommunicator) {
  float value = 1;
  EXPECT_EQ(tsr_comm_all_reduce(nullptr, &value, &value, 1, TSR_DTYPE_FLOAT32,
                                TSR_REDUCE_SUM, nullptr),
            TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(tsr_last_error(), "all_reduce: null communicator");
  EXPECT_EQ(tsr_comm_barrier(nullptr), TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tsr_comm_size(nullptr), 1);
  tsr_comm_destroy(nullptr);
}

TEST(CommArguments, InvalidBackend) {
  tsr_comm_t *comm = reinterpret_cast<tsr_comm_t *>(1);
  EXPECT_EQ(commInitRaw(7, &comm), TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(comm, nullptr);
  EXPECT_STREQ(tsr_last_error(), "tsr_comm_init: invalid backend 7");
}

TEST(CommUnboundAxis, CollectivesCopy) {
  EXPECT_EQ(tsrt_axis_size(5), 1);
  EXPECT_EQ(tsrt_axis_rank(5), 0);
  std::vector<float> send = {1, 2, 3, 4}, recv(4, 0);
  tsrt_all_reduce(0, 5, send.data(), recv.data(), 4, TSR_DTYPE_FLOAT32,
                  TSR_REDUCE_MEAN, nullptr);
  EXPECT_EQ(recv, send);
  std::vector<int64_t> a = {7, 8, 9}, b(3, 0), c(3, 0);
  tsrt_reduce_scatter(1, 5, a.data(), b.data(), 3, TSR_DTYPE_INT64,
                      TSR_REDUCE_SUM, nullptr);
  EXPECT_EQ(b, a);
  tsrt_all_gather(2, 5, b.data(), c.data(), 3, TSR_DTYPE_INT64, nullptr);
  EXPECT_EQ(c, a);
  std::vector<int64_t> d(3, 0), e(3, 0);
  tsrt_all_to_all(3, 5, a.data(), d.data(), 3, TSR_DTYPE_INT64, nullptr);
  EXPECT_EQ(d, a);
  tsrt_broadcast(4, 5, a.data(), e.data(), 3, TSR_DTYPE_INT64, 0, nullptr);
  EXPECT_EQ(e, a);
  // Started, then completed by tsrt_wait on the result buffer.
  std::vector<float> started(4, 0);
  tsrt_all_reduce_start(0, 5, recv.data(), started.data(), 4, TSR_DTYPE_FLOAT32,
                        TSR_REDUCE_SUM, nullptr);
  tsrt_wait(started.data(), nullptr);
  EXPECT_EQ(started, recv);
  // In place.
  tsrt_all_reduce(0, 5, send.data(), send.data(), 4, TSR_DTYPE_FLOAT32,
                  TSR_REDUCE_SUM, nullptr);
  EXPECT_EQ(send, recv);
}

TEST(CommUnboundAxis, IntegerMeanExits) {
  ASSERT_EQ(tsr_comm_describe_collective(4, "all_reduce #4 (bucket 0: steps)"),
            TSR_OK);
  tsr_comm_set_step(12);
  std::vector<int32_t> data(3, 1);
  EXPECT_EXIT(tsrt_all_reduce(4, 0, data.data(), data.data(), 3,
                              TSR_DTYPE_INT32, TSR_REDUCE_MEAN, nullptr),
              testing::ExitedWithCode(1),
              "tessera-run: rank 0: all_reduce #4 \\(bucket 0: steps\\) at "
              "step 12: all_reduce: MEAN needs a floating-point dtype, got "
              "int32");
  tsr_comm_set_step(-1);
  EXPECT_EXIT(tsrt_all_gather(9, 0, data.data(), data.data(), 3, 99, nullptr),
              testing::ExitedWithCode(1),
              "tessera-run: rank 0: collective #9: all_gather: invalid dtype "
              "99");
}

TEST(CommUnboundAxis, BindChecksTheAxis) {
  EXPECT_EQ(tsr_comm_bind_axis(-1, nullptr), TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tsr_comm_bind_axis(64, nullptr), TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tsr_comm_describe_collective(-2, "x"), TSR_ERROR_INVALID_ARGUMENT);
}

/// A one-rank MPI world (singleton MPI_Init, no launcher). MPI starts once
/// per process, so every test of the suite shares it.
class CommMpiSelf : public testing::Test {
protected:
  static void SetUpTestSuite() {
    tsr_comm_options_t options = {5.0, -1};
    ASSERT_EQ(tsr_comm_init(TSR_COMM_MPI, &options, &world), TSR_OK)
        << tsr_last_error();
  }
  static void TearDownTestSuite() {
    tsr_comm_destroy(world);
    world = nullptr;
  }
  static tsr_comm_t *world;
};

tsr_comm_t *CommMpiSelf::world = nullptr;

TEST_F(CommMpiSelf, SizeOne) {
  EXPECT_EQ(tsr_comm_size(world), 1);
  EXPECT_EQ(tsr_comm_rank(world), 0);
  EXPECT_EQ(tsr_comm_backend(world), TSR_COMM_MPI);
  std::vector<double> send = {1.5, -2, 3}, recv(3);
  for (tsr_reduce_op_t op :
       {TSR_REDUCE_SUM, TSR_REDUCE_MEAN, TSR_REDUCE_MAX, TSR_REDUCE_MIN}) {
    ASSERT_EQ(tsr_comm_all_reduce(world, send.data(), recv.data(), 3,
                                  TSR_DTYPE_FLOAT64, op, nullptr),
              TSR_OK)
        << tsr_last_error();
    EXPECT_EQ(recv, send);
  }
  std::vector<int16_t> shorts = {1, 2}, got(2);
  ASSERT_EQ(tsr_comm_all_gather(world, shorts.data(), got.data(), 2,
                                TSR_DTYPE_INT16, nullptr),
            TSR_OK);
  EXPECT_EQ(got, shorts);
  ASSERT_EQ(tsr_comm_barrier(world), TSR_OK);
}

TEST_F(CommMpiSelf, TwoByteFloats) {
  // 1.5 and 0.25 in float16 and bfloat16 survive a one-rank MEAN.
  std::vector<uint16_t> half = {0x3e00, 0x3400}, out(2);
  ASSERT_EQ(tsr_comm_all_reduce(world, half.data(), out.data(), 2,
                                TSR_DTYPE_FLOAT16, TSR_REDUCE_MEAN, nullptr),
            TSR_OK);
  EXPECT_EQ(out, half);
  std::vector<uint16_t> bf = {0x3fc0, 0x3e80};
  ASSERT_EQ(tsr_comm_all_reduce(world, bf.data(), out.data(), 2,
                                TSR_DTYPE_BFLOAT16, TSR_REDUCE_MAX, nullptr),
            TSR_OK);
  EXPECT_EQ(out, bf);
}

TEST_F(CommMpiSelf, Errors) {
  int32_t ints[2] = {1, 2};
  EXPECT_EQ(tsr_comm_all_reduce(world, ints, ints, 2, TSR_DTYPE_INT32,
                                TSR_REDUCE_MEAN, nullptr),
            TSR_ERROR_UNSUPPORTED);
  EXPECT_STREQ(tsr_last_error(),
               "all_reduce: MEAN needs a floating-point dtype, got int32");
  uint8_t flags[2] = {1, 0};
  EXPECT_EQ(tsr_comm_all_reduce(world, flags, flags, 2, TSR_DTYPE_BOOL,
                                TSR_REDUCE_SUM, nullptr),
            TSR_ERROR_UNSUPPORTED);
  EXPECT_EQ(tsr_comm_all_reduce(world, ints, ints, 2, TSR_DTYPE_INVALID,
                                TSR_REDUCE_SUM, nullptr),
            TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(allReduceRaw(world, ints, 2, TSR_DTYPE_INT32, 9),
            TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(tsr_last_error(), "all_reduce: invalid reduction 9");
  EXPECT_EQ(allReduceRaw(world, ints, 2, 99, TSR_REDUCE_SUM),
            TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(tsr_last_error(), "all_reduce: invalid dtype 99");
  EXPECT_EQ(tsr_comm_all_reduce(world, nullptr, ints, 2, TSR_DTYPE_INT32,
                                TSR_REDUCE_SUM, nullptr),
            TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tsr_comm_broadcast(world, ints, 2, TSR_DTYPE_INT32, 1, nullptr),
            TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(tsr_last_error(), "broadcast: root 1 is not a rank of a "
                                 "communicator of size 1");
  EXPECT_EQ(tsr_comm_send(world, ints, 2, TSR_DTYPE_INT32, -1, nullptr),
            TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tsr_comm_all_gather(world, ints, ints, 2, TSR_DTYPE_INT32, nullptr),
            TSR_ERROR_INVALID_ARGUMENT);
  tsr_comm_t *child = nullptr;
  EXPECT_EQ(tsr_comm_split(world, -1, 0, &child), TSR_ERROR_INVALID_ARGUMENT);
}

TEST_F(CommMpiSelf, SplitAndBoundAxis) {
  tsr_comm_t *child = nullptr;
  ASSERT_EQ(tsr_comm_split(world, 3, 0, &child), TSR_OK) << tsr_last_error();
  EXPECT_EQ(tsr_comm_size(child), 1);
  ASSERT_EQ(tsr_comm_bind_axis(1, child), TSR_OK);
  EXPECT_EQ(tsrt_axis_size(1), 1);
  std::vector<float> send = {4, 5}, recv(2);
  tsrt_all_reduce(0, 1, send.data(), recv.data(), 2, TSR_DTYPE_FLOAT32,
                  TSR_REDUCE_SUM, nullptr);
  EXPECT_EQ(recv, send);
  std::vector<int32_t> data(2, 1);
  ASSERT_EQ(tsr_comm_describe_collective(6, "all_reduce #6 (counters)"),
            TSR_OK);
  EXPECT_EXIT(tsrt_all_reduce(6, 1, data.data(), data.data(), 2,
                              TSR_DTYPE_INT32, TSR_REDUCE_MEAN, nullptr),
              testing::ExitedWithCode(1),
              "tessera-run: rank 0: all_reduce #6 \\(counters\\): "
              "all_reduce: MEAN needs a floating-point dtype, got int32");
  ASSERT_EQ(tsr_comm_bind_axis(1, nullptr), TSR_OK);
  tsr_comm_destroy(child);
}

//===----------------------------------------------------------------------===//
// TCP bootstrap between forked processes
//===----------------------------------------------------------------------===//

/// A port that was free a moment ago.
int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

/// Runs `body(rank)` in `n` forked processes; returns their exit codes.
template <typename Fn> std::vector<int> forkRanks(int n, Fn body) {
  std::vector<pid_t> pids;
  for (int rank = 0; rank < n; ++rank) {
    pid_t pid = fork();
    if (pid == 0)
      _exit(body(rank));
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 100);
  }
  return codes;
}

TEST(CommBootstrap, BroadcastsABlob) {
  int port = freePort();
  std::vector<int> codes = forkRanks(4, [port](int rank) {
    std::vector<unsigned char> blob(3000);
    for (size_t i = 0; i < blob.size(); ++i)
      blob[i] = rank == 0 ? static_cast<unsigned char>(i * 7 + 1) : 0;
    if (tsr_bootstrap_tcp_broadcast("127.0.0.1", port, rank, 4, blob.data(),
                                    blob.size(), 20) != TSR_OK) {
      std::fprintf(stderr, "rank %d: %s\n", rank, tsr_last_error());
      return 1;
    }
    for (size_t i = 0; i < blob.size(); ++i)
      if (blob[i] != static_cast<unsigned char>(i * 7 + 1))
        return 2;
    return 0;
  });
  EXPECT_EQ(codes, std::vector<int>(4, 0));
}

TEST(CommBootstrap, OneRankIsTrivial) {
  char byte = 'x';
  EXPECT_EQ(tsr_bootstrap_tcp_broadcast(nullptr, 1, 0, 1, &byte, 1, 1), TSR_OK);
  // One rank needs no port (found on a GPU: a one-rank NCCL world).
  EXPECT_EQ(tsr_bootstrap_tcp_broadcast(nullptr, 0, 0, 1, &byte, 1, 1), TSR_OK);
  EXPECT_EQ(tsr_bootstrap_tcp_broadcast("localhost", 1, 2, 2, &byte, 1, 1),
            TSR_ERROR_INVALID_ARGUMENT);
}

TEST(CommBootstrap, MissingRankTimesOut) {
  int port = freePort();
  char byte = 0;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(tsr_bootstrap_tcp_broadcast("127.0.0.1", port, 0, 3, &byte, 1, 0.5),
            TSR_ERROR_IO);
  EXPECT_STREQ(tsr_last_error(),
               ("tcp bootstrap: timed out with 1 of 3 ranks connected on "
                "port " +
                std::to_string(port))
                   .c_str());
  EXPECT_EQ(tsr_bootstrap_tcp_broadcast("127.0.0.1", port, 1, 3, &byte, 1, 0.5),
            TSR_ERROR_IO);
  EXPECT_NE(std::strstr(tsr_last_error(), "cannot connect to rank 0"), nullptr)
      << tsr_last_error();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(CommBootstrap, SizeMismatch) {
  int port = freePort();
  std::vector<int> codes = forkRanks(2, [port](int rank) {
    std::vector<char> blob(rank == 0 ? 8 : 16);
    tsr_status_t s = tsr_bootstrap_tcp_broadcast("127.0.0.1", port, rank, 2,
                                                 blob.data(), blob.size(), 5);
    if (rank == 0)
      return s == TSR_ERROR_IO &&
                     std::strstr(tsr_last_error(), "rank 1 expects 16 bytes")
                 ? 0
                 : 1;
    return s == TSR_ERROR_IO ? 0 : 1;
  });
  EXPECT_EQ(codes, std::vector<int>(2, 0));
}

//===----------------------------------------------------------------------===//
// GPU: devices and NCCL
//===----------------------------------------------------------------------===//

TEST(CommDevice, NoDeviceIsUnsupported) {
  if (tsr_device_count() > 0)
    GTEST_SKIP() << "a CUDA device is present";
  void *ptr = reinterpret_cast<void *>(1);
  EXPECT_EQ(tsr_device_alloc(16, &ptr), TSR_ERROR_UNSUPPORTED);
  EXPECT_EQ(ptr, nullptr);
  EXPECT_NE(std::strstr(tsr_last_error(), "tsr_device_alloc: "), nullptr);
  void *stream = nullptr;
  EXPECT_EQ(tsr_stream_create(&stream), TSR_ERROR_UNSUPPORTED);
  // Tensors in device or pinned memory cannot be made either.
  int64_t shape[] = {2, 3};
  for (tsr_placement_t placement :
       {TSR_PLACEMENT_DEVICE, TSR_PLACEMENT_PINNED_HOST}) {
    tsr_tensor_t *tensor = nullptr;
    EXPECT_EQ(tsr_tensor_create_placed(placement, TSR_DTYPE_FLOAT32, 2, shape,
                                       &tensor),
              TSR_ERROR_UNSUPPORTED);
    EXPECT_EQ(tensor, nullptr);
    EXPECT_EQ(std::string(tsr_last_error())
                  .rfind(std::string("cannot allocate ") +
                             tsr_placement_name(placement) +
                             " memory: 24 bytes for a float32[2, 3] tensor: ",
                         0),
              0u)
        << tsr_last_error();
  }

  tsr_comm_t *comm = nullptr;
  tsr_status_t status = tsr_comm_init(TSR_COMM_NCCL, nullptr, &comm);
  EXPECT_TRUE(status == TSR_ERROR_UNSUPPORTED || status == TSR_ERROR_LOAD)
      << tsr_status_name(status);
  EXPECT_EQ(comm, nullptr);
  std::string error = tsr_last_error();
  EXPECT_TRUE(error.find("CUDA") != std::string::npos ||
              error.find("libtessera_comm_nccl.so") != std::string::npos)
      << error;
}

// Where this build has the NCCL plugin, it loads without a GPU, and the
// backend refuses for want of a device only.
TEST(CommDevice, NcclPluginLoadsWithoutDevice) {
#ifndef TSR_TEST_NCCL_PLUGIN
  GTEST_SKIP() << "the NCCL plugin was not built (no CUDA toolkit or NCCL "
                  "found at configure time)";
#else
  if (tsr_device_count() > 0)
    GTEST_SKIP() << "a CUDA device is present (CommDevice.NcclOneRank loads "
                 << TSR_TEST_NCCL_PLUGIN << ")";
  tsr_comm_t *comm = nullptr;
  EXPECT_EQ(tsr_comm_init(TSR_COMM_NCCL, nullptr, &comm), TSR_ERROR_UNSUPPORTED)
      << tsr_last_error();
  EXPECT_EQ(comm, nullptr);
  std::string error = tsr_last_error();
  EXPECT_EQ(error.rfind("NCCL: ", 0), 0u) << error;
  EXPECT_NE(error.find("CUDA device"), std::string::npos) << error;
#endif
}

TEST(CommDevice, MemoryStreamsEvents) {
  if (tsr_device_count() == 0)
    GTEST_SKIP() << "no CUDA device";
  ASSERT_EQ(tsr_device_set(0), TSR_OK) << tsr_last_error();
  const size_t n = 1 << 20;
  void *device = nullptr, *pinned = nullptr, *stream = nullptr;
  void *start = nullptr, *end = nullptr;
  ASSERT_EQ(tsr_device_alloc(n * 4, &device), TSR_OK) << tsr_last_error();
  ASSERT_EQ(tsr_host_alloc_pinned(n * 4, &pinned), TSR_OK);
  ASSERT_EQ(tsr_stream_create(&stream), TSR_OK);
  ASSERT_EQ(tsr_event_create(&start), TSR_OK);
  ASSERT_EQ(tsr_event_create(&end), TSR_OK);
  float *host = static_cast<float *>(pinned);
  for (size_t i = 0; i < n; ++i)
    host[i] = static_cast<float>(i);
  ASSERT_EQ(tsr_event_record(start, stream), TSR_OK);
  ASSERT_EQ(tsr_device_memcpy(device, host, n * 4, stream), TSR_OK);
  ASSERT_EQ(tsr_event_record(end, stream), TSR_OK);
  ASSERT_EQ(tsr_stream_synchronize(stream), TSR_OK);
  float ms = -1;
  ASSERT_EQ(tsr_event_elapsed_ms(start, end, &ms), TSR_OK);
  EXPECT_GE(ms, 0);
  std::vector<float> back(n);
  ASSERT_EQ(tsr_device_memcpy(back.data(), device, n * 4, nullptr), TSR_OK);
  for (size_t i = 0; i < n; i += 4099)
    EXPECT_EQ(back[i], static_cast<float>(i));
  EXPECT_EQ(tsr_event_destroy(start), TSR_OK);
  EXPECT_EQ(tsr_event_destroy(end), TSR_OK);
  EXPECT_EQ(tsr_stream_destroy(stream), TSR_OK);
  tsr_host_free_pinned(pinned);
  tsr_device_free(device);
}

TEST(CommDevice, NcclOneRank) {
  if (tsr_device_count() == 0)
    GTEST_SKIP() << "no CUDA device";
  tsr_comm_t *comm = nullptr;
  tsr_comm_options_t options = {0, 0};
  ASSERT_EQ(tsr_comm_init(TSR_COMM_NCCL, &options, &comm), TSR_OK)
      << tsr_last_error();
  EXPECT_EQ(tsr_comm_size(comm), 1);
  EXPECT_EQ(tsr_comm_backend(comm), TSR_COMM_NCCL);
  const size_t n = 1000;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i)
    host[i] = static_cast<float>(i);
  void *send = nullptr, *recv = nullptr;
  ASSERT_EQ(tsr_device_alloc(n * 4, &send), TSR_OK);
  ASSERT_EQ(tsr_device_alloc(n * 4, &recv), TSR_OK);
  ASSERT_EQ(tsr_device_memcpy(send, host.data(), n * 4, nullptr), TSR_OK);
  ASSERT_EQ(tsr_comm_all_reduce(comm, send, recv, n, TSR_DTYPE_FLOAT32,
                                TSR_REDUCE_MEAN, nullptr),
            TSR_OK)
      << tsr_last_error();
  ASSERT_EQ(tsr_comm_barrier(comm), TSR_OK) << tsr_last_error();
  std::vector<float> back(n);
  ASSERT_EQ(tsr_device_memcpy(back.data(), recv, n * 4, nullptr), TSR_OK);
  EXPECT_EQ(back, host);
  tsr_device_free(send);
  tsr_device_free(recv);
  tsr_comm_destroy(comm);
}

} // namespace

TEST(CommUnboundAxis, WaitWithoutStartExits) {
  float buffer[2] = {0, 0};
  EXPECT_EXIT(tsrt_wait(buffer, nullptr), ::testing::ExitedWithCode(1),
              "tsrt_wait: no collective in flight writes");
}
