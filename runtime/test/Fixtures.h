//===- Fixtures.h - Scratch files and tensors for runtime tests -*- C++ -*-===//

#ifndef TESSERA_RUNTIME_TEST_FIXTURES_H
#define TESSERA_RUNTIME_TEST_FIXTURES_H

#include "tessera-runtime/Runtime.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace tsr::test {

struct TensorDeleter {
  void operator()(tsr_tensor_t *tensor) const { tsr_tensor_destroy(tensor); }
};
using TensorPtr = std::unique_ptr<tsr_tensor_t, TensorDeleter>;

/// Returns a fresh, empty directory named after the running test.
inline std::string scratchDir() {
  const testing::TestInfo *info =
      testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir =
      std::filesystem::path(TSR_TEST_SCRATCH) /
      (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Creates a tensor whose elements are `values` (which must have the
/// dtype's element size and the shape's element count).
template <typename T>
TensorPtr makeTensor(tsr_dtype_t dtype, std::vector<int64_t> shape,
                     const std::vector<T> &values) {
  tsr_tensor_t *tensor = nullptr;
  EXPECT_EQ(tsr_tensor_create(dtype, shape.size(), shape.data(), &tensor),
            TSR_OK)
      << tsr_last_error();
  EXPECT_EQ(tsr_tensor_byte_size(tensor), values.size() * sizeof(T));
  if (!values.empty())
    std::memcpy(tsr_tensor_data(tensor), values.data(),
                values.size() * sizeof(T));
  return TensorPtr(tensor);
}

template <typename T> std::vector<T> elements(tsr_tensor_t *tensor) {
  const T *data = static_cast<const T *>(tsr_tensor_data(tensor));
  return std::vector<T>(data, data + tsr_tensor_num_elements(tensor));
}

inline std::vector<int64_t> shapeOf(tsr_tensor_t *tensor) {
  const int64_t *shape = tsr_tensor_shape(tensor);
  return std::vector<int64_t>(shape, shape + tsr_tensor_rank(tensor));
}

} // namespace tsr::test

#endif // TESSERA_RUNTIME_TEST_FIXTURES_H
