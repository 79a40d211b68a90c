//===- FakeStreams.h - Driving FakeCudart.c's streams from a test -*- C++
//-*-===//
//
// The tests of GPU code's stream order (CommStreamTest.cpp,
// OffloadStreamTest.cpp) load FakeCudart.c (TSR_TEST_FAKE_CUDART) before
// the runtime first uses CUDA, hold and release its streams in deferred
// mode, and queue "kernels" on them. These are their handles on the fake;
// each test file includes it once (inline: not every one uses all).
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_RUNTIME_TEST_FAKESTREAMS_H
#define TESSERA_RUNTIME_TEST_FAKESTREAMS_H

#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <vector>

extern "C" void *mgpuStreamCreate();

namespace {

/// The fake CUDA runtime, loaded before the runtime first uses CUDA.
inline void *fakeCudart() {
  static void *handle = dlopen(TSR_TEST_FAKE_CUDART, RTLD_NOW | RTLD_LOCAL);
  return handle;
}
const bool kFakeLoaded = fakeCudart() != nullptr;

template <typename Fn> Fn *symbol(void *library, const char *name) {
  return reinterpret_cast<Fn *>(dlsym(library, name));
}

inline void setDeferred(int on) {
  symbol<void(int)>(fakeCudart(), "fakeCudaSetDeferred")(on);
}
inline void hold(void *stream) {
  symbol<void(void *, int)>(fakeCudart(), "fakeCudaHoldStream")(stream, 1);
}
inline void release(void *stream) {
  symbol<void(void *, int)>(fakeCudart(), "fakeCudaHoldStream")(stream, 0);
}
inline void enqueue(void *stream, void (*fn)(void *), void *arg) {
  symbol<void(void *, void (*)(void *), void *)>(
      fakeCudart(), "fakeCudaEnqueue")(stream, fn, arg);
}
inline int64_t pending(void *stream) {
  return symbol<int64_t(void *)>(fakeCudart(), "fakeCudaPending")(stream);
}
inline int64_t streamWaits() {
  return symbol<int64_t()>(fakeCudart(), "fakeCudaStreamWaits")();
}
inline int64_t hostWaits() {
  return symbol<int64_t()>(fakeCudart(), "fakeCudaHostWaits")();
}

/// A kernel writing `values` to `dst`.
struct Fill {
  float *dst;
  std::vector<float> values;
};

inline void runFill(void *arg) {
  auto *fill = static_cast<Fill *>(arg);
  std::memcpy(fill->dst, fill->values.data(),
              fill->values.size() * sizeof(float));
}

} // namespace

#endif // TESSERA_RUNTIME_TEST_FAKESTREAMS_H
