//===- Npz.cpp - NumPy .npz archives (a ZIP reader) -----------------------===//
//
// An `.npz` file is a ZIP archive with one `NAME.npy` member per array,
// stored (numpy.savez) or deflated (numpy.savez_compressed). The reader
// trusts only the central directory: it locates the end of central directory
// record, walks the central directory, and uses a local header only for the
// length of its name and extra field. (numpy always writes ZIP64 extra
// fields into local headers, so their sizes are not read.) Every member's
// CRC-32 is checked.
//
// Format: PKWARE's APPNOTE.TXT, sections 4.3.7 (local file header), 4.3.12
// (central directory header) and 4.3.16 (end of central directory record).
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <zlib.h>

#include <algorithm>
#include <memory>

using namespace tsr;

struct tsr_npz {
  std::vector<std::unique_ptr<tsr_tensor>> arrays;
};

namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kEndSize = 22;
// Deflate cannot expand data by more than about 1032:1.
constexpr uint64_t kMaxDeflateRatio = 1032;

uint16_t le16(const std::string &bytes, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(bytes[at]) |
                               static_cast<uint8_t>(bytes[at + 1]) << 8);
}

uint32_t le32(const std::string &bytes, size_t at) {
  return le16(bytes, at) | static_cast<uint32_t>(le16(bytes, at + 2)) << 16;
}

tsr_status_t zip64Unsupported() {
  return fail(TSR_ERROR_UNSUPPORTED,
              "ZIP64 archives are not supported (the archive or a member is "
              "4 GiB or larger)");
}

/// Finds the end of central directory record, which ends the file after a
/// comment of at most 65535 bytes.
tsr_status_t findEnd(const std::string &bytes, size_t &outAt) {
  if (bytes.size() >= kEndSize) {
    size_t lowest = bytes.size() - kEndSize -
                    std::min<size_t>(bytes.size() - kEndSize, 0xFFFF);
    for (size_t at = bytes.size() - kEndSize + 1; at-- > lowest;) {
      if (le32(bytes, at) == kEndOfCentralDirectory &&
          at + kEndSize + le16(bytes, at + 20) == bytes.size()) {
        outAt = at;
        return TSR_OK;
      }
    }
  }
  if (bytes.compare(0, 4, "PK\x03\x04") == 0)
    return fail(TSR_ERROR_PARSE, "truncated ZIP archive (no end of central "
                                 "directory record)");
  return fail(TSR_ERROR_PARSE,
              "not an .npz file (no ZIP end of central directory record)");
}

tsr_status_t inflateMember(const char *data, uint32_t compressedSize,
                           std::string &out) {
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK)
    return fail(TSR_ERROR_OUT_OF_MEMORY, "cannot initialize zlib");
  char empty;
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data));
  stream.avail_in = compressedSize;
  stream.next_out = reinterpret_cast<Bytef *>(out.empty() ? &empty : &out[0]);
  stream.avail_out = static_cast<uInt>(out.size());
  int result = inflate(&stream, Z_FINISH);
  bool complete = result == Z_STREAM_END && stream.total_out == out.size();
  std::string reason = result == Z_STREAM_END ? "wrong uncompressed size"
                       : stream.msg ? std::string("zlib: ") + stream.msg
                                    : "the stream does not end within the "
                                      "stated sizes";
  inflateEnd(&stream);
  if (!complete)
    return fail(TSR_ERROR_PARSE, "corrupt deflate data (" + reason + ")");
  return TSR_OK;
}

/// Extracts the member whose central directory header starts at `at`, and
/// advances `at` past that header.
tsr_status_t readMember(const std::string &bytes, size_t &at,
                        size_t directoryEnd, size_t directoryStart,
                        std::string &outName, std::string &outData) {
  if (directoryEnd - at < kCentralHeaderSize ||
      le32(bytes, at) != kCentralHeader)
    return fail(TSR_ERROR_PARSE, "corrupt ZIP central directory");
  uint16_t flags = le16(bytes, at + 8);
  uint16_t method = le16(bytes, at + 10);
  uint32_t crc = le32(bytes, at + 16);
  uint32_t compressedSize = le32(bytes, at + 20);
  uint32_t size = le32(bytes, at + 24);
  size_t nameLength = le16(bytes, at + 28);
  size_t extraLength = le16(bytes, at + 30);
  size_t commentLength = le16(bytes, at + 32);
  uint32_t localAt = le32(bytes, at + 42);
  size_t headerEnd =
      at + kCentralHeaderSize + nameLength + extraLength + commentLength;
  if (headerEnd > directoryEnd)
    return fail(TSR_ERROR_PARSE, "corrupt ZIP central directory");
  outName = bytes.substr(at + kCentralHeaderSize, nameLength);
  at = headerEnd;
  if (compressedSize == 0xFFFFFFFF || size == 0xFFFFFFFF ||
      localAt == 0xFFFFFFFF)
    return withContext(zip64Unsupported(), "member '" + outName + "'");
  std::string member = "member '" + outName + "': ";
  if (flags & 1)
    return fail(TSR_ERROR_UNSUPPORTED, member + "encrypted members are not "
                                                "supported");
  if (method != 0 && method != 8)
    return fail(TSR_ERROR_UNSUPPORTED,
                member + "compression method " + std::to_string(method) +
                    " is not supported (only stored and deflate)");
  if (localAt > directoryStart || directoryStart - localAt < kLocalHeaderSize ||
      le32(bytes, localAt) != kLocalHeader)
    return fail(TSR_ERROR_PARSE, member + "corrupt local header");
  size_t dataAt = localAt + kLocalHeaderSize + le16(bytes, localAt + 26) +
                  le16(bytes, localAt + 28);
  if (dataAt > directoryStart || directoryStart - dataAt < compressedSize)
    return fail(TSR_ERROR_PARSE,
                member + "data runs past the central directory");
  if (method == 0 ? compressedSize != size
                  : size > compressedSize * kMaxDeflateRatio + 1024)
    return fail(TSR_ERROR_PARSE, member + "impossible sizes (" +
                                     std::to_string(compressedSize) +
                                     " bytes compressed, " +
                                     std::to_string(size) + " uncompressed)");
  if (method == 0) {
    outData = bytes.substr(dataAt, size);
  } else {
    outData.assign(size, '\0');
    if (tsr_status_t s =
            inflateMember(bytes.data() + dataAt, compressedSize, outData))
      return withContext(s, "member '" + outName + "'");
  }
  uLong actual =
      crc32(0, reinterpret_cast<const Bytef *>(outData.data()), size);
  if (actual != crc)
    return fail(TSR_ERROR_PARSE, member + "CRC-32 mismatch (corrupt data)");
  return TSR_OK;
}

tsr_status_t parseNpz(const std::string &bytes, tsr_npz &out) {
  size_t end = 0;
  if (tsr_status_t s = findEnd(bytes, end))
    return s;
  uint16_t disk = le16(bytes, end + 4);
  uint16_t directoryDisk = le16(bytes, end + 6);
  uint16_t entriesOnDisk = le16(bytes, end + 8);
  uint16_t entries = le16(bytes, end + 10);
  uint32_t directorySize = le32(bytes, end + 12);
  uint32_t directoryStart = le32(bytes, end + 16);
  if (entries == 0xFFFF || directorySize == 0xFFFFFFFF ||
      directoryStart == 0xFFFFFFFF ||
      (end >= 20 && le32(bytes, end - 20) == kZip64Locator))
    return zip64Unsupported();
  if (disk != 0 || directoryDisk != 0 || entriesOnDisk != entries)
    return fail(TSR_ERROR_UNSUPPORTED,
                "multi-disk ZIP archives are not supported");
  if (directoryStart > end || end - directoryStart < directorySize)
    return fail(TSR_ERROR_PARSE, "corrupt ZIP archive (the central directory "
                                 "lies outside the file)");
  size_t at = directoryStart;
  size_t directoryEnd = directoryStart + directorySize;
  for (uint16_t i = 0; i < entries; ++i) {
    std::string name, data;
    if (tsr_status_t s =
            readMember(bytes, at, directoryEnd, directoryStart, name, data))
      return s;
    const std::string suffix = ".npy";
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      return fail(TSR_ERROR_PARSE,
                  "member '" + name + "' is not a NAME.npy array");
    name.resize(name.size() - suffix.size());
    for (const auto &array : out.arrays)
      if (array->name == name)
        return fail(TSR_ERROR_PARSE,
                    "two members are named '" + name + ".npy'");
    tsr_tensor_t *raw = nullptr;
    if (tsr_status_t s = parseNpy(data.data(), data.size(), &raw))
      return withContext(s, "member '" + name + ".npy'");
    raw->name = name;
    out.arrays.emplace_back(raw);
  }
  return TSR_OK;
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

tsr_status_t tsr_npz_read(const char *path, tsr_npz_t **out_npz) {
  return guard([&] {
    if (!path || !out_npz)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    std::string bytes;
    if (tsr_status_t s = readFile(path, bytes))
      return s;
    auto npz = std::make_unique<tsr_npz>();
    if (tsr_status_t s = parseNpz(bytes, *npz))
      return withContext(s, path);
    *out_npz = npz.release();
    return TSR_OK;
  });
}

void tsr_npz_destroy(tsr_npz_t *npz) { delete npz; }

size_t tsr_npz_num_arrays(const tsr_npz_t *npz) { return npz->arrays.size(); }

tsr_tensor_t *tsr_npz_array(tsr_npz_t *npz, size_t index) {
  return index < npz->arrays.size() ? npz->arrays[index].get() : nullptr;
}
