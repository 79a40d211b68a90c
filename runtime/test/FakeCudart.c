/* A stand-in for the CUDA runtime, built as libcudart.so.13, for testing the
 * runtime's bookkeeping of device and pinned host tensors on machines
 * without a GPU: one "device" whose memory is host memory. It defines the
 * entry points runtime/lib/Device.cpp resolves, with their C signatures,
 * and counts live allocations so that the tests can see every buffer
 * returned where it came from. A test process loads it before the runtime
 * first uses CUDA (dlopen by path; Device.cpp's dlopen of libcudart.so.13
 * then finds it by its soname); tessera-run finds it on LD_LIBRARY_PATH.
 *
 * Streams. Work queued on a stream (cudaMemcpyAsync, cudaEventRecord,
 * cudaStreamWaitEvent, and fakeCudaEnqueue for the fake NCCL and for tests
 * standing in for kernels) waits in the stream's queue, which runs in
 * order. By default every stream runs its work when it is queued, so that
 * everything happens at once, as the tests of bookkeeping expect. With
 * fakeCudaSetDeferred(1) a test may hold a stream (fakeCudaHoldStream): a
 * held stream runs nothing until something needs it, so that work another
 * stream fails to wait for runs too early, on stale data, and the test sees
 * wrong numbers. A stream that is not held runs its queue eagerly, up to a
 * wait on an event record that has not run yet. What needs a stream:
 * cudaStreamSynchronize runs its whole queue, cudaEventSynchronize the
 * queue of the event's stream up to its record, a stream that must run
 * past a wait first runs the recording stream up to the record (held or
 * not), and the synchronous calls (cudaMemcpy, cudaMemset, cudaFree,
 * cudaFreeHost, work on the null stream) run every queue to its end first,
 * as the legacy default stream does. Whenever work runs, the streams that
 * waited for it go on. A wait is on the event's latest record when it is
 * queued, as in CUDA. The functions queued with fakeCudaEnqueue run with
 * the fake's lock held: they must not call the fake.
 *
 * cudaEventQuery only looks: it answers whether the event's latest record
 * has run, and runs nothing that the rules above have not run already, so
 * that a watchdog polling it sees the device as it is.
 *
 * Gates. fakeCudaEnqueueGate queues an op that cannot run, held stream or
 * not, until fakeCudaOpenGates opens every gate queued so far: what follows
 * it on its stream waits, and so does every stream waiting for that. A
 * synchronization (or a synchronous call) that reaches a closed gate blocks
 * on a condition variable, with the fake's lock released, until the gates
 * open: a hung NCCL kernel, which the fake NCCL queues with fakeNcclHang.
 * Other threads may meanwhile query events and queue work. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { kSuccess = 0, kInvalidValue = 1, kMemoryAllocation = 2 };

static int64_t liveDevice, livePinned;

/* Every copy, synchronous or not: the tests count what a step moves. */
static int64_t copies;
/* cudaStreamWaitEvent calls; and the calls that made the host wait for
 * queued work (synchronizations and the synchronous calls). */
static int64_t streamWaits, hostWaits;

typedef enum { kCopy, kRecord, kWait, kCall, kGate } OpKind;

struct Stream;

typedef struct Op {
  struct Op *next;
  OpKind kind;
  /* Queue order over all streams: a stream has run its op of serial s once
   * its `ran` is s or more. */
  int64_t serial;
  void *dst;
  const void *src;
  size_t bytes;
  /* kWait: the record it waits for. */
  struct Stream *on;
  int64_t record;
  void (*fn)(void *);
  void *arg;
} Op;

typedef struct Stream {
  struct Stream *nextStream;
  Op *head, *tail;
  int held;
  int64_t ran;
  /* The cudaMemcpyAsync calls queued on it. */
  int64_t copies;
} Stream;

/* The latest record of an event: none (or on the null stream, done when
 * queued) when `stream` is null. */
typedef struct {
  Stream *stream;
  int64_t record;
} Event;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Signalled when fakeCudaOpenGates opens the gates queued up to serial
 * `gatesOpenThrough`. */
static pthread_cond_t gatesOpened = PTHREAD_COND_INITIALIZER;
static int64_t gatesOpenThrough;
static int deferred;
static int64_t serials;
/* Every stream ever created: a destroyed one is drained and kept, as waits
 * queued elsewhere may still name it. */
static Stream *streams;

static int hasRun(const Stream *stream, int64_t serial) {
  return !stream || stream->ran >= serial;
}

static int canRun(const Op *op) {
  if (op->kind == kGate)
    return op->serial <= gatesOpenThrough;
  return op->kind != kWait || hasRun(op->on, op->record);
}

static void perform(Op *op) {
  if (op->kind == kCopy)
    memmove(op->dst, op->src, op->bytes);
  else if (op->kind == kCall)
    op->fn(op->arg);
}

/* Runs the head of `stream`'s queue. */
static void runHead(Stream *stream) {
  Op *op = stream->head;
  stream->head = op->next;
  if (!stream->head)
    stream->tail = NULL;
  perform(op);
  stream->ran = op->serial;
  free(op);
}

/* Runs what the streams that are not held can run. */
static void progress(void) {
  int moved = 1;
  while (moved) {
    moved = 0;
    for (Stream *s = streams; s; s = s->nextStream) {
      if (s->held)
        continue;
      while (s->head && canRun(s->head)) {
        runHead(s);
        moved = 1;
      }
    }
  }
}

/* Runs `stream`'s queue up to its op of serial `until`, first running what
 * each wait in the way waits for, and blocking at a closed gate until the
 * gates open. Waits name records queued before them, so this ends once the
 * gates in the way open. */
static void drain(Stream *stream, int64_t until) {
  while (stream->head && stream->head->serial <= until) {
    Op *op = stream->head;
    if (canRun(op)) {
      runHead(stream);
      progress();
    } else if (op->kind == kGate) {
      /* Releases the lock: whoever opens the gates may run `op` meanwhile,
       * so look again. */
      pthread_cond_wait(&gatesOpened, &lock);
    } else {
      /* That may run `op` too (when `stream` is not held): look again. */
      drain(op->on, op->record);
    }
  }
}

static void drainAll(void) {
  for (Stream *s = streams; s; s = s->nextStream)
    drain(s, INT64_MAX);
}

static Op *newOp(OpKind kind) {
  Op *op = calloc(1, sizeof(Op));
  op->kind = kind;
  return op;
}

/* Queues `op` on `stream` (null: the legacy default stream, which runs it
 * once every queue is empty) and runs what can run. Returns its serial. */
static int64_t submit(Stream *stream, Op *op) {
  op->serial = ++serials;
  if (!stream) {
    drainAll();
    perform(op);
    free(op);
    return serials;
  }
  if (stream->tail)
    stream->tail->next = op;
  else
    stream->head = op;
  stream->tail = op;
  int64_t serial = op->serial;
  progress();
  return serial;
}

/* Called with the lock held: a synchronous call's wait for queued work. */
static void synchronousCall(void) {
  ++hostWaits;
  drainAll();
}

int cudaGetDeviceCount(int *count) {
  *count = 1;
  return kSuccess;
}

int cudaSetDevice(int device) { return device == 0 ? kSuccess : kInvalidValue; }

int cudaMalloc(void **ptr, size_t bytes) {
  *ptr = aligned_alloc(256, bytes ? (bytes + 255) / 256 * 256 : 256);
  if (!*ptr)
    return kMemoryAllocation;
  /* Fresh device memory holds garbage: the runtime must clear it. */
  memset(*ptr, 0xA5, bytes);
  ++liveDevice;
  return kSuccess;
}

int cudaFree(void *ptr) {
  pthread_mutex_lock(&lock);
  synchronousCall();
  pthread_mutex_unlock(&lock);
  if (ptr)
    --liveDevice;
  free(ptr);
  return kSuccess;
}

int cudaMallocHost(void **ptr, size_t bytes) {
  *ptr = aligned_alloc(4096, bytes ? (bytes + 4095) / 4096 * 4096 : 4096);
  if (!*ptr)
    return kMemoryAllocation;
  memset(*ptr, 0x5A, bytes);
  ++livePinned;
  return kSuccess;
}

int cudaFreeHost(void *ptr) {
  pthread_mutex_lock(&lock);
  synchronousCall();
  pthread_mutex_unlock(&lock);
  if (ptr)
    --livePinned;
  free(ptr);
  return kSuccess;
}

int cudaMemcpy(void *dst, const void *src, size_t bytes, int kind) {
  (void)kind;
  pthread_mutex_lock(&lock);
  synchronousCall();
  memmove(dst, src, bytes);
  ++copies;
  pthread_mutex_unlock(&lock);
  return kSuccess;
}

int cudaMemcpyAsync(void *dst, const void *src, size_t bytes, int kind,
                    void *stream) {
  (void)kind;
  Op *op = newOp(kCopy);
  op->dst = dst;
  op->src = src;
  op->bytes = bytes;
  pthread_mutex_lock(&lock);
  ++copies;
  if (stream)
    ++((Stream *)stream)->copies;
  submit(stream, op);
  pthread_mutex_unlock(&lock);
  return kSuccess;
}

int cudaMemset(void *ptr, int value, size_t bytes) {
  pthread_mutex_lock(&lock);
  synchronousCall();
  memset(ptr, value, bytes);
  pthread_mutex_unlock(&lock);
  return kSuccess;
}

int cudaStreamCreate(void **out) {
  Stream *stream = calloc(1, sizeof(Stream));
  if (!stream)
    return kMemoryAllocation;
  pthread_mutex_lock(&lock);
  stream->nextStream = streams;
  streams = stream;
  pthread_mutex_unlock(&lock);
  *out = stream;
  return kSuccess;
}

/* CUDA finishes a destroyed stream's work; the fake does it now. */
int cudaStreamDestroy(void *s) {
  pthread_mutex_lock(&lock);
  if (s)
    drain(s, INT64_MAX);
  pthread_mutex_unlock(&lock);
  return kSuccess;
}

int cudaStreamSynchronize(void *s) {
  pthread_mutex_lock(&lock);
  ++hostWaits;
  if (s)
    drain(s, INT64_MAX);
  else
    drainAll();
  pthread_mutex_unlock(&lock);
  return kSuccess;
}

int cudaStreamWaitEvent(void *s, void *e, unsigned flags) {
  (void)flags;
  Event *event = e;
  pthread_mutex_lock(&lock);
  ++streamWaits;
  /* On the null stream the wait changes nothing: its work drains every
   * queue first anyway. */
  if (s && !hasRun(event->stream, event->record)) {
    Op *op = newOp(kWait);
    op->on = event->stream;
    op->record = event->record;
    submit(s, op);
  }
  pthread_mutex_unlock(&lock);
  return kSuccess;
}

int cudaEventCreate(void **out) {
  *out = calloc(1, sizeof(Event));
  return *out ? kSuccess : kMemoryAllocation;
}

int cudaEventCreateWithFlags(void **out, unsigned flags) {
  (void)flags;
  return cudaEventCreate(out);
}

/* Waits queued on an event name its record, not the event: it may go. */
int cudaEventDestroy(void *e) {
  free(e);
  return kSuccess;
}

int cudaEventRecord(void *e, void *s) {
  Event *event = e;
  pthread_mutex_lock(&lock);
  event->stream = s;
  event->record = submit(s, newOp(kRecord));
  pthread_mutex_unlock(&lock);
  return kSuccess;
}

int cudaEventSynchronize(void *e) {
  Event *event = e;
  pthread_mutex_lock(&lock);
  ++hostWaits;
  if (event->stream)
    drain(event->stream, event->record);
  pthread_mutex_unlock(&lock);
  return kSuccess;
}

int cudaEventQuery(void *e) {
  enum { kNotReady = 600 };
  Event *event = e;
  pthread_mutex_lock(&lock);
  int done = hasRun(event->stream, event->record);
  pthread_mutex_unlock(&lock);
  return done ? kSuccess : kNotReady;
}

int cudaEventElapsedTime(float *ms, void *start, void *end) {
  (void)start;
  (void)end;
  *ms = 0;
  return kSuccess;
}

const char *cudaGetErrorString(int code) {
  return code == kSuccess ? "no error" : "fake CUDA error";
}

/* For the tests: the device and pinned buffers not yet freed. */
int64_t fakeCudaLiveDevice(void) { return liveDevice; }
int64_t fakeCudaCopies(void) { return copies; }
int64_t fakeCudaLivePinned(void) { return livePinned; }

/* Queues `fn(arg)` on `stream`: a kernel, or NCCL's work. */
void fakeCudaEnqueue(void *stream, void (*fn)(void *), void *arg) {
  Op *op = newOp(kCall);
  op->fn = fn;
  op->arg = arg;
  pthread_mutex_lock(&lock);
  submit(stream, op);
  pthread_mutex_unlock(&lock);
}

/* Queues a gate on `stream`: nothing after it there runs until
 * fakeCudaOpenGates. */
void fakeCudaEnqueueGate(void *stream) {
  pthread_mutex_lock(&lock);
  submit(stream, newOp(kGate));
  pthread_mutex_unlock(&lock);
}

/* Opens every gate queued so far, waking the synchronizations blocked on
 * them, and runs what can run. */
void fakeCudaOpenGates(void) {
  pthread_mutex_lock(&lock);
  gatesOpenThrough = serials;
  pthread_cond_broadcast(&gatesOpened);
  progress();
  pthread_mutex_unlock(&lock);
}

/* Turning deferral off releases every hold and runs every queue. */
void fakeCudaSetDeferred(int on) {
  pthread_mutex_lock(&lock);
  deferred = on;
  if (!on) {
    for (Stream *s = streams; s; s = s->nextStream)
      s->held = 0;
    drainAll();
  }
  pthread_mutex_unlock(&lock);
}

/* Holds `stream` (a cudaStreamCreate one), or lets it run what it can.
 * Without fakeCudaSetDeferred(1) there are no holds. */
void fakeCudaHoldStream(void *stream, int held) {
  pthread_mutex_lock(&lock);
  ((Stream *)stream)->held = held && deferred;
  progress();
  pthread_mutex_unlock(&lock);
}

/* The work queued on `stream` that has not run yet. */
int64_t fakeCudaPending(void *stream) {
  int64_t count = 0;
  pthread_mutex_lock(&lock);
  for (const Op *op = ((Stream *)stream)->head; op; op = op->next)
    ++count;
  pthread_mutex_unlock(&lock);
  return count;
}

int64_t fakeCudaStreamWaits(void) { return streamWaits; }
int64_t fakeCudaCopiesOn(void *stream) {
  pthread_mutex_lock(&lock);
  int64_t count = ((Stream *)stream)->copies;
  pthread_mutex_unlock(&lock);
  return count;
}
int64_t fakeCudaHostWaits(void) { return hostWaits; }
