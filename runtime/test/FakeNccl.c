/* A stand-in for libtessera_comm_nccl.so (runtime/lib/CommPlugin.h) over
 * the fake CUDA runtime (FakeCudart.c), for testing how the runtime orders
 * collectives on streams without a GPU: a TSR_COMM_NCCL world of one rank.
 * Like NCCL, a collective is work queued on the stream it is given, which
 * returns at once: its copy happens when that stream runs it (with the
 * fake's deferred streams, maybe much later, or early on stale data when the
 * runtime forgot an event). Over one rank every reduction is a copy, and so
 * are reduce-scatter, all-gather and all-to-all; a broadcast changes
 * nothing; a send to self is received by the next recv. It remembers the
 * stream of the last call, for the tests. Selected with
 * TESSERA_COMM_NCCL_PLUGIN.
 *
 * For the device watchdog (CommNccl.cpp): with fakeNcclHang(1) every
 * collective queues a gate (FakeCudart.c) before its copy, so that it never
 * completes, as when a peer has died; fakeNcclSetAsyncError makes
 * async_error fail with a message, as ncclCommGetAsyncError does after a
 * network error; and it counts the aborts. */
#include "CommPlugin.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FakeCudart.c's. */
int cudaGetDeviceCount(int *count);
int cudaStreamSynchronize(void *stream);
void fakeCudaEnqueue(void *stream, void (*fn)(void *), void *arg);
void fakeCudaEnqueueGate(void *stream);

/* Per thread, like the real plugin's: the watchdog thread asks too. */
static _Thread_local char lastError[256];
static void *lastStream;
static int64_t calls;
static const char *lastCall = "";
/* Set by the tests while the runtime's watchdog thread reads them. */
static _Atomic int hanging;
static _Atomic int64_t aborts;
static char asyncErrorText[256];
static _Atomic int hasAsyncError;

/* A send to self waiting for its recv (NCCL pairs them in order). */
static const void *sent;
static size_t sentBytes;
static int hasSent;

static int failWith(tsr_status_t status, const char *message) {
  snprintf(lastError, sizeof(lastError), "%s", message);
  return status;
}

static const char *lastErrorText(void) { return lastError; }

static int checkDevice(int device) {
  int count = 0;
  cudaGetDeviceCount(&count);
  if (device < 0 || device >= count)
    return failWith(TSR_ERROR_INVALID_ARGUMENT, "no such CUDA device");
  return TSR_OK;
}

static int makeUniqueId(void *out) {
  memcpy(out, "fake-nccl-id", 12);
  return TSR_OK;
}

/* A communicator is a rank and a size that are always 0 and 1. */
static int communicator;

static int init(const void *id, int rank, int size, int device, void **out) {
  (void)device;
  if (memcmp(id, "fake-nccl-id", 12) != 0)
    return failWith(TSR_ERROR_INVALID_ARGUMENT, "not the fake's unique id");
  if (rank != 0 || size != 1)
    return failWith(TSR_ERROR_UNSUPPORTED, "the fake NCCL has one rank");
  *out = &communicator;
  return TSR_OK;
}

static int split(void *comm, int color, int key, void **out) {
  (void)comm;
  (void)color;
  (void)key;
  *out = &communicator;
  return TSR_OK;
}

static void destroy(void *comm) { (void)comm; }

static int rankAndSize(void *comm, int *rank, int *size) {
  (void)comm;
  *rank = 0;
  *size = 1;
  return TSR_OK;
}

typedef struct {
  void *dst;
  const void *src;
  size_t bytes;
} Copy;

static void runCopy(void *arg) {
  Copy *copy = arg;
  memmove(copy->dst, copy->src, copy->bytes);
  free(copy);
}

/* Queues the copy of `count` elements on `stream`, as NCCL queues its
 * kernel. */
static int enqueue(const char *what, const void *src, void *dst, size_t count,
                   tsr_dtype_t dtype, void *stream) {
  Copy *copy = malloc(sizeof(Copy));
  if (!copy)
    return failWith(TSR_ERROR_OUT_OF_MEMORY, "out of memory");
  copy->dst = dst;
  copy->src = src;
  copy->bytes = count * tsr_dtype_size(dtype);
  lastStream = stream;
  lastCall = what;
  ++calls;
  if (hanging)
    fakeCudaEnqueueGate(stream);
  fakeCudaEnqueue(stream, runCopy, copy);
  return TSR_OK;
}

static int allReduce(void *comm, const void *send, void *recv, size_t count,
                     tsr_dtype_t dtype, tsr_reduce_op_t op, void *stream) {
  (void)comm;
  (void)op;
  return enqueue("all_reduce", send, recv, count, dtype, stream);
}

static int reduceScatter(void *comm, const void *send, void *recv, size_t count,
                         tsr_dtype_t dtype, tsr_reduce_op_t op, void *stream) {
  (void)comm;
  (void)op;
  return enqueue("reduce_scatter", send, recv, count, dtype, stream);
}

static int allGather(void *comm, const void *send, void *recv, size_t count,
                     tsr_dtype_t dtype, void *stream) {
  (void)comm;
  return enqueue("all_gather", send, recv, count, dtype, stream);
}

static int allToAll(void *comm, const void *send, void *recv, size_t count,
                    tsr_dtype_t dtype, void *stream) {
  (void)comm;
  return enqueue("all_to_all", send, recv, count, dtype, stream);
}

static int broadcast(void *comm, void *buffer, size_t count, tsr_dtype_t dtype,
                     int root, void *stream) {
  (void)comm;
  (void)root;
  return enqueue("broadcast", buffer, buffer, count, dtype, stream);
}

static int sendTo(void *comm, const void *buffer, size_t count,
                  tsr_dtype_t dtype, int peer, void *stream) {
  (void)comm;
  (void)peer;
  if (hasSent)
    return failWith(TSR_ERROR_UNSUPPORTED, "the fake NCCL holds one send");
  sent = buffer;
  sentBytes = count * tsr_dtype_size(dtype);
  hasSent = 1;
  lastStream = stream;
  lastCall = "send";
  ++calls;
  return TSR_OK;
}

static int recvFrom(void *comm, void *buffer, size_t count, tsr_dtype_t dtype,
                    int peer, void *stream) {
  (void)comm;
  (void)peer;
  if (!hasSent || sentBytes != count * tsr_dtype_size(dtype))
    return failWith(TSR_ERROR_MISMATCH, "recv without a matching send");
  hasSent = 0;
  return enqueue("recv", sent, buffer, count, dtype, stream);
}

static int barrier(void *comm) {
  (void)comm;
  return cudaStreamSynchronize(NULL) == 0
             ? TSR_OK
             : failWith(TSR_ERROR_IO, "cudaStreamSynchronize");
}

static int asyncError(void *comm) {
  (void)comm;
  if (!hasAsyncError)
    return TSR_OK;
  return failWith(TSR_ERROR_IO, asyncErrorText);
}

/* Says so on stderr, where a death test sees it after the runtime's line. */
static void abortComm(void *comm) {
  (void)comm;
  ++aborts;
  fputs("fake NCCL: communicator aborted\n", stderr);
}

static const tsr_comm_plugin_t kTable = {
    TSR_COMM_PLUGIN_ABI,
    16,
    lastErrorText,
    checkDevice,
    makeUniqueId,
    init,
    split,
    destroy,
    rankAndSize,
    allReduce,
    reduceScatter,
    allGather,
    allToAll,
    broadcast,
    sendTo,
    recvFrom,
    barrier,
    asyncError,
    abortComm,
};

const tsr_comm_plugin_t *tessera_comm_plugin_v1(void) { return &kTable; }

/* For the tests: the stream of the last call, what it was, and how many
 * calls there were. */
void *fakeNcclLastStream(void) { return lastStream; }
const char *fakeNcclLastCall(void) { return lastCall; }
int64_t fakeNcclCalls(void) { return calls; }

/* Makes the collectives issued from now on hang (on) or complete (off). */
void fakeNcclHang(int on) { hanging = on; }

/* Makes async_error fail with `message` ("ncclCommGetAsyncError: ..."), or
 * succeed again (null). Set before the watchdog can look. */
void fakeNcclSetAsyncError(const char *message) {
  hasAsyncError = 0;
  if (message) {
    snprintf(asyncErrorText, sizeof(asyncErrorText), "%s", message);
    hasAsyncError = 1;
  }
}

/* How many times the runtime aborted a communicator. */
int64_t fakeNcclAborts(void) { return aborts; }
