//===- CheckpointRead.cpp - Opening checkpoints ---------------------------===//
//
// Parses a checkpoint's manifest, reads and checks every shard file it
// names, and finds the newest checkpoint under a directory.
//
//===----------------------------------------------------------------------===//

#include "CheckpointFormat.h"
#include "Json.h"
#include "RuntimeInternal.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>

using namespace tsr;
using namespace tsr::ckpt;
namespace fs = std::filesystem;

namespace {

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
  out.shuffle = 0;
  out.seed = 0;
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
  if (meta->contains("shuffle")) {
    const Json &shuffle = (*meta)["shuffle"];
    if (!shuffle.is_boolean())
      return reader.error("meta.shuffle", "expected true or false");
    out.shuffle = shuffle.get<bool>() ? 1 : 0;
  }
  if (meta->contains("hparams")) {
    const Json &hparams = (*meta)["hparams"];
    if (!hparams.is_object())
      return reader.error("meta.hparams", "expected an object");
    for (const auto &[name, value] : hparams.items())
      if (!value.is_string())
        return reader.error("meta.hparams." + name, "expected a string");
    checkpoint.hparams = hparams.dump();
  }
  if (meta->contains("seed"))
    if (tsr_status_t s =
            reader.unsignedInteger(*meta, "meta", "seed", out.seed))
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
  checkpoint->meta.hparams = checkpoint->hparams.c_str();
  out = std::move(checkpoint);
  return TSR_OK;
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
