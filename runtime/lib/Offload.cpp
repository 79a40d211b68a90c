//===- Offload.cpp - Activation offload: host pool, transfer thread/stream ===//
//
// Compiled code copies a saved activation to host memory after the forward
// pass has made it and back before the backward pass reads it
// (tsr-offload), through four calls per transfer: tsrt_offload_start,
// tsrt_offload_wait, tsrt_prefetch_start, tsrt_prefetch_wait, each with the
// stream of the code that calls it (null on a CPU). A transfer is
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
// Code compiled for a GPU passes its compute stream, and the host neither
// touches device memory nor waits for the device, as with the collectives
// (CommEntry.cpp): a transfer's block is pinned host memory, each copy is
// queued on the transfer stream (Streams.cpp) after an event recorded on
// the compute stream, and the wait makes the compute stream wait for an
// event recorded after the copy. cudaMemcpyAsync does not block the host,
// so no thread is needed, and the copy engine behind the one transfer
// stream runs the copies in the order they start. The host measures no
// copy time there (tsr_set_host_bandwidth does not apply either): what the
// device hid is for a profile of the device to say.
//
// The same thread makes the copies around a host program (a step whose
// optimizer update runs on the host, tsr-offload-optimizer): the gradients
// down before it, the parameters up before the next device program
// (Artifact.cpp). Their statistics are kept apart (tsr_host_program_stats),
// and the buffers a host program reads and writes are counted in the host
// pool too (tsr::noteHostPoolBytes).
//
// Compiled code cannot take a status: misuse of a transfer (a wait with no
// copy in flight, a number started twice, a size that changed, a wait on
// the other path than its start's) and a host allocation or CUDA call that
// fails print one line and end the process, as the collectives do
// (CommEntry.cpp).
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "RuntimeInternal.h"
#include "tessera-runtime/Device.h"

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
  /// Whether the latest start was on a stream (GPU code): the copies run on
  /// the transfer stream, and `host` is pinned.
  bool onStream = false;
  /// The device buffer of the copy in flight.
  const void *device = nullptr;
  /// The serial number of its copy in flight on the transfer thread.
  uint64_t ticket = 0;
  /// Recorded on the transfer stream after its copy in flight there.
  void *done = nullptr;
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
      freeHost(t.host, t.bytes, t.onStream);
  }

  void offloadStart(int64_t number, const void *device, int64_t bytes,
                    void *stream) {
    std::unique_lock<std::mutex> lock(mutex);
    Transfer &t = at(number, "tsrt_offload_start");
    if (t.phase != Phase::Idle)
      die(label(number) + ": started again before its copy back completed");
    if (bytes < 0)
      die(label(number) + ": a negative size (" + std::to_string(bytes) +
          " bytes)");
    bool onStream = stream != nullptr;
    // The next step offloads the same bytes under the same number: its
    // block is kept (already faulted in, or pinned) rather than made again.
    // Freeing a pinned block synchronizes the device (cudaFreeHost), so the
    // previous copy back has read it by then.
    if (t.host &&
        (t.bytes != static_cast<size_t>(bytes) || t.onStream != onStream)) {
      freeHost(t.host, t.bytes, t.onStream);
      t.host = nullptr;
    }
    t.bytes = static_cast<size_t>(bytes);
    t.onStream = onStream;
    if (!t.host)
      t.host = allocateHost(t.bytes, onStream);
    if (!t.host && t.bytes > 0)
      die(label(number) + ": cannot allocate " + std::to_string(t.bytes) +
          (onStream ? " bytes of pinned host memory: " +
                          std::string(tsr_last_error())
                    : " bytes of host memory"));
    t.phase = Phase::CopyingOut;
    t.device = device;
    // On a stream, a kept block was last read by the previous step's copy
    // back, queued on the transfer stream too: the stream runs its copies
    // in order, so this one overwrites the block only once that one has
    // read it, with no event between them.
    if (onStream)
      t.done = copyOnStream(number, "tsrt_offload_start", t.host, device,
                            t.bytes, stream);
    else
      t.ticket = enqueue(device, t.host, t.bytes, false);
    values.toHost += t.bytes;
    ++values.count;
  }

  void offloadWait(int64_t number, const void *device, void *stream) {
    std::unique_lock<std::mutex> lock(mutex);
    Transfer &t = at(number, "tsrt_offload_wait");
    if (t.phase != Phase::CopyingOut)
      die(label(number) + ": tsrt_offload_wait with no copy to host memory "
                          "in flight");
    if (device != t.device)
      die(label(number) + ": tsrt_offload_wait on another buffer than the "
                          "one its copy reads");
    checkPath(t, number, "tsrt_offload_wait", stream);
    // On a stream, the work queued there from now on (a kernel that reuses
    // the device buffer, or its free) runs after the copy has read it.
    if (stream)
      waitOnStream(t, number, "tsrt_offload_wait", stream);
    else
      waitFor(lock, t.ticket, values);
    t.phase = Phase::OnHost;
  }

  void prefetchStart(int64_t number, void *device, int64_t bytes,
                     void *stream) {
    std::unique_lock<std::mutex> lock(mutex);
    Transfer &t = at(number, "tsrt_prefetch_start");
    if (t.phase != Phase::OnHost)
      die(label(number) + ": tsrt_prefetch_start of a value not on the host "
                          "(offload it and wait for the copy first)");
    if (bytes < 0 || static_cast<size_t>(bytes) != t.bytes)
      die(label(number) + ": copied back as " + std::to_string(bytes) +
          " bytes, offloaded as " + std::to_string(t.bytes));
    checkPath(t, number, "tsrt_prefetch_start", stream);
    t.phase = Phase::CopyingIn;
    t.device = device;
    // On a stream, `device` was allocated by work queued there and may
    // still be read or written by it: the copy waits for that work.
    if (stream)
      t.done = copyOnStream(number, "tsrt_prefetch_start", device, t.host,
                            t.bytes, stream);
    else
      t.ticket = enqueue(t.host, device, t.bytes, false);
    values.toDevice += t.bytes;
  }

  void prefetchWait(int64_t number, const void *device, void *stream) {
    std::unique_lock<std::mutex> lock(mutex);
    Transfer &t = at(number, "tsrt_prefetch_wait");
    if (t.phase != Phase::CopyingIn)
      die(label(number) + ": tsrt_prefetch_wait with no copy back in flight");
    if (device != t.device)
      die(label(number) + ": tsrt_prefetch_wait on another buffer than the "
                          "one its copy writes");
    checkPath(t, number, "tsrt_prefetch_wait", stream);
    // On a stream, the work queued there from now on (the backward pass's
    // reads) runs after the copy has written the buffer.
    if (stream)
      waitOnStream(t, number, "tsrt_prefetch_wait", stream);
    else
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

  /// A transfer's four calls come from code of one target: a copy on the
  /// transfer stream has no ticket for the host to wait for, a copy of the
  /// transfer thread no event for a stream to wait on.
  static void checkPath(const Transfer &t, int64_t number, const char *call,
                        void *stream) {
    if (stream && !t.onStream)
      die(label(number) + ": " + call +
          " on a stream, for a transfer started without one");
    if (!stream && t.onStream)
      die(label(number) + ": " + call +
          " without a stream, for a transfer started on one");
  }

  /// Queues a copy on the transfer stream after the work queued on
  /// `stream` so far, and returns an event recorded after it. The host
  /// only enqueues.
  static void *copyOnStream(int64_t number, const char *call, void *to,
                            const void *from, size_t bytes, void *stream) {
    void *transfer = transferStream();
    void *done = nullptr;
    if (!transfer || orderStreams(transfer, stream) != TSR_OK ||
        (bytes > 0 && tsr_device_memcpy(to, from, bytes, transfer) != TSR_OK) ||
        takeOrderingEvent(&done) != TSR_OK ||
        tsr_event_record(done, transfer) != TSR_OK)
      die(label(number) + ": " + call + ": " + tsr_last_error());
    return done;
  }

  /// Makes the work queued on `stream` from now on wait for `t`'s copy on
  /// the transfer stream. The wait holds on to the record it saw, so the
  /// event goes back to the pool at once.
  static void waitOnStream(Transfer &t, int64_t number, const char *call,
                           void *stream) {
    if (tsr_stream_wait_event(stream, t.done) != TSR_OK)
      die(label(number) + ": " + call + ": " + tsr_last_error());
    giveOrderingEvent(t.done);
    t.done = nullptr;
  }

  /// A block of the host pool: pinned host memory for copies on a stream.
  char *allocateHost(size_t bytes, bool pinned) {
    if (bytes == 0)
      return nullptr;
    void *block;
    if (pinned) {
      if (tsr_host_alloc_pinned(bytes, &block) != TSR_OK)
        return nullptr;
    } else if (bytes >= kMappedBytes) {
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

  void freeHost(char *block, size_t bytes, bool pinned) {
    if (!block)
      return;
    if (pinned)
      tsr_host_free_pinned(block);
    else if (bytes >= kMappedBytes)
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

void tsrt_offload_start(int64_t transfer, const void *device, int64_t bytes,
                        void *stream) {
  transfers().offloadStart(transfer, device, bytes, stream);
}

void tsrt_offload_wait(int64_t transfer, const void *device, void *stream) {
  transfers().offloadWait(transfer, device, stream);
}

void tsrt_prefetch_start(int64_t transfer, void *device, int64_t bytes,
                         void *stream) {
  transfers().prefetchStart(transfer, device, bytes, stream);
}

void tsrt_prefetch_wait(int64_t transfer, void *device, void *stream) {
  transfers().prefetchWait(transfer, device, stream);
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
