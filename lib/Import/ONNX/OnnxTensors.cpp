//===- OnnxTensors.cpp - ONNX TensorProto to MLIR attributes --------------===//
//
// Reads the payload of a TensorProto from wherever ONNX allows it to live:
// raw_data (little-endian bytes), the typed repeated fields, or an external
// file next to the model. Sizes are checked against the declared shape.
//
//===----------------------------------------------------------------------===//
#include "OnnxTensors.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace mlir;
using onnx::TensorProto;

Type mlir::tessera::onnx_import::getElementType(MLIRContext *ctx,
                                                int32_t dataType) {
  Builder b(ctx);
  switch (dataType) {
  case TensorProto::FLOAT:
    return b.getF32Type();
  case TensorProto::DOUBLE:
    return b.getF64Type();
  case TensorProto::FLOAT16:
    return b.getF16Type();
  case TensorProto::BFLOAT16:
    return b.getBF16Type();
  case TensorProto::BOOL:
    return b.getI1Type();
  case TensorProto::INT8:
    return b.getI8Type();
  case TensorProto::INT16:
    return b.getI16Type();
  case TensorProto::INT32:
    return b.getI32Type();
  case TensorProto::INT64:
    return b.getI64Type();
  case TensorProto::UINT8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case TensorProto::UINT16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case TensorProto::UINT32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case TensorProto::UINT64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  default:
    return {};
  }
}

std::string mlir::tessera::onnx_import::getDataTypeName(int32_t dataType) {
  if (TensorProto::DataType_IsValid(dataType))
    return TensorProto::DataType_Name(
        static_cast<TensorProto::DataType>(dataType));
  return "data type " + std::to_string(dataType);
}

/// Bytes per element as stored in raw_data (bool takes one byte).
static size_t storageBytes(Type elem) {
  return std::max<size_t>(1, elem.getIntOrFloatBitWidth() / 8);
}

/// Packs integer values from a typed field into little-endian storage.
template <typename Range>
static std::vector<char> packIntegers(const Range &values, size_t bytes) {
  std::vector<char> out(values.size() * bytes);
  size_t i = 0;
  for (auto v : values) {
    uint64_t bits = static_cast<uint64_t>(v);
    std::memcpy(out.data() + i * bytes, &bits, bytes);
    ++i;
  }
  return out;
}

static std::vector<char> readExternal(const TensorProto &tensor,
                                      const std::string &modelDir,
                                      std::string &error) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset")
      offset = std::stoll(entry.value());
    else if (entry.key() == "length")
      length = std::stoll(entry.value());
  }
  if (location.empty()) {
    error = "external data of tensor '" + tensor.name() + "' has no location";
    return {};
  }
  llvm::SmallString<256> path(modelDir);
  llvm::sys::path::append(path, location);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read external data file '" + std::string(path) +
            "' of tensor '" + tensor.name() +
            "': " + buffer.getError().message();
    return {};
  }
  int64_t size = (*buffer)->getBufferSize();
  if (length < 0)
    length = size - offset;
  if (offset < 0 || length < 0 || offset + length > size) {
    error = "external data file '" + std::string(path) + "' of tensor '" +
            tensor.name() + "' is too short: needs " +
            std::to_string(offset + length) + " bytes, has " +
            std::to_string(size);
    return {};
  }
  const char *start = (*buffer)->getBufferStart() + offset;
  return std::vector<char>(start, start + length);
}

DenseElementsAttr mlir::tessera::onnx_import::convertTensor(
    MLIRContext *ctx, const TensorProto &tensor, const std::string &modelDir,
    std::string &error) {
  std::string what = "tensor '" + tensor.name() + "'";
  Type elem = getElementType(ctx, tensor.data_type());
  if (!elem) {
    error = what + " has unsupported element type " +
            getDataTypeName(tensor.data_type());
    return {};
  }
  if (tensor.has_segment()) {
    error = what + " is segmented, which is not supported";
    return {};
  }
  SmallVector<int64_t> shape;
  int64_t count = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0) {
      error = what + " has negative dimension " + std::to_string(d);
      return {};
    }
    shape.push_back(d);
    count *= d;
  }
  auto type = RankedTensorType::get(shape, elem);
  size_t bytes = storageBytes(elem);

  std::vector<char> raw;
  bool typed = false;
  if (tensor.data_location() == TensorProto::EXTERNAL) {
    raw = readExternal(tensor, modelDir, error);
    if (!error.empty())
      return {};
  } else if (tensor.has_raw_data()) {
    raw.assign(tensor.raw_data().begin(), tensor.raw_data().end());
  } else {
    typed = true;
    switch (tensor.data_type()) {
    case TensorProto::FLOAT:
      raw.resize(tensor.float_data_size() * 4);
      if (!raw.empty())
        std::memcpy(raw.data(), tensor.float_data().data(), raw.size());
      break;
    case TensorProto::DOUBLE:
      raw.resize(tensor.double_data_size() * 8);
      if (!raw.empty())
        std::memcpy(raw.data(), tensor.double_data().data(), raw.size());
      break;
    case TensorProto::INT64:
      raw = packIntegers(tensor.int64_data(), 8);
      break;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      raw = packIntegers(tensor.uint64_data(), bytes);
      break;
    default: // int8/16/32, uint8/16, bool, float16, bfloat16 live in int32_data
      raw = packIntegers(tensor.int32_data(), bytes);
      break;
    }
  }
  if (raw.size() != static_cast<size_t>(count) * bytes) {
    error = what + " holds " + std::to_string(raw.size() / bytes) +
            " elements but its shape needs " + std::to_string(count) +
            (typed ? "" : " (raw or external data of the wrong size)");
    return {};
  }
  if (elem.isInteger(1)) {
    SmallVector<bool> values;
    for (char c : raw)
      values.push_back(c != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(raw.data(), raw.size()));
}
