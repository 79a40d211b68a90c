//===- CommEntry.cpp - Collectives called from compiled code --------------===//
//
// The launcher binds a communicator to each group of mesh axes (named by
// its bit mask of axes, Comm.h) and describes each collective of the
// manifest; compiled code then calls tsrt_* with a group mask and a
// collective id. A group without a communicator takes its size and this
// rank's position from the registered mesh layout (tsr_mesh_create), else
// it has size 1 and its collectives copy. Compiled code cannot take a
// status, so a failure prints "tessera-run: rank R: <description>: <error>"
// and exits with status 1.
//
// Code compiled for the CPU passes a null stream: collectives on bound axes
// run on one communication thread in issue order; the *_start variants
// return at once and tsrt_wait completes them, which is how a gradient
// bucket overlaps the rest of the backward pass.
//
// Code compiled for a GPU passes its compute stream, and the host never
// waits for the device: a collective is enqueued on the communication
// stream (Streams.cpp) after an event recorded on the compute stream, and
// the compute stream waits for an event recorded after it, at once for a
// blocking collective, at tsrt_wait for an asynchronous one. NCCL enqueues
// without blocking the host, so no thread is needed: the one communication
// stream runs the collectives in issue order. A group of one rank copies on
// the compute stream.
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "RuntimeInternal.h"
#include "tessera-runtime/Device.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

using namespace tsr;

namespace {

constexpr int64_t kMaxAxes = 64;
constexpr int64_t kMaxCollectives = 1 << 20;

std::vector<tsr_comm_t *> axes;
std::vector<std::string> descriptions;
/// Collectives whose results are reduced gradients (their buffers are
/// counted as such by the allocator).
std::vector<bool> gradientResults;

/// The bytes of `count` elements of `dtype` (0 for a bad count or dtype).
size_t bytesOf(int64_t count, int64_t dtype) {
  size_t size = tsr_dtype_size(static_cast<tsr_dtype_t>(dtype));
  return count > 0 ? static_cast<size_t>(count) * size : 0;
}

/// `recvBytes`: what the collective wrote, which the allocator counts as
/// gradients when the collective reduces them.
void noteResult(int64_t id, void *recv, size_t recvBytes) {
  if (id >= 0 && id < static_cast<int64_t>(gradientResults.size()) &&
      gradientResults[id])
    tagGradientBuffer(recv, recvBytes);
}
int64_t currentStep = -1;
const MeshLayout *meshLayout = nullptr;

tsr_comm_t *axisComm(int64_t axis) {
  return axis >= 0 && axis < static_cast<int64_t>(axes.size()) ? axes[axis]
                                                               : nullptr;
}

std::string describe(int64_t id) {
  std::string text = id >= 0 &&
                             id < static_cast<int64_t>(descriptions.size()) &&
                             !descriptions[id].empty()
                         ? descriptions[id]
                         : "collective #" + std::to_string(id);
  if (currentStep >= 0)
    text += " at step " + std::to_string(currentStep);
  return text;
}

[[noreturn]] void die(const std::string &label) {
  // The errors of a communicator start with the label already.
  const char *error = tsr_last_error();
  if (std::strncmp(error, label.c_str(), label.size()) == 0)
    std::fprintf(stderr, "tessera-run: rank %d: %s\n", processRank(), error);
  else
    std::fprintf(stderr, "tessera-run: rank %d: %s: %s\n", processRank(),
                 label.c_str(), error);
  std::fflush(stderr);
  std::exit(1);
}

/// The communicator of group `axis` for collective `id`: null for a group
/// of one rank (its collectives copy). A group of several ranks without a
/// communicator ends the process.
tsr_comm_t *groupComm(int64_t id, int64_t axis) {
  if (tsr_comm_t *comm = axisComm(axis))
    return comm;
  if (!meshLayout || axis < 0 || meshLayout->groupSize(axis) == 1)
    return nullptr;
  std::string axesText;
  for (size_t i = 0; i < meshLayout->sizes.size(); ++i)
    if (axis >> i & 1)
      axesText += (axesText.empty() ? "" : ", ") + std::to_string(i);
  std::fprintf(stderr,
               "tessera-run: rank %d: %s: no communicator is bound to the "
               "group of mesh axes {%s} (mask %lld), which has %lld ranks "
               "(the mesh was created without this group)\n",
               processRank(), describe(id).c_str(), axesText.c_str(),
               static_cast<long long>(axis),
               static_cast<long long>(meshLayout->groupSize(axis)));
  std::fflush(stderr);
  std::exit(1);
}

/// Checks the arguments as a communicator would, then copies `count`
/// elements: the collective of a one-rank axis. On a GPU (`stream` not
/// null) the buffers are device memory, which the host must not touch: the
/// copy is queued on `stream`.
tsr_status_t copyAlone(const char *what, const void *send, void *recv,
                       int64_t count, int64_t dtype, void *stream) {
  if (tsr_status_t s = checkDtype(what, dtype))
    return s;
  size_t elementSize = tsr_dtype_size(static_cast<tsr_dtype_t>(dtype));
  if (count < 0)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                std::string(what) + ": negative count");
  if (count == 0 || send == recv)
    return TSR_OK;
  size_t bytes = static_cast<size_t>(count) * elementSize;
  if (stream)
    return tsr_device_memcpy(recv, send, bytes, stream);
  std::memmove(recv, send, bytes);
  return TSR_OK;
}

[[noreturn]] void nothingInFlight(void *recv) {
  std::fprintf(stderr,
               "tessera-run: rank %d: tsrt_wait: no collective in flight "
               "writes %p\n",
               processRank(), recv);
  std::exit(1);
}

} // namespace

tsr_status_t tsr_comm_bind_axis(int64_t axis, tsr_comm_t *comm) {
  if (axis < 0 || axis >= kMaxAxes)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "tsr_comm_bind_axis: axis " + std::to_string(axis) +
                    " is not in [0, " + std::to_string(kMaxAxes) + ")");
  if (axis >= static_cast<int64_t>(axes.size()))
    axes.resize(axis + 1, nullptr);
  axes[axis] = comm;
  return TSR_OK;
}

tsr_status_t tsr_comm_describe_collective(int64_t id, const char *description) {
  if (id < 0 || id >= kMaxCollectives)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "tsr_comm_describe_collective: id " + std::to_string(id) +
                    " is not in [0, " + std::to_string(kMaxCollectives) + ")");
  return guard([&] {
    if (id >= static_cast<int64_t>(descriptions.size()))
      descriptions.resize(id + 1);
    descriptions[id] = description ? description : "";
    return TSR_OK;
  });
}

void tsr_comm_set_step(int64_t step) { currentStep = step; }

void tsr::markGradientCollective(int64_t id) {
  if (id < 0 || id >= kMaxCollectives)
    return;
  if (id >= static_cast<int64_t>(gradientResults.size()))
    gradientResults.resize(id + 1, false);
  gradientResults[id] = true;
}

void tsr::registerMeshLayout(const MeshLayout *layout) { meshLayout = layout; }

const MeshLayout *tsr::registeredMeshLayout() { return meshLayout; }

tsr_comm_t *tsr::boundGroup(int64_t mask) { return axisComm(mask); }

tsr_status_t tsr::describeCollectives(const Manifest &manifest) {
  for (size_t i = 0; i < manifest.collectives.size(); ++i) {
    if (tsr_status_t s = tsr_comm_describe_collective(
            static_cast<int64_t>(i),
            manifest.collectives[i].description.c_str()))
      return s;
    if (manifest.collectives[i].bucket >= 0)
      markGradientCollective(static_cast<int64_t>(i));
  }
  return TSR_OK;
}

int64_t tsrt_axis_rank(int64_t axis) {
  if (tsr_comm_t *comm = axisComm(axis))
    return tsr_comm_rank(comm);
  return meshLayout && axis >= 0 ? meshLayout->groupRank(axis) : 0;
}

int64_t tsrt_axis_size(int64_t axis) {
  if (tsr_comm_t *comm = axisComm(axis))
    return tsr_comm_size(comm);
  return meshLayout && axis >= 0 ? meshLayout->groupSize(axis) : 1;
}

namespace {

/// The work of one collective: runs it (on the calling thread or the
/// communication thread) and returns its status.
using Work = std::function<tsr_status_t()>;

/// One collective handed to the communication thread.
struct Task {
  Work work;
  std::string label;
  int64_t id = -1;
  void *recv = nullptr;
  size_t recvBytes = 0;
  bool done = false;
  tsr_status_t status = TSR_OK;
  std::string error;
};

/// Runs every collective of bound axes, in the order compiled code issues
/// them, on one thread: an async collective (tsrt_*_start) returns at once
/// and its tsrt_wait blocks until it is done, so the compute between them
/// overlaps the communication; a blocking one waits right away. One thread
/// keeps the issue order, which every rank must share, and MPI runs at
/// MPI_THREAD_MULTIPLE (the watchdog's thread uses it too). Never destroyed:
/// the process may exit with the thread idle.
class Engine {
public:
  static Engine &get() {
    // A forked child (a gtest death test, say) has no copy of the thread:
    // it gets an engine of its own.
    static Engine *engine = nullptr;
    static pid_t owner = 0;
    if (!engine || owner != getpid()) {
      engine = new Engine();
      owner = getpid();
    }
    return *engine;
  }

  std::shared_ptr<Task> submit(Work work, std::string label, int64_t id,
                               void *recv, size_t recvBytes) {
    auto task = std::make_shared<Task>();
    task->work = std::move(work);
    task->label = std::move(label);
    task->id = id;
    task->recv = recv;
    task->recvBytes = recvBytes;
    std::lock_guard<std::mutex> lock(mutex);
    queue.push_back(task);
    wake.notify_all();
    return task;
  }

  /// Whether nothing is queued or running: a blocking collective may then
  /// run on the caller's thread without reordering anything (only the
  /// caller issues collectives).
  bool idle() {
    std::lock_guard<std::mutex> lock(mutex);
    return queue.empty() && !busy;
  }

  void wait(Task &task) {
    std::unique_lock<std::mutex> lock(mutex);
    finished.wait(lock, [&] { return task.done; });
  }

  /// Remembers an async task under its result buffer, for tsrt_wait.
  void park(const std::shared_ptr<Task> &task) {
    std::lock_guard<std::mutex> lock(mutex);
    pending.push_back(task);
  }

  std::shared_ptr<Task> unpark(void *recv) {
    std::lock_guard<std::mutex> lock(mutex);
    for (size_t i = 0; i < pending.size(); ++i) {
      if (pending[i]->recv != recv)
        continue;
      std::shared_ptr<Task> task = pending[i];
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
      return task;
    }
    return nullptr;
  }

private:
  Engine() : thread([this] { loop(); }) { thread.detach(); }

  void loop() {
    for (;;) {
      std::shared_ptr<Task> task;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return !queue.empty(); });
        task = queue.front();
        queue.pop_front();
        busy = true;
      }
      tsr_status_t status = task->work();
      std::string error = status == TSR_OK ? "" : tsr_last_error();
      std::lock_guard<std::mutex> lock(mutex);
      busy = false;
      task->status = status;
      task->error = std::move(error);
      task->done = true;
      finished.notify_all();
    }
  }

  std::mutex mutex;
  std::condition_variable wake, finished;
  std::deque<std::shared_ptr<Task>> queue;
  std::vector<std::shared_ptr<Task>> pending;
  bool busy = false;
  std::thread thread;
};

[[noreturn]] void dieWith(const Task &task) {
  fail(task.status, task.error);
  die(task.label);
}

/// Runs a collective now: inline on an unbound axis or when no collective
/// is in flight (saving the hand-off, which costs small messages most), else
/// on the communication thread after everything issued before it.
void runNow(tsr_comm_t *comm, int64_t id, void *recv, size_t recvBytes,
            const Work &work) {
  std::string label = describe(id);
  if (!comm || Engine::get().idle()) {
    if (work() != TSR_OK)
      die(label);
  } else {
    std::shared_ptr<Task> task =
        Engine::get().submit(work, label, id, recv, recvBytes);
    Engine::get().wait(*task);
    if (task->status != TSR_OK)
      dieWith(*task);
  }
  noteResult(id, recv, recvBytes);
}

/// Starts a collective that tsrt_wait(recv, ...) completes.
void runLater(tsr_comm_t *comm, int64_t id, void *recv, size_t recvBytes,
              const Work &work) {
  std::string label = describe(id);
  auto task = std::make_shared<Task>();
  if (!comm) {
    // Alone on the axis: a copy, done before the wait like any other.
    task->status = work();
    task->error = task->status == TSR_OK ? "" : tsr_last_error();
    task->done = true;
    task->label = label;
    task->id = id;
    task->recv = recv;
    task->recvBytes = recvBytes;
  } else {
    task = Engine::get().submit(work, label, id, recv, recvBytes);
  }
  Engine::get().park(task);
}

/// The send data of an asynchronous collective, copied when it starts:
/// compiled code may free or reuse the operand's buffer as soon as the start
/// returns (bufferization sees no later use of it), so the collective must
/// not read it after that. `elements` counts what the collective sends.
std::shared_ptr<std::vector<char>> stage(const void *send, int64_t elements,
                                         int64_t dtype) {
  size_t size = tsr_dtype_size(static_cast<tsr_dtype_t>(dtype));
  size_t bytes = elements > 0 && size > 0 ? elements * size : 0;
  auto copy = std::make_shared<std::vector<char>>(bytes);
  if (bytes)
    std::memcpy(copy->data(), send, bytes);
  return copy;
}

/// Issues one collective on `comm` (null: a group of one rank, which
/// copies), reading its data from `send`, ordered on `on`: null on the CPU,
/// the stream it is enqueued on on a GPU. Returns its status.
using Issue = std::function<tsr_status_t(const void *send, void *on)>;

//===----------------------------------------------------------------------===//
// Collectives of code compiled for a GPU
//===----------------------------------------------------------------------===//

/// An asynchronous collective of GPU code between its start and its wait.
struct InFlight {
  void *recv = nullptr;
  /// Recorded on the communication stream after the collective; null for a
  /// group of one rank, whose copy is on the compute stream already.
  void *done = nullptr;
  /// The block of the device pool holding the send data, or null.
  void *staging = nullptr;
  int64_t id = -1;
  std::string label;
};

/// The asynchronous collectives in flight. Never destroyed, like the
/// Engine.
struct DeviceState {
  std::mutex mutex;
  std::vector<InFlight> inFlight;
};

DeviceState &deviceState() {
  static DeviceState *state = new DeviceState();
  return *state;
}

/// The communication stream, after the work queued on `stream` so far.
void *communicationAfter(void *stream) {
  void *on = communicationStream();
  return on && orderStreams(on, stream) == TSR_OK ? on : nullptr;
}

// The device path never calls noteResult: tagGradientBuffer counts blocks
// of the host allocator (Memory.cpp, which finds them by their address),
// and a GPU program's buffers are device pool blocks, which it never holds.

/// A blocking collective of GPU code: it runs after the work queued on
/// `stream` before the call, and the work queued after the call waits for
/// it. The host only enqueues.
void runOnDevice(tsr_comm_t *comm, int64_t id, const void *send, void *stream,
                 const Issue &issue) {
  std::string label = describe(id);
  if (!comm) {
    if (issue(send, stream) != TSR_OK)
      die(label);
    return;
  }
  void *on = communicationAfter(stream);
  if (!on || issue(send, on) != TSR_OK || orderStreams(stream, on) != TSR_OK)
    die(label);
}

/// Starts an asynchronous collective of GPU code that tsrt_wait(recv, ...)
/// completes. `sendBytes` is what it reads from `send`.
void startOnDevice(tsr_comm_t *comm, int64_t id, const void *send,
                   size_t sendBytes, void *recv, void *stream,
                   const Issue &issue) {
  InFlight task;
  task.recv = recv;
  task.id = id;
  task.label = describe(id);
  if (!comm) {
    // The copy is queued on `stream` before whatever compiled code queues
    // there later (an overwrite of `send` included): no staging, and the
    // wait has nothing to order.
    if (issue(send, stream) != TSR_OK)
      die(task.label);
  } else {
    // Compiled code may overwrite or free `send` as soon as this returns,
    // by work on `stream` that does not wait for the collective: it reads
    // a copy made on `stream` first. In place (`send` is `recv`) the
    // buffer stays untouched until the wait.
    const void *from = send;
    if (send != recv && sendBytes > 0) {
      if (allocateDeviceBlock(sendBytes, &task.staging) != TSR_OK ||
          tsr_device_memcpy(task.staging, send, sendBytes, stream) != TSR_OK)
        die(task.label);
      from = task.staging;
    }
    void *on = communicationAfter(stream);
    if (!on || issue(from, on) != TSR_OK ||
        takeOrderingEvent(&task.done) != TSR_OK ||
        tsr_event_record(task.done, on) != TSR_OK)
      die(task.label);
  }
  DeviceState &state = deviceState();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.inFlight.push_back(std::move(task));
}

void waitOnDevice(void *recv, void *stream) {
  DeviceState &state = deviceState();
  InFlight task;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    auto it = std::find_if(state.inFlight.begin(), state.inFlight.end(),
                           [&](const InFlight &t) { return t.recv == recv; });
    if (it == state.inFlight.end())
      nothingInFlight(recv);
    task = std::move(*it);
    state.inFlight.erase(it);
  }
  if (task.done) {
    if (tsr_stream_wait_event(stream, task.done) != TSR_OK)
      die(task.label);
    giveOrderingEvent(task.done);
  }
  // Whoever gets the staging block next writes it by work queued on
  // `stream` after this wait, so after the collective has read it.
  freeDeviceBlock(task.staging);
}

//===----------------------------------------------------------------------===//
// Both targets
//===----------------------------------------------------------------------===//

/// A blocking collective: done when this returns on the CPU; on a GPU,
/// what `stream` runs after the call waits for it.
void runBlocking(tsr_comm_t *comm, int64_t id, const void *send, void *recv,
                 size_t recvBytes, void *stream, const Issue &issue) {
  if (stream)
    return runOnDevice(comm, id, send, stream, issue);
  runNow(comm, id, recv, recvBytes,
         [issue, send] { return issue(send, nullptr); });
}

/// An asynchronous collective reading `sendElements` of `dtype` from
/// `send`, which tsrt_wait(recv, stream) completes.
void start(tsr_comm_t *comm, int64_t id, const void *send, int64_t sendElements,
           int64_t dtype, void *recv, size_t recvBytes, void *stream,
           const Issue &issue) {
  if (stream)
    return startOnDevice(comm, id, send, bytesOf(sendElements, dtype), recv,
                         stream, issue);
  auto staged = stage(send, sendElements, dtype);
  runLater(comm, id, recv, recvBytes,
           [issue, staged] { return issue(staged->data(), nullptr); });
}

Issue allReduceIssue(tsr_comm_t *comm, std::string label, void *recv,
                     int64_t count, int64_t dtype, int64_t op) {
  return [=](const void *send, void *on) {
    tsr_status_t status = checkReduction("all_reduce", dtype, op);
    if (status != TSR_OK)
      return status;
    if (!comm)
      return copyAlone("all_reduce", send, recv, count, dtype, on);
    tsr_comm_set_label(comm, label.c_str());
    return count < 0
               ? fail(TSR_ERROR_INVALID_ARGUMENT, "all_reduce: negative count")
               : tsr_comm_all_reduce(comm, send, recv, count,
                                     static_cast<tsr_dtype_t>(dtype),
                                     static_cast<tsr_reduce_op_t>(op), on);
  };
}

Issue reduceScatterIssue(tsr_comm_t *comm, std::string label, void *recv,
                         int64_t count, int64_t dtype, int64_t op) {
  return [=](const void *send, void *on) {
    tsr_status_t status = checkReduction("reduce_scatter", dtype, op);
    if (status != TSR_OK)
      return status;
    if (!comm)
      return copyAlone("reduce_scatter", send, recv, count, dtype, on);
    tsr_comm_set_label(comm, label.c_str());
    return count < 0
               ? fail(TSR_ERROR_INVALID_ARGUMENT,
                      "reduce_scatter: negative count")
               : tsr_comm_reduce_scatter(comm, send, recv, count,
                                         static_cast<tsr_dtype_t>(dtype),
                                         static_cast<tsr_reduce_op_t>(op), on);
  };
}

Issue allGatherIssue(tsr_comm_t *comm, std::string label, void *recv,
                     int64_t count, int64_t dtype) {
  return [=](const void *send, void *on) {
    if (!comm)
      return copyAlone("all_gather", send, recv, count, dtype, on);
    tsr_comm_set_label(comm, label.c_str());
    return count < 0 ? fail(TSR_ERROR_INVALID_ARGUMENT, "negative count")
                     : tsr_comm_all_gather(comm, send, recv, count,
                                           static_cast<tsr_dtype_t>(dtype), on);
  };
}

} // namespace

void tsrt_all_reduce(int64_t id, int64_t axis, const void *send, void *recv,
                     int64_t count, int64_t dtype, int64_t op, void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  runBlocking(comm, id, send, recv, bytesOf(count, dtype), stream,
              allReduceIssue(comm, describe(id), recv, count, dtype, op));
}

void tsrt_all_reduce_start(int64_t id, int64_t axis, const void *send,
                           void *recv, int64_t count, int64_t dtype, int64_t op,
                           void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  start(comm, id, send, count, dtype, recv, bytesOf(count, dtype), stream,
        allReduceIssue(comm, describe(id), recv, count, dtype, op));
}

void tsrt_reduce_scatter(int64_t id, int64_t axis, const void *send, void *recv,
                         int64_t recv_count, int64_t dtype, int64_t op,
                         void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  runBlocking(
      comm, id, send, recv, bytesOf(recv_count, dtype), stream,
      reduceScatterIssue(comm, describe(id), recv, recv_count, dtype, op));
}

void tsrt_reduce_scatter_start(int64_t id, int64_t axis, const void *send,
                               void *recv, int64_t recv_count, int64_t dtype,
                               int64_t op, void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  start(comm, id, send, recv_count * tsr_comm_size(comm), dtype, recv,
        bytesOf(recv_count, dtype), stream,
        reduceScatterIssue(comm, describe(id), recv, recv_count, dtype, op));
}

void tsrt_all_gather(int64_t id, int64_t axis, const void *send, void *recv,
                     int64_t send_count, int64_t dtype, void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  runBlocking(comm, id, send, recv,
              bytesOf(send_count * tsr_comm_size(comm), dtype), stream,
              allGatherIssue(comm, describe(id), recv, send_count, dtype));
}

void tsrt_all_gather_start(int64_t id, int64_t axis, const void *send,
                           void *recv, int64_t send_count, int64_t dtype,
                           void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  start(comm, id, send, send_count, dtype, recv,
        bytesOf(send_count * tsr_comm_size(comm), dtype), stream,
        allGatherIssue(comm, describe(id), recv, send_count, dtype));
}

void tsrt_permute(int64_t id, int64_t axis, const void *send, void *recv,
                  int64_t send_count, int64_t dtype, int64_t recv_count,
                  int64_t send_to, int64_t recv_from, void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  std::string label = describe(id);
  runBlocking(
      comm, id, send, recv, recv_from >= 0 ? bytesOf(recv_count, dtype) : 0,
      stream, [=](const void *from, void *on) {
        if (!comm)
          return fail(TSR_ERROR_INVALID_ARGUMENT,
                      "permute: the group has one rank, so there is no peer");
        tsr_comm_set_label(comm, label.c_str());
        auto type = static_cast<tsr_dtype_t>(dtype);
        if (send_to >= 0)
          if (tsr_status_t s =
                  tsr_comm_send(comm, from, send_count, type, send_to, on))
            return s;
        if (recv_from >= 0)
          return tsr_comm_recv(comm, recv, recv_count, type, recv_from, on);
        return TSR_OK;
      });
}

void tsrt_wait(void *recv, void *stream) {
  if (stream)
    return waitOnDevice(recv, stream);
  std::shared_ptr<Task> task = Engine::get().unpark(recv);
  if (!task)
    nothingInFlight(recv);
  Engine::get().wait(*task);
  if (task->status != TSR_OK)
    dieWith(*task);
  noteResult(task->id, task->recv, task->recvBytes);
}

void tsrt_all_to_all(int64_t id, int64_t axis, const void *send, void *recv,
                     int64_t count, int64_t dtype, void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  std::string label = describe(id);
  runBlocking(comm, id, send, recv, bytesOf(count, dtype), stream,
              [=](const void *from, void *on) {
                if (!comm)
                  return copyAlone("all_to_all", from, recv, count, dtype, on);
                tsr_comm_set_label(comm, label.c_str());
                int64_t size = tsr_comm_size(comm);
                return count < 0 || count % size != 0
                           ? fail(TSR_ERROR_INVALID_ARGUMENT,
                                  "all_to_all: " + std::to_string(count) +
                                      " elements do not split into " +
                                      std::to_string(size) + " blocks")
                           : tsr_comm_all_to_all(
                                 comm, from, recv, count / size,
                                 static_cast<tsr_dtype_t>(dtype), on);
              });
}

void tsrt_broadcast(int64_t id, int64_t axis, const void *send, void *recv,
                    int64_t count, int64_t dtype, int64_t root, void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  std::string label = describe(id);
  runBlocking(comm, id, send, recv, bytesOf(count, dtype), stream,
              [=](const void *from, void *on) {
                tsr_status_t status =
                    copyAlone("broadcast", from, recv, count, dtype, on);
                if (status != TSR_OK || !comm)
                  return status;
                tsr_comm_set_label(comm, label.c_str());
                return root < 0 || root >= tsr_comm_size(comm)
                           ? fail(TSR_ERROR_INVALID_ARGUMENT,
                                  "broadcast: root " + std::to_string(root) +
                                      " is not a rank of the axis")
                           : tsr_comm_broadcast(comm, recv, count,
                                                static_cast<tsr_dtype_t>(dtype),
                                                static_cast<int>(root), on);
              });
}
