//===- Memory.cpp - Allocation functions for compiled code, accounting ----===//
//
// Compiled code allocates its temporaries through the generic functions that
// MLIR's finalize-memref-to-llvm emits calls to. Each block starts with a
// header holding malloc's pointer and the requested size, placed right before
// the returned (aligned) pointer, so that free needs no lookup and the
// counters see exactly the bytes compiled code asked for.
//
// A training step allocates the same sizes in the same order every call, and
// glibc returns large blocks to the kernel on free (mmap), so every step
// would fault its activations in afresh (a GPT-2-shaped step faulted 880 MB
// a step and spent a fifth of its time there). Freed blocks are therefore
// kept in a cache keyed by their malloc size and reused. Reuse by exact size
// needs, for each size, as many blocks as were ever live at once, which is
// more than the step's peak when sizes peak at different times (15% more on
// the GPT-2-shaped step, 60% on e2e-page-faults' one-layer GPT with the same
// vocabulary), so the cache holds up to twice the most bytes ever in use at
// once; past that, freed blocks go back to malloc. After the first step a
// step then allocates nothing new (e2e-page-faults). A memory plan that
// places every buffer of the step at a fixed offset of one arena would need
// no more than the peak; that is the next step.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
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

Counter gradients;

/// Marks a header written by `allocate`, so that a pointer from elsewhere is
/// never mistaken for one of ours.
constexpr uint32_t kMagic = 0x74737261; // "tsra"

struct alignas(16) Header {
  void *base;
  size_t size;
  size_t total;
  uint32_t magic;
  /// The bytes of gradients the block holds (counted in `gradients` too).
  size_t gradientBytes;
};
static_assert(sizeof(Header) % 16 == 0, "the header keeps 16-byte alignment");

/// Freed blocks by malloc size, reused before calling malloc again.
class BlockCache {
public:
  /// A cached block of `total` bytes, or null; counts it as in use.
  void *take(size_t total) {
    std::lock_guard<std::mutex> lock(mutex);
    noteInUse(total);
    auto it = blocks.find(total);
    if (it == blocks.end() || it->second.empty())
      return nullptr;
    void *base = it->second.back();
    it->second.pop_back();
    cached -= total;
    return base;
  }

  /// A block of `total` bytes that `take` could not serve was not allocated.
  void untake(size_t total) {
    std::lock_guard<std::mutex> lock(mutex);
    inUse -= total;
  }

  void give(void *base, size_t total) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      inUse -= total;
      if (cached + total <= 2 * highWater) {
        blocks[total].push_back(base);
        cached += total;
        return;
      }
    }
    std::free(base);
  }

private:
  void noteInUse(size_t total) {
    inUse += total;
    highWater = std::max(highWater, inUse);
  }

  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void *>> blocks;
  /// Bytes (malloc sizes) of the blocks cached, handed out, and the most
  /// ever handed out at once.
  size_t cached = 0, inUse = 0, highWater = 0;
};

/// Never destroyed: compiled code may free during static destruction, and
/// the blocks stay reachable (not leaked) until exit.
BlockCache &cache() {
  static BlockCache *instance = new BlockCache();
  return *instance;
}

void *allocate(size_t alignment, size_t size) {
  if (alignment < alignof(Header))
    alignment = alignof(Header);
  if (alignment & (alignment - 1))
    return nullptr;
  size_t total;
  if (__builtin_add_overflow(size, sizeof(Header) + alignment - 1, &total))
    return nullptr;
  char *base = static_cast<char *>(cache().take(total));
  if (!base)
    base = static_cast<char *>(std::malloc(total));
  if (!base) {
    cache().untake(total);
    return nullptr;
  }
  uintptr_t start = reinterpret_cast<uintptr_t>(base) + sizeof(Header);
  uintptr_t aligned = (start + alignment - 1) & ~uintptr_t(alignment - 1);
  Header *header = reinterpret_cast<Header *>(aligned) - 1;
  header->base = base;
  header->size = size;
  header->total = total;
  header->magic = kMagic;
  header->gradientBytes = 0;
  compiledCode.add(size);
  return reinterpret_cast<void *>(aligned);
}

} // namespace

void tsr::noteTensorAllocated(size_t bytes) { tensors.add(bytes); }

void tsr::tagGradientBuffer(void *ptr, size_t bytes) {
  Header *header = static_cast<Header *>(ptr) - 1;
  if (!ptr || header->magic != kMagic || header->gradientBytes)
    return;
  header->gradientBytes = std::min(bytes, header->size);
  gradients.add(header->gradientBytes);
}

void tsr::noteTensorFreed(size_t bytes) { tensors.subtract(bytes); }

void tsr::noteCompiledAllocated(size_t bytes) { compiledCode.add(bytes); }

void tsr::noteCompiledFreed(size_t bytes) { compiledCode.subtract(bytes); }

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
  compiledCode.subtract(header->size);
  if (header->gradientBytes)
    gradients.subtract(header->gradientBytes);
  header->magic = 0;
  cache().give(header->base, header->total);
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

void tsr_memory_gradient_stats(size_t *out_current, size_t *out_peak) {
  gradients.read(out_current, out_peak);
}

void tsr_memory_reset_peak(void) {
  compiledCode.resetPeak();
  tensors.resetPeak();
  gradients.resetPeak();
}
