//===- Memory.cpp - Allocation functions for compiled code, accounting ----===//
//
// Compiled code allocates its temporaries through the generic functions that
// MLIR's finalize-memref-to-llvm emits calls to. Each block starts with a
// header holding where the block came from and the requested size, placed
// right before the returned (aligned) pointer, so that free needs no lookup
// and the counters see exactly the bytes compiled code asked for.
//
// A call of a program allocates the same sizes in the same order every time,
// and glibc returns large blocks to the kernel on free (mmap), so every
// training step would fault its activations in afresh (a GPT-2-shaped step
// faulted 880 MB a step and spent a fifth of its time there). The runtime
// therefore records each program's first call (tsr::ArenaCall around every
// call of tsr_artifact_invoke's schedule), plans an offset in one arena for
// every block of it (ArenaPlan.h), and serves the next calls from the arena:
// after the first call a step allocates nothing and faults in no page
// (e2e-page-faults). Keeping freed blocks by size instead, which this
// replaced, held as many blocks of each size as were ever live at once:
// 15% more than the step's peak on the GPT-2-shaped step, 60% on
// e2e-page-faults' one-layer GPT with the same vocabulary. The arena is
// within a few percent of the peak (tessera-run prints both).
//
// The plan is made at run time, from the events the call produced, rather
// than by the compiler: a call's blocks include those of loops, of callees,
// of collectives and of the GPU target's host code, in an order only
// bufferization's and lowering's last passes fix. tsr-cpu-memory-plan's
// static peak (the manifest's `peak_alloc_bytes`) is the same call's peak
// and bounds the arena from below.
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "RuntimeInternal.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>
#include <unordered_set>
#include <vector>

using namespace tsr;

namespace {

/// A current/peak pair of byte counters.
class Counter {
public:
  void add(size_t bytes) {
    size_t now = current.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    size_t seen = peak.load(std::memory_order_relaxed);
    while (now > seen &&
           !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed))
      ;
  }

  void subtract(size_t bytes) {
    current.fetch_sub(bytes, std::memory_order_relaxed);
  }

  void read(size_t *outCurrent, size_t *outPeak) const {
    if (outCurrent)
      *outCurrent = current.load(std::memory_order_relaxed);
    if (outPeak)
      *outPeak = peak.load(std::memory_order_relaxed);
  }

  void resetPeak() {
    peak.store(current.load(std::memory_order_relaxed),
               std::memory_order_relaxed);
  }

private:
  std::atomic<size_t> current{0};
  std::atomic<size_t> peak{0};
};

Counter compiledCode;
Counter tensors;
/// tsr_memory_set_device_capacity's limit on the two (0: none).
std::atomic<size_t> deviceCapacity{0};

Counter gradients;

/// Marks a header written by `allocate`, so that a pointer from elsewhere is
/// never mistaken for one of ours.
constexpr uint32_t kMagic = 0x74737261; // "tsra"

/// The blocks `allocate` handed out and compiled code has not freed: a
/// pointer from elsewhere (a runtime tensor that compiled code writes as an
/// out-parameter) has no header in front to read.
struct LiveBlocks {
  std::mutex mutex;
  std::unordered_set<const void *> blocks;

  void insert(const void *ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    blocks.insert(ptr);
  }
  void erase(const void *ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    blocks.erase(ptr);
  }
  bool contains(const void *ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    return blocks.count(ptr) != 0;
  }
};

LiveBlocks &liveBlocks() {
  static LiveBlocks instance;
  return instance;
}

/// Offsets and sizes in the arena are multiples of this: compiled code's
/// own alignment (finalize-memref-to-llvm asks for 64 bytes).
constexpr uint64_t kArenaAlignment = 64;

struct alignas(16) Header {
  /// What malloc returned, or the block's start in the arena.
  void *base;
  size_t size;
  size_t total;
  /// The bytes of gradients the block holds (counted in `gradients` too).
  size_t gradientBytes;
  uint32_t magic;
  /// The ArenaCall that allocated the block (0: none) and its number there.
  uint32_t call;
  uint32_t block;
  /// Whether `base` lies in the arena (and must not be passed to free), and
  /// whether a host program allocated the block (HostProgramScope: counted
  /// in the host pool).
  uint16_t inArena;
  uint16_t onHost;
};
static_assert(sizeof(Header) % 16 == 0, "the header keeps 16-byte alignment");

/// The process's one arena, which a single call uses at a time.
struct Arena {
  std::mutex mutex;
  /// Whether an ArenaCall holds the arena.
  bool busy = false;
  char *buffer = nullptr;
  size_t capacity = 0;
  /// Blocks in the arena not yet freed: while any is, a new call must not
  /// use the arena (it could overwrite them).
  std::atomic<size_t> live{0};
  /// Numbers the calls, for Header::call.
  uint32_t calls = 0;
};

/// Never destroyed: compiled code may free during static destruction, and
/// the arena stays reachable (not leaked) until exit.
Arena &arena() {
  static Arena *instance = new Arena();
  return *instance;
}

/// The call an ArenaCall on this thread is recording.
struct CallState {
  ArenaPlan *plan = nullptr;
  uint32_t serial = 0;
  /// While the call repeats the plan's events: the next one to match.
  bool following = false;
  size_t position = 0;
  /// The call's own events, and how many of its blocks are not yet freed.
  std::vector<ArenaEvent> events;
  uint32_t allocated = 0;
  size_t unfreed = 0;
};

thread_local CallState *currentCall = nullptr;

/// Whether this thread runs a host program (HostProgramScope).
thread_local bool inHostProgram = false;

/// A block of `total` bytes for the current call: from the arena while the
/// call follows its plan, else null (the caller mallocs). Records the event.
char *takeFromArena(CallState &call, size_t total, Header &header) {
  uint32_t block = call.allocated++;
  call.events.push_back({total, block, false});
  ++call.unfreed;
  header.call = call.serial;
  header.block = block;
  if (!call.following)
    return nullptr;
  const std::vector<ArenaEvent> &expected = call.plan->events;
  if (call.position == expected.size() ||
      !(expected[call.position] == call.events.back())) {
    call.following = false;
    return nullptr;
  }
  ++call.position;
  header.inArena = 1;
  arena().live.fetch_add(1, std::memory_order_relaxed);
  return arena().buffer + call.plan->offsets[block];
}

void *allocate(size_t alignment, size_t size) {
  if (alignment < alignof(Header))
    alignment = alignof(Header);
  if (alignment & (alignment - 1))
    return nullptr;
  size_t total;
  if (__builtin_add_overflow(size, sizeof(Header) + alignment - 1, &total))
    return nullptr;
  size_t capacity = deviceCapacity.load(std::memory_order_relaxed);
  if (capacity && !inHostProgram) {
    size_t code = 0, held = 0;
    compiledCode.read(&code, nullptr);
    tensors.read(&held, nullptr);
    if (code + held + size > capacity) {
      std::fprintf(stderr,
                   "tessera-run: rank %d: the device pool of %zu bytes "
                   "(--device-memory) cannot hold %zu bytes more: compiled "
                   "code holds %zu, tensors %zu\n",
                   processRank(), capacity, size, code, held);
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
  Header fields{};
  char *base = nullptr;
  if (currentCall)
    base = takeFromArena(*currentCall, total, fields);
  if (!base)
    base = static_cast<char *>(std::malloc(total));
  // A failed allocation stays recorded, never freed: the call plans nothing.
  if (!base)
    return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(base) + sizeof(Header);
  uintptr_t aligned = (start + alignment - 1) & ~uintptr_t(alignment - 1);
  Header *header = reinterpret_cast<Header *>(aligned) - 1;
  *header = fields;
  header->base = base;
  header->size = size;
  header->total = total;
  header->magic = kMagic;
  header->onHost = inHostProgram;
  liveBlocks().insert(reinterpret_cast<void *>(aligned));
  if (inHostProgram)
    noteHostPoolBytes(size, true);
  else
    compiledCode.add(size);
  return reinterpret_cast<void *>(aligned);
}

/// Replaces the arena by one of at least `bytes`, its pages touched: none
/// of its blocks may be live.
void growArena(Arena &state, size_t bytes) {
  // A large arena in huge pages where the kernel offers them on request:
  // fewer faults and TLB misses over a buffer of gigabytes.
  constexpr size_t kHugePage = size_t(2) << 20;
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  bool huge = bytes >= 16 * kHugePage;
  size_t unit = huge ? kHugePage : page;
  bytes = (bytes + unit - 1) & ~(unit - 1);
  std::free(state.buffer);
  state.buffer = nullptr;
  state.capacity = 0;
  // The blocks the recorded call freed may still sit in malloc's heap.
  malloc_trim(0);
  char *buffer = static_cast<char *>(std::aligned_alloc(unit, bytes));
  if (!buffer)
    return;
  if (huge)
    madvise(buffer, bytes, MADV_HUGEPAGE);
  for (size_t at = 0; at < bytes; at += page)
    buffer[at] = 0;
  state.buffer = buffer;
  state.capacity = bytes;
}

} // namespace

void tsr::noteTensorAllocated(size_t bytes) { tensors.add(bytes); }

void tsr::tagGradientBuffer(void *ptr, size_t bytes) {
  if (!ptr || !liveBlocks().contains(ptr))
    return;
  Header *header = static_cast<Header *>(ptr) - 1;
  if (header->magic != kMagic || header->gradientBytes)
    return;
  header->gradientBytes = std::min(bytes, header->size);
  gradients.add(header->gradientBytes);
}

void tsr::noteTensorFreed(size_t bytes) { tensors.subtract(bytes); }

void tsr::noteCompiledAllocated(size_t bytes) { compiledCode.add(bytes); }

ArenaCall::ArenaCall(ArenaPlan &plan) {
  if (currentCall)
    return;
  Arena &state = arena();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.busy)
      return;
    state.busy = true;
    if (++state.calls == 0)
      ++state.calls;
  }
  active = true;
  static thread_local CallState call;
  call.plan = &plan;
  call.serial = state.calls;
  call.following = !plan.events.empty() && plan.bytes <= state.capacity &&
                   state.live.load(std::memory_order_relaxed) == 0;
  call.position = 0;
  call.events.clear();
  call.allocated = 0;
  call.unfreed = 0;
  currentCall = &call;
}

ArenaCall::~ArenaCall() {
  if (!active)
    return;
  CallState &call = *currentCall;
  currentCall = nullptr;
  Arena &state = arena();
  bool repeated = call.following && call.position == call.plan->events.size();
  if (!repeated) {
    // A new plan from this call, or none if a block outlives it.
    if (call.unfreed != 0 ||
        !planArena(call.events, kArenaAlignment, *call.plan))
      *call.plan = ArenaPlan();
    if (call.plan->bytes > state.capacity &&
        state.live.load(std::memory_order_relaxed) == 0)
      growArena(state, call.plan->bytes);
  }
  std::lock_guard<std::mutex> lock(state.mutex);
  state.busy = false;
}

void tsr::noteCompiledFreed(size_t bytes) { compiledCode.subtract(bytes); }

HostProgramScope::HostProgramScope() : previous(inHostProgram) {
  inHostProgram = true;
}

HostProgramScope::~HostProgramScope() { inHostProgram = previous; }

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

/// Compiled code aligns its buffers to 64 bytes itself: it over-allocates
/// and rounds the pointer up (finalize-memref-to-llvm). A block that is
/// 64-byte aligned already makes that rounding a no-op, so the pointer
/// compiled code passes around (a collective's destination, which
/// tagGradientBuffer takes) is the block's own, header in front.
void *_mlir_memref_to_llvm_alloc(size_t size) { return allocate(64, size); }

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
  return allocate(alignment, size);
}

void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  Header *header = static_cast<Header *>(ptr) - 1;
  if (header->onHost)
    noteHostPoolBytes(header->size, false);
  else
    compiledCode.subtract(header->size);
  if (header->gradientBytes)
    gradients.subtract(header->gradientBytes);
  header->magic = 0;
  liveBlocks().erase(ptr);
  CallState *call = currentCall;
  if (call && header->call == call->serial) {
    call->events.push_back({0, header->block, true});
    --call->unfreed;
    if (call->following) {
      const std::vector<ArenaEvent> &expected = call->plan->events;
      if (call->position < expected.size() &&
          expected[call->position] == call->events.back())
        ++call->position;
      else
        call->following = false;
    }
  }
  if (header->inArena)
    arena().live.fetch_sub(1, std::memory_order_relaxed);
  else
    std::free(header->base);
}

namespace {
/// The fields of a ranked memref descriptor of `rank`.
struct Strided {
  char *data;
  int64_t offset;
  const int64_t *sizes, *strides;

  explicit Strided(const tsr_unranked_memref_t &m) {
    char *const *pointers = static_cast<char *const *>(m.descriptor);
    data = pointers[1];
    const int64_t *ints = reinterpret_cast<const int64_t *>(pointers + 2);
    offset = ints[0];
    sizes = ints + 1;
    strides = ints + 1 + m.rank;
  }
};
} // namespace

void memrefCopy(int64_t element_size, tsr_unranked_memref_t *srcArg,
                tsr_unranked_memref_t *dstArg) {
  int64_t rank = srcArg->rank;
  Strided src(*srcArg), dst(*dstArg);
  for (int64_t d = 0; d < rank; ++d)
    if (src.sizes[d] == 0)
      return;
  char *from = src.data + src.offset * element_size;
  char *to = dst.data + dst.offset * element_size;
  // Odometer over the indices, the last dimension innermost.
  std::vector<int64_t> index(rank, 0);
  int64_t fromOffset = 0, toOffset = 0;
  while (true) {
    std::memcpy(to + toOffset * element_size, from + fromOffset * element_size,
                element_size);
    int64_t d = rank - 1;
    for (; d >= 0; --d) {
      fromOffset += src.strides[d];
      toOffset += dst.strides[d];
      if (++index[d] < src.sizes[d])
        break;
      fromOffset -= src.strides[d] * src.sizes[d];
      toOffset -= dst.strides[d] * src.sizes[d];
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

void tsr_memory_stats(size_t *out_current, size_t *out_peak) {
  compiledCode.read(out_current, out_peak);
}

void tsr_tensor_memory_stats(size_t *out_current, size_t *out_peak) {
  tensors.read(out_current, out_peak);
}

void tsr_memory_arena_stats(size_t *out_bytes) {
  if (out_bytes) {
    Arena &state = arena();
    std::lock_guard<std::mutex> lock(state.mutex);
    *out_bytes = state.capacity;
  }
}

void tsr_memory_gradient_stats(size_t *out_current, size_t *out_peak) {
  gradients.read(out_current, out_peak);
}

tsr_status_t tsr_memory_set_device_capacity(size_t bytes) {
  deviceCapacity.store(bytes, std::memory_order_relaxed);
  return TSR_OK;
}

void tsr_memory_reset_peak(void) {
  compiledCode.resetPeak();
  tensors.resetPeak();
  gradients.resetPeak();
}
