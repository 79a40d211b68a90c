//===- Fixtures.h - Scratch files and tensors for runtime tests -*- C++ -*-===//

#ifndef TESSERA_RUNTIME_TEST_FIXTURES_H
#define TESSERA_RUNTIME_TEST_FIXTURES_H

#include "tessera-runtime/Runtime.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <sys/wait.h>

namespace tsr::test {

struct TensorDeleter {
  void operator()(tsr_tensor_t *tensor) const { tsr_tensor_destroy(tensor); }
};
using TensorPtr = std::unique_ptr<tsr_tensor_t, TensorDeleter>;

struct ArtifactDeleter {
  void operator()(tsr_artifact_t *artifact) const {
    tsr_artifact_destroy(artifact);
  }
};
using ArtifactPtr = std::unique_ptr<tsr_artifact_t, ArtifactDeleter>;

/// Loads the artifact in `dir`, expecting success.
inline ArtifactPtr loadArtifact(const std::string &dir) {
  tsr_artifact_t *artifact = nullptr;
  EXPECT_EQ(tsr_artifact_load(dir.c_str(), &artifact), TSR_OK)
      << tsr_last_error();
  return ArtifactPtr(artifact);
}

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

//===----------------------------------------------------------------------===//
// .npy and .npz files
//===----------------------------------------------------------------------===//

/// The bytes of a version 1 `.npy` file of `values` with NumPy dtype
/// `descr` (e.g. "<f4").
template <typename T>
std::string npyBytes(const std::string &descr,
                     const std::vector<int64_t> &shape,
                     const std::vector<T> &values) {
  std::string dims;
  for (int64_t dim : shape)
    dims += std::to_string(dim) + (shape.size() == 1 ? "," : ", ");
  if (shape.size() > 1)
    dims.resize(dims.size() - 2);
  std::string dict = "{'descr': '" + descr +
                     "', 'fortran_order': False, 'shape': (" + dims + "), }\n";
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(dict.size() & 0xff);
  bytes += static_cast<char>(dict.size() >> 8);
  bytes += dict;
  bytes.append(reinterpret_cast<const char *>(values.data()),
               values.size() * sizeof(T));
  return bytes;
}

inline void appendLe(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
}

/// Raw deflate, as the ZIP format stores it.
inline std::string deflateRaw(const std::string &data) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8,
                         Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef *>(&out[0]);
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

/// The bytes of a ZIP archive laid out as numpy.savez writes it (a ZIP64
/// extra field in every local header, none in the central directory),
/// stored or deflated.
inline std::string
zipBytes(const std::vector<std::pair<std::string, std::string>> &members,
         bool deflated, const std::string &comment = "") {
  std::string out, directory;
  for (const auto &[name, data] : members) {
    uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef *>(data.data()),
              static_cast<uInt>(data.size())));
    std::string payload = deflated ? deflateRaw(data) : data;
    uint16_t method = deflated ? 8 : 0;
    size_t offset = out.size();
    appendLe(out, 0x04034b50, 4);
    appendLe(out, 20, 2); // Version needed.
    appendLe(out, 0, 2);  // Flags.
    appendLe(out, method, 2);
    appendLe(out, 0, 4); // Time and date.
    appendLe(out, crc, 4);
    appendLe(out, payload.size(), 4);
    appendLe(out, data.size(), 4);
    appendLe(out, name.size(), 2);
    appendLe(out, 20, 2);
    out += name;
    appendLe(out, 1, 2); // ZIP64 extra field: both sizes.
    appendLe(out, 16, 2);
    appendLe(out, data.size(), 8);
    appendLe(out, payload.size(), 8);
    out += payload;

    appendLe(directory, 0x02014b50, 4);
    appendLe(directory, 20, 2); // Version made by.
    appendLe(directory, 20, 2);
    appendLe(directory, 0, 2);
    appendLe(directory, method, 2);
    appendLe(directory, 0, 4);
    appendLe(directory, crc, 4);
    appendLe(directory, payload.size(), 4);
    appendLe(directory, data.size(), 4);
    appendLe(directory, name.size(), 2);
    appendLe(directory, 0, 2); // Extra.
    appendLe(directory, 0, 2); // Comment.
    appendLe(directory, 0, 2); // Disk.
    appendLe(directory, 0, 2); // Internal attributes.
    appendLe(directory, 0, 4); // External attributes.
    appendLe(directory, offset, 4);
    directory += name;
  }
  size_t directoryStart = out.size();
  out += directory;
  appendLe(out, 0x06054b50, 4);
  appendLe(out, 0, 2);
  appendLe(out, 0, 2);
  appendLe(out, members.size(), 2);
  appendLe(out, members.size(), 2);
  appendLe(out, directory.size(), 4);
  appendLe(out, directoryStart, 4);
  appendLe(out, comment.size(), 2);
  return out + comment;
}

//===----------------------------------------------------------------------===//
// Running tessera-run
//===----------------------------------------------------------------------===//

struct RunResult {
  int exitCode = -1;
  std::string out, err;
};

inline std::string quote(const std::string &s) { return "'" + s + "'"; }

/// Runs tessera-run with `args` (already shell-quoted where needed), with
/// the environment assignments `env` ("NAME=value ...") if given.
inline RunResult runTool(const std::string &args, const std::string &env = "") {
  std::string dir = TSR_TEST_SCRATCH;
  const testing::TestInfo *info =
      testing::UnitTest::GetInstance()->current_test_info();
  std::string base = dir + "/" + info->test_suite_name() + "." + info->name();
  std::string command = env + " '" + TSR_TEST_RUN_TOOL + "' " + args + " >'" +
                        base + ".stdout' 2>'" + base + ".stderr'";
  int status = std::system(command.c_str());
  RunResult result;
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = readBytes(base + ".stdout");
  result.err = readBytes(base + ".stderr");
  return result;
}

/// Expects exit status 1 and exactly one stderr line, "tessera-run: error:
/// ..." containing every needle.
inline void expectError(const RunResult &result,
                        std::initializer_list<std::string> needles) {
  EXPECT_EQ(result.exitCode, 1) << result.err;
  EXPECT_EQ(result.err.rfind("tessera-run: error: ", 0), 0u) << result.err;
  ASSERT_FALSE(result.err.empty());
  EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
  for (const std::string &needle : needles)
    EXPECT_NE(result.err.find(needle), std::string::npos)
        << "missing '" << needle << "' in: " << result.err;
}

/// Copies the artifact `from` (its model.so and, if present, model.onnx)
/// into `dir`/art with `manifest` as its manifest.
inline std::string
artifactWithManifest(const std::string &dir, const std::string &manifest,
                     const std::string &from = TSR_TEST_FAKE_ARTIFACT) {
  std::string art = dir + "/art";
  std::filesystem::create_directories(art);
  // Replace rather than overwrite: the old copy may still be mapped (dlclose
  // need not unload, e.g. with -z nodelete), and rewriting it in place would
  // corrupt the mapping.
  for (const char *file : {"/model.so", "/model.onnx"}) {
    std::filesystem::remove(art + file);
    if (std::filesystem::exists(from + file))
      std::filesystem::copy_file(from + file, art + file);
  }
  writeBytes(art + "/manifest.json", manifest);
  return art;
}

/// Returns `text` with its first occurrence of `from` replaced by `to`.
inline std::string replaced(std::string text, const std::string &from,
                            const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at == std::string::npos)
    return text;
  return text.replace(at, from.size(), to);
}

} // namespace tsr::test

#endif // TESSERA_RUNTIME_TEST_FIXTURES_H
