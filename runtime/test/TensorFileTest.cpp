//===- TensorFileTest.cpp - Tensors, .pb/.npy files and manifests ---------===//

#include "Fixtures.h"

#include <onnx/onnx_pb.h>

#include <random>

using namespace tsr::test;

namespace {

constexpr tsr_dtype_t kAllDTypes[] = {
    TSR_DTYPE_FLOAT16, TSR_DTYPE_BFLOAT16, TSR_DTYPE_FLOAT32, TSR_DTYPE_FLOAT64,
    TSR_DTYPE_INT8,    TSR_DTYPE_INT16,    TSR_DTYPE_INT32,   TSR_DTYPE_INT64,
    TSR_DTYPE_UINT8,   TSR_DTYPE_UINT16,   TSR_DTYPE_UINT32,  TSR_DTYPE_UINT64,
    TSR_DTYPE_BOOL,
};

/// A tensor of `dtype` filled with a byte pattern valid for every dtype.
TensorPtr patternTensor(tsr_dtype_t dtype, std::vector<int64_t> shape) {
  tsr_tensor_t *tensor = nullptr;
  EXPECT_EQ(tsr_tensor_create(dtype, shape.size(), shape.data(), &tensor),
            TSR_OK);
  auto *bytes = static_cast<uint8_t *>(tsr_tensor_data(tensor));
  for (size_t i = 0; i < tsr_tensor_byte_size(tensor); ++i)
    bytes[i] =
        dtype == TSR_DTYPE_BOOL ? i % 2 : static_cast<uint8_t>(i * 7 + 3);
  return TensorPtr(tensor);
}

void expectSameTensor(tsr_tensor_t *a, tsr_tensor_t *b) {
  EXPECT_EQ(tsr_tensor_dtype(a), tsr_tensor_dtype(b));
  EXPECT_EQ(shapeOf(a), shapeOf(b));
  ASSERT_EQ(tsr_tensor_byte_size(a), tsr_tensor_byte_size(b));
  EXPECT_EQ(std::memcmp(tsr_tensor_data(a), tsr_tensor_data(b),
                        tsr_tensor_byte_size(a)),
            0);
}

std::string serialize(const onnx::TensorProto &proto) {
  std::string bytes;
  EXPECT_TRUE(proto.SerializeToString(&bytes));
  return bytes;
}

TensorPtr readPb(const std::string &path) {
  tsr_tensor_t *tensor = nullptr;
  EXPECT_EQ(tsr_tensor_read_pb(path.c_str(), &tensor), TSR_OK)
      << tsr_last_error();
  return TensorPtr(tensor);
}

TensorPtr readNpy(const std::string &path) {
  tsr_tensor_t *tensor = nullptr;
  EXPECT_EQ(tsr_tensor_read_npy(path.c_str(), &tensor), TSR_OK)
      << tsr_last_error();
  return TensorPtr(tensor);
}

/// Builds an .npy file from a header dict and raw data (version 1).
std::string npyBytes(const std::string &dict, const std::string &data,
                     int major = 1) {
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  std::string header = dict + "\n";
  if (major == 1) {
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
  } else {
    for (int shift = 0; shift < 32; shift += 8)
      bytes += static_cast<char>((header.size() >> shift) & 0xff);
  }
  return bytes + header + data;
}

/// Expects a failing read whose message contains `path` and `needle`.
template <typename ReadFn>
void expectReadError(ReadFn read, const std::string &path,
                     const std::string &needle) {
  tsr_tensor_t *tensor = nullptr;
  EXPECT_NE(read(path.c_str(), &tensor), TSR_OK);
  EXPECT_EQ(tensor, nullptr);
  std::string message = tsr_last_error();
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find(needle), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

/// Reads `bytes` as a file of the given kind; must never crash, and any
/// successful result must be internally consistent.
template <typename ReadFn>
void readMustNotCrash(ReadFn read, const std::string &path,
                      const std::string &bytes) {
  writeBytes(path, bytes);
  tsr_tensor_t *tensor = nullptr;
  if (read(path.c_str(), &tensor) == TSR_OK) {
    ASSERT_NE(tensor, nullptr);
    EXPECT_EQ(tsr_tensor_byte_size(tensor),
              tsr_tensor_num_elements(tensor) *
                  tsr_dtype_size(tsr_tensor_dtype(tensor)));
    tsr_tensor_destroy(tensor);
  } else {
    EXPECT_NE(std::string(tsr_last_error()), "");
  }
}

template <typename ReadFn>
void fuzz(ReadFn read, const std::string &path, const std::string &valid) {
  std::mt19937 rng(1234);
  for (size_t n = 0; n < valid.size(); ++n)
    readMustNotCrash(read, path, valid.substr(0, n));
  for (int i = 0; i < 300; ++i) {
    std::string mutated = valid;
    for (int flips = 1 + rng() % 4; flips > 0; --flips)
      mutated[rng() % mutated.size()] = static_cast<char>(rng());
    readMustNotCrash(read, path, mutated);
  }
  for (int i = 0; i < 300; ++i) {
    std::string random(rng() % 256, '\0');
    for (char &c : random)
      c = static_cast<char>(rng());
    if (i % 2)
      random = valid.substr(0, rng() % valid.size()) + random;
    readMustNotCrash(read, path, random);
  }
}

} // namespace

TEST(DType, NamesSizesAndValues) {
  for (tsr_dtype_t dtype : kAllDTypes) {
    tsr_dtype_t parsed = TSR_DTYPE_INVALID;
    ASSERT_EQ(tsr_dtype_from_name(tsr_dtype_name(dtype), &parsed), TSR_OK);
    EXPECT_EQ(parsed, dtype);
    EXPECT_GT(tsr_dtype_size(dtype), 0u);
  }
  EXPECT_EQ(tsr_dtype_size(TSR_DTYPE_BOOL), 1u);
  EXPECT_EQ(tsr_dtype_size(TSR_DTYPE_BFLOAT16), 2u);
  tsr_dtype_t parsed;
  EXPECT_EQ(tsr_dtype_from_name("float8", &parsed), TSR_ERROR_PARSE);
  EXPECT_STREQ(tsr_last_error(), "unknown dtype 'float8'");
  EXPECT_STREQ(tsr_status_name(TSR_ERROR_MISMATCH), "TSR_ERROR_MISMATCH");
}

TEST(Tensor, CreateIsAlignedZeroedAndNonNull) {
  int64_t shape[] = {3, 5};
  tsr_tensor_t *tensor = nullptr;
  ASSERT_EQ(tsr_tensor_create(TSR_DTYPE_FLOAT32, 2, shape, &tensor), TSR_OK);
  TensorPtr owned(tensor);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tsr_tensor_data(tensor)) % 64, 0u);
  EXPECT_EQ(tsr_tensor_num_elements(tensor), 15);
  for (float value : elements<float>(tensor))
    EXPECT_EQ(value, 0.0f);

  int64_t empty[] = {4, 0};
  tsr_tensor_t *zero = nullptr;
  ASSERT_EQ(tsr_tensor_create(TSR_DTYPE_INT64, 2, empty, &zero), TSR_OK);
  TensorPtr ownedZero(zero);
  EXPECT_NE(tsr_tensor_data(zero), nullptr);
  EXPECT_EQ(tsr_tensor_byte_size(zero), 0u);

  int64_t negative[] = {-1};
  EXPECT_EQ(tsr_tensor_create(TSR_DTYPE_INT8, 1, negative, &tensor),
            TSR_ERROR_PARSE);
  int64_t huge[] = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_EQ(tsr_tensor_create(TSR_DTYPE_INT8, 2, huge, &tensor),
            TSR_ERROR_PARSE);
  EXPECT_EQ(tsr_tensor_create(static_cast<tsr_dtype_t>(8), 0, nullptr, &tensor),
            TSR_ERROR_INVALID_ARGUMENT);
}

TEST(TensorPb, RoundTripsEveryDType) {
  std::string dir = scratchDir();
  for (tsr_dtype_t dtype : kAllDTypes) {
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{}, {0}, {2, 3}, {1, 0, 4}}) {
      TensorPtr tensor = patternTensor(dtype, shape);
      ASSERT_EQ(tsr_tensor_set_name(tensor.get(), "t"), TSR_OK);
      std::string path = dir + "/t.pb";
      ASSERT_EQ(tsr_tensor_write_pb(tensor.get(), path.c_str()), TSR_OK);
      TensorPtr back = readPb(path);
      ASSERT_TRUE(back);
      expectSameTensor(tensor.get(), back.get());
      EXPECT_STREQ(tsr_tensor_name(back.get()), "t");

      onnx::TensorProto proto;
      ASSERT_TRUE(proto.ParseFromString(readBytes(path)));
      EXPECT_EQ(proto.data_type(), static_cast<int>(dtype));
      EXPECT_TRUE(proto.has_raw_data());
    }
  }
}

TEST(TensorPb, ReadsTypedFieldsWithOnnxPacking) {
  std::string dir = scratchDir();
  std::string path = dir + "/typed.pb";
  auto read = [&](const onnx::TensorProto &proto) {
    writeBytes(path, serialize(proto));
    return readPb(path);
  };

  onnx::TensorProto floats;
  floats.set_data_type(onnx::TensorProto::FLOAT);
  floats.add_dims(2);
  floats.add_float_data(1.5f);
  floats.add_float_data(-2.0f);
  EXPECT_EQ(elements<float>(read(floats).get()),
            (std::vector<float>{1.5f, -2.0f}));

  onnx::TensorProto int8s;
  int8s.set_data_type(onnx::TensorProto::INT8);
  int8s.add_dims(3);
  for (int v : {-128, 5, 127})
    int8s.add_int32_data(v);
  EXPECT_EQ(elements<int8_t>(read(int8s).get()),
            (std::vector<int8_t>{-128, 5, 127}));

  onnx::TensorProto uint16s;
  uint16s.set_data_type(onnx::TensorProto::UINT16);
  uint16s.add_dims(2);
  uint16s.add_int32_data(65535);
  uint16s.add_int32_data(7);
  EXPECT_EQ(elements<uint16_t>(read(uint16s).get()),
            (std::vector<uint16_t>{65535, 7}));

  for (auto type : {onnx::TensorProto::FLOAT16, onnx::TensorProto::BFLOAT16}) {
    onnx::TensorProto halves;
    halves.set_data_type(type);
    halves.add_dims(2);
    halves.add_int32_data(0x3C00);
    halves.add_int32_data(0xC000);
    EXPECT_EQ(elements<uint16_t>(read(halves).get()),
              (std::vector<uint16_t>{0x3C00, 0xC000}));
  }

  onnx::TensorProto bools;
  bools.set_data_type(onnx::TensorProto::BOOL);
  bools.add_dims(3);
  for (int v : {1, 0, 1})
    bools.add_int32_data(v);
  EXPECT_EQ(elements<uint8_t>(read(bools).get()),
            (std::vector<uint8_t>{1, 0, 1}));

  onnx::TensorProto int64s;
  int64s.set_data_type(onnx::TensorProto::INT64);
  int64s.add_int64_data(-(int64_t(1) << 40));
  TensorPtr scalar = read(int64s);
  EXPECT_EQ(tsr_tensor_rank(scalar.get()), 0u);
  EXPECT_EQ(elements<int64_t>(scalar.get()),
            (std::vector<int64_t>{-(int64_t(1) << 40)}));

  onnx::TensorProto doubles;
  doubles.set_data_type(onnx::TensorProto::DOUBLE);
  doubles.add_dims(1);
  doubles.add_double_data(0.25);
  EXPECT_EQ(elements<double>(read(doubles).get()), (std::vector<double>{0.25}));

  onnx::TensorProto uint32s;
  uint32s.set_data_type(onnx::TensorProto::UINT32);
  uint32s.add_dims(1);
  uint32s.add_uint64_data(4000000000u);
  EXPECT_EQ(elements<uint32_t>(read(uint32s).get()),
            (std::vector<uint32_t>{4000000000u}));

  onnx::TensorProto uint64s;
  uint64s.set_data_type(onnx::TensorProto::UINT64);
  uint64s.add_dims(1);
  uint64s.add_uint64_data(~uint64_t(0));
  EXPECT_EQ(elements<uint64_t>(read(uint64s).get()),
            (std::vector<uint64_t>{~uint64_t(0)}));

  onnx::TensorProto empty;
  empty.set_data_type(onnx::TensorProto::FLOAT);
  empty.add_dims(0);
  empty.add_dims(7);
  EXPECT_EQ(tsr_tensor_num_elements(read(empty).get()), 0);
}

TEST(TensorPb, RejectsBadContents) {
  std::string dir = scratchDir();
  std::string path = dir + "/bad.pb";

  onnx::TensorProto wrongCount;
  wrongCount.set_data_type(onnx::TensorProto::FLOAT);
  wrongCount.add_dims(3);
  wrongCount.add_float_data(1.0f);
  writeBytes(path, serialize(wrongCount));
  expectReadError(tsr_tensor_read_pb, path,
                  "float_data holds 1 values, expected 3 for float32[3]");

  onnx::TensorProto shortRaw;
  shortRaw.set_data_type(onnx::TensorProto::INT32);
  shortRaw.add_dims(2);
  shortRaw.add_dims(2);
  shortRaw.set_raw_data(std::string(12, '\0'));
  writeBytes(path, serialize(shortRaw));
  expectReadError(tsr_tensor_read_pb, path,
                  "raw_data holds 12 bytes, expected 16 for int32[2, 2]");

  onnx::TensorProto hugeDims;
  hugeDims.set_data_type(onnx::TensorProto::FLOAT);
  hugeDims.add_dims(int64_t(1) << 40);
  writeBytes(path, serialize(hugeDims));
  expectReadError(tsr_tensor_read_pb, path, "values");

  onnx::TensorProto negative;
  negative.set_data_type(onnx::TensorProto::FLOAT);
  negative.add_dims(-2);
  writeBytes(path, serialize(negative));
  expectReadError(tsr_tensor_read_pb, path, "negative dimension");

  onnx::TensorProto strings;
  strings.set_data_type(onnx::TensorProto::STRING);
  strings.add_string_data("a");
  writeBytes(path, serialize(strings));
  expectReadError(tsr_tensor_read_pb, path,
                  "unsupported TensorProto data_type STRING");

  onnx::TensorProto external;
  external.set_data_type(onnx::TensorProto::FLOAT);
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  writeBytes(path, serialize(external));
  expectReadError(tsr_tensor_read_pb, path, "external data");

  writeBytes(path, "");
  expectReadError(tsr_tensor_read_pb, path, "data_type is missing");
  writeBytes(path, "\xff\xff\xff\xff garbage");
  expectReadError(tsr_tensor_read_pb, path, "protobuf parse failed");
  expectReadError(tsr_tensor_read_pb, dir + "/missing.pb", "cannot open");
  expectReadError(tsr_tensor_read_pb, dir, "not a regular file");
}

TEST(TensorPb, FuzzedFilesNeverCrash) {
  std::string dir = scratchDir();
  TensorPtr tensor = patternTensor(TSR_DTYPE_FLOAT32, {2, 3});
  tsr_tensor_set_name(tensor.get(), "input");
  std::string path = dir + "/valid.pb";
  ASSERT_EQ(tsr_tensor_write_pb(tensor.get(), path.c_str()), TSR_OK);
  fuzz(tsr_tensor_read_pb, dir + "/fuzz.pb", readBytes(path));
}

TEST(TensorNpy, RoundTripsEveryDTypeButBFloat16) {
  std::string dir = scratchDir();
  std::string path = dir + "/t.npy";
  for (tsr_dtype_t dtype : kAllDTypes) {
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{}, {5}, {0, 2}, {2, 3, 4}}) {
      TensorPtr tensor = patternTensor(dtype, shape);
      tsr_status_t status = tsr_tensor_write_npy(tensor.get(), path.c_str());
      if (dtype == TSR_DTYPE_BFLOAT16) {
        EXPECT_EQ(status, TSR_ERROR_UNSUPPORTED);
        continue;
      }
      ASSERT_EQ(status, TSR_OK) << tsr_last_error();
      std::string bytes = readBytes(path);
      size_t headerEnd = bytes.find('\n') + 1;
      EXPECT_EQ(headerEnd % 64, 0u);
      TensorPtr back = readNpy(path);
      ASSERT_TRUE(back);
      expectSameTensor(tensor.get(), back.get());
    }
  }
}

TEST(TensorNpy, ReadsNumpyVariants) {
  std::string dir = scratchDir();
  std::string path = dir + "/v.npy";
  auto read = [&](const std::string &bytes) {
    writeBytes(path, bytes);
    return readNpy(path);
  };

  // As numpy writes a 1-D float32 array.
  float values[] = {1.0f, 2.5f, -3.0f};
  TensorPtr plain = read(
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
               std::string(reinterpret_cast<char *>(values), sizeof(values))));
  EXPECT_EQ(elements<float>(plain.get()),
            (std::vector<float>{1.0f, 2.5f, -3.0f}));

  // Big-endian int32, version 2 header, double quotes, no trailing comma.
  TensorPtr swapped = read(npyBytes(
      "{\"descr\": \">i4\", \"fortran_order\": False, \"shape\": (2,)}",
      std::string("\x00\x00\x01\x02\xff\xff\xff\xfe", 8), 2));
  EXPECT_EQ(elements<int32_t>(swapped.get()),
            (std::vector<int32_t>{0x102, -2}));

  // Fortran order: column-major [[0, 1, 2], [3, 4, 5]] stored as 0 3 1 4 2 5.
  std::string column;
  for (int16_t v : {0, 3, 1, 4, 2, 5})
    column.append(reinterpret_cast<char *>(&v), sizeof(v));
  TensorPtr fortran = read(npyBytes(
      "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }", column));
  EXPECT_EQ(shapeOf(fortran.get()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(elements<int16_t>(fortran.get()),
            (std::vector<int16_t>{0, 1, 2, 3, 4, 5}));

  // Scalars and booleans.
  TensorPtr scalar = read(npyBytes(
      "{'descr': '|b1', 'fortran_order': False, 'shape': (), }", "\x01"));
  EXPECT_EQ(tsr_tensor_rank(scalar.get()), 0u);
  EXPECT_EQ(elements<uint8_t>(scalar.get()), (std::vector<uint8_t>{1}));
}

TEST(TensorNpy, RejectsBadContents) {
  std::string dir = scratchDir();
  std::string path = dir + "/bad.npy";
  std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";

  writeBytes(path, npyBytes(dict, std::string(4, '\0')));
  expectReadError(tsr_tensor_read_npy, path,
                  "data holds 4 bytes, expected 8 for float32[2] (truncated "
                  "file)");
  writeBytes(path, npyBytes(dict, std::string(12, '\0')));
  expectReadError(tsr_tensor_read_npy, path, "data holds 12 bytes");
  writeBytes(path, npyBytes("{'descr': '<c8', 'fortran_order': False, "
                            "'shape': (1,), }",
                            std::string(8, '\0')));
  expectReadError(tsr_tensor_read_npy, path,
                  "unsupported .npy dtype descr '<c8'");
  writeBytes(path, npyBytes("{'descr': '<f4', 'shape': (1,), }",
                            std::string(4, '\0')));
  expectReadError(tsr_tensor_read_npy, path, "malformed .npy header");
  writeBytes(path, npyBytes(dict, std::string(8, '\0'), 7));
  expectReadError(tsr_tensor_read_npy, path,
                  "unsupported .npy format version 7");
  writeBytes(path, npyBytes("{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (99999999999999999999,), }",
                            ""));
  expectReadError(tsr_tensor_read_npy, path, "dimension too large");
  writeBytes(path, "PK\x03\x04 this is an npz");
  expectReadError(tsr_tensor_read_npy, path, "bad magic");
  expectReadError(tsr_tensor_read_npy, dir + "/missing.npy", "cannot open");
}

TEST(TensorNpy, FuzzedFilesNeverCrash) {
  std::string dir = scratchDir();
  TensorPtr tensor = patternTensor(TSR_DTYPE_INT16, {2, 3});
  std::string path = dir + "/valid.npy";
  ASSERT_EQ(tsr_tensor_write_npy(tensor.get(), path.c_str()), TSR_OK);
  fuzz(tsr_tensor_read_npy, dir + "/fuzz.npy", readBytes(path));
}
