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
using mlir::tessera::onnx_import::TensorData;
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

/// Maps the external file that holds `tensor`'s payload into `data`.
static bool readExternal(const TensorProto &tensor, const std::string &modelDir,
                         TensorData &data, std::string &error) {
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
    return false;
  }
  llvm::SmallString<256> path(modelDir);
  llvm::sys::path::append(path, location);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read external data file '" + std::string(path) +
            "' of tensor '" + tensor.name() +
            "': " + buffer.getError().message();
    return false;
  }
  int64_t size = (*buffer)->getBufferSize();
  if (length < 0)
    length = size - offset;
  if (offset < 0 || length < 0 || offset + length > size) {
    error = "external data file '" + std::string(path) + "' of tensor '" +
            tensor.name() + "' is too short: needs " +
            std::to_string(offset + length) + " bytes, has " +
            std::to_string(size);
    return false;
  }
  data.external = std::move(*buffer);
  data.bytes = ArrayRef<char>(data.external->getBufferStart() + offset, length);
  return true;
}

/// A view of a repeated field's values as bytes.
template <typename Field> static ArrayRef<char> viewOf(const Field &field) {
  return ArrayRef<char>(reinterpret_cast<const char *>(field.data()),
                        field.size() * sizeof(*field.data()));
}

std::optional<TensorData> mlir::tessera::onnx_import::readTensor(
    MLIRContext *ctx, const TensorProto &tensor, const std::string &modelDir,
    std::string &error) {
  std::string what = "tensor '" + tensor.name() + "'";
  Type elem = getElementType(ctx, tensor.data_type());
  if (!elem) {
    error = what + " has unsupported element type " +
            getDataTypeName(tensor.data_type());
    return std::nullopt;
  }
  if (tensor.has_segment()) {
    error = what + " is segmented, which is not supported";
    return std::nullopt;
  }
  SmallVector<int64_t> shape;
  int64_t count = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0) {
      error = what + " has negative dimension " + std::to_string(d);
      return std::nullopt;
    }
    shape.push_back(d);
    count *= d;
  }
  TensorData data;
  data.type = RankedTensorType::get(shape, elem);
  size_t bytes = storageBytes(elem);

  bool typed = false;
  if (tensor.data_location() == TensorProto::EXTERNAL) {
    if (!readExternal(tensor, modelDir, data, error))
      return std::nullopt;
  } else if (tensor.has_raw_data()) {
    data.bytes =
        ArrayRef<char>(tensor.raw_data().data(), tensor.raw_data().size());
  } else {
    typed = true;
    switch (tensor.data_type()) {
    case TensorProto::FLOAT:
      data.bytes = viewOf(tensor.float_data());
      break;
    case TensorProto::DOUBLE:
      data.bytes = viewOf(tensor.double_data());
      break;
    case TensorProto::INT64:
      data.owned = packIntegers(tensor.int64_data(), 8);
      break;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      data.owned = packIntegers(tensor.uint64_data(), bytes);
      break;
    default: // int8/16/32, uint8/16, bool, float16, bfloat16 live in int32_data
      data.owned = packIntegers(tensor.int32_data(), bytes);
      break;
    }
    if (data.bytes.empty())
      data.bytes = data.owned;
  }
  if (data.bytes.size() != static_cast<size_t>(count) * bytes) {
    error = what + " holds " + std::to_string(data.bytes.size() / bytes) +
            " elements but its shape needs " + std::to_string(count) +
            (typed ? "" : " (raw or external data of the wrong size)");
    return std::nullopt;
  }
  return data;
}

bool mlir::tessera::onnx_import::holdsNonFinite(const TensorData &data) {
  // An exponent of all ones is an infinity or a NaN, in every IEEE format
  // and in bfloat16. The bytes may be unaligned: read them by memcpy.
  Type elem = data.type.getElementType();
  // Blocks of words without an early exit vectorize: a GPT-2-shaped
  // model's 650 MB take a few tens of ms, not a tenth of its compile.
  auto scan = [&](auto word, uint64_t exponent) {
    using Word = decltype(word);
    constexpr size_t kBlock = 1024;
    const Word mask = static_cast<Word>(exponent);
    size_t n = data.bytes.size() / sizeof(Word);
    Word block[kBlock];
    for (size_t begin = 0; begin < n; begin += kBlock) {
      size_t count = std::min(kBlock, n - begin);
      std::memcpy(block, data.bytes.data() + begin * sizeof(Word),
                  count * sizeof(Word));
      bool found = false;
      for (size_t i = 0; i < count; ++i)
        found |= (block[i] & mask) == mask;
      if (found)
        return true;
    }
    return false;
  };
  if (elem.isF32())
    return scan(uint32_t(), 0x7f800000u);
  if (elem.isF64())
    return scan(uint64_t(), 0x7ff0000000000000ull);
  if (elem.isF16())
    return scan(uint16_t(), 0x7c00u);
  if (elem.isBF16())
    return scan(uint16_t(), 0x7f80u);
  return false;
}

DenseElementsAttr
mlir::tessera::onnx_import::toElementsAttr(const TensorData &data) {
  if (data.type.getElementType().isInteger(1)) {
    SmallVector<bool> values;
    for (char c : data.bytes)
      values.push_back(c != 0);
    return DenseElementsAttr::get(data.type, ArrayRef<bool>(values));
  }
  return DenseElementsAttr::getFromRawBuffer(data.type, data.bytes);
}

DenseElementsAttr mlir::tessera::onnx_import::convertTensor(
    MLIRContext *ctx, const TensorProto &tensor, const std::string &modelDir,
    std::string &error) {
  std::optional<TensorData> data = readTensor(ctx, tensor, modelDir, error);
  return data ? toElementsAttr(*data) : DenseElementsAttr();
}
