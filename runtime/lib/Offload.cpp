//===- Offload.cpp - Activation offload: host pool and transfer thread ----===//
//
// Compiled code copies a saved activation to host memory after the forward
// pass has made it and back before the backward pass reads it
// (tsr-offload), through four calls per transfer: tsrt_offload_start,
// tsrt_offload_wait, tsrt_prefetch_start, tsrt_prefetch_wait. A transfer is
// named by the number the compiler gave it; between its copy out and its
// copy back the runtime holds the bytes in a block of the *host pool*, which
// is counted apart from compiled code's allocations (the *device pool*,
// Memory.cpp): the point of offload is that the device pool's peak falls
// while the host pool holds the difference. A transfer's block is kept for
// the next step (which offloads the same bytes under the same number), as
// pinned host buffers are on a GPU: mapping and faulting it in every step
// cost more than the copy.
//
// The copies run on one transfer thread in the order they start (a GPU's
// copy engine, or the PCIe link, serializes them too), so that the compute
// between a start and its wait overlaps the copy. On a CPU a copy is a
// memcpy at memory speed, far faster than a PCIe link: tsr_set_host_bandwidth
// makes each copy last at least bytes / bandwidth (the thread sleeps out the
// rest), so the overlap the compiler planned can be measured here. The
// statistics separate the transfer thread's busy time from the time
// compiled code spent blocked in the waits; the difference was hidden.
//
// The same thread makes the copies around a host program (a step whose
// optimizer update runs on the host, tsr-offload-optimizer): the gradients
// down before it, the parameters up before the next device program
// (Artifact.cpp). Their statistics are kept apart (tsr_host_program_stats),
// and the buffers a host program reads and writes are counted in the host
// pool too (tsr::noteHostPoolBytes).
//
// Compiled code cannot take a status: misuse of a transfer (a wait with no
// copy in flight, a number started twice, a size that changed) and a host
// allocation that fails print one line and end the process, as the
// collectives do (CommEntry.cpp).
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "RuntimeInternal.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include <sys/mman.h>

using namespace tsr;

namespace {

using Clock = std::chrono::steady_clock;

/// Host blocks of at least this many bytes are mapped (zero pages, returned
/// to the system when freed), smaller ones come from malloc.
constexpr size_t kMappedBytes = size_t(1) << 20;
/// Transfer numbers are small: the compiler numbers an artifact's offloaded
/// values from 0.
constexpr int64_t kMaxTransfers = 1 << 20;

/// Ends the process (called with the transfers' lock held, so without
/// static destructors, one of which would take it again).
[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "tessera-run: rank %d: %s\n", processRank(),
               message.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(1);
}

/// Where one transfer stands within a call.
enum class Phase { Idle, CopyingOut, OnHost, CopyingIn };

struct Transfer {
  Phase phase = Phase::Idle;
  char *host = nullptr;
  size_t bytes = 0;
  /// The device buffer of the copy in flight.
  const void *device = nullptr;
  /// The serial number of its copy in flight.
  uint64_t ticket = 0;
};

struct Job {
  const void *from;
  void *to;
  size_t bytes;
  uint64_t ticket;
  /// A copy around a host program (else an offloaded value's).
  bool program;
};

/// Copies of one kind since the last reset.
struct Counts {
  uint64_t count = 0, toHost = 0, toDevice = 0;
  double busy = 0, waited = 0;

  void read(tsr_transfer_stats_t *out) const {
    out->transfers = count;
    out->bytes_to_host = toHost;
    out->bytes_to_device = toDevice;
    out->busy_seconds = busy;
    out->waited_seconds = waited;
  }
};

class Transfers {
public:
  ~Transfers() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    if (worker.joinable())
      worker.join();
    for (Transfer &t : table)
      freeHost(t.host, t.bytes);
  }

  void offloadStart(int64_t number, const void *device, int64_t bytes) {
    std::unique_lock<std::mutex> lock(mutex);
    Transfer &t = at(number, "tsrt_offload_start");
    if (t.phase != Phase::Idle)
      die(label(number) + ": started again before its copy back completed");
    if (bytes < 0)
      die(label(number) + ": a negative size (" + std::to_string(bytes) +
          " bytes)");
    // The next step offloads the same bytes under the same number: its
    // block is kept (already faulted in) rather than mapped again.
    if (t.host && t.bytes != static_cast<size_t>(bytes)) {
      freeHost(t.host, t.bytes);
      t.host = nullptr;
    }
    t.bytes = static_cast<size_t>(bytes);
    if (!t.host)
      t.host = allocateHost(t.bytes);
    if (!t.host && t.bytes > 0)
      die(label(number) + ": cannot allocate " + std::to_string(t.bytes) +
          " bytes of host memory");
    t.phase = Phase::CopyingOut;
    t.device = device;
    t.ticket = enqueue(device, t.host, t.bytes, false);
    values.toHost += t.bytes;
    ++values.count;
  }

  void offloadWait(int64_t number, const void *device) {
    std::unique_lock<std::mutex> lock(mutex);
    Transfer &t = at(number, "tsrt_offload_wait");
    if (t.phase != Phase::CopyingOut)
      die(label(number) + ": tsrt_offload_wait with no copy to host memory "
                          "in flight");
    if (device != t.device)
      die(label(number) + ": tsrt_offload_wait on another buffer than the "
                          "one its copy reads");
    waitFor(lock, t.ticket, values);
    t.phase = Phase::OnHost;
  }

  void prefetchStart(int64_t number, void *device, int64_t bytes) {
    std::unique_lock<std::mutex> lock(mutex);
    Transfer &t = at(number, "tsrt_prefetch_start");
    if (t.phase != Phase::OnHost)
      die(label(number) + ": tsrt_prefetch_start of a value not on the host "
                          "(offload it and wait for the copy first)");
    if (bytes < 0 || static_cast<size_t>(bytes) != t.bytes)
      die(label(number) + ": copied back as " + std::to_string(bytes) +
          " bytes, offloaded as " + std::to_string(t.bytes));
    t.phase = Phase::CopyingIn;
    t.device = device;
    t.ticket = enqueue(t.host, device, t.bytes, false);
    values.toDevice += t.bytes;
  }

  void prefetchWait(int64_t number, const void *device) {
    std::unique_lock<std::mutex> lock(mutex);
    Transfer &t = at(number, "tsrt_prefetch_wait");
    if (t.phase != Phase::CopyingIn)
      die(label(number) + ": tsrt_prefetch_wait with no copy back in flight");
    if (device != t.device)
      die(label(number) + ": tsrt_prefetch_wait on another buffer than the "
                          "one its copy writes");
    waitFor(lock, t.ticket, values);
    t.phase = Phase::Idle;
    t.device = nullptr;
  }

  void setBandwidth(double bytesPerSecond) {
    std::lock_guard<std::mutex> lock(mutex);
    bandwidth = bytesPerSecond;
  }

  /// Makes `copies` in order on the transfer thread and waits for them.
  void copyAll(const std::vector<LinkCopy> &copies) {
    std::unique_lock<std::mutex> lock(mutex);
    uint64_t last = 0;
    for (const LinkCopy &c : copies) {
      last = enqueue(c.from, c.to, c.bytes, true);
      (c.toHost ? programs.toHost : programs.toDevice) += c.bytes;
      ++programs.count;
    }
    if (last)
      waitFor(lock, last, programs);
  }

  void addHostBytes(size_t bytes, bool allocated) {
    std::lock_guard<std::mutex> lock(mutex);
    if (allocated) {
      hostCurrent += bytes;
      hostPeak = std::max(hostPeak, hostCurrent);
    } else {
      hostCurrent -= bytes;
    }
  }

  void stats(tsr_transfer_stats_t *out, bool program) {
    std::lock_guard<std::mutex> lock(mutex);
    (program ? programs : values).read(out);
  }

  void resetStats() {
    std::lock_guard<std::mutex> lock(mutex);
    values = programs = Counts();
  }

  void hostStats(size_t *current, size_t *peak) {
    std::lock_guard<std::mutex> lock(mutex);
    if (current)
      *current = hostCurrent;
    if (peak)
      *peak = hostPeak;
  }

  void resetHostPeak() {
    std::lock_guard<std::mutex> lock(mutex);
    hostPeak = hostCurrent;
  }

private:
  static std::string label(int64_t number) {
    return "transfer " + std::to_string(number);
  }

  Transfer &at(int64_t number, const char *call) {
    if (number < 0 || number >= kMaxTransfers)
      die(std::string(call) + ": transfer number " + std::to_string(number) +
          " out of range");
    if (static_cast<size_t>(number) >= table.size())
      table.resize(number + 1);
    return table[number];
  }

  char *allocateHost(size_t bytes) {
    if (bytes == 0)
      return nullptr;
    void *block;
    if (bytes >= kMappedBytes) {
      block = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (block == MAP_FAILED)
        return nullptr;
    } else if (!(block = std::malloc(bytes))) {
      return nullptr;
    }
    hostCurrent += bytes;
    hostPeak = std::max(hostPeak, hostCurrent);
    return static_cast<char *>(block);
  }

  void freeHost(char *block, size_t bytes) {
    if (!block)
      return;
    if (bytes >= kMappedBytes)
      ::munmap(block, bytes);
    else
      std::free(block);
    hostCurrent -= bytes;
  }

  /// Queues a copy; returns its ticket. Called with the lock held.
  uint64_t enqueue(const void *from, void *to, size_t bytes, bool program) {
    if (!worker.joinable())
      worker = std::thread([this] { run(); });
    uint64_t ticket = ++issued;
    jobs.push_back({from, to, bytes, ticket, program});
    wake.notify_all();
    return ticket;
  }

  void waitFor(std::unique_lock<std::mutex> &lock, uint64_t ticket,
               Counts &counts) {
    if (completed >= ticket)
      return;
    Clock::time_point start = Clock::now();
    done.wait(lock, [&] { return completed >= ticket; });
    counts.waited +=
        std::chrono::duration<double>(Clock::now() - start).count();
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      wake.wait(lock, [&] { return stopping || !jobs.empty(); });
      if (jobs.empty())
        return;
      Job job = jobs.front();
      jobs.pop_front();
      double rate = bandwidth;
      lock.unlock();
      Clock::time_point start = Clock::now();
      if (job.bytes)
        std::memcpy(job.to, job.from, job.bytes);
      if (rate > 0)
        std::this_thread::sleep_until(
            start + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(job.bytes / rate)));
      double seconds =
          std::chrono::duration<double>(Clock::now() - start).count();
      lock.lock();
      (job.program ? programs : values).busy += seconds;
      completed = job.ticket;
      done.notify_all();
    }
  }

  std::mutex mutex;
  std::condition_variable wake, done;
  std::deque<Job> jobs;
  std::thread worker;
  bool stopping = false;
  uint64_t issued = 0, completed = 0;
  /// A deque: growing it keeps references to its elements, which a wait
  /// holds while another thread's start of a higher number grows it.
  std::deque<Transfer> table;
  double bandwidth = 0;
  Counts values, programs;
  size_t hostCurrent = 0, hostPeak = 0;
};

/// Never destroyed before exit's static destructors: compiled code may run
/// on other threads until then. Its destructor stops the thread.
Transfers &transfers() {
  static Transfers instance;
  return instance;
}

} // namespace

void tsrt_offload_start(int64_t transfer, const void *device, int64_t bytes) {
  transfers().offloadStart(transfer, device, bytes);
}

void tsrt_offload_wait(int64_t transfer, const void *device) {
  transfers().offloadWait(transfer, device);
}

void tsrt_prefetch_start(int64_t transfer, void *device, int64_t bytes) {
  transfers().prefetchStart(transfer, device, bytes);
}

void tsrt_prefetch_wait(int64_t transfer, void *device) {
  transfers().prefetchWait(transfer, device);
}

tsr_status_t tsr_set_host_bandwidth(double bytes_per_second) {
  if (!(bytes_per_second >= 0))
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "tsr_set_host_bandwidth: the bandwidth must be >= 0 bytes/s");
  transfers().setBandwidth(bytes_per_second);
  return TSR_OK;
}

void tsr_transfer_stats(tsr_transfer_stats_t *out) {
  if (out)
    transfers().stats(out, false);
}

void tsr_host_program_stats(tsr_transfer_stats_t *out) {
  if (out)
    transfers().stats(out, true);
}

void tsr::copyOverHostLink(const std::vector<LinkCopy> &copies) {
  transfers().copyAll(copies);
}

void tsr::noteHostPoolBytes(size_t bytes, bool allocated) {
  transfers().addHostBytes(bytes, allocated);
}

void tsr_transfer_reset_stats(void) { transfers().resetStats(); }

void tsr_host_pool_stats(size_t *out_current, size_t *out_peak) {
  transfers().hostStats(out_current, out_peak);
}

void tsr_host_pool_reset_peak(void) { transfers().resetHostPeak(); }
