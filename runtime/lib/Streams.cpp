//===- Streams.cpp - The streams of compiled CUDA programs ----------------===//
//
// A compiled program queues its kernels and copies on the compute stream
// and its collectives on the communication stream (CommEntry.cpp orders the
// two with events); the transfer stream is the third, for copies between
// device and host (the trainer's batch and loss), so that each kind of work
// overlaps the others on the GPU while the host only enqueues. The events
// that order them come from a pool here. Each stream
// is made on first use, never in a global constructor: loading the runtime
// or an artifact must work without CUDA.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"
#include "tessera-runtime/Device.h"

#include <mutex>
#include <string>
#include <vector>

using namespace tsr;

namespace {

/// One stream, or why it could not be made: creation is tried once, as a
/// failure (no CUDA, no device) does not go away.
struct KeptStream {
  std::once_flag once;
  void *stream = nullptr;
  tsr_status_t status = TSR_OK;
  std::string error;
};

void *kept(KeptStream &slot) {
  std::call_once(slot.once, [&] {
    slot.status = tsr_stream_create(&slot.stream);
    if (slot.status != TSR_OK)
      slot.error = tsr_last_error();
  });
  if (!slot.stream)
    fail(slot.status, slot.error);
  return slot.stream;
}

/// Idle ordering events. Never destroyed, like the streams.
struct EventPool {
  std::mutex mutex;
  std::vector<void *> idle;
};

EventPool &events() {
  static EventPool *pool = new EventPool;
  return *pool;
}

} // namespace

// Never destroyed: compiled code may still enqueue during static
// destruction, and the streams go with the process.
void *tsr::computeStream() {
  static KeptStream *slot = new KeptStream;
  return kept(*slot);
}

void *tsr::communicationStream() {
  static KeptStream *slot = new KeptStream;
  return kept(*slot);
}

void *tsr::transferStream() {
  static KeptStream *slot = new KeptStream;
  return kept(*slot);
}

tsr_status_t tsr::takeOrderingEvent(void **outEvent) {
  EventPool &pool = events();
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (!pool.idle.empty()) {
      *outEvent = pool.idle.back();
      pool.idle.pop_back();
      return TSR_OK;
    }
  }
  return createOrderingEvent(outEvent);
}

void tsr::giveOrderingEvent(void *event) {
  EventPool &pool = events();
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.idle.push_back(event);
}

tsr_status_t tsr::orderStreams(void *waiter, void *stream) {
  void *event = nullptr;
  if (tsr_status_t s = takeOrderingEvent(&event))
    return s;
  tsr_status_t status = tsr_event_record(event, stream);
  if (status == TSR_OK)
    status = tsr_stream_wait_event(waiter, event);
  giveOrderingEvent(event);
  return status;
}
