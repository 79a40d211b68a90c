//===- CheckpointFormat.cpp - Checkpoint shard files ----------------------===//
//
// Writing and reading the binary shard files of a checkpoint. The format is
// specified in docs/checkpoints.md; the constants and layouts in
// CheckpointFormat.h and here must stay in step with it.
//
//===----------------------------------------------------------------------===//

#include "CheckpointFormat.h"

#include "DurableFile.h"
#include "RuntimeInternal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

using namespace tsr;
using namespace tsr::ckpt;

namespace {

bool hostIsLittleEndian() {
  uint32_t probe = 1;
  unsigned char first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

template <typename T> void appendRaw(std::string &out, T value) {
  out.append(reinterpret_cast<const char *>(&value), sizeof(T));
}

void appendString(std::string &out, const std::string &text) {
  appendRaw<uint32_t>(out, static_cast<uint32_t>(text.size()));
  out += text;
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

} // namespace

namespace tsr::ckpt {

const char *hostByteOrder() { return hostIsLittleEndian() ? "little" : "big"; }

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

tsr_status_t ioError(const std::string &path, const char *what) {
  return fail(TSR_ERROR_IO, path + ": " + what + ": " + std::strerror(errno));
}

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

tsr_status_t syncDirectoryOrFail(const std::string &path) {
  std::string error;
  return syncDirectory(path, error) ? TSR_OK : fail(TSR_ERROR_IO, error);
}

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

int64_t localElementsOf(int64_t numElements, int64_t shards) {
  if (shards == 1)
    return numElements;
  return numElements / shards + (numElements % shards != 0);
}

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

} // namespace tsr::ckpt
