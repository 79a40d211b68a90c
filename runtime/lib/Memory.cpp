//===- Memory.cpp - Allocation functions for compiled code, accounting ----===//
//
// Compiled code allocates its temporaries through the generic functions that
// MLIR's finalize-memref-to-llvm emits calls to. Each block starts with a
// header holding malloc's pointer and the requested size, placed right before
// the returned (aligned) pointer, so that free needs no lookup and the
// counters see exactly the bytes compiled code asked for.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <atomic>
#include <cstdlib>

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

struct alignas(16) Header {
  void *base;
  size_t size;
};
static_assert(sizeof(Header) == 16, "the header keeps 16-byte alignment");

void *allocate(size_t alignment, size_t size) {
  if (alignment < alignof(Header))
    alignment = alignof(Header);
  if (alignment & (alignment - 1))
    return nullptr;
  size_t total;
  if (__builtin_add_overflow(size, sizeof(Header) + alignment - 1, &total))
    return nullptr;
  char *base = static_cast<char *>(std::malloc(total));
  if (!base)
    return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(base) + sizeof(Header);
  uintptr_t aligned = (start + alignment - 1) & ~uintptr_t(alignment - 1);
  Header *header = reinterpret_cast<Header *>(aligned) - 1;
  header->base = base;
  header->size = size;
  compiledCode.add(size);
  return reinterpret_cast<void *>(aligned);
}

} // namespace

void tsr::noteTensorAllocated(size_t bytes) { tensors.add(bytes); }

void tsr::noteTensorFreed(size_t bytes) { tensors.subtract(bytes); }

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

void *_mlir_memref_to_llvm_alloc(size_t size) {
  return allocate(alignof(Header), size);
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
  return allocate(alignment, size);
}

void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  Header *header = static_cast<Header *>(ptr) - 1;
  compiledCode.subtract(header->size);
  std::free(header->base);
}

void tsr_memory_stats(size_t *out_current, size_t *out_peak) {
  compiledCode.read(out_current, out_peak);
}

void tsr_tensor_memory_stats(size_t *out_current, size_t *out_peak) {
  tensors.read(out_current, out_peak);
}

void tsr_memory_reset_peak(void) {
  compiledCode.resetPeak();
  tensors.resetPeak();
}
