//===- Checkpoint.cpp - Sharded, checksummed training checkpoints ---------===//
//
// A checkpoint is a directory holding one binary shard file per rank of the
// run that wrote it and a manifest.json describing the global layout. The
// format is specified in docs/checkpoints.md; the constants and layouts
// below must stay in step with it.
//
//===----------------------------------------------------------------------===//

#include "tessera-runtime/Checkpoint.h"

#include "DurableFile.h"
#include "Json.h"
#include "RuntimeInternal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>

using namespace tsr;
namespace fs = std::filesystem;

namespace {

//===----------------------------------------------------------------------===//
// Format constants
//===----------------------------------------------------------------------===//

constexpr char kMagic[8] = {'T', 'S', 'R', 'C', 'K', 'P', 'T', '\0'};
constexpr char kTrailerMagic[4] = {'T', 'E', 'N', 'D'};
constexpr uint32_t kVersion = 1;
/// Written in host byte order; read back as 0x04030201 on a host of the
/// other byte order.
constexpr uint32_t kByteOrderMark = 0x01020304u;
/// The fields of a shard file's header before the fingerprint.
constexpr size_t kFixedHeaderSize = 64;
constexpr size_t kTrailerSize = 8;
constexpr uint64_t kAlignment = 64;
constexpr size_t kChunkSize = size_t(4) << 20;
constexpr const char *kManifestName = "manifest.json";
constexpr const char *kFormatName = "tessera-checkpoint";

bool hostIsLittleEndian() {
  uint32_t probe = 1;
  unsigned char first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

const char *hostByteOrder() { return hostIsLittleEndian() ? "little" : "big"; }

uint64_t alignUp(uint64_t value) {
  return (value + kAlignment - 1) / kAlignment * kAlignment;
}

/// Zeros for alignment and for the padding of flat shards.
constexpr char kZeros[1 << 16] = {};

uint32_t crcOf(uint32_t crc, const void *data, uint64_t size) {
  return size ? crc32_z(crc, static_cast<const Bytef *>(data), size) : crc;
}

uint32_t crcZeros(uint32_t crc, uint64_t size) {
  while (size) {
    uint64_t n = std::min<uint64_t>(size, sizeof(kZeros));
    crc = crcOf(crc, kZeros, n);
    size -= n;
  }
  return crc;
}

std::string shardFileName(int64_t rank, int64_t worldSize) {
  char name[64];
  std::snprintf(name, sizeof(name), "shard-%05lld-of-%05lld.bin",
                static_cast<long long>(rank),
                static_cast<long long>(worldSize));
  return name;
}

std::string singleQuoted(const std::string &name) { return "'" + name + "'"; }

std::string hex32(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

/// Closes its descriptor on destruction.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int fd) : fd(fd) {}
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

tsr_status_t ioError(const std::string &path, const char *what) {
  return fail(TSR_ERROR_IO, path + ": " + what + ": " + std::strerror(errno));
}

/// Reads exactly `size` bytes at `offset`; a short read is a truncated file.
tsr_status_t readAt(int fd, void *data, size_t size, uint64_t offset,
                    const std::string &path) {
  char *bytes = static_cast<char *>(data);
  while (size) {
    ssize_t n = ::pread(fd, bytes, std::min(size, kChunkSize),
                        static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return ioError(path, "read error");
    }
    if (n == 0)
      return fail(TSR_ERROR_PARSE, path + ": truncated: ends before byte " +
                                       std::to_string(offset + size));
    bytes += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return TSR_OK;
}

/// syncDirectory with the message recorded as the last error.
tsr_status_t syncDirectoryOrFail(const std::string &path) {
  std::string error;
  return syncDirectory(path, error) ? TSR_OK : fail(TSR_ERROR_IO, error);
}

//===----------------------------------------------------------------------===//
// Shard files
//===----------------------------------------------------------------------===//

/// One tensor's entry in a shard file's header.
struct Record {
  std::string name;
  tsr_dtype_t dtype = TSR_DTYPE_INVALID;
  std::vector<int64_t> shape;
  int64_t shards = 1;
  int64_t localElements = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint32_t crc = 0;
};

/// The header of a shard file, and the CRC-32 of the whole file.
struct ShardHeader {
  int64_t rank = 0;
  int64_t worldSize = 0;
  int64_t step = 0;
  std::string fingerprint;
  uint64_t dataOffset = 0;
  uint64_t fileSize = 0;
  uint32_t fileCrc = 0;
  std::vector<Record> records;
};

template <typename T> void appendRaw(std::string &out, T value) {
  out.append(reinterpret_cast<const char *>(&value), sizeof(T));
}

void appendString(std::string &out, const std::string &text) {
  appendRaw<uint32_t>(out, static_cast<uint32_t>(text.size()));
  out += text;
}

/// Serializes a header; its size does not depend on the offsets and CRCs.
std::string encodeHeader(const ShardHeader &header) {
  std::string out(kMagic, sizeof(kMagic));
  appendRaw<uint32_t>(out, kVersion);
  appendRaw<uint32_t>(out, kByteOrderMark);
  appendRaw<int64_t>(out, header.rank);
  appendRaw<int64_t>(out, header.worldSize);
  appendRaw<int64_t>(out, header.step);
  appendRaw<uint64_t>(out, header.records.size());
  appendRaw<uint64_t>(out, header.dataOffset);
  appendRaw<uint64_t>(out, header.fileSize);
  appendString(out, header.fingerprint);
  for (const Record &record : header.records) {
    appendString(out, record.name);
    appendRaw<uint32_t>(out, static_cast<uint32_t>(record.dtype));
    appendRaw<uint32_t>(out, static_cast<uint32_t>(record.shape.size()));
    for (int64_t dim : record.shape)
      appendRaw<int64_t>(out, dim);
    appendRaw<int64_t>(out, record.shards);
    appendRaw<int64_t>(out, record.localElements);
    appendRaw<uint64_t>(out, record.offset);
    appendRaw<uint64_t>(out, record.bytes);
    appendRaw<uint32_t>(out, record.crc);
  }
  return out;
}

/// A bounds-checked reader of header bytes.
class Cursor {
public:
  Cursor(const std::string &bytes, size_t pos) : bytes(bytes), pos(pos) {}

  template <typename T> bool read(T &out) {
    if (bytes.size() - pos < sizeof(T))
      return false;
    std::memcpy(&out, bytes.data() + pos, sizeof(T));
    pos += sizeof(T);
    return true;
  }

  bool readString(std::string &out) {
    uint32_t size;
    if (!read(size) || bytes.size() - pos < size)
      return false;
    out.assign(bytes, pos, size);
    pos += size;
    return true;
  }

private:
  const std::string &bytes;
  size_t pos;
};

int64_t localElementsOf(int64_t numElements, int64_t shards) {
  if (shards == 1)
    return numElements;
  return numElements / shards + (numElements % shards != 0);
}

/// Checks a record's dtype, shape and sizes; returns the element count.
tsr_status_t checkRecord(const Record &record, const std::string &path,
                         const ShardHeader &header, int64_t &outNumElements) {
  std::string tensor = path + ": tensor " + singleQuoted(record.name);
  std::string at = tensor + ": ";
  int64_t count = 0;
  size_t bytes = 0;
  if (computeSizes(record.dtype, record.shape.data(), record.shape.size(),
                   count, bytes))
    return withContext(TSR_ERROR_PARSE, tensor);
  if (record.shards < 1)
    return fail(TSR_ERROR_PARSE,
                at + "bad shard count " + std::to_string(record.shards));
  if (record.localElements != localElementsOf(count, record.shards) ||
      record.bytes != static_cast<uint64_t>(record.localElements) *
                          tsr_dtype_size(record.dtype))
    return fail(TSR_ERROR_PARSE, at + "inconsistent element or byte count");
  uint64_t dataEnd = header.fileSize - kTrailerSize;
  if (record.offset < header.dataOffset || record.offset > dataEnd ||
      record.bytes > dataEnd - record.offset)
    return fail(TSR_ERROR_PARSE, at + "data lies outside the file");
  outNumElements = count;
  return TSR_OK;
}

/// Parses the fingerprint and tensor records of a header.
tsr_status_t parseRecords(const std::string &headerBytes, uint64_t numRecords,
                          const std::string &path, ShardHeader &header) {
  Cursor cursor(headerBytes, kFixedHeaderSize);
  if (!cursor.readString(header.fingerprint))
    return fail(TSR_ERROR_PARSE, path + ": truncated header");
  for (uint64_t i = 0; i < numRecords; ++i) {
    Record record;
    uint32_t dtype = 0, rank = 0;
    bool ok = cursor.readString(record.name) && cursor.read(dtype) &&
              cursor.read(rank) && rank <= headerBytes.size() / 8;
    if (ok) {
      record.dtype = static_cast<tsr_dtype_t>(dtype);
      record.shape.resize(rank);
      for (int64_t &dim : record.shape)
        ok = ok && cursor.read(dim);
      ok = ok && cursor.read(record.shards) &&
           cursor.read(record.localElements) && cursor.read(record.offset) &&
           cursor.read(record.bytes) && cursor.read(record.crc);
    }
    if (!ok)
      return fail(TSR_ERROR_PARSE, path + ": truncated header");
    int64_t count;
    if (tsr_status_t s = checkRecord(record, path, header, count))
      return s;
    header.records.push_back(std::move(record));
  }
  return TSR_OK;
}

/// Reads and checks a whole shard file: its header, its size, the CRC-32 of
/// the file and of every tensor's data.
tsr_status_t readShard(const std::string &path, ShardHeader &out) {
  Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.fd < 0)
    return ioError(path, "cannot open");
  struct stat info;
  if (::fstat(file.fd, &info) != 0)
    return ioError(path, "cannot stat");
  uint64_t size = static_cast<uint64_t>(info.st_size);
  if (size < kFixedHeaderSize + kTrailerSize)
    return fail(TSR_ERROR_PARSE, path + ": truncated: " + std::to_string(size) +
                                     " bytes, shorter than a header");
  std::string fixed(kFixedHeaderSize, '\0');
  if (tsr_status_t s = readAt(file.fd, fixed.data(), fixed.size(), 0, path))
    return s;
  if (std::memcmp(fixed.data(), kMagic, sizeof(kMagic)) != 0)
    return fail(TSR_ERROR_PARSE, path + ": not a Tessera checkpoint shard");
  Cursor fields(fixed, sizeof(kMagic));
  uint32_t version = 0, mark = 0;
  uint64_t numRecords = 0;
  ShardHeader header;
  fields.read(version);
  fields.read(mark);
  fields.read(header.rank);
  fields.read(header.worldSize);
  fields.read(header.step);
  fields.read(numRecords);
  fields.read(header.dataOffset);
  fields.read(header.fileSize);
  if (version != kVersion)
    return fail(TSR_ERROR_PARSE,
                path + ": unsupported version " + std::to_string(version));
  if (mark == __builtin_bswap32(kByteOrderMark))
    return fail(TSR_ERROR_PARSE, path +
                                     ": written on a host of the other "
                                     "byte order (this one is " +
                                     hostByteOrder() + "-endian)");
  if (mark != kByteOrderMark)
    return fail(TSR_ERROR_PARSE, path + ": bad byte-order mark");
  if (size < header.fileSize)
    return fail(TSR_ERROR_PARSE, path + ": truncated: " + std::to_string(size) +
                                     " bytes, the header records " +
                                     std::to_string(header.fileSize));
  if (size > header.fileSize)
    return fail(TSR_ERROR_PARSE, path + ": " + std::to_string(size) +
                                     " bytes, the header records " +
                                     std::to_string(header.fileSize));
  if (header.dataOffset < kFixedHeaderSize ||
      header.dataOffset > size - kTrailerSize ||
      header.dataOffset % kAlignment != 0)
    return fail(TSR_ERROR_PARSE, path + ": bad data offset " +
                                     std::to_string(header.dataOffset));

  // One pass over the file computes its checksum and every tensor's. A
  // corrupt file is reported as such even when the corruption also makes
  // its header unreadable.
  std::string headerBytes(header.dataOffset, '\0');
  if (tsr_status_t s =
          readAt(file.fd, headerBytes.data(), headerBytes.size(), 0, path))
    return s;
  tsr_status_t parsed = parseRecords(headerBytes, numRecords, path, header);
  std::string parseError = parsed ? tsr_last_error() : "";
  uint32_t crc =
      crcOf(crc32_z(0, Z_NULL, 0), headerBytes.data(), headerBytes.size());
  std::vector<uint32_t> tensorCrcs(header.records.size(),
                                   crc32_z(0, Z_NULL, 0));
  std::vector<char> chunk(std::min<uint64_t>(kChunkSize, size));
  uint64_t dataEnd = size - kTrailerSize;
  for (uint64_t pos = header.dataOffset; pos < dataEnd;) {
    uint64_t n = std::min<uint64_t>(chunk.size(), dataEnd - pos);
    if (tsr_status_t s = readAt(file.fd, chunk.data(), n, pos, path))
      return s;
    crc = crcOf(crc, chunk.data(), n);
    for (size_t i = 0; i < header.records.size(); ++i) {
      const Record &record = header.records[i];
      uint64_t begin = std::max(pos, record.offset);
      uint64_t end = std::min(pos + n, record.offset + record.bytes);
      if (begin < end)
        tensorCrcs[i] =
            crcOf(tensorCrcs[i], chunk.data() + (begin - pos), end - begin);
    }
    pos += n;
  }
  char trailer[kTrailerSize];
  if (tsr_status_t s = readAt(file.fd, trailer, kTrailerSize, dataEnd, path))
    return s;
  uint32_t recorded;
  std::memcpy(&recorded, trailer, sizeof(recorded));
  if (std::memcmp(trailer + 4, kTrailerMagic, sizeof(kTrailerMagic)) != 0)
    return fail(TSR_ERROR_PARSE, path + ": bad trailer");
  if (crc != recorded)
    return fail(TSR_ERROR_PARSE, path +
                                     ": CRC-32 mismatch: the file hashes "
                                     "to " +
                                     hex32(crc) + ", its trailer records " +
                                     hex32(recorded));
  if (parsed)
    return fail(parsed, parseError);
  header.fileCrc = crc;
  for (size_t i = 0; i < header.records.size(); ++i) {
    const Record &record = header.records[i];
    if (tensorCrcs[i] != record.crc)
      return fail(TSR_ERROR_PARSE,
                  path + ": tensor " + singleQuoted(record.name) +
                      ": CRC-32 mismatch: the data hashes to " +
                      hex32(tensorCrcs[i]) + ", the header records " +
                      hex32(record.crc));
  }
  out = std::move(header);
  return TSR_OK;
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

/// What a member of kind `kind` (an object, array or string) is called in
/// errors.
const char *kindName(Json::value_t kind) {
  if (kind == Json::value_t::object)
    return "an object";
  return kind == Json::value_t::array ? "an array" : "a string";
}

/// Typed access to manifest members; errors name the member's path.
class ManifestReader {
public:
  explicit ManifestReader(std::string path) : path(std::move(path)) {}

  tsr_status_t error(const std::string &at, const std::string &message) const {
    return fail(TSR_ERROR_PARSE, path + ": " + at + ": " + message);
  }

  tsr_status_t member(const Json &object, const std::string &at,
                      const char *key, const Json *&out) const {
    if (!object.is_object())
      return error(at, "expected an object");
    out = findMember(object, key);
    if (!out)
      return error(at, std::string("missing \"") + key + "\"");
    return TSR_OK;
  }

  tsr_status_t member(const Json &object, const std::string &at,
                      const char *key, Json::value_t kind,
                      const Json *&out) const {
    if (tsr_status_t s = member(object, at, key, out))
      return s;
    if (out->type() != kind)
      return error(at + "." + key, std::string("expected ") + kindName(kind));
    return TSR_OK;
  }

  tsr_status_t integer(const Json &object, const std::string &at,
                       const char *key, int64_t &out) const {
    const Json *value;
    if (tsr_status_t s = member(object, at, key, value))
      return s;
    if (!getInteger(*value, out))
      return error(at + "." + key, "expected an integer");
    return TSR_OK;
  }

  tsr_status_t unsignedInteger(const Json &object, const std::string &at,
                               const char *key, uint64_t &out) const {
    int64_t value;
    if (tsr_status_t s = integer(object, at, key, value))
      return s;
    if (value < 0)
      return error(at + "." + key, "negative");
    out = static_cast<uint64_t>(value);
    return TSR_OK;
  }

  tsr_status_t string(const Json &object, const std::string &at,
                      const char *key, std::string &out) const {
    const Json *value;
    if (tsr_status_t s = member(object, at, key, Json::value_t::string, value))
      return s;
    out = value->get<std::string>();
    return TSR_OK;
  }

  const std::string path;
};

} // namespace

//===----------------------------------------------------------------------===//
// The opened checkpoint
//===----------------------------------------------------------------------===//

namespace {

/// Where one shard of a tensor lies.
struct Piece {
  std::string path;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct SavedTensor {
  std::string name;
  tsr_dtype_t dtype = TSR_DTYPE_INVALID;
  std::vector<int64_t> shape;
  int64_t shards = 1;
  int64_t numElements = 0;
  int64_t localElements = 0;
  std::vector<Piece> pieces;
};

} // namespace

struct tsr_checkpoint {
  std::string dir;
  tsr_checkpoint_meta_t meta{};
  std::string fingerprint, mesh;
  std::vector<SavedTensor> tensors;

  tsr_checkpoint() = default;
  tsr_checkpoint(const tsr_checkpoint &) = delete;
  tsr_checkpoint &operator=(const tsr_checkpoint &) = delete;
};

namespace {

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

struct MetaStrings {
  std::string fingerprint, mesh;
};

tsr_status_t checkMeta(const tsr_checkpoint_meta_t *meta, int64_t worldSize,
                       MetaStrings &out) {
  if (!meta)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null checkpoint meta");
  if (worldSize < 1)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "world size " + std::to_string(worldSize) + " is not positive");
  if (meta->world_size != worldSize)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "meta.world_size " + std::to_string(meta->world_size) +
                    " differs from the world size " +
                    std::to_string(worldSize));
  out.fingerprint = meta->fingerprint ? meta->fingerprint : "";
  out.mesh = meta->mesh ? meta->mesh : "";
  if (!isValidUtf8(out.fingerprint) || !isValidUtf8(out.mesh))
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "meta.fingerprint or meta.mesh is not valid UTF-8 (the "
                "checkpoint manifest is JSON)");
  return TSR_OK;
}

tsr_status_t writeShard(const std::string &dir, int64_t rank, int64_t worldSize,
                        const tsr_checkpoint_meta_t *meta, size_t numTensors,
                        const tsr_checkpoint_tensor_t *tensors,
                        const void *const *data) {
  MetaStrings strings;
  if (tsr_status_t s = checkMeta(meta, worldSize, strings))
    return s;
  if (rank < 0 || rank >= worldSize)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "rank " + std::to_string(rank) + " is outside [0, " +
                    std::to_string(worldSize) + ")");
  if (numTensors && (!tensors || !data))
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null tensors or data");

  ShardHeader header;
  header.rank = rank;
  header.worldSize = worldSize;
  header.step = meta->step;
  header.fingerprint = strings.fingerprint;
  // The data of each record, and how many of its bytes are not padding.
  std::vector<std::pair<const void *, uint64_t>> sources;
  std::set<std::string> names;
  for (size_t i = 0; i < numTensors; ++i) {
    const tsr_checkpoint_tensor_t &tensor = tensors[i];
    if (!tensor.name || !*tensor.name)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "tensor " + std::to_string(i) + " has no name");
    std::string at = "tensor " + singleQuoted(tensor.name);
    if (!names.insert(tensor.name).second)
      return fail(TSR_ERROR_INVALID_ARGUMENT, at + " is given twice");
    if (!isValidUtf8(tensor.name))
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  at + ": the name is not valid UTF-8 (the checkpoint "
                       "manifest is JSON)");
    int64_t count = 0;
    size_t bytes = 0;
    if (computeSizes(tensor.dtype, tensor.shape, tensor.rank, count, bytes))
      return withContext(TSR_ERROR_INVALID_ARGUMENT, at);
    if (tensor.shards != 1 && tensor.shards != worldSize)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  at + ": shard count " + std::to_string(tensor.shards) +
                      " is neither 1 nor the world size " +
                      std::to_string(worldSize));
    if (tensor.shards == 1 && rank != 0)
      continue;
    Record record;
    record.name = tensor.name;
    record.dtype = tensor.dtype;
    record.shape.assign(tensor.shape, tensor.shape + tensor.rank);
    record.shards = tensor.shards;
    record.localElements = localElementsOf(count, tensor.shards);
    record.bytes = static_cast<uint64_t>(record.localElements) *
                   tsr_dtype_size(tensor.dtype);
    if (record.bytes && !data[i])
      return fail(TSR_ERROR_INVALID_ARGUMENT, at + ": null data");
    int64_t valid = count;
    if (tensor.shards > 1)
      valid = std::clamp<int64_t>(count - rank * record.localElements, 0,
                                  record.localElements);
    uint64_t validBytes =
        static_cast<uint64_t>(valid) * tsr_dtype_size(tensor.dtype);
    record.crc = crcZeros(crcOf(crc32_z(0, Z_NULL, 0), data[i], validBytes),
                          record.bytes - validBytes);
    header.records.push_back(std::move(record));
    sources.emplace_back(data[i], validBytes);
  }

  // Lay out the data blocks after the header, each 64-byte aligned.
  header.dataOffset = alignUp(encodeHeader(header).size());
  uint64_t end = header.dataOffset;
  for (Record &record : header.records) {
    record.offset = alignUp(end);
    end = record.offset + record.bytes;
  }
  header.fileSize = end + kTrailerSize;

  std::string tmpDir = dir + ".tmp";
  std::error_code ec;
  fs::create_directories(tmpDir, ec);
  if (ec)
    return fail(TSR_ERROR_IO,
                tmpDir + ": cannot create directory: " + ec.message());
  std::string path = tmpDir + "/" + shardFileName(rank, worldSize);
  DurableFile file(path);
  if (!file.open())
    return fail(TSR_ERROR_IO, file.error());
  uint32_t crc = crc32_z(0, Z_NULL, 0);
  uint64_t written = 0;
  auto emit = [&](const void *bytes, uint64_t size) -> tsr_status_t {
    crc = crcOf(crc, bytes, size);
    written += size;
    return file.write(bytes, size) ? TSR_OK : fail(TSR_ERROR_IO, file.error());
  };
  auto emitZeros = [&](uint64_t size) -> tsr_status_t {
    while (size) {
      uint64_t n = std::min<uint64_t>(size, sizeof(kZeros));
      if (tsr_status_t s = emit(kZeros, n))
        return s;
      size -= n;
    }
    return TSR_OK;
  };
  std::string headerBytes = encodeHeader(header);
  if (tsr_status_t s = emit(headerBytes.data(), headerBytes.size()))
    return s;
  for (size_t i = 0; i < header.records.size(); ++i) {
    const Record &record = header.records[i];
    if (tsr_status_t s = emitZeros(record.offset - written))
      return s;
    if (tsr_status_t s = emit(sources[i].first, sources[i].second))
      return s;
    if (tsr_status_t s = emitZeros(record.bytes - sources[i].second))
      return s;
  }
  char trailer[kTrailerSize];
  std::memcpy(trailer, &crc, sizeof(crc));
  std::memcpy(trailer + 4, kTrailerMagic, sizeof(kTrailerMagic));
  if (!file.write(trailer, kTrailerSize) || !file.commit())
    return fail(TSR_ERROR_IO, file.error());
  return TSR_OK;
}

bool sameTensor(const Record &a, const Record &b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape &&
         a.shards == b.shards;
}

std::string encodeManifest(const tsr_checkpoint_meta_t &meta,
                           const MetaStrings &strings,
                           const std::vector<ShardHeader> &shards) {
  int64_t worldSize = static_cast<int64_t>(shards.size());
  Json files = Json::array();
  for (int64_t r = 0; r < worldSize; ++r)
    files.push_back(Json{{"name", shardFileName(r, worldSize)},
                         {"rank", r},
                         {"size", shards[r].fileSize},
                         {"crc32", shards[r].fileCrc}});
  Json tensors = Json::array();
  // Rank r > 0 lists the sharded tensors of rank 0, in the same order.
  std::vector<size_t> next(shards.size(), 0);
  for (const Record &record : shards[0].records) {
    Json pieces = Json::array();
    for (int64_t r = 0; r < record.shards; ++r) {
      const Record &piece = shards[r].records[next[r]++];
      pieces.push_back(Json{{"file", shardFileName(r, worldSize)},
                            {"offset", piece.offset},
                            {"bytes", piece.bytes},
                            {"crc32", piece.crc}});
    }
    tensors.push_back(Json{{"name", record.name},
                           {"dtype", tsr_dtype_name(record.dtype)},
                           {"shape", record.shape},
                           {"shards", record.shards},
                           {"local_elements", record.localElements},
                           {"pieces", std::move(pieces)}});
  }
  Json manifest = {{"format", kFormatName},
                   {"version", kVersion},
                   {"byte_order", hostByteOrder()},
                   {"meta",
                    {{"step", meta.step},
                     {"rng", meta.rng},
                     {"data_position", meta.data_position},
                     {"fingerprint", strings.fingerprint},
                     {"world_size", worldSize},
                     {"mesh", strings.mesh},
                     {"zero_stage", meta.zero_stage}}},
                   {"files", std::move(files)},
                   {"tensors", std::move(tensors)}};
  return dumpJson(manifest, 2) + "\n";
}

/// Replaces `dir` with `tmpDir` so that a complete checkpoint exists at
/// every instant: an atomic exchange where the filesystem supports it, else
/// a rename aside to `dir`.old.
tsr_status_t publish(const std::string &tmpDir, const std::string &dir) {
  std::string parent = parentDirectory(dir);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) {
    if (std::rename(tmpDir.c_str(), dir.c_str()) != 0)
      return ioError(dir, "cannot rename the temporary directory into place");
    return syncDirectoryOrFail(parent);
  }
#if defined(__linux__) && defined(RENAME_EXCHANGE)
  if (::renameat2(AT_FDCWD, tmpDir.c_str(), AT_FDCWD, dir.c_str(),
                  RENAME_EXCHANGE) == 0) {
    if (tsr_status_t s = syncDirectoryOrFail(parent))
      return s;
    fs::remove_all(tmpDir, ec);
    if (ec)
      return fail(TSR_ERROR_IO, tmpDir +
                                    ": cannot remove the previous "
                                    "checkpoint: " +
                                    ec.message());
    return TSR_OK;
  }
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
    return ioError(dir, "cannot exchange with the temporary directory");
#endif
  std::string old = dir + ".old";
  fs::remove_all(old, ec);
  if (ec)
    return fail(TSR_ERROR_IO, old + ": cannot remove: " + ec.message());
  if (std::rename(dir.c_str(), old.c_str()) != 0)
    return ioError(dir, "cannot rename aside");
  if (tsr_status_t s = syncDirectoryOrFail(parent))
    return s;
  if (std::rename(tmpDir.c_str(), dir.c_str()) != 0)
    return ioError(dir, "cannot rename the temporary directory into place");
  if (tsr_status_t s = syncDirectoryOrFail(parent))
    return s;
  fs::remove_all(old, ec);
  if (ec)
    return fail(TSR_ERROR_IO, old + ": cannot remove: " + ec.message());
  return TSR_OK;
}

tsr_status_t commit(const std::string &dir, int64_t worldSize,
                    const tsr_checkpoint_meta_t *meta) {
  MetaStrings strings;
  if (tsr_status_t s = checkMeta(meta, worldSize, strings))
    return s;
  std::string tmpDir = dir + ".tmp";
  std::vector<ShardHeader> shards(static_cast<size_t>(worldSize));
  std::set<std::string> expected = {kManifestName};
  for (int64_t r = 0; r < worldSize; ++r) {
    std::string name = shardFileName(r, worldSize);
    std::string path = tmpDir + "/" + name;
    expected.insert(name);
    ShardHeader &header = shards[r];
    if (tsr_status_t s = readShard(path, header))
      return s;
    if (header.rank != r || header.worldSize != worldSize)
      return fail(TSR_ERROR_PARSE, path + ": records rank " +
                                       std::to_string(header.rank) + " of " +
                                       std::to_string(header.worldSize));
    if (header.step != meta->step || header.fingerprint != strings.fingerprint)
      return fail(TSR_ERROR_MISMATCH,
                  path + ": written for step " + std::to_string(header.step) +
                      " and fingerprint \"" + header.fingerprint +
                      "\", not step " + std::to_string(meta->step) + " and \"" +
                      strings.fingerprint + "\"");
    std::vector<const Record *> wanted;
    for (const Record &record : shards[0].records) {
      if (record.shards != 1 && record.shards != worldSize)
        return fail(TSR_ERROR_PARSE,
                    path + ": tensor " + singleQuoted(record.name) + " has " +
                        std::to_string(record.shards) + " shards");
      if (r == 0 || record.shards > 1)
        wanted.push_back(&record);
    }
    bool agrees = header.records.size() == wanted.size();
    for (size_t i = 0; agrees && i < wanted.size(); ++i)
      agrees = sameTensor(header.records[i], *wanted[i]);
    if (!agrees)
      return fail(TSR_ERROR_MISMATCH,
                  path + ": its tensors differ from those of " +
                      shardFileName(0, worldSize));
  }

  // Leftovers of earlier attempts (other world sizes, partial files).
  std::error_code ec;
  std::vector<fs::path> leftovers;
  for (const fs::directory_entry &entry : fs::directory_iterator(tmpDir, ec))
    if (!expected.count(entry.path().filename().string()))
      leftovers.push_back(entry.path());
  if (ec)
    return fail(TSR_ERROR_IO, tmpDir + ": cannot list: " + ec.message());
  for (const fs::path &leftover : leftovers) {
    fs::remove_all(leftover, ec);
    if (ec)
      return fail(TSR_ERROR_IO,
                  leftover.string() + ": cannot remove: " + ec.message());
  }

  std::string error;
  if (!writeFileDurably(tmpDir + "/" + kManifestName,
                        encodeManifest(*meta, strings, shards), error))
    return fail(TSR_ERROR_IO, error);
  return publish(tmpDir, dir);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// A file name that stays inside the checkpoint directory.
bool isPlainFileName(const std::string &name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string::npos;
}

tsr_status_t parseMeta(const ManifestReader &reader, const Json &root,
                       tsr_checkpoint &checkpoint) {
  const Json *meta;
  if (tsr_status_t s =
          reader.member(root, "manifest", "meta", Json::value_t::object, meta))
    return s;
  int64_t zeroStage = 0;
  tsr_checkpoint_meta_t &out = checkpoint.meta;
  if (tsr_status_t s = reader.integer(*meta, "meta", "step", out.step))
    return s;
  if (tsr_status_t s = reader.integer(*meta, "meta", "rng", out.rng))
    return s;
  if (tsr_status_t s =
          reader.integer(*meta, "meta", "data_position", out.data_position))
    return s;
  if (tsr_status_t s =
          reader.string(*meta, "meta", "fingerprint", checkpoint.fingerprint))
    return s;
  if (tsr_status_t s =
          reader.integer(*meta, "meta", "world_size", out.world_size))
    return s;
  if (tsr_status_t s = reader.string(*meta, "meta", "mesh", checkpoint.mesh))
    return s;
  if (tsr_status_t s = reader.integer(*meta, "meta", "zero_stage", zeroStage))
    return s;
  if (out.world_size < 1 || out.world_size > 99999)
    return reader.error("meta.world_size", "out of range");
  if (zeroStage < 0 || zeroStage > INT32_MAX)
    return reader.error("meta.zero_stage", "out of range");
  out.zero_stage = static_cast<int>(zeroStage);
  return TSR_OK;
}

/// Parses "files", reads and checks every file it names; fills `headers`
/// by rank.
tsr_status_t parseFiles(const ManifestReader &reader, const Json &root,
                        tsr_checkpoint &checkpoint,
                        std::vector<ShardHeader> &headers) {
  const Json *files;
  if (tsr_status_t s =
          reader.member(root, "manifest", "files", Json::value_t::array, files))
    return s;
  int64_t worldSize = checkpoint.meta.world_size;
  if (static_cast<int64_t>(files->size()) != worldSize)
    return reader.error("files", "lists " + std::to_string(files->size()) +
                                     " files for a world size of " +
                                     std::to_string(worldSize));
  headers.resize(files->size());
  for (size_t i = 0; i < files->size(); ++i) {
    const Json &file = (*files)[i];
    std::string at = "files[" + std::to_string(i) + "]";
    std::string name;
    int64_t rank;
    uint64_t size, crc;
    if (tsr_status_t s = reader.string(file, at, "name", name))
      return s;
    if (tsr_status_t s = reader.integer(file, at, "rank", rank))
      return s;
    if (tsr_status_t s = reader.unsignedInteger(file, at, "size", size))
      return s;
    if (tsr_status_t s = reader.unsignedInteger(file, at, "crc32", crc))
      return s;
    if (rank != static_cast<int64_t>(i) ||
        name != shardFileName(rank, worldSize))
      return reader.error(at, "expected " + shardFileName(i, worldSize) +
                                  " of rank " + std::to_string(i));
    std::string path = checkpoint.dir + "/" + name;
    ShardHeader &header = headers[i];
    if (tsr_status_t s = readShard(path, header))
      return s;
    if (header.fileSize != size)
      return fail(TSR_ERROR_PARSE,
                  path + ": " + std::to_string(header.fileSize) +
                      " bytes, the manifest records " + std::to_string(size));
    if (header.fileCrc != crc)
      return fail(TSR_ERROR_PARSE, path + ": CRC-32 " + hex32(header.fileCrc) +
                                       ", the manifest records " +
                                       hex32(static_cast<uint32_t>(crc)));
    if (header.rank != rank || header.worldSize != worldSize ||
        header.step != checkpoint.meta.step ||
        header.fingerprint != checkpoint.fingerprint)
      return fail(TSR_ERROR_PARSE,
                  path + ": its header disagrees with the manifest on rank, "
                         "world size, step or fingerprint");
  }
  return TSR_OK;
}

tsr_status_t parseTensors(const ManifestReader &reader, const Json &root,
                          tsr_checkpoint &checkpoint,
                          const std::vector<ShardHeader> &headers) {
  const Json *tensors;
  if (tsr_status_t s = reader.member(root, "manifest", "tensors",
                                     Json::value_t::array, tensors))
    return s;
  int64_t worldSize = checkpoint.meta.world_size;
  std::vector<size_t> used(headers.size(), 0);
  std::set<std::string> names;
  for (size_t i = 0; i < tensors->size(); ++i) {
    const Json &entry = (*tensors)[i];
    std::string at = "tensors[" + std::to_string(i) + "]";
    SavedTensor tensor;
    std::string dtypeName;
    const Json *shape, *pieces;
    if (tsr_status_t s = reader.string(entry, at, "name", tensor.name))
      return s;
    if (!names.insert(tensor.name).second)
      return reader.error(at, "duplicate tensor " + singleQuoted(tensor.name));
    if (tsr_status_t s = reader.string(entry, at, "dtype", dtypeName))
      return s;
    if (tsr_dtype_from_name(dtypeName.c_str(), &tensor.dtype))
      return reader.error(at + ".dtype", "unknown dtype \"" + dtypeName + "\"");
    if (tsr_status_t s =
            reader.member(entry, at, "shape", Json::value_t::array, shape))
      return s;
    for (const Json &dim : *shape) {
      int64_t size;
      if (!getInteger(dim, size))
        return reader.error(at + ".shape", "expected integers");
      tensor.shape.push_back(size);
    }
    if (tsr_status_t s = reader.integer(entry, at, "shards", tensor.shards))
      return s;
    if (tsr_status_t s =
            reader.integer(entry, at, "local_elements", tensor.localElements))
      return s;
    if (tsr_status_t s =
            reader.member(entry, at, "pieces", Json::value_t::array, pieces))
      return s;
    if (tensor.shards != 1 && tensor.shards != worldSize)
      return reader.error(at + ".shards", "neither 1 nor the world size");
    if (static_cast<int64_t>(pieces->size()) != tensor.shards)
      return reader.error(at + ".pieces", "expected one per shard");
    for (size_t k = 0; k < pieces->size(); ++k) {
      const Json &entryPiece = (*pieces)[k];
      std::string pieceAt = at + ".pieces[" + std::to_string(k) + "]";
      std::string file;
      Piece piece;
      uint64_t crc;
      if (tsr_status_t s = reader.string(entryPiece, pieceAt, "file", file))
        return s;
      if (tsr_status_t s = reader.unsignedInteger(entryPiece, pieceAt, "offset",
                                                  piece.offset))
        return s;
      if (tsr_status_t s =
              reader.unsignedInteger(entryPiece, pieceAt, "bytes", piece.bytes))
        return s;
      if (tsr_status_t s =
              reader.unsignedInteger(entryPiece, pieceAt, "crc32", crc))
        return s;
      if (!isPlainFileName(file) || file != shardFileName(k, worldSize))
        return reader.error(pieceAt + ".file",
                            "expected " + shardFileName(k, worldSize));
      // The shard files list their tensors in manifest order.
      const ShardHeader &header = headers[k];
      std::string path = checkpoint.dir + "/" + file;
      if (used[k] >= header.records.size())
        return fail(TSR_ERROR_PARSE, path + ": has no tensor " +
                                         singleQuoted(tensor.name) +
                                         " as the manifest says");
      const Record &record = header.records[used[k]++];
      if (record.name != tensor.name || record.dtype != tensor.dtype ||
          record.shape != tensor.shape || record.shards != tensor.shards ||
          record.localElements != tensor.localElements ||
          record.offset != piece.offset || record.bytes != piece.bytes ||
          record.crc != crc)
        return fail(TSR_ERROR_PARSE,
                    path + ": tensor " + singleQuoted(record.name) +
                        " disagrees with the manifest's " + pieceAt);
      piece.path = path;
      tensor.pieces.push_back(std::move(piece));
    }
    size_t unused;
    computeSizes(tensor.dtype, tensor.shape.data(), tensor.shape.size(),
                 tensor.numElements, unused);
    checkpoint.tensors.push_back(std::move(tensor));
  }
  for (size_t k = 0; k < headers.size(); ++k)
    if (used[k] != headers[k].records.size())
      return fail(TSR_ERROR_PARSE,
                  checkpoint.dir + "/" + shardFileName(k, worldSize) +
                      ": holds tensors the manifest does not list");
  return TSR_OK;
}

tsr_status_t openCheckpoint(const std::string &dir,
                            std::unique_ptr<tsr_checkpoint> &out) {
  auto checkpoint = std::make_unique<tsr_checkpoint>();
  checkpoint->dir = dir;
  std::string path = dir + "/" + kManifestName;
  std::string text;
  if (tsr_status_t s = readFile(path, text))
    return s;
  Json root;
  if (tsr_status_t s = parseJson(text, root))
    return withContext(s, path);
  ManifestReader reader(path);
  std::string format, byteOrder;
  int64_t version;
  if (tsr_status_t s = reader.string(root, "manifest", "format", format))
    return s;
  if (format != kFormatName)
    return reader.error("format", "not \"" + std::string(kFormatName) + "\"");
  if (tsr_status_t s = reader.integer(root, "manifest", "version", version))
    return s;
  if (version != kVersion)
    return reader.error("version",
                        "unsupported version " + std::to_string(version));
  if (tsr_status_t s = reader.string(root, "manifest", "byte_order", byteOrder))
    return s;
  if (byteOrder != hostByteOrder())
    return reader.error("byte_order", "written on a " + byteOrder +
                                          "-endian host, this one is " +
                                          hostByteOrder() + "-endian");
  if (tsr_status_t s = parseMeta(reader, root, *checkpoint))
    return s;
  std::vector<ShardHeader> headers;
  if (tsr_status_t s = parseFiles(reader, root, *checkpoint, headers))
    return s;
  if (tsr_status_t s = parseTensors(reader, root, *checkpoint, headers))
    return s;
  checkpoint->meta.fingerprint = checkpoint->fingerprint.c_str();
  checkpoint->meta.mesh = checkpoint->mesh.c_str();
  out = std::move(checkpoint);
  return TSR_OK;
}

/// Copies elements [begin, end) of the tensor's flat index space from the
/// pieces holding them.
tsr_status_t copyRange(const SavedTensor &tensor, int64_t begin, int64_t end,
                       char *out) {
  size_t elementSize = tsr_dtype_size(tensor.dtype);
  int64_t span = tensor.shards == 1 ? tensor.numElements : tensor.localElements;
  while (begin < end) {
    int64_t k = tensor.shards == 1 ? 0 : begin / span;
    int64_t pieceEnd = std::min(end, (k + 1) * span);
    const Piece &piece = tensor.pieces[static_cast<size_t>(k)];
    size_t bytes = static_cast<size_t>(pieceEnd - begin) * elementSize;
    uint64_t offset =
        piece.offset + static_cast<uint64_t>(begin - k * span) * elementSize;
    Fd file(::open(piece.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.fd < 0)
      return ioError(piece.path, "cannot open");
    if (tsr_status_t s = readAt(file.fd, out, bytes, offset, piece.path))
      return s;
    out += bytes;
    begin = pieceEnd;
  }
  return TSR_OK;
}

tsr_status_t readTensor(const tsr_checkpoint &checkpoint, const char *name,
                        tsr_dtype_t dtype, size_t rank, const int64_t *shape,
                        int64_t shards, int64_t myRank, void *outBuffer,
                        size_t outBytes) {
  if (!name)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null tensor name");
  std::string at = "tensor " + singleQuoted(name);
  const SavedTensor *tensor = nullptr;
  for (const SavedTensor &candidate : checkpoint.tensors)
    if (candidate.name == name)
      tensor = &candidate;
  if (!tensor)
    return fail(TSR_ERROR_MISMATCH, checkpoint.dir + ": has no " + at);
  if (rank && !shape)
    return fail(TSR_ERROR_INVALID_ARGUMENT, at + ": null shape");
  std::vector<int64_t> expected(shape, shape + rank);
  if (tensor->dtype != dtype || tensor->shape != expected)
    return fail(TSR_ERROR_MISMATCH, checkpoint.dir + ": " + at + " is " +
                                        tsr_dtype_name(tensor->dtype) +
                                        formatShape(tensor->shape) +
                                        ", expected " + tsr_dtype_name(dtype) +
                                        formatShape(expected));
  if (shards < 1 || (shards > 1 && (myRank < 0 || myRank >= shards)))
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                at + ": rank " + std::to_string(myRank) + " of " +
                    std::to_string(shards) + " shards");
  int64_t local = localElementsOf(tensor->numElements, shards);
  size_t elementSize = tsr_dtype_size(dtype);
  if (outBytes != static_cast<size_t>(local) * elementSize)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                at + ": the buffer has " + std::to_string(outBytes) +
                    " bytes, the local tensor " +
                    std::to_string(static_cast<size_t>(local) * elementSize));
  if (outBytes && !outBuffer)
    return fail(TSR_ERROR_INVALID_ARGUMENT, at + ": null buffer");
  int64_t begin =
      shards == 1 ? 0 : std::min(myRank * local, tensor->numElements);
  int64_t end = std::min(begin + local, tensor->numElements);
  char *out = static_cast<char *>(outBuffer);
  size_t valid = static_cast<size_t>(end - begin) * elementSize;
  if (outBytes > valid)
    std::memset(out + valid, 0, outBytes - valid);
  return copyRange(*tensor, begin, end, out);
}

/// Parses "step-" followed by digits; false for anything else.
bool parseStepName(const std::string &name, uint64_t &out) {
  constexpr size_t kPrefix = 5;
  if (name.size() <= kPrefix || name.compare(0, kPrefix, "step-") != 0 ||
      name.size() - kPrefix > 18)
    return false;
  out = 0;
  for (size_t i = kPrefix; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9')
      return false;
    out = out * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return true;
}

tsr_status_t latest(const std::string &root, std::string &out) {
  std::error_code ec;
  fs::file_status status = fs::status(root, ec);
  if (!fs::exists(status)) {
    out.clear();
    return TSR_OK;
  }
  if (!fs::is_directory(status))
    return fail(TSR_ERROR_IO, root + ": not a directory");
  bool found = false;
  uint64_t best = 0;
  std::string bestName;
  for (const fs::directory_entry &entry : fs::directory_iterator(root, ec)) {
    std::string name = entry.path().filename().string();
    uint64_t step;
    std::error_code entryEc;
    if (!parseStepName(name, step) || !entry.is_directory(entryEc) ||
        !fs::is_regular_file(entry.path() / kManifestName, entryEc))
      continue;
    if (!found || step > best || (step == best && name > bestName)) {
      found = true;
      best = step;
      bestName = name;
    }
  }
  if (ec)
    return fail(TSR_ERROR_IO, root + ": cannot list: " + ec.message());
  if (!found) {
    out.clear();
    return TSR_OK;
  }
  out = root;
  if (out.empty() || out.back() != '/')
    out += '/';
  out += bestName;
  return TSR_OK;
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

int64_t tsr_checkpoint_local_elements(int64_t num_elements, int64_t shards) {
  if (num_elements < 0 || shards < 1)
    return -1;
  return localElementsOf(num_elements, shards);
}

tsr_status_t tsr_checkpoint_write_shard(const char *dir, int64_t rank,
                                        int64_t world_size,
                                        const tsr_checkpoint_meta_t *meta,
                                        size_t num_tensors,
                                        const tsr_checkpoint_tensor_t *tensors,
                                        const void *const *data) {
  return guard([&] {
    if (!dir || !*dir)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "empty checkpoint directory");
    return writeShard(dir, rank, world_size, meta, num_tensors, tensors, data);
  });
}

tsr_status_t tsr_checkpoint_commit(const char *dir, int64_t world_size,
                                   const tsr_checkpoint_meta_t *meta) {
  return guard([&] {
    if (!dir || !*dir)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "empty checkpoint directory");
    return commit(dir, world_size, meta);
  });
}

tsr_status_t tsr_checkpoint_open(const char *dir,
                                 tsr_checkpoint_t **out_checkpoint) {
  return guard([&] {
    if (!dir || !out_checkpoint)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    std::unique_ptr<tsr_checkpoint> checkpoint;
    if (tsr_status_t s = openCheckpoint(dir, checkpoint))
      return s;
    *out_checkpoint = checkpoint.release();
    return TSR_OK;
  });
}

void tsr_checkpoint_close(tsr_checkpoint_t *checkpoint) { delete checkpoint; }

tsr_status_t tsr_checkpoint_meta(const tsr_checkpoint_t *checkpoint,
                                 tsr_checkpoint_meta_t *out_meta) {
  if (!checkpoint || !out_meta)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
  *out_meta = checkpoint->meta;
  return TSR_OK;
}

tsr_status_t
tsr_checkpoint_check_fingerprint(const tsr_checkpoint_t *checkpoint,
                                 const char *fingerprint) {
  return guard([&] {
    if (!checkpoint)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null checkpoint");
    std::string expected = fingerprint ? fingerprint : "";
    if (checkpoint->fingerprint != expected)
      return fail(TSR_ERROR_MISMATCH,
                  checkpoint->dir + ": written with fingerprint \"" +
                      checkpoint->fingerprint +
                      "\", this run's fingerprint is \"" + expected +
                      "\" (the model or training configuration changed)");
    return TSR_OK;
  });
}

size_t tsr_checkpoint_num_tensors(const tsr_checkpoint_t *checkpoint) {
  return checkpoint ? checkpoint->tensors.size() : 0;
}

const char *tsr_checkpoint_tensor_name(const tsr_checkpoint_t *checkpoint,
                                       size_t index) {
  if (!checkpoint || index >= checkpoint->tensors.size())
    return nullptr;
  return checkpoint->tensors[index].name.c_str();
}

tsr_status_t tsr_checkpoint_tensor_info(const tsr_checkpoint_t *checkpoint,
                                        size_t index,
                                        tsr_checkpoint_tensor_t *out_info) {
  if (!checkpoint || !out_info)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
  if (index >= checkpoint->tensors.size())
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "tensor index " + std::to_string(index) + " out of range");
  const SavedTensor &tensor = checkpoint->tensors[index];
  out_info->name = tensor.name.c_str();
  out_info->dtype = tensor.dtype;
  out_info->rank = tensor.shape.size();
  out_info->shape = tensor.shape.data();
  out_info->shards = tensor.shards;
  return TSR_OK;
}

tsr_status_t tsr_checkpoint_read_tensor(const tsr_checkpoint_t *checkpoint,
                                        const char *name, tsr_dtype_t dtype,
                                        size_t rank, const int64_t *shape,
                                        int64_t shards, int64_t my_rank,
                                        void *out_buffer, size_t out_bytes) {
  return guard([&] {
    if (!checkpoint)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null checkpoint");
    return readTensor(*checkpoint, name, dtype, rank, shape, shards, my_rank,
                      out_buffer, out_bytes);
  });
}

tsr_status_t tsr_checkpoint_latest(const char *root, char *out_path,
                                   size_t cap) {
  return guard([&] {
    if (!root || !out_path)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    std::string path;
    if (tsr_status_t s = latest(root, path))
      return s;
    if (path.size() + 1 > cap)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  path + ": does not fit in " + std::to_string(cap) + " bytes");
    std::memcpy(out_path, path.c_str(), path.size() + 1);
    return TSR_OK;
  });
}
