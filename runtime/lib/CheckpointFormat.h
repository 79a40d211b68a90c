//===- CheckpointFormat.h - The checkpoint format --------------*- C++ -*-===//
//
// The on-disk format of checkpoints (docs/checkpoints.md): constants, the
// shard file header and its records, reading and checking whole shard
// files, and the opened checkpoint. Shared by the translation units that
// write (CheckpointWrite.cpp), open (CheckpointRead.cpp) and reshard
// (CheckpointReshard.cpp) checkpoints. Nothing here is part of the C ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_CHECKPOINTFORMAT_H
#define TESSERA_RUNTIME_LIB_CHECKPOINTFORMAT_H

#include "tessera-runtime/Checkpoint.h"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tsr::ckpt {

//===----------------------------------------------------------------------===//
// Format constants
//===----------------------------------------------------------------------===//

inline constexpr char kMagic[8] = {'T', 'S', 'R', 'C', 'K', 'P', 'T', '\0'};
inline constexpr char kTrailerMagic[4] = {'T', 'E', 'N', 'D'};
inline constexpr uint32_t kVersion = 1;
/// Written in host byte order; read back as 0x04030201 on a host of the
/// other byte order.
inline constexpr uint32_t kByteOrderMark = 0x01020304u;
/// The fields of a shard file's header before the fingerprint.
inline constexpr size_t kFixedHeaderSize = 64;
inline constexpr size_t kTrailerSize = 8;
inline constexpr uint64_t kAlignment = 64;
inline constexpr size_t kChunkSize = size_t(4) << 20;
inline constexpr const char *kManifestName = "manifest.json";
inline constexpr const char *kFormatName = "tessera-checkpoint";

/// "little" or "big".
const char *hostByteOrder();

inline uint64_t alignUp(uint64_t value) {
  return (value + kAlignment - 1) / kAlignment * kAlignment;
}

/// Zeros for alignment and for the padding of flat shards.
inline constexpr char kZeros[1 << 16] = {};

/// Extends a zlib CRC-32 by `size` bytes of `data`, or of zeros.
uint32_t crcOf(uint32_t crc, const void *data, uint64_t size);
uint32_t crcZeros(uint32_t crc, uint64_t size);

/// "shard-00001-of-00004.bin".
std::string shardFileName(int64_t rank, int64_t worldSize);
std::string singleQuoted(const std::string &name);
/// "0x0badf00d".
std::string hex32(uint32_t value);

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

/// Records "PATH: what: errno text" and returns TSR_ERROR_IO.
tsr_status_t ioError(const std::string &path, const char *what);

/// Reads exactly `size` bytes at `offset`; a short read is a truncated file.
tsr_status_t readAt(int fd, void *data, size_t size, uint64_t offset,
                    const std::string &path);

/// syncDirectory with the message recorded as the last error.
tsr_status_t syncDirectoryOrFail(const std::string &path);

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

/// Serializes a header; its size does not depend on the offsets and CRCs.
std::string encodeHeader(const ShardHeader &header);

/// The elements each of `shards` shards of a tensor of `numElements` holds.
int64_t localElementsOf(int64_t numElements, int64_t shards);

/// Reads and checks a whole shard file: its header, its size, the CRC-32 of
/// the file and of every tensor's data.
tsr_status_t readShard(const std::string &path, ShardHeader &out);

//===----------------------------------------------------------------------===//
// The opened checkpoint
//===----------------------------------------------------------------------===//

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

} // namespace tsr::ckpt

struct tsr_checkpoint {
  std::string dir;
  tsr_checkpoint_meta_t meta{};
  std::string fingerprint, mesh, hparams;
  std::vector<tsr::ckpt::SavedTensor> tensors;

  tsr_checkpoint() = default;
  tsr_checkpoint(const tsr_checkpoint &) = delete;
  tsr_checkpoint &operator=(const tsr_checkpoint &) = delete;
};

#endif // TESSERA_RUNTIME_LIB_CHECKPOINTFORMAT_H
