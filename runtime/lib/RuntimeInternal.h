//===- RuntimeInternal.h - Shared helpers of the runtime library -*- C++
//-*-===//
//
// Declarations shared by the translation units of tessera_runtime. Nothing
// here is part of the C ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_RUNTIMEINTERNAL_H
#define TESSERA_RUNTIME_LIB_RUNTIMEINTERNAL_H

#include "tessera-runtime/Runtime.h"

#include <cstdint>
#include <new>
#include <string>
#include <vector>

struct tsr_tensor {
  tsr_dtype_t dtype = TSR_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::string name;
  int64_t numElements = 0;
  size_t byteSize = 0;
  void *data = nullptr;

  tsr_tensor() = default;
  tsr_tensor(const tsr_tensor &) = delete;
  tsr_tensor &operator=(const tsr_tensor &) = delete;
  ~tsr_tensor();
};

namespace tsr {

/// Records `message` as this thread's last error and returns `status`.
tsr_status_t fail(tsr_status_t status, std::string message);

/// Prepends `context + ": "` to the last error if `status` is a failure.
tsr_status_t withContext(tsr_status_t status, const std::string &context);

/// Runs `body` and converts escaping exceptions into error statuses, so that
/// no C++ exception crosses the C ABI.
template <typename Fn> tsr_status_t guard(Fn &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(TSR_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(TSR_ERROR_INVALID_ARGUMENT, "internal error");
  }
}

/// Formats a shape as "[2, 3]" ("[]" for scalars).
std::string formatShape(const int64_t *shape, size_t rank);
inline std::string formatShape(const std::vector<int64_t> &shape) {
  return formatShape(shape.data(), shape.size());
}

/// Computes the element count and byte size of a shape, rejecting negative
/// dimensions and overflow. On failure the message names the shape only.
tsr_status_t computeSizes(tsr_dtype_t dtype, const int64_t *shape, size_t rank,
                          int64_t &outNumElements, size_t &outByteSize);

/// Allocates a zero-filled tensor.
tsr_status_t createTensor(tsr_dtype_t dtype, const std::vector<int64_t> &shape,
                          tsr_tensor_t **outTensor);

/// Reads a whole regular file. Messages start with `path`.
tsr_status_t readFile(const std::string &path, std::string &outBytes);

/// Writes a whole file, replacing it. Messages start with `path`.
tsr_status_t writeFile(const std::string &path, const std::string &bytes);

} // namespace tsr

#endif // TESSERA_RUNTIME_LIB_RUNTIMEINTERNAL_H
