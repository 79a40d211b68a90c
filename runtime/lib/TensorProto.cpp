//===- TensorProto.cpp - ONNX TensorProto reader and writer ---------------===//
//
// Uses libonnx's generated protobuf classes. Data may come from raw_data
// (little-endian bytes) or from the typed repeated fields, where ONNX packs
// every type narrower than 32 bits (and bool, float16, bfloat16) into
// int32_data, and uint32/uint64 into uint64_data.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <memory>

using namespace tsr;
using onnx::TensorProto;

static_assert(TSR_DTYPE_FLOAT32 == int(TensorProto::FLOAT), "");
static_assert(TSR_DTYPE_UINT8 == int(TensorProto::UINT8), "");
static_assert(TSR_DTYPE_INT8 == int(TensorProto::INT8), "");
static_assert(TSR_DTYPE_UINT16 == int(TensorProto::UINT16), "");
static_assert(TSR_DTYPE_INT16 == int(TensorProto::INT16), "");
static_assert(TSR_DTYPE_INT32 == int(TensorProto::INT32), "");
static_assert(TSR_DTYPE_INT64 == int(TensorProto::INT64), "");
static_assert(TSR_DTYPE_BOOL == int(TensorProto::BOOL), "");
static_assert(TSR_DTYPE_FLOAT16 == int(TensorProto::FLOAT16), "");
static_assert(TSR_DTYPE_FLOAT64 == int(TensorProto::DOUBLE), "");
static_assert(TSR_DTYPE_UINT32 == int(TensorProto::UINT32), "");
static_assert(TSR_DTYPE_UINT64 == int(TensorProto::UINT64), "");
static_assert(TSR_DTYPE_BFLOAT16 == int(TensorProto::BFLOAT16), "");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "raw_data is little-endian; big-endian hosts need byte swaps");

namespace {

/// Checks that a typed field holds exactly `expected` values.
tsr_status_t checkCount(const char *field, int actual, int64_t expected,
                        const tsr_tensor &tensor) {
  if (actual == expected)
    return TSR_OK;
  return fail(TSR_ERROR_PARSE,
              std::string(field) + " holds " + std::to_string(actual) +
                  " values, expected " + std::to_string(expected) + " for " +
                  tsr_dtype_name(tensor.dtype) + formatShape(tensor.shape));
}

/// Narrows each value of a repeated field into the tensor's element type.
template <typename T, typename Field>
void narrow(const Field &field, tsr_tensor &tensor) {
  T *dst = static_cast<T *>(tensor.data);
  for (int i = 0; i < field.size(); ++i)
    dst[i] = static_cast<T>(field.Get(i));
}

tsr_status_t copyTypedData(const TensorProto &proto, tsr_tensor &tensor) {
  int64_t n = tensor.numElements;
  switch (tensor.dtype) {
  case TSR_DTYPE_FLOAT32:
    if (tsr_status_t s =
            checkCount("float_data", proto.float_data_size(), n, tensor))
      return s;
    narrow<float>(proto.float_data(), tensor);
    return TSR_OK;
  case TSR_DTYPE_FLOAT64:
    if (tsr_status_t s =
            checkCount("double_data", proto.double_data_size(), n, tensor))
      return s;
    narrow<double>(proto.double_data(), tensor);
    return TSR_OK;
  case TSR_DTYPE_INT64:
    if (tsr_status_t s =
            checkCount("int64_data", proto.int64_data_size(), n, tensor))
      return s;
    narrow<int64_t>(proto.int64_data(), tensor);
    return TSR_OK;
  case TSR_DTYPE_UINT32:
    if (tsr_status_t s =
            checkCount("uint64_data", proto.uint64_data_size(), n, tensor))
      return s;
    narrow<uint32_t>(proto.uint64_data(), tensor);
    return TSR_OK;
  case TSR_DTYPE_UINT64:
    if (tsr_status_t s =
            checkCount("uint64_data", proto.uint64_data_size(), n, tensor))
      return s;
    narrow<uint64_t>(proto.uint64_data(), tensor);
    return TSR_OK;
  default:
    break;
  }
  if (tsr_status_t s =
          checkCount("int32_data", proto.int32_data_size(), n, tensor))
    return s;
  switch (tensor.dtype) {
  case TSR_DTYPE_INT32:
    narrow<int32_t>(proto.int32_data(), tensor);
    break;
  case TSR_DTYPE_INT16:
    narrow<int16_t>(proto.int32_data(), tensor);
    break;
  case TSR_DTYPE_INT8:
    narrow<int8_t>(proto.int32_data(), tensor);
    break;
  case TSR_DTYPE_UINT16:
  case TSR_DTYPE_FLOAT16:
  case TSR_DTYPE_BFLOAT16:
    narrow<uint16_t>(proto.int32_data(), tensor);
    break;
  case TSR_DTYPE_UINT8:
    narrow<uint8_t>(proto.int32_data(), tensor);
    break;
  case TSR_DTYPE_BOOL: {
    auto *dst = static_cast<uint8_t *>(tensor.data);
    for (int i = 0; i < proto.int32_data_size(); ++i)
      dst[i] = proto.int32_data(i) != 0;
    break;
  }
  default:
    break;
  }
  return TSR_OK;
}

} // namespace

tsr_status_t tsr::tensorFromProto(const TensorProto &proto,
                                  tsr_tensor_t **outTensor) {
  if (proto.has_segment())
    return fail(TSR_ERROR_UNSUPPORTED, "segmented tensors are not supported");
  if (proto.data_location() == TensorProto::EXTERNAL)
    return fail(TSR_ERROR_UNSUPPORTED,
                "tensors with external data are not supported");
  // Only values within the enum's range may be converted to it.
  int32_t type = proto.data_type();
  auto dtype = type > 0 && type <= TSR_DTYPE_BFLOAT16
                   ? static_cast<tsr_dtype_t>(type)
                   : TSR_DTYPE_INVALID;
  if (tsr_dtype_size(dtype) == 0) {
    if (proto.data_type() == TensorProto::UNDEFINED)
      return fail(TSR_ERROR_PARSE, "not a TensorProto: data_type is missing");
    const std::string &name =
        TensorProto::DataType_IsValid(proto.data_type())
            ? TensorProto::DataType_Name(
                  static_cast<TensorProto::DataType>(proto.data_type()))
            : std::to_string(proto.data_type());
    return fail(TSR_ERROR_UNSUPPORTED,
                "unsupported TensorProto data_type " + name);
  }
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  int64_t count = 0;
  size_t byteSize = 0;
  if (tsr_status_t s =
          computeSizes(dtype, shape.data(), shape.size(), count, byteSize))
    return s;
  // Validate the payload's size before allocating from untrusted dims.
  if (proto.has_raw_data() && proto.raw_data().size() != byteSize)
    return fail(TSR_ERROR_PARSE,
                "raw_data holds " + std::to_string(proto.raw_data().size()) +
                    " bytes, expected " + std::to_string(byteSize) + " for " +
                    tsr_dtype_name(dtype) + formatShape(shape));
  if (!proto.has_raw_data() && count > (int64_t(1) << 31))
    return fail(TSR_ERROR_PARSE, "typed data fields cannot hold " +
                                     std::to_string(count) + " values");

  tsr_tensor_t *raw = nullptr;
  if (tsr_status_t s = createTensor(dtype, shape, &raw))
    return s;
  std::unique_ptr<tsr_tensor_t> tensor(raw);
  tensor->name = proto.name();
  if (proto.has_raw_data()) {
    std::memcpy(tensor->data, proto.raw_data().data(), byteSize);
    if (dtype == TSR_DTYPE_BOOL) {
      auto *dst = static_cast<uint8_t *>(tensor->data);
      for (int64_t i = 0; i < count; ++i)
        dst[i] = dst[i] != 0;
    }
  } else if (tsr_status_t s = copyTypedData(proto, *tensor)) {
    return s;
  }
  *outTensor = tensor.release();
  return TSR_OK;
}

namespace {

tsr_status_t readPb(const std::string &path, tsr_tensor_t **outTensor) {
  std::string bytes;
  if (tsr_status_t s = readFile(path, bytes))
    return s;
  TensorProto proto;
  if (!proto.ParseFromString(bytes))
    return fail(TSR_ERROR_PARSE,
                "not a valid ONNX TensorProto (protobuf parse failed)");
  return tensorFromProto(proto, outTensor);
}

tsr_status_t writePb(const tsr_tensor_t &tensor, const std::string &path) {
  TensorProto proto;
  proto.set_name(tensor.name);
  for (int64_t dim : tensor.shape)
    proto.add_dims(dim);
  proto.set_data_type(static_cast<int32_t>(tensor.dtype));
  proto.set_raw_data(tensor.data, tensor.byteSize);
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    return fail(TSR_ERROR_IO, path + ": cannot serialize TensorProto");
  return writeFile(path, bytes);
}

} // namespace

tsr_status_t tsr_tensor_read_pb(const char *path, tsr_tensor_t **out_tensor) {
  return guard([&] {
    if (!path || !out_tensor)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    tsr_status_t s = readPb(path, out_tensor);
    if (s != TSR_OK && s != TSR_ERROR_IO)
      return withContext(s, path);
    return s;
  });
}

tsr_status_t tsr_tensor_write_pb(const tsr_tensor_t *tensor, const char *path) {
  return guard([&] {
    if (!tensor || !path)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    if (tsr_status_t s = requireHostReadable(*tensor, path))
      return s;
    return writePb(*tensor, path);
  });
}
