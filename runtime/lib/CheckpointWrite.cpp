//===- CheckpointWrite.cpp - Writing and committing checkpoints -----------===//
//
// The commit protocol of docs/checkpoints.md: every rank writes its shard
// file into DIR.tmp, rank 0 checks them all, writes the manifest and
// publishes DIR.tmp as DIR so that a complete checkpoint exists at every
// instant.
//
//===----------------------------------------------------------------------===//

#include "CheckpointFormat.h"
#include "DurableFile.h"
#include "Json.h"
#include "RuntimeInternal.h"

#include <fcntl.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

using namespace tsr;
using namespace tsr::ckpt;
namespace fs = std::filesystem;

namespace {

struct MetaStrings {
  std::string fingerprint, mesh;
  /// meta.hparams, parsed (null for none).
  Json hparams;
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
  if (meta->hparams && *meta->hparams) {
    out.hparams =
        Json::parse(meta->hparams, nullptr, /*allow_exceptions=*/false);
    if (!out.hparams.is_object())
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "meta.hparams is not a JSON object");
    for (const auto &[name, value] : out.hparams.items())
      if (!value.is_string())
        return fail(TSR_ERROR_INVALID_ARGUMENT,
                    "meta.hparams." + name + " is not a string");
  }
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
  // A shard without records (a rank holding no flat shards) still pads its
  // header to the data offset that header.fileSize counts.
  if (tsr_status_t s = emitZeros(end - written))
    return s;
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
                     {"zero_stage", meta.zero_stage},
                     {"shuffle", meta.shuffle != 0},
                     {"seed", meta.seed},
                     {"hparams", strings.hparams.is_null() ? Json::object()
                                                           : strings.hparams}}},
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

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

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
