//===- Kernels.cpp - The launch ABI of compiled CUDA programs -------------===//
//
// The host code of a `--target=cuda` artifact calls the `mgpu*` functions
// that MLIR's gpu-to-llvm lowering emits (MLIR 22's signatures); upstream
// implements them in libmlir_cuda_runtime, which Debian does not ship and
// which links libcuda. These do the same over the CUDA driver, loaded with
// dlopen("libcuda.so.1") on first use, and over Device.h for memory and
// streams, with a pool of device blocks counted like host code's buffers
// (tsr_memory_stats).
//
// Loading is lazy: the artifact's global constructor only registers its
// fatbin (mgpuModuleLoad), so dlopen of model.so works on a machine without
// a GPU; the driver and the module load at the first launch. The functions
// return no status, as the ABI has none: the first failure is kept, later
// launches are skipped, and tsr_artifact_invoke reports it after the call
// (tsr::takeKernelError).
//
// Constants. tsr-gpu-launch copies each constant the program reads
// (`memref.get_global`, in model.so's read-only data) into a device buffer
// of the call with mgpuMemcpy. A copy from pageable host memory is staged
// by CUDA through a bounce buffer that the host fills, so each call would
// make the host wait at every constant (and cudaMemcpyAsync from pageable
// memory may wait for the stream first). So the first copy of a constant
// uploads it once into a device block kept for the artifact's life, and
// every copy, that one included, is then a device-to-device copy on the
// stream: the host never waits for a constant after the first call. A
// constant is a source inside a loaded shared object (dladdr finds it;
// device memory is in none); the blocks of an artifact's constants go when
// it is unloaded (tsr::forgetDeviceConstants), as its addresses may then be
// another library's.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"
#include "tessera-runtime/Device.h"

#include <cstdint>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

using namespace tsr;

namespace {

// The driver entry points used, with their C signatures (CUresult is int,
// handles are pointers, CUdevice is int).
struct CudaDriver {
  int (*init)(unsigned);
  int (*ctxGetCurrent)(void **);
  int (*ctxSetCurrent)(void *);
  int (*deviceGet)(int *, int);
  int (*primaryCtxRetain)(void **, int);
  int (*moduleLoadData)(void **, const void *);
  int (*moduleUnload)(void *);
  int (*moduleGetFunction)(void **, void *, const char *);
  int (*launchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                      unsigned, unsigned, void *, void **, void **);
  int (*getErrorString)(int, const char **);
};

CudaDriver driver;
std::string driverError;
std::once_flag driverOnce;

/// The first failure since the last tsr::takeKernelError.
std::mutex errorMutex;
std::string kernelError;

void setError(const std::string &message) { tsr::noteKernelError(message); }

bool failed() {
  std::lock_guard<std::mutex> lock(errorMutex);
  return !kernelError.empty();
}

std::string describe(int code) {
  const char *text = nullptr;
  if (driver.getErrorString)
    driver.getErrorString(code, &text);
  return text ? std::string(text) : "CUDA driver error " + std::to_string(code);
}

void loadDriver() {
  void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    driverError = std::string("no CUDA driver (") + dlerror() + ")";
    return;
  }
  auto bind = [&](auto &slot, const char *name) {
    return bindSymbol(handle, "libcuda", name, slot, driverError);
  };
  bool ok = bind(driver.init, "cuInit") &&
            bind(driver.ctxGetCurrent, "cuCtxGetCurrent") &&
            bind(driver.ctxSetCurrent, "cuCtxSetCurrent") &&
            bind(driver.deviceGet, "cuDeviceGet") &&
            bind(driver.primaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
            bind(driver.moduleLoadData, "cuModuleLoadData") &&
            bind(driver.moduleUnload, "cuModuleUnload") &&
            bind(driver.moduleGetFunction, "cuModuleGetFunction") &&
            bind(driver.launchKernel, "cuLaunchKernel") &&
            bind(driver.getErrorString, "cuGetErrorString");
  if (!ok)
    return;
  // CUDA_ERROR_STUB_LIBRARY (34): the toolkit's stub, not a driver.
  if (int code = driver.init(0)) {
    driverError = code == 34 ? "no CUDA driver (libcuda.so.1 is the "
                               "toolkit's stub library)"
                             : "cuInit: " + describe(code);
    return;
  }
  driverError.clear();
}

/// Loads the driver and makes a context current on this thread: the one
/// the CUDA runtime (Device.cpp) uses, else the device's primary one.
bool driverReady() {
  std::call_once(driverOnce, loadDriver);
  if (!driver.launchKernel || !driverError.empty()) {
    setError(driverError.empty() ? "no CUDA driver" : driverError);
    return false;
  }
  void *context = nullptr;
  if (int code = driver.ctxGetCurrent(&context))
    return setError("cuCtxGetCurrent: " + describe(code)), false;
  if (context)
    return true;
  int device = 0;
  if (int code = driver.deviceGet(&device, 0))
    return setError("cuDeviceGet: " + describe(code)), false;
  if (int code = driver.primaryCtxRetain(&context, device))
    return setError("cuDevicePrimaryCtxRetain: " + describe(code)), false;
  if (int code = driver.ctxSetCurrent(context))
    return setError("cuCtxSetCurrent: " + describe(code)), false;
  return true;
}

/// A fatbin registered by an artifact's constructor, loaded on first use,
/// and its kernels by name. The host code asks for a kernel before every
/// launch, passing the name's constant in model.so, so the pointer is the
/// key.
struct LazyModule {
  const void *image;
  std::once_flag once;
  void *module = nullptr;
  std::mutex mutex;
  std::unordered_map<const char *, void *> functions;
};

/// The device memory of compiled programs: sizes by pointer, for the
/// accounting (tsr_memory_stats counts the bytes asked for, as for host
/// code), and freed blocks by size, reused before cudaMalloc (which
/// synchronizes the device) is called again, up to kCacheLimit bytes. A
/// freed block is handed out again at once, with no event: whoever gets it
/// writes it by work queued on the compute stream after the free, so after
/// every kernel and copy of that stream that used it. The communication
/// stream uses blocks too (NCCL reads a collective's send buffer and writes
/// its recv buffer), and reuse stays safe: the compute stream's work
/// queued after a blocking collective waits for it, so a block freed after
/// the call is reused after NCCL is done with it. An asynchronous collective
/// reads a staging block of its own (CommEntry.cpp), not the send buffer
/// compiled code may free at once; its recv buffer is left alone until
/// tsrt_wait (Comm.h), which makes the compute stream wait for the
/// collective before it returns the staging block here.
class DevicePool {
public:
  void *take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(bytes);
    if (it == cache.end())
      return nullptr;
    void *ptr = it->second;
    cache.erase(it);
    cached -= bytes;
    live[ptr] = bytes;
    noteCompiledAllocated(bytes);
    return ptr;
  }

  void add(void *ptr, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    live[ptr] = bytes;
    noteCompiledAllocated(bytes);
  }

  /// Returns the block to the cache, or false if it does not fit there
  /// (then the caller frees it).
  bool give(void *ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(ptr);
    if (it == live.end())
      return false;
    size_t bytes = it->second;
    live.erase(it);
    noteCompiledFreed(bytes);
    if (cached + bytes > kCacheLimit)
      return false;
    cache.emplace(bytes, ptr);
    cached += bytes;
    return true;
  }

private:
  static constexpr size_t kCacheLimit = size_t(4) << 30;
  std::mutex mutex;
  std::unordered_map<void *, size_t> live;
  std::unordered_multimap<size_t, void *> cache;
  size_t cached = 0;
};

/// Never destroyed: artifacts may free during static destruction.
DevicePool &pool() {
  static DevicePool *instance = new DevicePool();
  return *instance;
}

} // namespace

void tsr::noteKernelError(const std::string &message) {
  std::lock_guard<std::mutex> lock(errorMutex);
  if (kernelError.empty())
    kernelError = message;
}

tsr_status_t tsr::allocateDeviceBlock(size_t bytes, void **outPtr) {
  *outPtr = pool().take(bytes);
  if (*outPtr)
    return TSR_OK;
  if (tsr_status_t s = tsr_device_alloc(bytes ? bytes : 1, outPtr))
    return withContext(s,
                       "device buffer of " + std::to_string(bytes) + " bytes");
  pool().add(*outPtr, bytes);
  return TSR_OK;
}

void tsr::freeDeviceBlock(void *ptr) {
  if (ptr && !pool().give(ptr))
    tsr_device_free(ptr);
}

std::string tsr::takeKernelError() {
  std::lock_guard<std::mutex> lock(errorMutex);
  std::string error;
  error.swap(kernelError);
  return error;
}

namespace {

/// The device copies of compiled code's constants, by their address in the
/// loaded library and their size; each with the library's base address.
struct Resident {
  void *device = nullptr;
  const void *base = nullptr;
};

struct Constants {
  std::mutex mutex;
  std::map<std::pair<const void *, size_t>, Resident> copies;
};

Constants &constants() {
  static Constants *instance = new Constants; // Outlives static destructors.
  return *instance;
}

/// Where a copy from `src` should read: a device copy of it if `src` is a
/// constant of a loaded library (uploaded on first use), else `src`.
tsr_status_t residentConstant(const void *src, size_t bytes,
                              const void **from) {
  Dl_info info;
  if (bytes == 0 || !dladdr(src, &info) || !info.dli_fbase)
    return TSR_OK;
  Constants &c = constants();
  std::lock_guard<std::mutex> lock(c.mutex);
  Resident &resident = c.copies[{src, bytes}];
  if (!resident.device) {
    // Once per constant: a synchronous copy, before the stream's first use
    // of it.
    if (tsr_status_t s = tsr_device_alloc(bytes, &resident.device)) {
      c.copies.erase({src, bytes});
      return s;
    }
    resident.base = info.dli_fbase;
    if (tsr_status_t s =
            tsr_device_memcpy(resident.device, src, bytes, nullptr)) {
      tsr_device_free(resident.device);
      c.copies.erase({src, bytes});
      return s;
    }
  }
  *from = resident.device;
  return TSR_OK;
}

} // namespace

void tsr::forgetDeviceConstants(const void *base) {
  Constants &c = constants();
  std::lock_guard<std::mutex> lock(c.mutex);
  bool synchronized = false;
  for (auto it = c.copies.begin(); it != c.copies.end();) {
    if (it->second.base != base) {
      ++it;
      continue;
    }
    // The stream may still copy from them: wait for the device once.
    if (!synchronized) {
      tsr_stream_synchronize(nullptr);
      synchronized = true;
    }
    tsr_device_free(it->second.device);
    it = c.copies.erase(it);
  }
}

size_t tsr::residentDeviceConstants() {
  Constants &c = constants();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.copies.size();
}

extern "C" {

TSR_API void *mgpuModuleLoad(void *data, size_t /*size*/) {
  auto *lazy = new LazyModule;
  lazy->image = data;
  return lazy;
}

TSR_API void mgpuModuleUnload(void *module) {
  auto *lazy = static_cast<LazyModule *>(module);
  if (!lazy)
    return;
  if (lazy->module)
    driver.moduleUnload(lazy->module);
  delete lazy;
}

TSR_API void *mgpuModuleGetFunction(void *module, const char *name) {
  auto *lazy = static_cast<LazyModule *>(module);
  if (!lazy) {
    setError(std::string("kernel '") + name +
             "': its module was never registered (the artifact's "
             "constructors did not run)");
    return nullptr;
  }
  if (failed())
    return nullptr;
  {
    std::lock_guard<std::mutex> lock(lazy->mutex);
    auto known = lazy->functions.find(name);
    if (known != lazy->functions.end())
      return known->second;
  }
  if (!driverReady())
    return nullptr;
  std::call_once(lazy->once, [&] {
    if (int code = driver.moduleLoadData(&lazy->module, lazy->image))
      setError("loading the artifact's kernels (cuModuleLoadData): " +
               describe(code));
  });
  if (!lazy->module)
    return nullptr;
  void *function = nullptr;
  if (int code = driver.moduleGetFunction(&function, lazy->module, name)) {
    setError(std::string("kernel '") + name + "': " + describe(code));
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(lazy->mutex);
  lazy->functions.emplace(name, function);
  return function;
}

TSR_API void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                              intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                              intptr_t blockZ, int32_t sharedBytes,
                              void *stream, void **params, void **extra,
                              size_t /*paramsCount*/) {
  if (!function || failed())
    return;
  if (int code =
          driver.launchKernel(function, gridX, gridY, gridZ, blockX, blockY,
                              blockZ, sharedBytes, stream, params, extra))
    setError("launching a kernel (grid " + std::to_string(gridX) + ", block " +
             std::to_string(blockX) + "): " + describe(code));
}

/// Every program runs on the compute stream (Streams.cpp).
TSR_API void *mgpuStreamCreate() {
  void *stream = tsr::computeStream();
  if (!stream)
    setError(tsr_last_error());
  return stream;
}

TSR_API void mgpuStreamDestroy(void * /*stream*/) {}

TSR_API void mgpuStreamSynchronize(void *stream) {
  if (tsr_stream_synchronize(stream) != TSR_OK)
    setError(tsr_last_error());
}

TSR_API void *mgpuMemAlloc(uint64_t bytes, void * /*stream*/,
                           bool /*hostShared*/) {
  if (failed())
    return nullptr;
  void *ptr = nullptr;
  if (tsr::allocateDeviceBlock(bytes, &ptr) != TSR_OK)
    setError(tsr_last_error());
  return ptr;
}

TSR_API void mgpuMemFree(void *ptr, void * /*stream*/) {
  tsr::freeDeviceBlock(ptr);
}

TSR_API void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  if (failed())
    return;
  const void *from = src;
  if (tsr_status_t s = residentConstant(src, bytes, &from); s != TSR_OK)
    return setError(std::string("upload of a constant of ") +
                    std::to_string(bytes) + " bytes: " + tsr_last_error());
  if (tsr_device_memcpy(dst, from, bytes, stream) != TSR_OK)
    setError(std::string("copy of ") + std::to_string(bytes) +
             " bytes: " + tsr_last_error());
}

} // extern "C"
