//===- CommMpiProgram.cpp - Communicator checks on N ranks under mpirun ---===//
//
// `comm-mpi-program collectives` checks every collective, splits and the
// tsrt_* entry points against values computed in closed form; rank 0
// prints "collectives ok". The other modes make one rank fail for
// CommLaunchTest.cpp:
//   stop T R     rank R stops itself (SIGSTOP) before the 4th all-reduce;
//   hang T R     rank R sleeps forever instead;
//   kill T R     rank R dies by SIGKILL instead;
//   relay T R    on 3 ranks, rank R stops while rank (R+2)%3 receives from
//                it and the third rank receives from that one with a
//                patience of 2 timeouts.
// T is the watchdog's timeout in seconds.
//
//===----------------------------------------------------------------------===//

#include "tessera-runtime/Comm.h"

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

int worldRank = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", worldRank,    \
                   __FILE__, __LINE__, #cond);                                 \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)

#define CHECK_OK(call)                                                         \
  do {                                                                         \
    tsr_status_t status_ = (call);                                             \
    if (status_ != TSR_OK) {                                                   \
      std::fprintf(stderr, "rank %d: %s:%d: %s: %s\n", worldRank, __FILE__,    \
                   __LINE__, #call, tsr_last_error());                         \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)

uint16_t toHalf(float value) {
  // Exact for the small integers used here.
  if (value == 0)
    return 0;
  int exponent = 0;
  float m = value;
  while (m >= 2) {
    m /= 2;
    ++exponent;
  }
  return static_cast<uint16_t>(((exponent + 15) << 10) |
                               static_cast<int>((m - 1) * 1024));
}

uint16_t toBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);
}

void checkAllReduce(tsr_comm_t *comm) {
  int r = tsr_comm_rank(comm), n = tsr_comm_size(comm);
  const size_t m = 1000;

  std::vector<int64_t> i64(m), i64out(m);
  for (size_t i = 0; i < m; ++i)
    i64[i] = r * 1000 + static_cast<int64_t>(i);
  CHECK_OK(tsr_comm_all_reduce(comm, i64.data(), i64out.data(), m,
                               TSR_DTYPE_INT64, TSR_REDUCE_SUM, nullptr));
  for (size_t i = 0; i < m; ++i)
    CHECK(i64out[i] == 1000 * n * (n - 1) / 2 + n * static_cast<int64_t>(i));

  std::vector<double> f64(m);
  for (size_t i = 0; i < m; ++i)
    f64[i] = r + static_cast<double>(i);
  CHECK_OK(tsr_comm_all_reduce(comm, f64.data(), f64.data(), m,
                               TSR_DTYPE_FLOAT64, TSR_REDUCE_MEAN, nullptr));
  for (size_t i = 0; i < m; ++i)
    CHECK(f64[i] == (n - 1) / 2.0 + static_cast<double>(i));

  std::vector<int32_t> i32(m), i32out(m);
  for (size_t i = 0; i < m; ++i)
    i32[i] = (r + 1) * static_cast<int32_t>(i + 1);
  CHECK_OK(tsr_comm_all_reduce(comm, i32.data(), i32out.data(), m,
                               TSR_DTYPE_INT32, TSR_REDUCE_MAX, nullptr));
  for (size_t i = 0; i < m; ++i)
    CHECK(i32out[i] == n * static_cast<int32_t>(i + 1));
  CHECK_OK(tsr_comm_all_reduce(comm, i32.data(), i32out.data(), m,
                               TSR_DTYPE_INT32, TSR_REDUCE_MIN, nullptr));
  for (size_t i = 0; i < m; ++i)
    CHECK(i32out[i] == static_cast<int32_t>(i + 1));

  std::vector<float> f32(m), f32out(m);
  for (size_t i = 0; i < m; ++i)
    f32[i] = static_cast<float>(r * (i % 13));
  CHECK_OK(tsr_comm_all_reduce(comm, f32.data(), f32out.data(), m,
                               TSR_DTYPE_FLOAT32, TSR_REDUCE_SUM, nullptr));
  for (size_t i = 0; i < m; ++i)
    CHECK(f32out[i] == static_cast<float>(n * (n - 1) / 2 * (i % 13)));

  std::vector<uint8_t> u8(m), u8out(m);
  for (size_t i = 0; i < m; ++i)
    u8[i] = static_cast<uint8_t>((r * 31 + i) % 256);
  CHECK_OK(tsr_comm_all_reduce(comm, u8.data(), u8out.data(), m,
                               TSR_DTYPE_UINT8, TSR_REDUCE_MAX, nullptr));
  for (size_t i = 0; i < m; ++i) {
    uint8_t expected = 0;
    for (int q = 0; q < n; ++q)
      expected = std::max<uint8_t>(expected, (q * 31 + i) % 256);
    CHECK(u8out[i] == expected);
  }

  // float16 SUM of r + 1 is n(n+1)/2; bfloat16 MEAN of 2(r+1) is n+1.
  std::vector<uint16_t> half(m, toHalf(static_cast<float>(r + 1)));
  CHECK_OK(tsr_comm_all_reduce(comm, half.data(), half.data(), m,
                               TSR_DTYPE_FLOAT16, TSR_REDUCE_SUM, nullptr));
  for (size_t i = 0; i < m; ++i)
    CHECK(half[i] == toHalf(static_cast<float>(n * (n + 1) / 2)));
  std::vector<uint16_t> bf(m, toBfloat16(static_cast<float>(2 * (r + 1))));
  CHECK_OK(tsr_comm_all_reduce(comm, bf.data(), bf.data(), m,
                               TSR_DTYPE_BFLOAT16, TSR_REDUCE_MEAN, nullptr));
  for (size_t i = 0; i < m; ++i)
    CHECK(bf[i] == toBfloat16(static_cast<float>(n + 1)));

  // Refused before any message: every rank fails alike.
  CHECK(tsr_comm_all_reduce(comm, i32.data(), i32out.data(), m, TSR_DTYPE_INT32,
                            TSR_REDUCE_MEAN, nullptr) == TSR_ERROR_UNSUPPORTED);
  CHECK(std::strstr(tsr_last_error(), "MEAN needs a floating-point dtype"));
}

void checkOthers(tsr_comm_t *comm) {
  int r = tsr_comm_rank(comm), n = tsr_comm_size(comm);
  const int m = 37;

  std::vector<int32_t> send(n * m), block(m);
  for (int b = 0; b < n; ++b)
    for (int j = 0; j < m; ++j)
      send[b * m + j] = r + b * 10 + j;
  CHECK_OK(tsr_comm_reduce_scatter(comm, send.data(), block.data(), m,
                                   TSR_DTYPE_INT32, TSR_REDUCE_SUM, nullptr));
  for (int j = 0; j < m; ++j)
    CHECK(block[j] == n * (n - 1) / 2 + n * (10 * r + j));

  std::vector<float> fsend(n * m), fblock(m);
  for (int b = 0; b < n; ++b)
    for (int j = 0; j < m; ++j)
      fsend[b * m + j] = static_cast<float>(2 * r + b + j);
  CHECK_OK(tsr_comm_reduce_scatter(comm, fsend.data(), fblock.data(), m,
                                   TSR_DTYPE_FLOAT32, TSR_REDUCE_MEAN,
                                   nullptr));
  for (int j = 0; j < m; ++j)
    CHECK(fblock[j] == static_cast<float>(n - 1 + r + j));

  std::vector<int64_t> mine(m), all(n * m);
  for (int j = 0; j < m; ++j)
    mine[j] = r * 100 + j;
  CHECK_OK(tsr_comm_all_gather(comm, mine.data(), all.data(), m,
                               TSR_DTYPE_INT64, nullptr));
  for (int q = 0; q < n; ++q)
    for (int j = 0; j < m; ++j)
      CHECK(all[q * m + j] == q * 100 + j);

  std::vector<int32_t> out(n * m), in(n * m);
  for (int p = 0; p < n; ++p)
    for (int j = 0; j < m; ++j)
      out[p * m + j] = r * 1000 + p * 10 + j;
  CHECK_OK(tsr_comm_all_to_all(comm, out.data(), in.data(), m, TSR_DTYPE_INT32,
                               nullptr));
  for (int p = 0; p < n; ++p)
    for (int j = 0; j < m; ++j)
      CHECK(in[p * m + j] == p * 1000 + r * 10 + j);

  int root = n - 1;
  std::vector<double> buffer(m);
  for (int j = 0; j < m; ++j)
    buffer[j] = r == root ? 0.5 * j : -1;
  CHECK_OK(tsr_comm_broadcast(comm, buffer.data(), m, TSR_DTYPE_FLOAT64, root,
                              nullptr));
  for (int j = 0; j < m; ++j)
    CHECK(buffer[j] == 0.5 * j);
  CHECK(tsr_comm_broadcast(comm, buffer.data(), m, TSR_DTYPE_FLOAT64, n,
                           nullptr) == TSR_ERROR_INVALID_ARGUMENT);

  // A ring: even ranks send first, odd ranks receive first.
  if (n > 1) {
    int next = (r + 1) % n, previous = (r + n - 1) % n;
    std::vector<int32_t> token(m, r), got(m, -1);
    if (r % 2 == 0) {
      CHECK_OK(
          tsr_comm_send(comm, token.data(), m, TSR_DTYPE_INT32, next, nullptr));
      CHECK_OK(tsr_comm_recv(comm, got.data(), m, TSR_DTYPE_INT32, previous,
                             nullptr));
    } else {
      CHECK_OK(tsr_comm_recv(comm, got.data(), m, TSR_DTYPE_INT32, previous,
                             nullptr));
      CHECK_OK(
          tsr_comm_send(comm, token.data(), m, TSR_DTYPE_INT32, next, nullptr));
    }
    for (int j = 0; j < m; ++j)
      CHECK(got[j] == previous);
  }
  CHECK_OK(tsr_comm_barrier(comm));
}

void checkSplit(tsr_comm_t *world) {
  int r = tsr_comm_rank(world), n = tsr_comm_size(world);
  // Even and odd ranks, each in decreasing order of world rank.
  tsr_comm_t *half = nullptr;
  CHECK_OK(tsr_comm_split(world, r % 2, -r, &half));
  int members = 0, above = 0, sum = 0;
  for (int q = r % 2; q < n; q += 2) {
    ++members;
    above += q > r;
    sum += q;
  }
  CHECK(tsr_comm_size(half) == members);
  CHECK(tsr_comm_rank(half) == above);
  int32_t value = r, total = 0;
  CHECK_OK(tsr_comm_all_reduce(half, &value, &total, 1, TSR_DTYPE_INT32,
                               TSR_REDUCE_SUM, nullptr));
  CHECK(total == sum);
  checkOthers(half);

  // The entry points of compiled code over bound axes.
  CHECK_OK(tsr_comm_bind_axis(0, world));
  CHECK_OK(tsr_comm_bind_axis(1, half));
  CHECK_OK(tsr_comm_describe_collective(0, "all_reduce #0 (grads)"));
  CHECK(tsrt_axis_size(0) == n && tsrt_axis_rank(0) == r);
  CHECK(tsrt_axis_size(1) == members && tsrt_axis_rank(1) == above);
  CHECK(tsrt_axis_size(2) == 1 && tsrt_axis_rank(2) == 0);
  std::vector<float> grads(64), mean(64);
  for (int i = 0; i < 64; ++i)
    grads[i] = static_cast<float>(r + i);
  tsrt_all_reduce(0, 0, grads.data(), mean.data(), 64, TSR_DTYPE_FLOAT32,
                  TSR_REDUCE_MEAN, nullptr);
  for (int i = 0; i < 64; ++i)
    CHECK(mean[i] == (n - 1) / 2.0f + i);
  std::vector<int64_t> shards(members * 3), shard(3), gathered(members * 3);
  for (int b = 0; b < members; ++b)
    for (int j = 0; j < 3; ++j)
      shards[b * 3 + j] = b * 10 + j;
  tsrt_reduce_scatter(1, 1, shards.data(), shard.data(), 3, TSR_DTYPE_INT64,
                      TSR_REDUCE_SUM, nullptr);
  for (int j = 0; j < 3; ++j)
    CHECK(shard[j] == members * (above * 10 + j));
  tsrt_all_gather(2, 1, shard.data(), gathered.data(), 3, TSR_DTYPE_INT64,
                  nullptr);
  for (int b = 0; b < members; ++b)
    for (int j = 0; j < 3; ++j)
      CHECK(gathered[b * 3 + j] == members * (b * 10 + j));
  // Block p of rank r's message holds 100 r + p: rank r receives 100 p + r
  // from every rank p.
  std::vector<int64_t> outgoing(n * 2), incoming(n * 2);
  for (int p = 0; p < n; ++p)
    outgoing[p * 2] = outgoing[p * 2 + 1] = 100 * r + p;
  tsrt_all_to_all(3, 0, outgoing.data(), incoming.data(), n * 2,
                  TSR_DTYPE_INT64, nullptr);
  for (int p = 0; p < n; ++p)
    CHECK(incoming[p * 2] == 100 * p + r && incoming[p * 2 + 1] == 100 * p + r);
  std::vector<float> mine(5, static_cast<float>(r)), root(5, -1.0f);
  tsrt_broadcast(4, 0, mine.data(), root.data(), 5, TSR_DTYPE_FLOAT32, n - 1,
                 nullptr);
  for (float v : root)
    CHECK(v == static_cast<float>(n - 1));
  // Two collectives in flight at once, a blocking one issued behind them,
  // and the waits in the other order: all complete, in issue order.
  std::vector<float> first(32, static_cast<float>(r)), firstSum(32);
  std::vector<int64_t> second(members * 2, r), secondShard(2);
  tsrt_all_reduce_start(5, 0, first.data(), firstSum.data(), 32,
                        TSR_DTYPE_FLOAT32, TSR_REDUCE_SUM, nullptr);
  tsrt_reduce_scatter_start(6, 1, second.data(), secondShard.data(), 2,
                            TSR_DTYPE_INT64, TSR_REDUCE_SUM, nullptr);
  std::vector<float> between(3, 1.0f), betweenMean(3);
  tsrt_all_reduce(7, 0, between.data(), betweenMean.data(), 3,
                  TSR_DTYPE_FLOAT32, TSR_REDUCE_MEAN, nullptr);
  // The send buffers may change once the collectives have started.
  std::fill(first.begin(), first.end(), -1.0f);
  std::fill(second.begin(), second.end(), -1);
  tsrt_wait(secondShard.data(), nullptr);
  tsrt_wait(firstSum.data(), nullptr);
  for (float v : firstSum)
    CHECK(v == n * (n - 1) / 2.0f);
  for (int64_t v : secondShard) // the sum of this half's world ranks
    CHECK(v == sum);
  for (float v : betweenMean)
    CHECK(v == 1.0f);
  CHECK_OK(tsr_comm_bind_axis(0, nullptr));
  CHECK_OK(tsr_comm_bind_axis(1, nullptr));
  tsr_comm_destroy(half);
}

/// Four steps of a gradient all-reduce; `victim` fails before the last.
void runFailure(tsr_comm_t *world, const char *mode, int victim) {
  CHECK_OK(tsr_comm_bind_axis(0, world));
  CHECK_OK(tsr_comm_describe_collective(
      3, "all_reduce #3 (bucket 1: fc1.weight, fc1.bias)"));
  std::vector<float> grads(1 << 16, 1.0f);
  for (int step = 4; step < 8; ++step) {
    tsr_comm_set_step(step);
    if (step == 7 && worldRank == victim) {
      std::fprintf(stderr, "rank %d: failing (%s) before step %d\n", worldRank,
                   mode, step);
      if (!std::strcmp(mode, "stop"))
        raise(SIGSTOP);
      else if (!std::strcmp(mode, "kill"))
        raise(SIGKILL);
      else
        for (;;)
          sleep(1000);
    }
    tsrt_all_reduce(3, 0, grads.data(), grads.data(),
                    static_cast<int64_t>(grads.size()), TSR_DTYPE_FLOAT32,
                    TSR_REDUCE_MEAN, nullptr);
  }
  std::fprintf(stderr, "rank %d: every step completed\n", worldRank);
}

/// A chain of receives: `victim` stops, `waiter` waits for its message
/// and the third rank, with twice the patience, for the waiter's.
void runRelay(tsr_comm_t *world, int victim) {
  CHECK(tsr_comm_size(world) == 3);
  int waiter = (victim + 2) % 3;
  float value = 1.0f;
  if (worldRank == victim) {
    std::fprintf(stderr, "rank %d: failing (relay)\n", worldRank);
    raise(SIGSTOP);
  } else if (worldRank == waiter) {
    tsr_comm_set_label(world, "relay from the stopped rank");
    CHECK_OK(
        tsr_comm_recv(world, &value, 1, TSR_DTYPE_FLOAT32, victim, nullptr));
  } else {
    tsr_comm_set_label(world, "relay from the waiting rank");
    tsr_comm_set_patience(world, 2);
    CHECK_OK(
        tsr_comm_recv(world, &value, 1, TSR_DTYPE_FLOAT32, waiter, nullptr));
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: comm-mpi-program collectives | (stop|hang|kill|relay) "
                 "TIMEOUT RANK\n");
    return 2;
  }
  std::string mode = argv[1];
  double timeout = argc > 2 ? std::atof(argv[2]) : 10;
  tsr_comm_options_t options = {timeout, -1};
  tsr_comm_t *world = nullptr;
  CHECK_OK(tsr_comm_init(TSR_COMM_MPI, &options, &world));
  worldRank = tsr_comm_rank(world);
  CHECK(tsr_comm_backend(world) == TSR_COMM_MPI);
  if (mode == "collectives") {
    checkAllReduce(world);
    checkOthers(world);
    checkSplit(world);
    if (worldRank == 0)
      std::printf("collectives ok on %d ranks\n", tsr_comm_size(world));
  } else if (argc == 4 && mode == "relay") {
    runRelay(world, std::atoi(argv[3]));
  } else if (argc == 4) {
    runFailure(world, mode.c_str(), std::atoi(argv[3]));
  } else {
    return 2;
  }
  tsr_comm_destroy(world);
  return 0;
}
