//===- Comm.cpp - Communicators: arguments, labels, signals ---------------===//
//
// The C entry points of communicators. They check arguments, name each
// collective (the label set by tsr_comm_set_label, or "all_reduce #5"), keep
// that name where the SIGTERM handler can print it, and dispatch to the
// backend (CommMpi.cpp, CommNccl.cpp).
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "Float16.h"
#include "RuntimeInternal.h"

#include <atomic>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>

using namespace tsr;

struct tsr_comm {
  std::unique_ptr<CommBackend> backend;
  bool isWorld = false;
  /// The label of the next collective, or "".
  std::string nextLabel;
  /// How many timeouts the next operation may wait (tsr_comm_set_patience).
  double nextPatience = 1;
  /// Collectives issued on this communicator (send/recv excluded).
  uint64_t issued = 0;
};

namespace {

//===----------------------------------------------------------------------===//
// What the SIGTERM handler prints
//===----------------------------------------------------------------------===//

// mpirun answers a dead rank by sending SIGTERM to the others; the handler
// says which collective this rank was waiting in. Everything it reads is
// formatted beforehand: two label buffers, the one being written and the one
// the handler may read, swapped by an atomic index.
constexpr size_t kSignalTextSize = 512;
char signalPrefix[64] = "tessera-run: ";
char signalLabel[2][kSignalTextSize];
std::atomic<int> signalLabelIndex{0};
std::atomic<bool> signalInCollective{false};
std::atomic<int> worldRankForMessages{0};
bool signalHandlerInstalled = false;

void writeAll(const char *text) {
  size_t length = std::strlen(text);
  while (length > 0) {
    ssize_t written = ::write(STDERR_FILENO, text, length);
    if (written <= 0)
      return;
    text += written;
    length -= static_cast<size_t>(written);
  }
}

void onTerminate(int signal) {
  char number[16];
  int n = signal, i = sizeof(number) - 1;
  number[i] = '\0';
  do {
    number[--i] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n > 0 && i > 0);
  writeAll(signalPrefix);
  writeAll("terminated by signal ");
  writeAll(number + i);
  const char *label = signalLabel[signalLabelIndex.load()];
  if (signalInCollective.load()) {
    writeAll(" while in ");
    writeAll(label);
  } else if (label[0] != '\0') {
    writeAll(" outside a collective (the last one was ");
    writeAll(label);
    writeAll(")");
  } else {
    writeAll(" before its first collective");
  }
  writeAll("\n");
  _exit(128 + signal);
}

void installSignalHandler(int worldRank) {
  worldRankForMessages = worldRank;
  std::snprintf(signalPrefix, sizeof(signalPrefix),
                "tessera-run: rank %d: ", worldRank);
  if (signalHandlerInstalled)
    return;
  struct sigaction current;
  if (sigaction(SIGTERM, nullptr, &current) != 0 ||
      current.sa_handler != SIG_DFL)
    return;
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = onTerminate;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  signalHandlerInstalled = true;
}

void noteCollectiveBegins(const std::string &label) {
  int next = 1 - signalLabelIndex.load();
  std::snprintf(signalLabel[next], kSignalTextSize, "%s", label.c_str());
  signalLabelIndex.store(next);
  signalInCollective.store(true);
}

void noteCollectiveEnds() { signalInCollective.store(false); }

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

bool isFloating(tsr_dtype_t dtype) {
  return dtype == TSR_DTYPE_FLOAT16 || dtype == TSR_DTYPE_BFLOAT16 ||
         dtype == TSR_DTYPE_FLOAT32 || dtype == TSR_DTYPE_FLOAT64;
}

tsr_status_t checkComm(const char *what, const tsr_comm_t *comm) {
  if (!comm)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                std::string(what) + ": null communicator");
  return TSR_OK;
}

tsr_status_t checkBuffers(const char *what, const void *send, const void *recv,
                          size_t count, const tsr_dtype_t &dtype) {
  if (tsr_status_t s = checkDtype(what, rawEnum(dtype)))
    return s;
  // MPI counts are ints.
  if (count > static_cast<size_t>(INT_MAX))
    return fail(TSR_ERROR_UNSUPPORTED,
                std::string(what) + ": " + std::to_string(count) +
                    " elements is more than the " + std::to_string(INT_MAX) +
                    " one call can move");
  if (count > 0 && (!send || !recv))
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                std::string(what) + ": null buffer");
  return TSR_OK;
}

tsr_status_t checkRank(const char *what, const char *role, int rank,
                       const tsr_comm_t *comm) {
  int size = comm->backend->size();
  if (rank < 0 || rank >= size)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                std::string(what) + ": " + role + " " + std::to_string(rank) +
                    " is not a rank of a communicator of size " +
                    std::to_string(size));
  return TSR_OK;
}

/// Runs one operation of `comm` between begin() and end(), under the label
/// of the next collective; `peer` >= 0 for send and recv.
template <typename Fn>
tsr_status_t run(tsr_comm_t *comm, const char *what, int peer, Fn &&body) {
  std::string label;
  if (!comm->nextLabel.empty()) {
    label = std::move(comm->nextLabel);
    comm->nextLabel.clear();
  } else if (peer >= 0) {
    label = std::string(what) + " with rank " +
            std::to_string(comm->backend->worldRank(peer));
  } else if (peer == kAnyPeer) {
    label = what;
  } else {
    label = std::string(what) + " #" + std::to_string(comm->issued);
  }
  if (peer == -1)
    ++comm->issued;
  double patience = comm->nextPatience;
  comm->nextPatience = 1;
  noteCollectiveBegins(label);
  comm->backend->begin(label, peer, patience);
  tsr_status_t status = guard(body);
  comm->backend->end();
  noteCollectiveEnds();
  return withContext(status, label);
}

} // namespace

//===----------------------------------------------------------------------===//
// Helpers shared with the backends
//===----------------------------------------------------------------------===//

const char *tsr::reduceOpName(tsr_reduce_op_t op) {
  switch (op) {
  case TSR_REDUCE_SUM:
    return "SUM";
  case TSR_REDUCE_MEAN:
    return "MEAN";
  case TSR_REDUCE_MAX:
    return "MAX";
  case TSR_REDUCE_MIN:
    return "MIN";
  }
  return "invalid";
}

tsr_status_t tsr::checkDtype(const char *what, int64_t dtype) {
  static constexpr tsr_dtype_t kValid[] = {
      TSR_DTYPE_FLOAT32, TSR_DTYPE_UINT8,   TSR_DTYPE_INT8,   TSR_DTYPE_UINT16,
      TSR_DTYPE_INT16,   TSR_DTYPE_INT32,   TSR_DTYPE_INT64,  TSR_DTYPE_BOOL,
      TSR_DTYPE_FLOAT16, TSR_DTYPE_FLOAT64, TSR_DTYPE_UINT32, TSR_DTYPE_UINT64,
      TSR_DTYPE_BFLOAT16};
  for (tsr_dtype_t valid : kValid)
    if (dtype == valid)
      return TSR_OK;
  return fail(TSR_ERROR_INVALID_ARGUMENT,
              std::string(what) + ": invalid dtype " + std::to_string(dtype));
}

tsr_status_t tsr::checkReduction(const char *what, int64_t rawDtype,
                                 int64_t rawOp) {
  if (rawOp < TSR_REDUCE_SUM || rawOp > TSR_REDUCE_MIN)
    return fail(TSR_ERROR_INVALID_ARGUMENT, std::string(what) +
                                                ": invalid reduction " +
                                                std::to_string(rawOp));
  if (tsr_status_t s = checkDtype(what, rawDtype))
    return s;
  auto dtype = static_cast<tsr_dtype_t>(rawDtype);
  auto op = static_cast<tsr_reduce_op_t>(rawOp);
  if (op == TSR_REDUCE_MEAN && !isFloating(dtype))
    return fail(TSR_ERROR_UNSUPPORTED,
                std::string(what) +
                    ": MEAN needs a floating-point dtype, got " +
                    tsr_dtype_name(dtype));
  if (dtype == TSR_DTYPE_BOOL && op == TSR_REDUCE_SUM)
    return fail(TSR_ERROR_UNSUPPORTED,
                std::string(what) +
                    ": bool reduces with MAX (or) and MIN (and), not SUM");
  return TSR_OK;
}

int tsr::processRank() { return worldRankForMessages.load(); }

void tsr::scaleElements(void *data, size_t count, tsr_dtype_t dtype,
                        double factor) {
  switch (dtype) {
  case TSR_DTYPE_FLOAT32: {
    float *values = static_cast<float *>(data), f = static_cast<float>(factor);
    for (size_t i = 0; i < count; ++i)
      values[i] *= f;
    break;
  }
  case TSR_DTYPE_FLOAT64: {
    double *values = static_cast<double *>(data);
    for (size_t i = 0; i < count; ++i)
      values[i] *= factor;
    break;
  }
  case TSR_DTYPE_FLOAT16:
  case TSR_DTYPE_BFLOAT16: {
    uint16_t *values = static_cast<uint16_t *>(data);
    bool half = dtype == TSR_DTYPE_FLOAT16;
    float f = static_cast<float>(factor);
    for (size_t i = 0; i < count; ++i)
      values[i] = half ? floatToHalf(halfToFloat(values[i]) * f)
                       : floatToBfloat16(bfloat16ToFloat(values[i]) * f);
    break;
  }
  default:
    break;
  }
}

//===----------------------------------------------------------------------===//
// C entry points
//===----------------------------------------------------------------------===//

tsr_status_t tsr_comm_init(tsr_comm_backend_t backend,
                           const tsr_comm_options_t *options,
                           tsr_comm_t **out_comm) {
  return guard([&]() -> tsr_status_t {
    if (!out_comm)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "tsr_comm_init: null out_comm");
    *out_comm = nullptr;
    tsr_comm_options_t opts{0.0, -1};
    if (options)
      opts = *options;
    if (opts.timeout_seconds < 0)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "tsr_comm_init: negative timeout_seconds");
    std::unique_ptr<CommBackend> impl;
    tsr_status_t status;
    int64_t kind = rawEnum(backend);
    if (kind == TSR_COMM_MPI)
      status = createMpiWorld(opts, impl);
    else if (kind == TSR_COMM_NCCL)
      status = createNcclWorld(opts, impl);
    else
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "tsr_comm_init: invalid backend " + std::to_string(kind));
    if (status != TSR_OK)
      return status;
    installSignalHandler(impl->worldRank(impl->rank()));
    auto comm = std::make_unique<tsr_comm>();
    comm->backend = std::move(impl);
    comm->isWorld = true;
    *out_comm = comm.release();
    return TSR_OK;
  });
}

tsr_status_t tsr_comm_split(tsr_comm_t *parent, int color, int key,
                            tsr_comm_t **out_comm) {
  return guard([&]() -> tsr_status_t {
    if (!out_comm)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "tsr_comm_split: null out_comm");
    *out_comm = nullptr;
    if (tsr_status_t s = checkComm("tsr_comm_split", parent))
      return s;
    if (color < 0)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "tsr_comm_split: color " +
                                                  std::to_string(color) +
                                                  " is negative");
    std::unique_ptr<CommBackend> impl;
    tsr_status_t status = run(parent, "split", -1, [&] {
      return parent->backend->split(color, key, impl);
    });
    if (status != TSR_OK)
      return status;
    auto comm = std::make_unique<tsr_comm>();
    comm->backend = std::move(impl);
    *out_comm = comm.release();
    return TSR_OK;
  });
}

void tsr_comm_destroy(tsr_comm_t *comm) { delete comm; }

int tsr_comm_rank(const tsr_comm_t *comm) {
  return comm ? comm->backend->rank() : 0;
}

int tsr_comm_size(const tsr_comm_t *comm) {
  return comm ? comm->backend->size() : 1;
}

tsr_comm_backend_t tsr_comm_backend(const tsr_comm_t *comm) {
  return comm ? comm->backend->kind() : TSR_COMM_MPI;
}

void tsr_comm_set_label(tsr_comm_t *comm, const char *label) {
  if (comm)
    comm->nextLabel = label ? label : "";
}

void tsr_comm_set_patience(tsr_comm_t *comm, double timeouts) {
  if (comm && timeouts > 0)
    comm->nextPatience = timeouts;
}

tsr_status_t tsr_comm_all_reduce(tsr_comm_t *comm, const void *send, void *recv,
                                 size_t count, tsr_dtype_t dtype,
                                 tsr_reduce_op_t op, void *stream) {
  const char *what = "all_reduce";
  if (tsr_status_t s = checkComm(what, comm))
    return s;
  if (tsr_status_t s = checkReduction(what, rawEnum(dtype), rawEnum(op)))
    return s;
  if (tsr_status_t s = checkBuffers(what, send, recv, count, dtype))
    return s;
  return run(comm, what, -1, [&] {
    return comm->backend->allReduce(send, recv, count, dtype, op, stream);
  });
}

tsr_status_t tsr_comm_reduce_scatter(tsr_comm_t *comm, const void *send,
                                     void *recv, size_t recv_count,
                                     tsr_dtype_t dtype, tsr_reduce_op_t op,
                                     void *stream) {
  const char *what = "reduce_scatter";
  if (tsr_status_t s = checkComm(what, comm))
    return s;
  if (tsr_status_t s = checkReduction(what, rawEnum(dtype), rawEnum(op)))
    return s;
  if (tsr_status_t s = checkBuffers(what, send, recv, recv_count, dtype))
    return s;
  if (send == recv && recv_count > 0)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "reduce_scatter: send and recv must differ");
  return run(comm, what, -1, [&] {
    return comm->backend->reduceScatter(send, recv, recv_count, dtype, op,
                                        stream);
  });
}

tsr_status_t tsr_comm_all_gather(tsr_comm_t *comm, const void *send, void *recv,
                                 size_t send_count, tsr_dtype_t dtype,
                                 void *stream) {
  const char *what = "all_gather";
  if (tsr_status_t s = checkComm(what, comm))
    return s;
  if (tsr_status_t s = checkBuffers(what, send, recv, send_count, dtype))
    return s;
  if (send == recv && send_count > 0)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "all_gather: send and recv must differ");
  return run(comm, what, -1, [&] {
    return comm->backend->allGather(send, recv, send_count, dtype, stream);
  });
}

tsr_status_t tsr_comm_all_to_all(tsr_comm_t *comm, const void *send, void *recv,
                                 size_t count, tsr_dtype_t dtype,
                                 void *stream) {
  const char *what = "all_to_all";
  if (tsr_status_t s = checkComm(what, comm))
    return s;
  if (tsr_status_t s = checkBuffers(what, send, recv, count, dtype))
    return s;
  if (send == recv && count > 0)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "all_to_all: send and recv must differ");
  return run(comm, what, -1, [&] {
    return comm->backend->allToAll(send, recv, count, dtype, stream);
  });
}

tsr_status_t tsr_comm_broadcast(tsr_comm_t *comm, void *buffer, size_t count,
                                tsr_dtype_t dtype, int root, void *stream) {
  const char *what = "broadcast";
  if (tsr_status_t s = checkComm(what, comm))
    return s;
  if (tsr_status_t s = checkBuffers(what, buffer, buffer, count, dtype))
    return s;
  if (tsr_status_t s = checkRank(what, "root", root, comm))
    return s;
  return run(comm, what, -1, [&] {
    return comm->backend->broadcast(buffer, count, dtype, root, stream);
  });
}

tsr_status_t tsr_comm_send(tsr_comm_t *comm, const void *buffer, size_t count,
                           tsr_dtype_t dtype, int peer, void *stream) {
  const char *what = "send";
  if (tsr_status_t s = checkComm(what, comm))
    return s;
  if (tsr_status_t s = checkBuffers(what, buffer, buffer, count, dtype))
    return s;
  if (tsr_status_t s = checkRank(what, "peer", peer, comm))
    return s;
  return run(comm, what, peer, [&] {
    return comm->backend->send(buffer, count, dtype, peer, stream);
  });
}

tsr_status_t tsr_comm_recv(tsr_comm_t *comm, void *buffer, size_t count,
                           tsr_dtype_t dtype, int peer, void *stream) {
  const char *what = "recv";
  if (tsr_status_t s = checkComm(what, comm))
    return s;
  if (tsr_status_t s = checkBuffers(what, buffer, buffer, count, dtype))
    return s;
  if (tsr_status_t s = checkRank(what, "peer", peer, comm))
    return s;
  return run(comm, what, peer, [&] {
    return comm->backend->recv(buffer, count, dtype, peer, stream);
  });
}

tsr_status_t tsr_comm_recv_any(tsr_comm_t *comm, void *buffer, size_t count,
                               tsr_dtype_t dtype, int *outPeer) {
  const char *what = "recv from any rank";
  if (tsr_status_t s = checkComm(what, comm))
    return s;
  if (tsr_status_t s = checkBuffers(what, buffer, buffer, count, dtype))
    return s;
  if (!outPeer)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                std::string(what) + ": null out_peer");
  return run(comm, what, kAnyPeer, [&] {
    return comm->backend->recvAny(buffer, count, dtype, *outPeer);
  });
}

tsr_status_t tsr_comm_barrier(tsr_comm_t *comm) {
  const char *what = "barrier";
  if (tsr_status_t s = checkComm(what, comm))
    return s;
  return run(comm, what, -1, [&] { return comm->backend->barrier(); });
}
