//===- CommNccl.cpp - The NCCL backend, loaded from a plugin --------------===//
//
// NCCL lives in libtessera_comm_nccl.so (runtime/plugins/nccl), loaded on
// the first tsr_comm_init(TSR_COMM_NCCL) so that tessera_runtime itself
// never needs CUDA. This file finds the plugin, bootstraps the world (rank,
// size and NCCL's unique id over MPI or TCP) and forwards the collectives.
//
// The device watchdog. Compiled GPU code enqueues NCCL collectives on a
// stream and the host never waits for them (CommEntry.cpp), so MPI's
// watchdog, which times a blocking call on the host, cannot see them: a
// peer that died or never issued its collective leaves the NCCL kernel
// spinning and the host blocked for ever in the step's final
// cudaStreamSynchronize. So a communicator with a timeout brackets each
// collective, send and recv issued on a stream with two events, `ready`
// just before the NCCL call and `done` right after, and hands them to one
// thread per process that polls them with cudaEventQuery every 50 ms.
//  - Events, not a thread blocked in cudaEventSynchronize per collective:
//    the issuing thread only records two events and pushes an entry under
//    a mutex, one thread watches any number of collectives and
//    communicators, and the poll also asks NCCL for asynchronous errors
//    (ncclCommGetAsyncError), which a blocked thread could not.
//  - The deadline starts when `ready` is first seen complete, that is when
//    the communication stream has reached the collective, not when the
//    host enqueued it: the host runs far ahead of the device, and a
//    collective waits for the compute before it (a long backward pass, a
//    first step's autotuning), which must not count against its timeout.
//    Collectives on one stream run in order, so only the one that is stuck
//    runs out of time; those queued behind it have not started.
// Past the deadline, or on an asynchronous error, the watchdog prints one
// line naming the collective, aborts the NCCL communicator (ncclCommAbort,
// which also closes its connections so that the peers fail quickly) and
// ends the process with status 1: a host blocked on the device cannot be
// unwound. A done collective's events go back to the pool.
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "CommPlugin.h"
#include "RuntimeInternal.h"

#include "tessera-runtime/Device.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

using namespace tsr;

namespace {

constexpr const char *kPluginName = "libtessera_comm_nccl.so";

const tsr_comm_plugin_t *plugin = nullptr;
std::mutex pluginMutex;

/// The directory holding libtessera_runtime.so, with a trailing slash.
std::string ownDirectory() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&ownDirectory), &info) ||
      !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

tsr_status_t loadPlugin() {
  std::lock_guard<std::mutex> lock(pluginMutex);
  if (plugin)
    return TSR_OK;
  std::vector<std::string> candidates;
  if (const char *env = std::getenv("TESSERA_COMM_NCCL_PLUGIN"))
    candidates.push_back(env);
  else
    candidates = {ownDirectory() + kPluginName, kPluginName};
  std::string errors;
  for (const std::string &path : candidates) {
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      // One line: tools print the message as their error line.
      errors += std::string(errors.empty() ? " " : "; ") + dlerror();
      continue;
    }
    auto entry = reinterpret_cast<tsr_comm_plugin_entry_t>(
        dlsym(handle, TSR_COMM_PLUGIN_ENTRY));
    const tsr_comm_plugin_t *table = entry ? entry() : nullptr;
    if (!table || table->abi != TSR_COMM_PLUGIN_ABI) {
      dlclose(handle);
      return fail(TSR_ERROR_LOAD, path +
                                      " is not a tessera communicator "
                                      "plugin of ABI " +
                                      std::to_string(TSR_COMM_PLUGIN_ABI));
    }
    plugin = table; // Stays loaded: NCCL does not support unloading.
    return TSR_OK;
  }
  return fail(TSR_ERROR_LOAD,
              "the NCCL backend needs " + std::string(kPluginName) +
                  " (built only where CUDA and NCCL are found; "
                  "TESSERA_COMM_NCCL_PLUGIN names it elsewhere):" +
                  errors);
}

tsr_status_t pluginStatus(int code, const char *what) {
  if (code == TSR_OK)
    return TSR_OK;
  return fail(static_cast<tsr_status_t>(code),
              std::string(what) + ": " + plugin->last_error());
}

int envInt(const char *name, int fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

bool launchedByMpi() {
  return std::getenv("OMPI_COMM_WORLD_RANK") || std::getenv("PMI_RANK") ||
         std::getenv("PMIX_RANK");
}

//===----------------------------------------------------------------------===//
// The device watchdog
//===----------------------------------------------------------------------===//

constexpr std::chrono::milliseconds kPollInterval(50);

int64_t nowNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// A collective of a communicator with a timeout, queued on a stream
/// between its two events.
struct Watched {
  /// The NcclComm that issued it, whose destructor forgets it.
  const void *owner;
  /// The plugin's communicator.
  void *handle;
  std::string label;
  void *ready, *done;
  double timeout;
  int device;
  /// When `ready` was first seen complete; 0 until then.
  int64_t readySince = 0;
};

/// The thread that polls the events of every watched collective of the
/// process. Never destroyed: the process may exit with work in flight.
class DeviceWatchdog {
public:
  /// The watchdog of this process, started on first use. A forked child (a
  /// gtest death test, say) has no copy of the thread, and its parent's
  /// may have held the mutex at the fork: it gets one of its own.
  static DeviceWatchdog &get() {
    if (DeviceWatchdog *watchdog = existing())
      return *watchdog;
    static std::mutex *creating = new std::mutex;
    std::lock_guard<std::mutex> lock(*creating);
    if (DeviceWatchdog *watchdog = existing())
      return *watchdog;
    auto *watchdog = new DeviceWatchdog;
    current().store(watchdog, std::memory_order_release);
    return *watchdog;
  }

  /// This process's watchdog, or null before the first watched collective.
  static DeviceWatchdog *existing() {
    DeviceWatchdog *watchdog = current().load(std::memory_order_acquire);
    return watchdog && watchdog->pid == getpid() ? watchdog : nullptr;
  }

  void watch(Watched entry) {
    std::lock_guard<std::mutex> lock(mutex);
    watched.push_back(std::move(entry));
    // An idle thread sleeps until the first entry; a busy one polls anyway.
    if (watched.size() == 1)
      wake.notify_one();
  }

  /// Drops the entries of `owner` (a communicator being destroyed) and
  /// gives their events back.
  void forget(const void *owner) {
    std::lock_guard<std::mutex> lock(mutex);
    auto gone = std::stable_partition(
        watched.begin(), watched.end(),
        [&](const Watched &entry) { return entry.owner != owner; });
    std::for_each(gone, watched.end(), release);
    watched.erase(gone, watched.end());
  }

  size_t size() {
    std::lock_guard<std::mutex> lock(mutex);
    return watched.size();
  }

private:
  DeviceWatchdog() : pid(getpid()), thread([this] { loop(); }) {
    thread.detach();
  }

  static std::atomic<DeviceWatchdog *> &current() {
    static std::atomic<DeviceWatchdog *> *instance =
        new std::atomic<DeviceWatchdog *>(nullptr);
    return *instance;
  }

  static void release(const Watched &entry) {
    giveOrderingEvent(entry.ready);
    giveOrderingEvent(entry.done);
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return !watched.empty(); });
      wake.wait_for(lock, kPollInterval);
      poll(nowNanoseconds());
    }
  }

  /// Drops the collectives that are done, starts the deadline of those the
  /// stream has reached and ends the process for one past its deadline or
  /// a communicator that failed. Holds `mutex`, so that no destructor frees
  /// what it looks at.
  void poll(int64_t now) {
    auto kept = watched.begin();
    for (Watched &entry : watched) {
      useDevice(entry.device);
      int done = 0;
      // A query that fails reports an error of the device, which the host's
      // next CUDA call reports as well, without hanging: nothing to watch.
      if (tsr_event_query(entry.done, &done) != TSR_OK || done) {
        release(entry);
        continue;
      }
      int ready = 0;
      if (entry.readySince == 0) {
        if (tsr_event_query(entry.ready, &ready) == TSR_OK && ready)
          entry.readySince = now;
      } else if (now - entry.readySince >
                 static_cast<int64_t>(entry.timeout * 1e9)) {
        char seconds[32];
        std::snprintf(seconds, sizeof(seconds), "%g", entry.timeout);
        die(entry, entry.label + " did not complete on the device within " +
                       seconds +
                       " s (a peer stopped, died or never issued it); "
                       "aborting the NCCL communicator");
      }
      if (&*kept != &entry)
        *kept = std::move(entry);
      ++kept;
    }
    watched.erase(kept, watched.end());
    // Once per communicator with work in flight, naming its oldest.
    std::vector<void *> asked;
    for (const Watched &entry : watched) {
      if (std::find(asked.begin(), asked.end(), entry.handle) != asked.end())
        continue;
      asked.push_back(entry.handle);
      useDevice(entry.device);
      if (plugin->async_error(entry.handle) != TSR_OK)
        die(entry, entry.label +
                       ": NCCL failed on the device: " + plugin->last_error());
    }
  }

  /// Makes the device of the events current: a query is of the current
  /// device's context.
  void useDevice(int device) {
    if (device != currentDevice && tsr_device_set(device) == TSR_OK)
      currentDevice = device;
  }

  [[noreturn]] void die(const Watched &entry, const std::string &message) {
    std::fprintf(stderr, "tessera-run: rank %d: %s\n", processRank(),
                 message.c_str());
    std::fflush(stderr);
    plugin->abort(entry.handle);
    std::fflush(stderr);
    std::_Exit(1);
  }

  const pid_t pid;
  std::mutex mutex;
  std::condition_variable wake;
  /// In issue order.
  std::vector<Watched> watched;
  int currentDevice = -1;
  std::thread thread;
};

class NcclComm final : public CommBackend {
public:
  NcclComm(void *handle, int rank, int size, int worldRankOfSelf, bool holdsMpi,
           double timeout, int device)
      : handle(handle), myRank(rank), mySize(size),
        worldRankOfSelf(worldRankOfSelf), holdsMpi(holdsMpi), timeout(timeout),
        device(device) {}
  ~NcclComm() override {
    if (DeviceWatchdog *watchdog = DeviceWatchdog::existing())
      watchdog->forget(this);
    plugin->destroy(handle);
    if (holdsMpi)
      releaseMpi();
  }

  tsr_comm_backend_t kind() const override { return TSR_COMM_NCCL; }
  int rank() const override { return myRank; }
  int size() const override { return mySize; }
  // Sub-communicators do not know their members' world ranks: they name
  // their own.
  int worldRank(int rank) const override {
    return rank == myRank ? worldRankOfSelf : rank;
  }
  void begin(const std::string &label, int, double) override {
    activeLabel = label;
  }
  void end() override {}

  tsr_status_t allReduce(const void *send, void *recv, size_t count,
                         tsr_dtype_t dtype, tsr_reduce_op_t op,
                         void *stream) override {
    return issue("ncclAllReduce", stream, [&] {
      return plugin->all_reduce(handle, send, recv, count, dtype, op, stream);
    });
  }
  tsr_status_t reduceScatter(const void *send, void *recv, size_t recvCount,
                             tsr_dtype_t dtype, tsr_reduce_op_t op,
                             void *stream) override {
    return issue("ncclReduceScatter", stream, [&] {
      return plugin->reduce_scatter(handle, send, recv, recvCount, dtype, op,
                                    stream);
    });
  }
  tsr_status_t allGather(const void *send, void *recv, size_t sendCount,
                         tsr_dtype_t dtype, void *stream) override {
    return issue("ncclAllGather", stream, [&] {
      return plugin->all_gather(handle, send, recv, sendCount, dtype, stream);
    });
  }
  tsr_status_t allToAll(const void *send, void *recv, size_t count,
                        tsr_dtype_t dtype, void *stream) override {
    return issue("all_to_all (ncclSend/ncclRecv)", stream, [&] {
      return plugin->all_to_all(handle, send, recv, count, dtype, stream);
    });
  }
  tsr_status_t broadcast(void *buffer, size_t count, tsr_dtype_t dtype,
                         int root, void *stream) override {
    return issue("ncclBroadcast", stream, [&] {
      return plugin->broadcast(handle, buffer, count, dtype, root, stream);
    });
  }
  tsr_status_t send(const void *buffer, size_t count, tsr_dtype_t dtype,
                    int peer, void *stream) override {
    return issue("ncclSend", stream, [&] {
      return plugin->send(handle, buffer, count, dtype, peer, stream);
    });
  }
  tsr_status_t recv(void *buffer, size_t count, tsr_dtype_t dtype, int peer,
                    void *stream) override {
    return issue("ncclRecv", stream, [&] {
      return plugin->recv(handle, buffer, count, dtype, peer, stream);
    });
  }
  tsr_status_t recvAny(void *, size_t, tsr_dtype_t, int &) override {
    return fail(TSR_ERROR_UNSUPPORTED,
                "NCCL cannot receive from any rank (ncclRecv names its "
                "peer): use an MPI communicator");
  }
  tsr_status_t barrier() override {
    return pluginStatus(plugin->barrier(handle), "barrier");
  }
  tsr_status_t split(int color, int key,
                     std::unique_ptr<CommBackend> &out) override {
    void *child = nullptr;
    if (tsr_status_t s = pluginStatus(plugin->split(handle, color, key, &child),
                                      "ncclCommSplit"))
      return s;
    int childRank = 0, childSize = 1;
    if (tsr_status_t s =
            pluginStatus(plugin->rank_and_size(child, &childRank, &childSize),
                         "ncclCommUserRank")) {
      plugin->destroy(child);
      return s;
    }
    out = std::make_unique<NcclComm>(child, childRank, childSize,
                                     worldRankOfSelf, false, timeout, device);
    return TSR_OK;
  }

private:
  /// Makes the plugin call `call` ("what" names it in errors), which
  /// queues its work on `stream`. With a timeout and a stream, between two
  /// events that the device watchdog polls; the host never waits.
  template <typename Call>
  tsr_status_t issue(const char *what, void *stream, Call &&call) {
    if (timeout <= 0 || !stream)
      return pluginStatus(call(), what);
    void *ready = nullptr, *done = nullptr;
    if (tsr_status_t s = takeOrderingEvent(&ready))
      return s;
    if (tsr_status_t s = takeOrderingEvent(&done)) {
      giveOrderingEvent(ready);
      return s;
    }
    tsr_status_t status = tsr_event_record(ready, stream);
    if (status == TSR_OK)
      status = pluginStatus(call(), what);
    if (status == TSR_OK)
      status = tsr_event_record(done, stream);
    if (status != TSR_OK) {
      giveOrderingEvent(ready);
      giveOrderingEvent(done);
      return status;
    }
    DeviceWatchdog::get().watch(
        {this, handle, activeLabel, ready, done, timeout, device});
    return TSR_OK;
  }

  void *handle;
  int myRank, mySize, worldRankOfSelf;
  bool holdsMpi;
  /// The watchdog's timeout in seconds (0: none) and the device of the
  /// communicator's streams.
  double timeout;
  int device;
  /// The label begin() gave the operation being issued.
  std::string activeLabel;
};

} // namespace

tsr_status_t tsr::createNcclWorld(const tsr_comm_options_t &options,
                                  std::unique_ptr<CommBackend> &out) {
  if (tsr_status_t s = loadPlugin())
    return s;
  int device = options.device;
  if (device < 0)
    device = envInt("LOCAL_RANK", envInt("OMPI_COMM_WORLD_LOCAL_RANK",
                                         envInt("SLURM_LOCALID", 0)));
  if (tsr_status_t s = pluginStatus(plugin->check_device(device), "NCCL"))
    return s;
  std::vector<unsigned char> id(plugin->unique_id_size);
  auto make = [&](void *bytes) {
    return pluginStatus(plugin->make_unique_id(bytes), "ncclGetUniqueId");
  };
  int rank = 0, size = 1;
  bool holdsMpi = false;
  if (launchedByMpi()) {
    if (tsr_status_t s =
            mpiBootstrapBroadcast(make, id.data(), id.size(), rank, size))
      return withContext(s, "NCCL bootstrap over MPI");
    holdsMpi = true;
  } else {
    rank = envInt("RANK", 0);
    size = envInt("WORLD_SIZE", 1);
    const char *address = std::getenv("MASTER_ADDR");
    int port = envInt("MASTER_PORT", 0);
    if (size > 1 && (!address || port <= 0))
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "NCCL bootstrap: WORLD_SIZE is " + std::to_string(size) +
                      " but MASTER_ADDR or MASTER_PORT is not set");
    if (rank == 0)
      if (tsr_status_t s = make(id.data()))
        return s;
    double timeout =
        options.timeout_seconds > 0 ? options.timeout_seconds : 300;
    if (tsr_status_t s = tsr_bootstrap_tcp_broadcast(
            address, port, rank, size, id.data(), id.size(), timeout))
      return withContext(s, "NCCL bootstrap");
  }
  void *handle = nullptr;
  if (tsr_status_t s =
          pluginStatus(plugin->init(id.data(), rank, size, device, &handle),
                       "ncclCommInitRank")) {
    if (holdsMpi)
      releaseMpi();
    return s;
  }
  out = std::make_unique<NcclComm>(handle, rank, size, rank, holdsMpi,
                                   options.timeout_seconds, device);
  return TSR_OK;
}

size_t tsr::watchedDeviceCollectives() {
  DeviceWatchdog *watchdog = DeviceWatchdog::existing();
  return watchdog ? watchdog->size() : 0;
}
