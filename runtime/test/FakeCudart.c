/* A stand-in for the CUDA runtime, built as libcudart.so.13, for testing the
 * runtime's bookkeeping of device and pinned host tensors on machines
 * without a GPU: one "device" whose memory is host memory. It defines the
 * entry points runtime/lib/Device.cpp resolves, with their C signatures,
 * and counts live allocations so that the tests can see every buffer
 * returned where it came from. A test process loads it before the runtime
 * first uses CUDA (dlopen by path; Device.cpp's dlopen of libcudart.so.13
 * then finds it by its soname); tessera-run finds it on LD_LIBRARY_PATH. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { kSuccess = 0, kInvalidValue = 1, kMemoryAllocation = 2 };

static int64_t liveDevice, livePinned;

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
  if (ptr)
    --livePinned;
  free(ptr);
  return kSuccess;
}

/* Every copy, synchronous or not: the tests count what a step moves. */
static int64_t copies;

int cudaMemcpy(void *dst, const void *src, size_t bytes, int kind) {
  (void)kind;
  memmove(dst, src, bytes);
  ++copies;
  return kSuccess;
}

int cudaMemcpyAsync(void *dst, const void *src, size_t bytes, int kind,
                    void *stream) {
  (void)stream;
  return cudaMemcpy(dst, src, bytes, kind);
}

int cudaMemset(void *ptr, int value, size_t bytes) {
  memset(ptr, value, bytes);
  return kSuccess;
}

static int stream;

int cudaStreamCreate(void **out) {
  *out = &stream;
  return kSuccess;
}

int cudaStreamDestroy(void *s) {
  (void)s;
  return kSuccess;
}

int cudaStreamSynchronize(void *s) {
  (void)s;
  return kSuccess;
}

static int event;

int cudaEventCreate(void **out) {
  *out = &event;
  return kSuccess;
}

int cudaEventDestroy(void *e) {
  (void)e;
  return kSuccess;
}

int cudaEventRecord(void *e, void *s) {
  (void)e;
  (void)s;
  return kSuccess;
}

int cudaEventSynchronize(void *e) {
  (void)e;
  return kSuccess;
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
