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
// Collectives on bound axes run on one communication thread in issue order;
// the *_start variants return at once and tsrt_wait completes them, which
// is how a gradient bucket overlaps the rest of the backward pass.
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "RuntimeInternal.h"

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
/// elements: the collective of a one-rank axis.
tsr_status_t copyAlone(const char *what, const void *send, void *recv,
                       int64_t count, int64_t dtype) {
  if (tsr_status_t s = checkDtype(what, dtype))
    return s;
  size_t elementSize = tsr_dtype_size(static_cast<tsr_dtype_t>(dtype));
  if (count < 0)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                std::string(what) + ": negative count");
  if (count > 0 && send != recv)
    std::memmove(recv, send, static_cast<size_t>(count) * elementSize);
  return TSR_OK;
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

/// Runs `work` later on its staged send data.
void runLaterStaged(tsr_comm_t *comm, int64_t id, void *recv, size_t recvBytes,
                    std::shared_ptr<std::vector<char>> staged,
                    const Work &work) {
  runLater(comm, id, recv, recvBytes, [work, staged] { return work(); });
}

Work allReduceWork(tsr_comm_t *comm, std::string label, const void *send,
                   void *recv, int64_t count, int64_t dtype, int64_t op,
                   void *stream) {
  return [=] {
    tsr_status_t status = checkReduction("all_reduce", dtype, op);
    if (status != TSR_OK)
      return status;
    if (!comm)
      return copyAlone("all_reduce", send, recv, count, dtype);
    tsr_comm_set_label(comm, label.c_str());
    return count < 0
               ? fail(TSR_ERROR_INVALID_ARGUMENT, "all_reduce: negative count")
               : tsr_comm_all_reduce(comm, send, recv, count,
                                     static_cast<tsr_dtype_t>(dtype),
                                     static_cast<tsr_reduce_op_t>(op), stream);
  };
}

Work reduceScatterWork(tsr_comm_t *comm, std::string label, const void *send,
                       void *recv, int64_t count, int64_t dtype, int64_t op,
                       void *stream) {
  return [=] {
    tsr_status_t status = checkReduction("reduce_scatter", dtype, op);
    if (status != TSR_OK)
      return status;
    if (!comm)
      return copyAlone("reduce_scatter", send, recv, count, dtype);
    tsr_comm_set_label(comm, label.c_str());
    return count < 0 ? fail(TSR_ERROR_INVALID_ARGUMENT,
                            "reduce_scatter: negative count")
                     : tsr_comm_reduce_scatter(comm, send, recv, count,
                                               static_cast<tsr_dtype_t>(dtype),
                                               static_cast<tsr_reduce_op_t>(op),
                                               stream);
  };
}

Work allGatherWork(tsr_comm_t *comm, std::string label, const void *send,
                   void *recv, int64_t count, int64_t dtype, void *stream) {
  return [=] {
    if (!comm)
      return copyAlone("all_gather", send, recv, count, dtype);
    tsr_comm_set_label(comm, label.c_str());
    return count < 0
               ? fail(TSR_ERROR_INVALID_ARGUMENT, "negative count")
               : tsr_comm_all_gather(comm, send, recv, count,
                                     static_cast<tsr_dtype_t>(dtype), stream);
  };
}

} // namespace

void tsrt_all_reduce(int64_t id, int64_t axis, const void *send, void *recv,
                     int64_t count, int64_t dtype, int64_t op, void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  runNow(
      comm, id, recv, bytesOf(count, dtype),
      allReduceWork(comm, describe(id), send, recv, count, dtype, op, stream));
}

void tsrt_all_reduce_start(int64_t id, int64_t axis, const void *send,
                           void *recv, int64_t count, int64_t dtype, int64_t op,
                           void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  auto staged = stage(send, count, dtype);
  runLaterStaged(comm, id, recv, bytesOf(count, dtype), staged,
                 allReduceWork(comm, describe(id), staged->data(), recv, count,
                               dtype, op, stream));
}

void tsrt_reduce_scatter(int64_t id, int64_t axis, const void *send, void *recv,
                         int64_t recv_count, int64_t dtype, int64_t op,
                         void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  runNow(comm, id, recv, bytesOf(recv_count, dtype),
         reduceScatterWork(comm, describe(id), send, recv, recv_count, dtype,
                           op, stream));
}

void tsrt_reduce_scatter_start(int64_t id, int64_t axis, const void *send,
                               void *recv, int64_t recv_count, int64_t dtype,
                               int64_t op, void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  auto staged = stage(send, recv_count * tsr_comm_size(comm), dtype);
  runLaterStaged(comm, id, recv, bytesOf(recv_count, dtype), staged,
                 reduceScatterWork(comm, describe(id), staged->data(), recv,
                                   recv_count, dtype, op, stream));
}

void tsrt_all_gather(int64_t id, int64_t axis, const void *send, void *recv,
                     int64_t send_count, int64_t dtype, void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  runNow(
      comm, id, recv, bytesOf(send_count * tsr_comm_size(comm), dtype),
      allGatherWork(comm, describe(id), send, recv, send_count, dtype, stream));
}

void tsrt_all_gather_start(int64_t id, int64_t axis, const void *send,
                           void *recv, int64_t send_count, int64_t dtype,
                           void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  auto staged = stage(send, send_count, dtype);
  runLaterStaged(comm, id, recv,
                 bytesOf(send_count * tsr_comm_size(comm), dtype), staged,
                 allGatherWork(comm, describe(id), staged->data(), recv,
                               send_count, dtype, stream));
}

void tsrt_permute(int64_t id, int64_t axis, const void *send, void *recv,
                  int64_t send_count, int64_t dtype, int64_t recv_count,
                  int64_t send_to, int64_t recv_from, void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  std::string label = describe(id);
  runNow(comm, id, recv, recv_from >= 0 ? bytesOf(recv_count, dtype) : 0, [=] {
    if (!comm)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "permute: the group has one rank, so there is no peer");
    tsr_comm_set_label(comm, label.c_str());
    auto type = static_cast<tsr_dtype_t>(dtype);
    if (send_to >= 0)
      if (tsr_status_t s =
              tsr_comm_send(comm, send, send_count, type, send_to, stream))
        return s;
    if (recv_from >= 0)
      return tsr_comm_recv(comm, recv, recv_count, type, recv_from, stream);
    return TSR_OK;
  });
}

void tsrt_wait(void *recv, void * /*stream*/) {
  std::shared_ptr<Task> task = Engine::get().unpark(recv);
  if (!task) {
    std::fprintf(stderr,
                 "tessera-run: rank %d: tsrt_wait: no collective in flight "
                 "writes %p\n",
                 processRank(), recv);
    std::exit(1);
  }
  Engine::get().wait(*task);
  if (task->status != TSR_OK)
    dieWith(*task);
  noteResult(task->id, task->recv, task->recvBytes);
}

void tsrt_all_to_all(int64_t id, int64_t axis, const void *send, void *recv,
                     int64_t count, int64_t dtype, void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  std::string label = describe(id);
  runNow(comm, id, recv, bytesOf(count, dtype), [=] {
    if (!comm)
      return copyAlone("all_to_all", send, recv, count, dtype);
    tsr_comm_set_label(comm, label.c_str());
    int64_t size = tsr_comm_size(comm);
    return count < 0 || count % size != 0
               ? fail(TSR_ERROR_INVALID_ARGUMENT,
                      "all_to_all: " + std::to_string(count) +
                          " elements do not split into " +
                          std::to_string(size) + " blocks")
               : tsr_comm_all_to_all(comm, send, recv, count / size,
                                     static_cast<tsr_dtype_t>(dtype), stream);
  });
}

void tsrt_broadcast(int64_t id, int64_t axis, const void *send, void *recv,
                    int64_t count, int64_t dtype, int64_t root, void *stream) {
  tsr_comm_t *comm = groupComm(id, axis);
  std::string label = describe(id);
  runNow(comm, id, recv, bytesOf(count, dtype), [=] {
    tsr_status_t status = copyAlone("broadcast", send, recv, count, dtype);
    if (status != TSR_OK || !comm)
      return status;
    tsr_comm_set_label(comm, label.c_str());
    return root < 0 || root >= tsr_comm_size(comm)
               ? fail(TSR_ERROR_INVALID_ARGUMENT,
                      "broadcast: root " + std::to_string(root) +
                          " is not a rank of the axis")
               : tsr_comm_broadcast(comm, recv, count,
                                    static_cast<tsr_dtype_t>(dtype),
                                    static_cast<int>(root), stream);
  });
}
