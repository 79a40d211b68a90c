//===- Npy.cpp - NumPy .npy reader and writer -----------------------------===//
//
// Implements the format described in numpy/lib/format.py: a magic string, a
// version, a little-endian header length, a Python dict literal with 'descr',
// 'fortran_order' and 'shape', then the raw elements.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>

using namespace tsr;

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct NpyHeader {
  tsr_dtype_t dtype = TSR_DTYPE_INVALID;
  bool bigEndian = false;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// A parser for the restricted Python literal numpy writes as the header.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text(text) {}

  tsr_status_t parse(NpyHeader &header) {
    bool sawDescr = false, sawOrder = false, sawShape = false;
    skipSpace();
    if (!consume('{'))
      return error("expected '{'");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (tsr_status_t s = parseString(key))
        return s;
      skipSpace();
      if (!consume(':'))
        return error("expected ':' after '" + key + "'");
      skipSpace();
      if (key == "descr" && !sawDescr) {
        sawDescr = true;
        std::string descr;
        if (tsr_status_t s = parseString(descr))
          return s;
        if (tsr_status_t s = parseDescr(descr, header))
          return s;
      } else if (key == "fortran_order" && !sawOrder) {
        sawOrder = true;
        if (tsr_status_t s = parseBool(header.fortranOrder))
          return s;
      } else if (key == "shape" && !sawShape) {
        sawShape = true;
        if (tsr_status_t s = parseShape(header.shape))
          return s;
      } else {
        return error("unexpected or duplicate key '" + key + "'");
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return error("expected ',' or '}'");
    }
    skipSpace();
    if (pos != text.size())
      return error("trailing characters after the header dict");
    if (!sawDescr || !sawOrder || !sawShape)
      return error("header lacks 'descr', 'fortran_order' or 'shape'");
    return TSR_OK;
  }

private:
  tsr_status_t error(const std::string &message) {
    return fail(TSR_ERROR_PARSE, "malformed .npy header: " + message);
  }

  void skipSpace() {
    while (pos < text.size() &&
           std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }

  bool consume(char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }

  bool consumeWord(const char *word) {
    size_t n = std::strlen(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }

  tsr_status_t parseString(std::string &out) {
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
      return error("expected a quoted string");
    char quote = text[pos++];
    size_t end = text.find(quote, pos);
    if (end == std::string::npos)
      return error("unterminated string");
    out = text.substr(pos, end - pos);
    pos = end + 1;
    return TSR_OK;
  }

  tsr_status_t parseBool(bool &out) {
    if (consumeWord("True"))
      out = true;
    else if (consumeWord("False"))
      out = false;
    else
      return error("expected True or False");
    return TSR_OK;
  }

  tsr_status_t parseShape(std::vector<int64_t> &out) {
    if (!consume('('))
      return error("expected '(' to start the shape");
    while (true) {
      skipSpace();
      if (consume(')'))
        return TSR_OK;
      if (pos >= text.size() ||
          !std::isdigit(static_cast<unsigned char>(text[pos])))
        return error("expected a non-negative integer in the shape");
      int64_t value = 0;
      while (pos < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[pos]))) {
        if (__builtin_mul_overflow(value, 10, &value) ||
            __builtin_add_overflow(value, text[pos] - '0', &value))
          return error("dimension too large");
        ++pos;
      }
      consume('L'); // Python 2 long suffix.
      out.push_back(value);
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume(')'))
        return TSR_OK;
      return error("expected ',' or ')' in the shape");
    }
  }

  tsr_status_t parseDescr(const std::string &descr, NpyHeader &header) {
    if (descr.size() >= 3) {
      char order = descr[0];
      std::string code = descr.substr(1);
      struct Code {
        const char *code;
        tsr_dtype_t dtype;
      };
      static const Code kCodes[] = {
          {"b1", TSR_DTYPE_BOOL},    {"i1", TSR_DTYPE_INT8},
          {"i2", TSR_DTYPE_INT16},   {"i4", TSR_DTYPE_INT32},
          {"i8", TSR_DTYPE_INT64},   {"u1", TSR_DTYPE_UINT8},
          {"u2", TSR_DTYPE_UINT16},  {"u4", TSR_DTYPE_UINT32},
          {"u8", TSR_DTYPE_UINT64},  {"f2", TSR_DTYPE_FLOAT16},
          {"f4", TSR_DTYPE_FLOAT32}, {"f8", TSR_DTYPE_FLOAT64},
      };
      if (order == '<' || order == '>' || order == '|' || order == '=') {
        for (const Code &c : kCodes) {
          if (code == c.code) {
            header.dtype = c.dtype;
            header.bigEndian = order == '>';
            return TSR_OK;
          }
        }
      }
    }
    return fail(TSR_ERROR_UNSUPPORTED,
                "unsupported .npy dtype descr '" + descr + "'");
  }

  const std::string &text;
  size_t pos = 0;
};

const char *descrFor(tsr_dtype_t dtype) {
  switch (dtype) {
  case TSR_DTYPE_BOOL:
    return "|b1";
  case TSR_DTYPE_INT8:
    return "|i1";
  case TSR_DTYPE_INT16:
    return "<i2";
  case TSR_DTYPE_INT32:
    return "<i4";
  case TSR_DTYPE_INT64:
    return "<i8";
  case TSR_DTYPE_UINT8:
    return "|u1";
  case TSR_DTYPE_UINT16:
    return "<u2";
  case TSR_DTYPE_UINT32:
    return "<u4";
  case TSR_DTYPE_UINT64:
    return "<u8";
  case TSR_DTYPE_FLOAT16:
    return "<f2";
  case TSR_DTYPE_FLOAT32:
    return "<f4";
  case TSR_DTYPE_FLOAT64:
    return "<f8";
  default:
    return nullptr;
  }
}

/// Copies `count` elements of `size` bytes, reversing each element's bytes.
void copySwapped(char *dst, const char *src, int64_t count, size_t size) {
  for (int64_t i = 0; i < count; ++i)
    for (size_t b = 0; b < size; ++b)
      dst[i * size + b] = src[i * size + (size - 1 - b)];
}

/// Rearranges column-major `src` into row-major `dst`.
void copyFromFortranOrder(char *dst, const char *src,
                          const std::vector<int64_t> &shape, int64_t count,
                          size_t size) {
  size_t rank = shape.size();
  std::vector<int64_t> strides(rank), index(rank, 0);
  int64_t stride = 1;
  for (size_t d = 0; d < rank; ++d) {
    strides[d] = stride;
    stride *= shape[d];
  }
  int64_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(dst + i * size, src + offset * size, size);
    for (size_t d = rank; d-- > 0;) {
      ++index[d];
      offset += strides[d];
      if (index[d] < shape[d])
        break;
      offset -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

} // namespace

tsr_status_t tsr::parseNpy(const char *data, size_t size,
                           tsr_tensor_t **outTensor) {
  if (size < kMagicSize + 4 || std::memcmp(data, kMagic, kMagicSize) != 0)
    return fail(TSR_ERROR_PARSE, "not a .npy file (bad magic)");
  auto byteAt = [&](size_t i) { return static_cast<uint8_t>(data[i]); };
  int major = byteAt(6);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = byteAt(8) | (size_t(byteAt(9)) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12)
      return fail(TSR_ERROR_PARSE, "truncated .npy header");
    headerLength = byteAt(8) | (size_t(byteAt(9)) << 8) |
                   (size_t(byteAt(10)) << 16) | (size_t(byteAt(11)) << 24);
    headerStart = 12;
  } else {
    return fail(TSR_ERROR_UNSUPPORTED,
                "unsupported .npy format version " + std::to_string(major));
  }
  if (headerLength > size - headerStart)
    return fail(TSR_ERROR_PARSE, "truncated .npy header");
  std::string text(data + headerStart, headerLength);
  NpyHeader header;
  if (tsr_status_t s = HeaderParser(text).parse(header))
    return s;

  int64_t count = 0;
  size_t dataSize = 0;
  if (tsr_status_t s = computeSizes(header.dtype, header.shape.data(),
                                    header.shape.size(), count, dataSize))
    return s;
  size_t available = size - headerStart - headerLength;
  if (available != dataSize)
    return fail(TSR_ERROR_PARSE,
                "data holds " + std::to_string(available) +
                    " bytes, expected " + std::to_string(dataSize) + " for " +
                    tsr_dtype_name(header.dtype) + formatShape(header.shape) +
                    (available < dataSize ? " (truncated file)" : ""));

  tsr_tensor_t *raw = nullptr;
  if (tsr_status_t s = createTensor(header.dtype, header.shape, &raw))
    return s;
  std::unique_ptr<tsr_tensor_t> tensor(raw);
  const char *src = data + headerStart + headerLength;
  size_t elementSize = tsr_dtype_size(header.dtype);
  std::string swapped;
  if (header.bigEndian && elementSize > 1) {
    swapped.resize(dataSize);
    copySwapped(&swapped[0], src, count, elementSize);
    src = swapped.data();
  }
  auto *dst = static_cast<char *>(tensor->data);
  if (header.fortranOrder && header.shape.size() > 1)
    copyFromFortranOrder(dst, src, header.shape, count, elementSize);
  else
    std::memcpy(dst, src, dataSize);
  if (header.dtype == TSR_DTYPE_BOOL)
    for (int64_t i = 0; i < count; ++i)
      dst[i] = dst[i] != 0;
  *outTensor = tensor.release();
  return TSR_OK;
}

namespace {

tsr_status_t readNpy(const std::string &path, tsr_tensor_t **outTensor) {
  std::string bytes;
  if (tsr_status_t s = readFile(path, bytes))
    return s;
  return parseNpy(bytes.data(), bytes.size(), outTensor);
}

tsr_status_t writeNpy(const tsr_tensor_t &tensor, const std::string &path) {
  const char *descr = descrFor(tensor.dtype);
  if (!descr)
    return fail(TSR_ERROR_UNSUPPORTED, std::string("dtype ") +
                                           tsr_dtype_name(tensor.dtype) +
                                           " has no .npy representation");
  std::string dict = std::string("{'descr': '") + descr +
                     "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.shape.size(); ++i)
    dict +=
        std::to_string(tensor.shape[i]) + (tensor.shape.size() == 1      ? ","
                                           : i + 1 < tensor.shape.size() ? ", "
                                                                         : "");
  dict += "), }";
  // Pad with spaces so that the data starts at a multiple of 64 bytes.
  size_t prefix = dict.size() + 1 + 10 > 65535 ? 12 : 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string bytes(kMagic, kMagicSize);
  size_t length = dict.size();
  if (prefix == 10) {
    bytes += '\x01';
    bytes += '\x00';
    bytes += static_cast<char>(length & 0xff);
    bytes += static_cast<char>((length >> 8) & 0xff);
  } else {
    bytes += '\x02';
    bytes += '\x00';
    for (int shift = 0; shift < 32; shift += 8)
      bytes += static_cast<char>((length >> shift) & 0xff);
  }
  bytes += dict;
  bytes.append(static_cast<const char *>(tensor.data), tensor.byteSize);
  return writeFile(path, bytes);
}

} // namespace

tsr_status_t tsr_tensor_read_npy(const char *path, tsr_tensor_t **out_tensor) {
  return guard([&] {
    if (!path || !out_tensor)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    tsr_status_t s = readNpy(path, out_tensor);
    // readFile already names the path.
    if (s != TSR_OK && s != TSR_ERROR_IO)
      return withContext(s, path);
    return s;
  });
}

tsr_status_t tsr_tensor_write_npy(const tsr_tensor_t *tensor,
                                  const char *path) {
  return guard([&] {
    if (!tensor || !path)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    if (tsr_status_t s = requireHostReadable(*tensor, path))
      return s;
    tsr_status_t s = writeNpy(*tensor, path);
    if (s != TSR_OK && s != TSR_ERROR_IO)
      return withContext(s, path);
    return s;
  });
}
