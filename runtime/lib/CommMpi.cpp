//===- CommMpi.cpp - The MPI communicator backend and its watchdog --------===//
//
// Collectives are the blocking MPI calls (MPI_Allreduce, ...) issued by the
// caller's thread: on OpenMPI 4.1 over shared memory MPI_Iallreduce polled
// with MPI_Test reached only 0.68-0.86 of MPI_Allreduce's bandwidth for
// 1-16 MiB (docs/runtime.md, "Communicators").
//
// The watchdog is one thread per process, so MPI runs at
// MPI_THREAD_MULTIPLE. Every communicator has a duplicate, `watch`, that
// carries only the watchdog's traffic. Entering a collective costs two
// atomic stores (the count of collectives entered and a deadline) and the
// label under an uncontended mutex; nothing goes over the wire. Every 100 ms
// the watchdog thread
//  - answers queries: a peer that timed out asks each rank how many
//    collectives it has entered on the communicator;
//  - checks the deadline of the collective in progress. Past it, it asks
//    every peer, gives them a grace period to answer, and names the ranks
//    that have not entered the collective (or did not answer: stopped or
//    dead), then calls MPI_Abort.
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "Float16.h"
#include "RuntimeInternal.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

using namespace tsr;

namespace {

//===----------------------------------------------------------------------===//
// MPI lifetime
//===----------------------------------------------------------------------===//

std::mutex lifetimeMutex;
int mpiUsers = 0;
bool weInitialized = false;
int threadLevel = MPI_THREAD_SINGLE;

// float16 and bfloat16: two-byte types with their own reductions.
MPI_Datatype halfType = MPI_DATATYPE_NULL, bfloat16Type = MPI_DATATYPE_NULL;
MPI_Op halfSum = MPI_OP_NULL, halfMax = MPI_OP_NULL, halfMin = MPI_OP_NULL;

tsr_status_t mpiFail(int code, const std::string &what) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return fail(TSR_ERROR_IO, what + ": " + std::string(text, length));
}

template <typename Combine>
void reduceTwoByte(void *in, void *inout, int *length, MPI_Datatype *type,
                   Combine combine) {
  const uint16_t *a = static_cast<const uint16_t *>(in);
  uint16_t *b = static_cast<uint16_t *>(inout);
  bool half = *type == halfType;
  for (int i = 0; i < *length; ++i) {
    float x = half ? halfToFloat(a[i]) : bfloat16ToFloat(a[i]);
    float y = half ? halfToFloat(b[i]) : bfloat16ToFloat(b[i]);
    float z = combine(x, y);
    b[i] = half ? floatToHalf(z) : floatToBfloat16(z);
  }
}

void sumTwoByte(void *in, void *inout, int *length, MPI_Datatype *type) {
  reduceTwoByte(in, inout, length, type,
                [](float x, float y) { return x + y; });
}
void maxTwoByte(void *in, void *inout, int *length, MPI_Datatype *type) {
  reduceTwoByte(in, inout, length, type,
                [](float x, float y) { return std::max(x, y); });
}
void minTwoByte(void *in, void *inout, int *length, MPI_Datatype *type) {
  reduceTwoByte(in, inout, length, type,
                [](float x, float y) { return std::min(x, y); });
}

tsr_status_t acquireMpi() {
  std::lock_guard<std::mutex> lock(lifetimeMutex);
  if (mpiUsers == 0) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized)
      return fail(TSR_ERROR_UNSUPPORTED,
                  "MPI was finalized already (a process initializes MPI "
                  "once: keep the world communicator until the end)");
    if (!initialized) {
      int code =
          MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &threadLevel);
      if (code != MPI_SUCCESS)
        return mpiFail(code, "MPI_Init_thread");
      weInitialized = true;
    } else {
      MPI_Query_thread(&threadLevel);
    }
    MPI_Type_contiguous(2, MPI_BYTE, &halfType);
    MPI_Type_commit(&halfType);
    MPI_Type_contiguous(2, MPI_BYTE, &bfloat16Type);
    MPI_Type_commit(&bfloat16Type);
    MPI_Op_create(sumTwoByte, 1, &halfSum);
    MPI_Op_create(maxTwoByte, 1, &halfMax);
    MPI_Op_create(minTwoByte, 1, &halfMin);
  }
  ++mpiUsers;
  return TSR_OK;
}

} // namespace

void tsr::releaseMpi() {
  std::lock_guard<std::mutex> lock(lifetimeMutex);
  if (--mpiUsers > 0)
    return;
  MPI_Op_free(&halfSum);
  MPI_Op_free(&halfMax);
  MPI_Op_free(&halfMin);
  MPI_Type_free(&halfType);
  MPI_Type_free(&bfloat16Type);
  if (weInitialized)
    MPI_Finalize();
  weInitialized = false;
}

namespace {

MPI_Datatype mpiType(tsr_dtype_t dtype) {
  switch (dtype) {
  case TSR_DTYPE_FLOAT32:
    return MPI_FLOAT;
  case TSR_DTYPE_FLOAT64:
    return MPI_DOUBLE;
  case TSR_DTYPE_INT8:
    return MPI_INT8_T;
  case TSR_DTYPE_UINT8:
  case TSR_DTYPE_BOOL:
    return MPI_UINT8_T;
  case TSR_DTYPE_INT16:
    return MPI_INT16_T;
  case TSR_DTYPE_UINT16:
    return MPI_UINT16_T;
  case TSR_DTYPE_INT32:
    return MPI_INT32_T;
  case TSR_DTYPE_UINT32:
    return MPI_UINT32_T;
  case TSR_DTYPE_INT64:
    return MPI_INT64_T;
  case TSR_DTYPE_UINT64:
    return MPI_UINT64_T;
  case TSR_DTYPE_FLOAT16:
    return halfType;
  case TSR_DTYPE_BFLOAT16:
    return bfloat16Type;
  default:
    return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpiOp(tsr_dtype_t dtype, tsr_reduce_op_t op) {
  bool twoByte = dtype == TSR_DTYPE_FLOAT16 || dtype == TSR_DTYPE_BFLOAT16;
  switch (op) {
  case TSR_REDUCE_SUM:
  case TSR_REDUCE_MEAN:
    return twoByte ? halfSum : MPI_SUM;
  case TSR_REDUCE_MAX:
    return twoByte ? halfMax : MPI_MAX;
  case TSR_REDUCE_MIN:
    return twoByte ? halfMin : MPI_MIN;
  }
  return MPI_OP_NULL;
}

int64_t nowNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr int kQueryTag = 1, kAnswerTag = 2;

class MpiComm;

/// The process's watchdog thread over every MPI communicator with a
/// timeout.
class Watchdog {
public:
  static Watchdog &get() {
    static Watchdog *instance = new Watchdog; // Outlives static destructors.
    return *instance;
  }
  void add(MpiComm *comm);
  void remove(MpiComm *comm);

private:
  void loop();
  void serveQueries(MpiComm &comm);
  [[noreturn]] void reportTimeout(MpiComm &comm, int64_t now);

  std::mutex mutex;
  std::condition_variable wake;
  std::vector<MpiComm *> comms;
  std::thread thread;
  bool stopping = false;
};

class MpiComm final : public CommBackend {
public:
  MpiComm(MPI_Comm comm, MPI_Comm watch, std::vector<int> worldRanks,
          double timeout)
      : comm(comm), watch(watch), worldRanks(std::move(worldRanks)),
        timeout(timeout) {
    MPI_Comm_rank(comm, &myRank);
    MPI_Comm_size(comm, &mySize);
    if (timeout > 0)
      Watchdog::get().add(this);
  }
  ~MpiComm() override {
    completeSends(/*wait=*/true);
    if (timeout > 0)
      Watchdog::get().remove(this);
    MPI_Comm_free(&watch);
    MPI_Comm_free(&comm);
    releaseMpi();
  }

  tsr_comm_backend_t kind() const override { return TSR_COMM_MPI; }
  int rank() const override { return myRank; }
  int size() const override { return mySize; }
  int worldRank(int rank) const override { return worldRanks[rank]; }

  void begin(const std::string &label, int peer, double patience) override {
    if (timeout <= 0)
      return;
    {
      std::lock_guard<std::mutex> lock(labelMutex);
      activeLabel = label;
      activeWait = timeout * patience;
    }
    activePeer.store(peer);
    if (peer == -1)
      entered.fetch_add(1);
    deadline.store(nowNanoseconds() +
                   static_cast<int64_t>(timeout * patience * 1e9));
  }
  void end() override {
    if (timeout > 0)
      deadline.store(0);
  }

  tsr_status_t allReduce(const void *send, void *recv, size_t count,
                         tsr_dtype_t dtype, tsr_reduce_op_t op,
                         void *) override {
    int code = MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv,
                             static_cast<int>(count), mpiType(dtype),
                             mpiOp(dtype, op), comm);
    if (code != MPI_SUCCESS)
      return mpiFail(code, "MPI_Allreduce");
    if (op == TSR_REDUCE_MEAN)
      scaleElements(recv, count, dtype, 1.0 / mySize);
    return TSR_OK;
  }

  tsr_status_t reduceScatter(const void *send, void *recv, size_t recvCount,
                             tsr_dtype_t dtype, tsr_reduce_op_t op,
                             void *) override {
    int code = MPI_Reduce_scatter_block(send, recv, static_cast<int>(recvCount),
                                        mpiType(dtype), mpiOp(dtype, op), comm);
    if (code != MPI_SUCCESS)
      return mpiFail(code, "MPI_Reduce_scatter_block");
    if (op == TSR_REDUCE_MEAN)
      scaleElements(recv, recvCount, dtype, 1.0 / mySize);
    return TSR_OK;
  }

  tsr_status_t allGather(const void *send, void *recv, size_t sendCount,
                         tsr_dtype_t dtype, void *) override {
    int count = static_cast<int>(sendCount);
    MPI_Datatype type = mpiType(dtype);
    int code = MPI_Allgather(send, count, type, recv, count, type, comm);
    return code == MPI_SUCCESS ? TSR_OK : mpiFail(code, "MPI_Allgather");
  }

  tsr_status_t allToAll(const void *send, void *recv, size_t count,
                        tsr_dtype_t dtype, void *) override {
    int n = static_cast<int>(count);
    MPI_Datatype type = mpiType(dtype);
    int code = MPI_Alltoall(send, n, type, recv, n, type, comm);
    return code == MPI_SUCCESS ? TSR_OK : mpiFail(code, "MPI_Alltoall");
  }

  tsr_status_t broadcast(void *buffer, size_t count, tsr_dtype_t dtype,
                         int root, void *) override {
    int code =
        MPI_Bcast(buffer, static_cast<int>(count), mpiType(dtype), root, comm);
    return code == MPI_SUCCESS ? TSR_OK : mpiFail(code, "MPI_Bcast");
  }

  /// A send never waits for its receive: it sends a copy of `buffer` with
  /// MPI_Isend, completed later (pipeline stages send before they receive,
  /// and a blocking send of a large message would wait for a receive that
  /// the peer posts only after its own send).
  tsr_status_t send(const void *buffer, size_t count, tsr_dtype_t dtype,
                    int peer, void *) override {
    if (tsr_status_t s = completeSends(/*wait=*/false))
      return s;
    size_t bytes = count * tsr_dtype_size(dtype);
    auto message = std::make_unique<Outgoing>();
    message->data.assign(static_cast<const char *>(buffer),
                         static_cast<const char *>(buffer) + bytes);
    int code = MPI_Isend(message->data.data(), static_cast<int>(count),
                         mpiType(dtype), peer, 0, comm, &message->request);
    if (code != MPI_SUCCESS)
      return mpiFail(code, "MPI_Isend");
    outgoing.push_back(std::move(message));
    return TSR_OK;
  }

  tsr_status_t recv(void *buffer, size_t count, tsr_dtype_t dtype, int peer,
                    void *) override {
    int code = MPI_Recv(buffer, static_cast<int>(count), mpiType(dtype), peer,
                        0, comm, MPI_STATUS_IGNORE);
    return code == MPI_SUCCESS ? TSR_OK : mpiFail(code, "MPI_Recv");
  }

  tsr_status_t recvAny(void *buffer, size_t count, tsr_dtype_t dtype,
                       int &outPeer) override {
    MPI_Status status;
    int code = MPI_Recv(buffer, static_cast<int>(count), mpiType(dtype),
                        MPI_ANY_SOURCE, 0, comm, &status);
    if (code != MPI_SUCCESS)
      return mpiFail(code, "MPI_Recv");
    outPeer = status.MPI_SOURCE;
    return TSR_OK;
  }

  tsr_status_t barrier() override {
    if (tsr_status_t s = completeSends(/*wait=*/true))
      return s;
    int code = MPI_Barrier(comm);
    return code == MPI_SUCCESS ? TSR_OK : mpiFail(code, "MPI_Barrier");
  }

  tsr_status_t split(int color, int key,
                     std::unique_ptr<CommBackend> &out) override {
    MPI_Comm child;
    int code = MPI_Comm_split(comm, color, key, &child);
    if (code != MPI_SUCCESS)
      return mpiFail(code, "MPI_Comm_split");
    return wrap(child, timeout, out);
  }

  /// Wraps `comm` (owned from now on) with its watch duplicate.
  /// Frees the copies of completed sends; with `wait`, waits for all.
  tsr_status_t completeSends(bool wait) {
    while (!outgoing.empty()) {
      int done = 0;
      MPI_Request &request = outgoing.front()->request;
      int code = wait ? MPI_Wait(&request, MPI_STATUS_IGNORE)
                      : MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (code != MPI_SUCCESS)
        return mpiFail(code, wait ? "MPI_Wait" : "MPI_Test");
      if (!wait && !done)
        break;
      outgoing.pop_front();
    }
    return TSR_OK;
  }

  static tsr_status_t wrap(MPI_Comm comm, double timeout,
                           std::unique_ptr<CommBackend> &out) {
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm watch;
    int code = MPI_Comm_dup(comm, &watch);
    if (code != MPI_SUCCESS) {
      MPI_Comm_free(&comm);
      return mpiFail(code, "MPI_Comm_dup");
    }
    int size;
    MPI_Comm_size(comm, &size);
    std::vector<int> local(size), world(size);
    for (int i = 0; i < size; ++i)
      local[i] = i;
    MPI_Group group, worldGroup;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &worldGroup);
    MPI_Group_translate_ranks(group, size, local.data(), worldGroup,
                              world.data());
    MPI_Group_free(&group);
    MPI_Group_free(&worldGroup);
    // Each MpiComm holds one reference to MPI, released by its destructor.
    if (tsr_status_t s = acquireMpi()) {
      MPI_Comm_free(&watch);
      MPI_Comm_free(&comm);
      return s;
    }
    out = std::make_unique<MpiComm>(comm, watch, std::move(world), timeout);
    return TSR_OK;
  }

  MPI_Comm comm, watch;
  std::vector<int> worldRanks;
  double timeout;
  /// Sends in flight, oldest first, each with the copy it sends.
  struct Outgoing {
    std::vector<char> data;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::deque<std::unique_ptr<Outgoing>> outgoing;
  int myRank = 0, mySize = 1;

  // Written by the caller's thread, read by the watchdog.
  std::atomic<int64_t> entered{0};
  std::atomic<int64_t> deadline{0};
  std::atomic<int> activePeer{-1};
  std::mutex labelMutex;
  std::string activeLabel;
  /// The seconds the operation in progress may wait.
  double activeWait = 0;
};

void Watchdog::add(MpiComm *comm) {
  std::lock_guard<std::mutex> lock(mutex);
  comms.push_back(comm);
  if (!thread.joinable()) {
    stopping = false;
    thread = std::thread([this] { loop(); });
  }
}

void Watchdog::remove(MpiComm *comm) {
  std::unique_lock<std::mutex> lock(mutex);
  comms.erase(std::find(comms.begin(), comms.end(), comm));
  if (!comms.empty())
    return;
  stopping = true;
  wake.notify_all();
  lock.unlock();
  thread.join();
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex);
  while (!stopping) {
    wake.wait_for(lock, std::chrono::milliseconds(100));
    if (stopping)
      break;
    int64_t now = nowNanoseconds();
    for (MpiComm *comm : comms) {
      if (threadLevel == MPI_THREAD_MULTIPLE)
        serveQueries(*comm);
      int64_t deadline = comm->deadline.load();
      if (deadline != 0 && now > deadline)
        reportTimeout(*comm, now);
    }
  }
}

void Watchdog::serveQueries(MpiComm &comm) {
  for (;;) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, comm.watch, &flag, &status);
    if (!flag)
      return;
    int64_t query;
    MPI_Recv(&query, 1, MPI_INT64_T, status.MPI_SOURCE, kQueryTag, comm.watch,
             MPI_STATUS_IGNORE);
    // Eight bytes go eagerly: this send does not wait for the asker.
    int64_t answer = comm.entered.load();
    MPI_Send(&answer, 1, MPI_INT64_T, status.MPI_SOURCE, kAnswerTag,
             comm.watch);
  }
}

void Watchdog::reportTimeout(MpiComm &comm, int64_t now) {
  std::string label;
  double waited;
  {
    std::lock_guard<std::mutex> lock(comm.labelMutex);
    label = comm.activeLabel;
    waited = comm.activeWait;
  }
  int self = comm.worldRank(comm.myRank);
  char head[64];
  std::snprintf(head, sizeof(head), "%g", waited);
  std::string message = "tessera-run: rank " + std::to_string(self) + ": " +
                        label + " timed out after " + head + " s";
  int peer = comm.activePeer.load();
  if (peer >= 0) {
    message +=
        "; rank " + std::to_string(comm.worldRank(peer)) + " never arrived";
  } else if (peer == kAnyPeer) {
    message += "; no rank sent anything";
  } else if (threadLevel != MPI_THREAD_MULTIPLE) {
    message += " (MPI runs below MPI_THREAD_MULTIPLE: cannot tell which "
               "ranks are missing)";
  } else {
    // Ask every peer how many collectives it has entered on `comm`; answer
    // the peers' own questions meanwhile. The grace period is a quarter of
    // the timeout, between 1 and 5 s.
    int64_t mine = comm.entered.load();
    int n = comm.mySize;
    std::vector<int64_t> answers(n, -1);
    std::vector<MPI_Request> requests(n, MPI_REQUEST_NULL);
    int64_t query = mine;
    for (int p = 0; p < n; ++p) {
      if (p == comm.myRank)
        continue;
      MPI_Request sent;
      MPI_Isend(&query, 1, MPI_INT64_T, p, kQueryTag, comm.watch, &sent);
      MPI_Request_free(&sent);
      MPI_Irecv(&answers[p], 1, MPI_INT64_T, p, kAnswerTag, comm.watch,
                &requests[p]);
    }
    double grace = std::min(5.0, std::max(1.0, comm.timeout / 4));
    int64_t until = now + static_cast<int64_t>(grace * 1e9);
    while (nowNanoseconds() < until) {
      serveQueries(comm);
      // Each request on its own: MPI_Testall completes none until all are.
      bool done = true;
      for (MPI_Request &request : requests) {
        int flag = 1;
        if (request != MPI_REQUEST_NULL)
          MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
        done = done && flag;
      }
      if (done)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::vector<int> absent, silent;
    for (int p = 0; p < n; ++p) {
      if (p == comm.myRank)
        continue;
      bool answered = requests[p] == MPI_REQUEST_NULL;
      if (answered && answers[p] >= mine)
        continue;
      absent.push_back(comm.worldRank(p));
      if (!answered)
        silent.push_back(comm.worldRank(p));
    }
    auto join = [](const std::vector<int> &ranks) {
      std::string text;
      for (size_t i = 0; i < ranks.size(); ++i)
        text += (i ? ", " : "") + std::to_string(ranks[i]);
      return text;
    };
    if (absent.empty())
      message += "; every rank arrived (the collective itself is stuck)";
    else
      message += (absent.size() == 1 ? "; rank " : "; ranks ") + join(absent) +
                 " never arrived";
    if (!silent.empty())
      message += silent.size() == absent.size()
                     ? " (not responding)"
                     : " (not responding: " + join(silent) + ")";
  }
  message += "\n";
  std::fputs(message.c_str(), stderr);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

} // namespace

tsr_status_t tsr::createMpiWorld(const tsr_comm_options_t &options,
                                 std::unique_ptr<CommBackend> &out) {
  if (tsr_status_t s = acquireMpi())
    return s;
  MPI_Comm world;
  int code = MPI_Comm_dup(MPI_COMM_WORLD, &world);
  tsr_status_t status = code == MPI_SUCCESS
                            ? MpiComm::wrap(world, options.timeout_seconds, out)
                            : mpiFail(code, "MPI_Comm_dup");
  releaseMpi();
  return status;
}

tsr_status_t
tsr::mpiBootstrapBroadcast(const std::function<tsr_status_t(void *)> &make,
                           void *bytes, size_t size, int &outRank,
                           int &outSize) {
  if (tsr_status_t s = acquireMpi())
    return s;
  MPI_Comm_rank(MPI_COMM_WORLD, &outRank);
  MPI_Comm_size(MPI_COMM_WORLD, &outSize);
  int made = TSR_OK;
  std::string error;
  if (outRank == 0) {
    made = make(bytes);
    error = tsr_last_error();
  }
  int code = MPI_Bcast(&made, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (code == MPI_SUCCESS && made == TSR_OK)
    code =
        MPI_Bcast(bytes, static_cast<int>(size), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (code != MPI_SUCCESS) {
    releaseMpi();
    return mpiFail(code, "MPI_Bcast of the unique id");
  }
  if (made != TSR_OK) {
    releaseMpi();
    return fail(static_cast<tsr_status_t>(made),
                outRank == 0 ? error : "rank 0 failed to make the unique id");
  }
  return TSR_OK;
}
