//===- Device.cpp - CUDA devices through a dlopen'ed libcudart ------------===//
//
// The functions of Device.h call the CUDA runtime through pointers resolved
// on first use, so that tessera_runtime links and starts without CUDA. The
// buffers of device and pinned host tensors come from here too.
//
//===----------------------------------------------------------------------===//

#include "tessera-runtime/Device.h"
#include "RuntimeInternal.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>

using namespace tsr;

namespace {

// The few CUDA runtime entry points used, with their C signatures (every
// enum and handle passes as int or void *).
struct CudaRuntime {
  int (*getDeviceCount)(int *);
  int (*setDevice)(int);
  int (*malloc)(void **, size_t);
  int (*free)(void *);
  int (*mallocHost)(void **, size_t);
  int (*freeHost)(void *);
  int (*memcpy)(void *, const void *, size_t, int);
  int (*memcpyAsync)(void *, const void *, size_t, int, void *);
  int (*memset)(void *, int, size_t);
  int (*streamCreate)(void **);
  int (*streamDestroy)(void *);
  int (*streamSynchronize)(void *);
  int (*streamWaitEvent)(void *, void *, unsigned);
  int (*eventCreate)(void **);
  int (*eventCreateWithFlags)(void **, unsigned);
  int (*eventDestroy)(void *);
  int (*eventRecord)(void *, void *);
  int (*eventSynchronize)(void *);
  int (*eventQuery)(void *);
  int (*eventElapsedTime)(float *, void *, void *);
  const char *(*getErrorString)(int);
};

constexpr int kMemcpyDefault = 4;
/// cudaErrorNotReady: what cudaEventQuery answers for work not yet done.
constexpr int kErrorNotReady = 600;
/// cudaEventDisableTiming: an event that only orders work, which CUDA records
/// and waits on without taking timestamps.
constexpr unsigned kEventDisableTiming = 2;

CudaRuntime cuda;
bool loaded = false;
std::string loadError;
std::once_flag loadOnce;

void load() {
  std::string tried;
  void *handle =
      dlopenCudaLibrary({"libcudart.so.13", "libcudart.so.12", "libcudart.so"},
                        "libcudart.so", tried);
  if (!handle) {
    loadError = "no CUDA runtime (libcudart):" + tried;
    return;
  }
  auto bind = [&](auto &slot, const char *name) {
    return bindSymbol(handle, "libcudart", name, slot, loadError);
  };
  loaded = bind(cuda.getDeviceCount, "cudaGetDeviceCount") &&
           bind(cuda.setDevice, "cudaSetDevice") &&
           bind(cuda.malloc, "cudaMalloc") && bind(cuda.free, "cudaFree") &&
           bind(cuda.mallocHost, "cudaMallocHost") &&
           bind(cuda.freeHost, "cudaFreeHost") &&
           bind(cuda.memcpy, "cudaMemcpy") &&
           bind(cuda.memcpyAsync, "cudaMemcpyAsync") &&
           bind(cuda.memset, "cudaMemset") &&
           bind(cuda.streamCreate, "cudaStreamCreate") &&
           bind(cuda.streamDestroy, "cudaStreamDestroy") &&
           bind(cuda.streamSynchronize, "cudaStreamSynchronize") &&
           bind(cuda.streamWaitEvent, "cudaStreamWaitEvent") &&
           bind(cuda.eventCreate, "cudaEventCreate") &&
           bind(cuda.eventCreateWithFlags, "cudaEventCreateWithFlags") &&
           bind(cuda.eventDestroy, "cudaEventDestroy") &&
           bind(cuda.eventRecord, "cudaEventRecord") &&
           bind(cuda.eventSynchronize, "cudaEventSynchronize") &&
           bind(cuda.eventQuery, "cudaEventQuery") &&
           bind(cuda.eventElapsedTime, "cudaEventElapsedTime") &&
           bind(cuda.getErrorString, "cudaGetErrorString");
  if (!loaded)
    return;
  int count = 0;
  int code = cuda.getDeviceCount(&count);
  if (code != 0) {
    loaded = false;
    loadError = std::string("no usable CUDA device (cudaGetDeviceCount: ") +
                cuda.getErrorString(code) + ")";
  } else if (count == 0) {
    loaded = false;
    loadError = "no CUDA device";
  }
}

/// Fails with UNSUPPORTED unless a device is usable.
tsr_status_t ready(const char *what) {
  std::call_once(loadOnce, load);
  if (loaded)
    return TSR_OK;
  return fail(TSR_ERROR_UNSUPPORTED, std::string(what) + ": " + loadError);
}

tsr_status_t check(int code, const char *what) {
  if (code == 0)
    return TSR_OK;
  return fail(code == 2 ? TSR_ERROR_OUT_OF_MEMORY : TSR_ERROR_IO,
              std::string(what) + ": " + cuda.getErrorString(code));
}

} // namespace

int tsr_device_count(void) {
  std::call_once(loadOnce, load);
  int count = 0;
  if (!loaded || cuda.getDeviceCount(&count) != 0)
    return 0;
  return count;
}

tsr_status_t tsr_device_set(int device) {
  if (tsr_status_t s = ready("tsr_device_set"))
    return s;
  return check(cuda.setDevice(device), "cudaSetDevice");
}

tsr_status_t tsr_device_alloc(size_t bytes, void **out_ptr) {
  if (!out_ptr)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "tsr_device_alloc: null out_ptr");
  *out_ptr = nullptr;
  if (tsr_status_t s = ready("tsr_device_alloc"))
    return s;
  return check(cuda.malloc(out_ptr, bytes), "cudaMalloc");
}

void tsr_device_free(void *ptr) {
  if (ptr && ready("tsr_device_free") == TSR_OK)
    cuda.free(ptr);
}

tsr_status_t tsr_host_alloc_pinned(size_t bytes, void **out_ptr) {
  if (!out_ptr)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "tsr_host_alloc_pinned: null out_ptr");
  *out_ptr = nullptr;
  if (tsr_status_t s = ready("tsr_host_alloc_pinned"))
    return s;
  return check(cuda.mallocHost(out_ptr, bytes), "cudaMallocHost");
}

void tsr_host_free_pinned(void *ptr) {
  if (ptr && ready("tsr_host_free_pinned") == TSR_OK)
    cuda.freeHost(ptr);
}

tsr_status_t tsr_device_memcpy(void *dst, const void *src, size_t bytes,
                               void *stream) {
  if (tsr_status_t s = ready("tsr_device_memcpy"))
    return s;
  if (bytes > 0 && (!dst || !src))
    return fail(TSR_ERROR_INVALID_ARGUMENT, "tsr_device_memcpy: null pointer");
  if (!stream)
    return check(cuda.memcpy(dst, src, bytes, kMemcpyDefault), "cudaMemcpy");
  return check(cuda.memcpyAsync(dst, src, bytes, kMemcpyDefault, stream),
               "cudaMemcpyAsync");
}

tsr_status_t tsr_stream_create(void **out_stream) {
  if (!out_stream)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "tsr_stream_create: null out_stream");
  *out_stream = nullptr;
  if (tsr_status_t s = ready("tsr_stream_create"))
    return s;
  return check(cuda.streamCreate(out_stream), "cudaStreamCreate");
}

tsr_status_t tsr_stream_destroy(void *stream) {
  if (tsr_status_t s = ready("tsr_stream_destroy"))
    return s;
  return check(cuda.streamDestroy(stream), "cudaStreamDestroy");
}

tsr_status_t tsr_stream_synchronize(void *stream) {
  if (tsr_status_t s = ready("tsr_stream_synchronize"))
    return s;
  return check(cuda.streamSynchronize(stream), "cudaStreamSynchronize");
}

tsr_status_t tsr_event_create(void **out_event) {
  if (!out_event)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "tsr_event_create: null out_event");
  *out_event = nullptr;
  if (tsr_status_t s = ready("tsr_event_create"))
    return s;
  return check(cuda.eventCreate(out_event), "cudaEventCreate");
}

tsr_status_t tsr_event_destroy(void *event) {
  if (tsr_status_t s = ready("tsr_event_destroy"))
    return s;
  return check(cuda.eventDestroy(event), "cudaEventDestroy");
}

tsr_status_t tsr_event_record(void *event, void *stream) {
  if (tsr_status_t s = ready("tsr_event_record"))
    return s;
  return check(cuda.eventRecord(event, stream), "cudaEventRecord");
}

tsr_status_t tsr_event_synchronize(void *event) {
  if (tsr_status_t s = ready("tsr_event_synchronize"))
    return s;
  return check(cuda.eventSynchronize(event), "cudaEventSynchronize");
}

tsr_status_t tsr_event_query(void *event, int *out_done) {
  if (!out_done)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "tsr_event_query: null out_done");
  *out_done = 0;
  if (tsr_status_t s = ready("tsr_event_query"))
    return s;
  int code = cuda.eventQuery(event);
  if (code == kErrorNotReady)
    return TSR_OK;
  *out_done = code == 0;
  return check(code, "cudaEventQuery");
}

tsr_status_t tsr_stream_wait_event(void *stream, void *event) {
  if (tsr_status_t s = ready("tsr_stream_wait_event"))
    return s;
  return check(cuda.streamWaitEvent(stream, event, 0), "cudaStreamWaitEvent");
}

tsr_status_t tsr::createOrderingEvent(void **outEvent) {
  *outEvent = nullptr;
  if (tsr_status_t s = ready("creating an event"))
    return s;
  return check(cuda.eventCreateWithFlags(outEvent, kEventDisableTiming),
               "cudaEventCreateWithFlags");
}

tsr_status_t tsr_event_elapsed_ms(void *start, void *end, float *out_ms) {
  if (!out_ms)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "tsr_event_elapsed_ms: null out_ms");
  if (tsr_status_t s = ready("tsr_event_elapsed_ms"))
    return s;
  return check(cuda.eventElapsedTime(out_ms, start, end),
               "cudaEventElapsedTime");
}

//===----------------------------------------------------------------------===//
// Tensors in device and pinned host memory
//===----------------------------------------------------------------------===//

tsr_status_t tsr::allocatePlaced(tsr_placement_t placement, size_t bytes,
                                 void **outPtr) {
  if (placement == TSR_PLACEMENT_DEVICE) {
    if (tsr_status_t s = tsr_device_alloc(bytes, outPtr))
      return s;
    if (tsr_status_t s = check(cuda.memset(*outPtr, 0, bytes), "cudaMemset")) {
      cuda.free(*outPtr);
      *outPtr = nullptr;
      return s;
    }
    return TSR_OK;
  }
  if (placement == TSR_PLACEMENT_PINNED_HOST) {
    if (tsr_status_t s = tsr_host_alloc_pinned(bytes, outPtr))
      return s;
    std::memset(*outPtr, 0, bytes);
    return TSR_OK;
  }
  return fail(TSR_ERROR_INVALID_ARGUMENT,
              "invalid placement " +
                  std::to_string(static_cast<int>(placement)));
}

void tsr::freePlaced(tsr_placement_t placement, void *ptr) {
  if (placement == TSR_PLACEMENT_DEVICE)
    tsr_device_free(ptr);
  else
    tsr_host_free_pinned(ptr);
}

tsr_status_t tsr_tensor_create_placed(tsr_placement_t placement,
                                      tsr_dtype_t dtype, size_t rank,
                                      const int64_t *shape,
                                      tsr_tensor_t **out_tensor) {
  return guard([&] {
    if (!out_tensor || (rank && !shape))
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "tsr_tensor_create_placed: null argument");
    int raw;
    std::memcpy(&raw, &placement, sizeof(raw));
    if (raw != TSR_PLACEMENT_HOST && raw != TSR_PLACEMENT_DEVICE &&
        raw != TSR_PLACEMENT_PINNED_HOST)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "tsr_tensor_create_placed: invalid placement " +
                      std::to_string(raw));
    return createTensor(dtype, std::vector<int64_t>(shape, shape + rank),
                        out_tensor, placement);
  });
}

tsr_status_t tsr_tensor_copy(tsr_tensor_t *dst, const tsr_tensor_t *src,
                             void *stream) {
  return guard([&] {
    if (!dst || !src)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "tsr_tensor_copy: null tensor");
    if (dst->dtype != src->dtype || dst->shape != src->shape)
      return fail(TSR_ERROR_MISMATCH,
                  std::string("tsr_tensor_copy: cannot copy a ") +
                      tsr_dtype_name(src->dtype) + formatShape(src->shape) +
                      " tensor into a " + tsr_dtype_name(dst->dtype) +
                      formatShape(dst->shape) + " one");
    if (dst->placement != TSR_PLACEMENT_DEVICE &&
        src->placement != TSR_PLACEMENT_DEVICE) {
      std::memcpy(dst->data, src->data, src->byteSize);
      return TSR_OK;
    }
    return tsr_device_memcpy(dst->data, src->data, src->byteSize, stream);
  });
}

void *tsr::dlopenCudaLibrary(std::initializer_list<const char *> names,
                             const char *fallback, std::string &tried) {
  std::string home =
      std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME") : "/usr/local/cuda";
  std::vector<std::string> all(names.begin(), names.end());
  all.push_back(home + "/lib64/" + fallback);
  for (const std::string &name : all) {
    if (void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))
      return handle;
    tried += std::string(tried.empty() ? " " : "; ") + dlerror();
  }
  return nullptr;
}
