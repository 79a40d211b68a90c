//===- CommBench.cpp - tsr_comm_all_reduce beside raw MPI_Allreduce -------===//
//
// Run under mpirun. For each message size, times MPI_Allreduce on a
// duplicate of MPI_COMM_WORLD, tsr_comm_all_reduce (MPI backend, with the
// watchdog on) and tsrt_all_reduce, the call compiled code makes (through
// the runtime's communication thread), on float32 SUM, taking turns, and
// prints the median bus bandwidth of each and their ratios to MPI's. The time
// of one iteration is the slowest rank's; bus bandwidth is 2(n-1)/n * bytes /
// time, as nccl-tests defines it.
//
//===----------------------------------------------------------------------===//

#include "tessera-runtime/Comm.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

const char *const kUsage =
    "usage: mpirun -np N tessera-comm-bench [--min-bytes B] [--max-bytes B]\n"
    "                                       [--iters N] [--warmup N]\n"
    "                                       [--timeout S]\n";

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void check(tsr_status_t status) {
  if (status == TSR_OK)
    return;
  std::fprintf(stderr, "tessera-comm-bench: %s\n", tsr_last_error());
  std::exit(1);
}

} // namespace

int main(int argc, char **argv) {
  size_t minBytes = 1 << 10, maxBytes = 64 << 20;
  int iters = 20, warmup = 5;
  double timeout = 30;
  for (int i = 1; i < argc; ++i) {
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fputs(kUsage, stderr);
        std::exit(1);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--min-bytes"))
      minBytes = std::strtoull(value(), nullptr, 10);
    else if (!std::strcmp(argv[i], "--max-bytes"))
      maxBytes = std::strtoull(value(), nullptr, 10);
    else if (!std::strcmp(argv[i], "--iters"))
      iters = std::atoi(value());
    else if (!std::strcmp(argv[i], "--warmup"))
      warmup = std::atoi(value());
    else if (!std::strcmp(argv[i], "--timeout"))
      timeout = std::atof(value());
    else {
      std::fputs(kUsage, stderr);
      return 1;
    }
  }
  if (minBytes < 4 || maxBytes < minBytes || iters < 1 || warmup < 0) {
    std::fputs(kUsage, stderr);
    return 1;
  }

  tsr_comm_options_t options = {timeout, -1};
  tsr_comm_t *world = nullptr;
  check(tsr_comm_init(TSR_COMM_MPI, &options, &world));
  int rank = tsr_comm_rank(world), size = tsr_comm_size(world);
  MPI_Comm raw;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw);
  check(tsr_comm_bind_axis(0, world));

  if (rank == 0) {
    std::printf("all-reduce float32 SUM, %d ranks, %d iterations after %d "
                "warm-up, median (watchdog %g s)\n",
                size, iters, warmup, timeout);
    std::printf("| size | MPI_Allreduce busbw GB/s | tsr_comm_all_reduce "
                "busbw GB/s | ratio | tsrt_all_reduce busbw GB/s | ratio "
                "|\n|---:|---:|---:|---:|---:|---:|\n");
  }
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= 4) {
    size_t count = bytes / sizeof(float);
    std::vector<float> send(count), recv(count);
    for (size_t i = 0; i < count; ++i)
      send[i] = static_cast<float>(rank + i % 7);
    std::vector<double> times[3];
    for (int it = 0; it < warmup + iters; ++it) {
      for (int which = 0; which < 3; ++which) {
        MPI_Barrier(raw);
        double start = MPI_Wtime();
        if (which == 0)
          MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count),
                        MPI_FLOAT, MPI_SUM, raw);
        else if (which == 1)
          check(tsr_comm_all_reduce(world, send.data(), recv.data(), count,
                                    TSR_DTYPE_FLOAT32, TSR_REDUCE_SUM,
                                    nullptr));
        else
          tsrt_all_reduce(-1, 0, send.data(), recv.data(),
                          static_cast<int64_t>(count), TSR_DTYPE_FLOAT32,
                          TSR_REDUCE_SUM, nullptr);
        double elapsed = MPI_Wtime() - start, slowest;
        MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, raw);
        if (it >= warmup)
          times[which].push_back(slowest);
      }
    }
    double factor = 2.0 * (size - 1) / size * static_cast<double>(bytes);
    double rawBw = factor / median(times[0]) / 1e9;
    double ourBw = factor / median(times[1]) / 1e9;
    double entryBw = factor / median(times[2]) / 1e9;
    if (rank == 0) {
      char label[32];
      if (bytes >= (1u << 20))
        std::snprintf(label, sizeof(label), "%zu MiB", bytes >> 20);
      else
        std::snprintf(label, sizeof(label), "%zu KiB", bytes >> 10);
      std::printf("| %s | %.3f | %.3f | %.2f | %.3f | %.2f |\n", label, rawBw,
                  ourBw, ourBw / rawBw, entryBw, entryBw / rawBw);
      std::fflush(stdout);
    }
  }
  MPI_Comm_free(&raw);
  check(tsr_comm_bind_axis(0, nullptr));
  tsr_comm_destroy(world);
  return 0;
}
