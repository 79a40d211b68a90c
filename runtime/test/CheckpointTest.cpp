//===- CheckpointTest.cpp - Sharded checkpoints: writing, resharding ------===//
//
// The ranks of a run are simulated in one process: each calls
// tsr_checkpoint_write_shard in turn, then rank 0 commits.
//
//===----------------------------------------------------------------------===//

#include "tessera-runtime/Checkpoint.h"

#include "Fixtures.h"

#include <random>

using namespace tsr::test;

namespace {

struct CheckpointDeleter {
  void operator()(tsr_checkpoint_t *checkpoint) const {
    tsr_checkpoint_close(checkpoint);
  }
};
using CheckpointPtr = std::unique_ptr<tsr_checkpoint_t, CheckpointDeleter>;

/// A tensor of the training state: its global value and shard count.
struct GlobalTensor {
  std::string name;
  tsr_dtype_t dtype;
  std::vector<int64_t> shape;
  int64_t shards;
  std::string bytes;

  int64_t numElements() const {
    int64_t count = 1;
    for (int64_t dim : shape)
      count *= dim;
    return count;
  }
  size_t elementSize() const { return tsr_dtype_size(dtype); }
};

/// A tensor of pseudo-random bytes (every bit pattern is a valid value for
/// a bitwise round trip).
GlobalTensor randomTensor(std::string name, tsr_dtype_t dtype,
                          std::vector<int64_t> shape, int64_t shards,
                          unsigned seed) {
  GlobalTensor tensor{std::move(name), dtype, std::move(shape), shards, ""};
  std::mt19937 rng(seed);
  tensor.bytes.resize(tensor.numElements() * tensor.elementSize());
  for (char &byte : tensor.bytes)
    byte = static_cast<char>(rng());
  return tensor;
}

/// The local bytes of rank `rank` under `shards`; the padding is `pad`.
std::string localBytes(const GlobalTensor &tensor, int64_t shards, int64_t rank,
                       char pad) {
  if (shards == 1)
    return tensor.bytes;
  int64_t local = tsr_checkpoint_local_elements(tensor.numElements(), shards);
  size_t size = tensor.elementSize();
  std::string out(local * size, pad);
  int64_t begin = std::min(rank * local, tensor.numElements());
  int64_t end = std::min(begin + local, tensor.numElements());
  out.replace(0, (end - begin) * size, tensor.bytes, begin * size,
              (end - begin) * size);
  return out;
}

tsr_checkpoint_meta_t makeMeta(int64_t step, int64_t worldSize,
                               const char *fingerprint = "model-abc") {
  tsr_checkpoint_meta_t meta{};
  meta.step = step;
  meta.rng = 1000 + step;
  meta.data_position = 32 * step;
  meta.fingerprint = fingerprint;
  meta.world_size = worldSize;
  meta.mesh = worldSize > 1 ? "dp=4" : "";
  meta.zero_stage = worldSize > 1 ? 1 : 0;
  return meta;
}

/// Writes `rank`'s file; the padding of flat shards is garbage.
tsr_status_t writeShard(const std::string &dir, int64_t rank,
                        const tsr_checkpoint_meta_t &meta,
                        const std::vector<GlobalTensor> &tensors,
                        char pad = '\x5a') {
  std::vector<tsr_checkpoint_tensor_t> infos;
  std::vector<std::string> locals;
  for (const GlobalTensor &tensor : tensors) {
    infos.push_back({tensor.name.c_str(), tensor.dtype, tensor.shape.size(),
                     tensor.shape.data(), tensor.shards});
    locals.push_back(localBytes(tensor, tensor.shards, rank, pad));
  }
  std::vector<const void *> data;
  for (const std::string &local : locals)
    data.push_back(local.data());
  return tsr_checkpoint_write_shard(dir.c_str(), rank, meta.world_size, &meta,
                                    infos.size(), infos.data(), data.data());
}

/// Writes every rank's file, then commits.
void writeCheckpoint(const std::string &dir, const tsr_checkpoint_meta_t &meta,
                     const std::vector<GlobalTensor> &tensors) {
  for (int64_t r = 0; r < meta.world_size; ++r)
    ASSERT_EQ(writeShard(dir, r, meta, tensors), TSR_OK) << tsr_last_error();
  ASSERT_EQ(tsr_checkpoint_commit(dir.c_str(), meta.world_size, &meta), TSR_OK)
      << tsr_last_error();
}

CheckpointPtr openCheckpoint(const std::string &dir) {
  tsr_checkpoint_t *checkpoint = nullptr;
  EXPECT_EQ(tsr_checkpoint_open(dir.c_str(), &checkpoint), TSR_OK)
      << tsr_last_error();
  return CheckpointPtr(checkpoint);
}

tsr_status_t readLocal(tsr_checkpoint_t *checkpoint, const GlobalTensor &tensor,
                       int64_t shards, int64_t rank, std::string &out) {
  int64_t local = tsr_checkpoint_local_elements(tensor.numElements(), shards);
  out.assign(local * tensor.elementSize(), '\x77');
  return tsr_checkpoint_read_tensor(
      checkpoint, tensor.name.c_str(), tensor.dtype, tensor.shape.size(),
      tensor.shape.data(), shards, rank, out.data(), out.size());
}

/// Expects every rank of a `shards`-way layout to read its slice of every
/// tensor, padding zeroed.
void expectReadsAll(tsr_checkpoint_t *checkpoint,
                    const std::vector<GlobalTensor> &tensors, int64_t shards) {
  for (const GlobalTensor &tensor : tensors) {
    for (int64_t r = 0; r < shards; ++r) {
      std::string local;
      ASSERT_EQ(readLocal(checkpoint, tensor, shards, r, local), TSR_OK)
          << tsr_last_error();
      EXPECT_EQ(local, localBytes(tensor, shards, r, '\0'))
          << tensor.name << " read as rank " << r << " of " << shards;
    }
  }
}

/// Expects opening `dir` to fail with `status` and a one-line message that
/// contains `file` and `needle`.
void expectOpenError(const std::string &dir, tsr_status_t status,
                     const std::string &file, const std::string &needle) {
  tsr_checkpoint_t *checkpoint = nullptr;
  EXPECT_EQ(tsr_checkpoint_open(dir.c_str(), &checkpoint), status) << needle;
  EXPECT_EQ(checkpoint, nullptr);
  std::string message = tsr_last_error();
  EXPECT_NE(message.find(file), std::string::npos) << message;
  EXPECT_NE(message.find(needle), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

/// The training state of a 4-rank ZeRO run: flat tensors whose sizes do and
/// do not divide by 4, fewer elements than ranks, no elements, and
/// replicated ones.
std::vector<GlobalTensor> shardedState() {
  return {randomTensor("w", TSR_DTYPE_FLOAT32, {3, 5}, 4, 1),
          randomTensor("w.m", TSR_DTYPE_FLOAT32, {3, 5}, 4, 2),
          randomTensor("b", TSR_DTYPE_FLOAT16, {3}, 4, 3),
          randomTensor("even", TSR_DTYPE_INT64, {4, 4}, 4, 4),
          randomTensor("empty", TSR_DTYPE_FLOAT32, {0, 7}, 4, 5),
          randomTensor("scale", TSR_DTYPE_FLOAT64, {}, 1, 6),
          randomTensor("emb", TSR_DTYPE_BFLOAT16, {5, 3}, 1, 7)};
}

std::string shardPath(const std::string &dir, int rank, int worldSize) {
  char name[64];
  std::snprintf(name, sizeof(name), "/shard-%05d-of-%05d.bin", rank, worldSize);
  return dir + name;
}

} // namespace

TEST(Checkpoint, LocalElements) {
  EXPECT_EQ(tsr_checkpoint_local_elements(15, 1), 15);
  EXPECT_EQ(tsr_checkpoint_local_elements(15, 4), 4);
  EXPECT_EQ(tsr_checkpoint_local_elements(16, 4), 4);
  EXPECT_EQ(tsr_checkpoint_local_elements(3, 4), 1);
  EXPECT_EQ(tsr_checkpoint_local_elements(0, 4), 0);
  EXPECT_EQ(tsr_checkpoint_local_elements(4, 0), -1);
  EXPECT_EQ(tsr_checkpoint_local_elements(-1, 2), -1);
}

TEST(Checkpoint, RoundTripsOneRank) {
  std::string dir = scratchDir() + "/step-00000003";
  std::vector<GlobalTensor> tensors = {
      randomTensor("f32", TSR_DTYPE_FLOAT32, {3, 5}, 1, 1),
      randomTensor("scalar", TSR_DTYPE_INT64, {}, 1, 2),
      randomTensor("zero-size", TSR_DTYPE_FLOAT16, {0, 4}, 1, 3),
      randomTensor("flags", TSR_DTYPE_BOOL, {7}, 1, 4),
      randomTensor("bf16", TSR_DTYPE_BFLOAT16, {2, 3, 2}, 1, 5),
      randomTensor("u8", TSR_DTYPE_UINT8, {1}, 1, 6),
      randomTensor("f64", TSR_DTYPE_FLOAT64, {2, 2}, 1, 7),
      randomTensor("name \"with\" odd\tcharacters", TSR_DTYPE_INT32, {2}, 1,
                   8)};
  tsr_checkpoint_meta_t meta = makeMeta(3, 1, "fp \"quoted\"\n");
  writeCheckpoint(dir, meta, tensors);
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));

  CheckpointPtr checkpoint = openCheckpoint(dir);
  ASSERT_TRUE(checkpoint);
  tsr_checkpoint_meta_t read{};
  ASSERT_EQ(tsr_checkpoint_meta(checkpoint.get(), &read), TSR_OK);
  EXPECT_EQ(read.step, 3);
  EXPECT_EQ(read.rng, 1003);
  EXPECT_EQ(read.data_position, 96);
  EXPECT_STREQ(read.fingerprint, "fp \"quoted\"\n");
  EXPECT_EQ(read.world_size, 1);
  EXPECT_STREQ(read.mesh, "");
  EXPECT_EQ(read.zero_stage, 0);

  ASSERT_EQ(tsr_checkpoint_num_tensors(checkpoint.get()), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(tsr_checkpoint_tensor_name(checkpoint.get(), i), tensors[i].name);
    tsr_checkpoint_tensor_t info;
    ASSERT_EQ(tsr_checkpoint_tensor_info(checkpoint.get(), i, &info), TSR_OK);
    EXPECT_EQ(info.dtype, tensors[i].dtype);
    EXPECT_EQ(std::vector<int64_t>(info.shape, info.shape + info.rank),
              tensors[i].shape);
    EXPECT_EQ(info.shards, 1);
  }
  EXPECT_EQ(tsr_checkpoint_tensor_name(checkpoint.get(), tensors.size()),
            nullptr);
  expectReadsAll(checkpoint.get(), tensors, 1);
  // A replicated tensor can be read as a flat shard too.
  expectReadsAll(checkpoint.get(), tensors, 3);
}

TEST(Checkpoint, ReshardsFourRanks) {
  std::string root = scratchDir();
  std::string dir = root + "/step-00000010";
  std::vector<GlobalTensor> tensors = shardedState();
  writeCheckpoint(dir, makeMeta(10, 4), tensors);

  // Only rank 0 holds the replicated tensors.
  EXPECT_GT(std::filesystem::file_size(shardPath(dir, 0, 4)),
            std::filesystem::file_size(shardPath(dir, 1, 4)) + 8 + 30);
  // The padding is stored as zeros whatever the caller's buffers held.
  std::string other = root + "/other";
  for (int64_t r = 0; r < 4; ++r) {
    ASSERT_EQ(writeShard(other, r, makeMeta(10, 4), tensors, '\0'), TSR_OK);
    EXPECT_EQ(readBytes(shardPath(other + ".tmp", r, 4)),
              readBytes(shardPath(dir, r, 4)));
  }

  CheckpointPtr checkpoint = openCheckpoint(dir);
  ASSERT_TRUE(checkpoint);
  tsr_checkpoint_meta_t meta;
  ASSERT_EQ(tsr_checkpoint_meta(checkpoint.get(), &meta), TSR_OK);
  EXPECT_EQ(meta.world_size, 4);
  EXPECT_STREQ(meta.mesh, "dp=4");
  EXPECT_EQ(meta.zero_stage, 1);
  for (int64_t shards : {4, 2, 3, 1, 5, 16})
    expectReadsAll(checkpoint.get(), tensors, shards);
}

// ZeRO-0 on 2 ranks: every tensor is replicated, so rank 1's file holds a
// header and no records.
TEST(Checkpoint, RoundTripsShardWithoutRecords) {
  std::string dir = scratchDir() + "/step-00000004";
  std::vector<GlobalTensor> tensors = {
      randomTensor("w", TSR_DTYPE_FLOAT32, {4, 3}, 1, 1),
      randomTensor("b", TSR_DTYPE_FLOAT32, {3}, 1, 2)};
  tsr_checkpoint_meta_t meta = makeMeta(4, 2);
  writeCheckpoint(dir, meta, tensors);
  CheckpointPtr checkpoint = openCheckpoint(dir);
  ASSERT_TRUE(checkpoint);
  expectReadsAll(checkpoint.get(), tensors, 1);
  expectReadsAll(checkpoint.get(), tensors, 2);
}

TEST(Checkpoint, ReshardedCheckpointRoundTrips) {
  // 4 ranks save; 3 ranks resume and save; 1 rank reads everything back.
  std::string root = scratchDir();
  std::vector<GlobalTensor> tensors = shardedState();
  writeCheckpoint(root + "/step-00000010", makeMeta(10, 4), tensors);
  CheckpointPtr first = openCheckpoint(root + "/step-00000010");
  ASSERT_TRUE(first);

  tsr_checkpoint_meta_t meta = makeMeta(20, 3);
  for (int64_t r = 0; r < 3; ++r) {
    std::vector<tsr_checkpoint_tensor_t> infos;
    std::vector<std::string> locals;
    for (const GlobalTensor &tensor : tensors) {
      int64_t shards = tensor.shards == 1 ? 1 : 3;
      infos.push_back({tensor.name.c_str(), tensor.dtype, tensor.shape.size(),
                       tensor.shape.data(), shards});
      locals.emplace_back();
      ASSERT_EQ(readLocal(first.get(), tensor, shards, r, locals.back()),
                TSR_OK)
          << tsr_last_error();
    }
    std::vector<const void *> data;
    for (const std::string &local : locals)
      data.push_back(local.data());
    ASSERT_EQ(tsr_checkpoint_write_shard((root + "/step-00000020").c_str(), r,
                                         3, &meta, infos.size(), infos.data(),
                                         data.data()),
              TSR_OK)
        << tsr_last_error();
  }
  ASSERT_EQ(tsr_checkpoint_commit((root + "/step-00000020").c_str(), 3, &meta),
            TSR_OK)
      << tsr_last_error();
  CheckpointPtr second = openCheckpoint(root + "/step-00000020");
  ASSERT_TRUE(second);
  expectReadsAll(second.get(), tensors, 1);
  expectReadsAll(second.get(), tensors, 4);
}

TEST(Checkpoint, RefusesTruncatedShard) {
  std::string dir = scratchDir() + "/step-00000010";
  writeCheckpoint(dir, makeMeta(10, 4), shardedState());
  std::string path = shardPath(dir, 2, 4);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 5);
  expectOpenError(dir, TSR_ERROR_PARSE, path, "truncated");
  std::filesystem::resize_file(path, 20);
  expectOpenError(dir, TSR_ERROR_PARSE, path, "truncated");
}

TEST(Checkpoint, RefusesFlippedByte) {
  std::string dir = scratchDir() + "/step-00000010";
  writeCheckpoint(dir, makeMeta(10, 4), shardedState());
  std::string path = shardPath(dir, 1, 4);
  std::string original = readBytes(path);
  // A byte of tensor data, of the header, and of the trailer's checksum.
  for (size_t at : {original.size() - 20, size_t(100), original.size() - 7}) {
    std::string bytes = original;
    bytes[at] ^= 0x10;
    writeBytes(path, bytes);
    expectOpenError(dir, TSR_ERROR_PARSE, path, "CRC-32 mismatch");
  }
  writeBytes(path, original);
  EXPECT_TRUE(openCheckpoint(dir));
}

TEST(Checkpoint, RefusesOtherByteOrder) {
  std::string dir = scratchDir() + "/step-00000001";
  writeCheckpoint(dir, makeMeta(1, 1),
                  {randomTensor("w", TSR_DTYPE_FLOAT32, {2}, 1, 1)});
  std::string path = shardPath(dir, 0, 1);
  std::string bytes = readBytes(path);
  std::swap(bytes[12], bytes[15]);
  std::swap(bytes[13], bytes[14]);
  writeBytes(path, bytes);
  expectOpenError(dir, TSR_ERROR_PARSE, path, "other byte order");

  std::string manifest = readBytes(dir + "/manifest.json");
  size_t at = manifest.find("\"little\"");
  ASSERT_NE(at, std::string::npos);
  writeBytes(dir + "/manifest.json", manifest.replace(at, 8, "\"big\""));
  expectOpenError(dir, TSR_ERROR_PARSE, "manifest.json", "big-endian");
}

TEST(Checkpoint, RefusesMissingShard) {
  std::string dir = scratchDir() + "/step-00000010";
  writeCheckpoint(dir, makeMeta(10, 4), shardedState());
  std::string path = shardPath(dir, 3, 4);
  std::filesystem::remove(path);
  expectOpenError(dir, TSR_ERROR_IO, path, "cannot open");
}

TEST(Checkpoint, RefusesCorruptManifest) {
  std::string dir = scratchDir() + "/step-00000010";
  writeCheckpoint(dir, makeMeta(10, 4), shardedState());
  std::string path = dir + "/manifest.json";
  std::string original = readBytes(path);

  // A truncated manifest: the error names the line and column of its end
  // (cut between lines, so that the end is not inside a string).
  std::string half =
      original.substr(0, original.rfind('\n', original.size() / 2) + 1);
  size_t lastLine = half.rfind('\n') + 1;
  writeBytes(path, half);
  expectOpenError(
      dir, TSR_ERROR_PARSE, path,
      ": " + std::to_string(std::count(half.begin(), half.end(), '\n') + 1) +
          ":" + std::to_string(half.size() - lastLine + 1) +
          ": unexpected end of input");
  writeBytes(path, "");
  expectOpenError(dir, TSR_ERROR_PARSE, path, ": 1:1: unexpected end of input");
  writeBytes(path, "{\n  \"format\": 1,\n  \"format\": 2\n}\n");
  expectOpenError(dir, TSR_ERROR_PARSE, path,
                  ": 3:11: duplicate key \"format\"");

  // A recorded offset that disagrees with the shard's header.
  std::string bytes = original;
  size_t at = bytes.find("\"offset\": ");
  ASSERT_NE(at, std::string::npos);
  bytes.insert(at + 10, "1");
  writeBytes(path, bytes);
  expectOpenError(dir, TSR_ERROR_PARSE, "disagrees with the manifest",
                  "pieces[0]");

  // A recorded file size that disagrees with the file.
  bytes = original;
  at = bytes.find("\"size\": ");
  ASSERT_NE(at, std::string::npos);
  bytes.insert(at + 8, "9");
  writeBytes(path, bytes);
  expectOpenError(dir, TSR_ERROR_PARSE, shardPath(dir, 0, 4),
                  "the manifest records");

  bytes = original;
  at = bytes.find("\"world_size\": 4");
  ASSERT_NE(at, std::string::npos);
  writeBytes(path, bytes.replace(at, 15, "\"world_size\": \"4\""));
  expectOpenError(dir, TSR_ERROR_PARSE, path, "meta.world_size");

  std::filesystem::remove(path);
  expectOpenError(dir, TSR_ERROR_IO, path, "cannot open");
}

TEST(Checkpoint, RefusesMismatchedTensors) {
  std::string dir = scratchDir() + "/step-00000010";
  std::vector<GlobalTensor> tensors = shardedState();
  writeCheckpoint(dir, makeMeta(10, 4), tensors);
  CheckpointPtr checkpoint = openCheckpoint(dir);
  ASSERT_TRUE(checkpoint);
  std::string out;

  GlobalTensor wrong = tensors[0];
  wrong.dtype = TSR_DTYPE_INT32;
  EXPECT_EQ(readLocal(checkpoint.get(), wrong, 4, 0, out), TSR_ERROR_MISMATCH);
  EXPECT_NE(std::string(tsr_last_error())
                .find("tensor 'w' is float32[3, 5], "
                      "expected int32[3, 5]"),
            std::string::npos)
      << tsr_last_error();

  wrong = tensors[0];
  wrong.shape = {5, 3};
  EXPECT_EQ(readLocal(checkpoint.get(), wrong, 4, 0, out), TSR_ERROR_MISMATCH);
  EXPECT_NE(std::string(tsr_last_error()).find("expected float32[5, 3]"),
            std::string::npos)
      << tsr_last_error();

  wrong = tensors[0];
  wrong.name = "v";
  EXPECT_EQ(readLocal(checkpoint.get(), wrong, 4, 0, out), TSR_ERROR_MISMATCH);
  EXPECT_NE(std::string(tsr_last_error()).find("has no tensor 'v'"),
            std::string::npos)
      << tsr_last_error();

  // Out-of-range ranks and wrongly sized buffers.
  EXPECT_EQ(readLocal(checkpoint.get(), tensors[0], 4, 4, out),
            TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tsr_checkpoint_read_tensor(checkpoint.get(), "w", TSR_DTYPE_FLOAT32,
                                       2, tensors[0].shape.data(), 4, 0,
                                       out.data(), 4),
            TSR_ERROR_INVALID_ARGUMENT);

  EXPECT_EQ(tsr_checkpoint_check_fingerprint(checkpoint.get(), "model-abc"),
            TSR_OK);
  EXPECT_EQ(tsr_checkpoint_check_fingerprint(checkpoint.get(), "model-xyz"),
            TSR_ERROR_MISMATCH);
  EXPECT_NE(std::string(tsr_last_error()).find("model-xyz"), std::string::npos)
      << tsr_last_error();
}

TEST(Checkpoint, RefusesBadWrites) {
  std::string dir = scratchDir() + "/step-00000001";
  tsr_checkpoint_meta_t meta = makeMeta(1, 4);
  GlobalTensor tensor = randomTensor("w", TSR_DTYPE_FLOAT32, {6}, 2, 1);
  EXPECT_EQ(writeShard(dir, 0, meta, {tensor}), TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tsr_last_error()).find("tensor 'w': shard count 2"),
            std::string::npos)
      << tsr_last_error();
  tensor.shards = 4;
  EXPECT_EQ(writeShard(dir, 0, meta, {tensor, tensor}),
            TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(writeShard(dir, 4, meta, {tensor}), TSR_ERROR_INVALID_ARGUMENT);
  // The manifest is JSON: names and meta strings must be valid UTF-8.
  GlobalTensor badName = tensor;
  badName.name = "w\xff";
  EXPECT_EQ(writeShard(dir, 0, meta, {badName}), TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tsr_last_error()).find("name is not valid UTF-8"),
            std::string::npos)
      << tsr_last_error();
  meta.mesh = "dp=\xc3";
  EXPECT_EQ(writeShard(dir, 0, meta, {tensor}), TSR_ERROR_INVALID_ARGUMENT);
  meta = makeMeta(1, 4);
  meta.world_size = 2;
  EXPECT_EQ(
      tsr_checkpoint_write_shard(dir.c_str(), 0, 4, &meta, 0, nullptr, nullptr),
      TSR_ERROR_INVALID_ARGUMENT);

  // Committing before every rank wrote its file fails and publishes
  // nothing.
  meta = makeMeta(1, 4);
  for (int64_t r : {0, 1, 3})
    ASSERT_EQ(writeShard(dir, r, meta, {tensor}), TSR_OK) << tsr_last_error();
  EXPECT_EQ(tsr_checkpoint_commit(dir.c_str(), 4, &meta), TSR_ERROR_IO);
  EXPECT_NE(std::string(tsr_last_error()).find(shardPath(dir + ".tmp", 2, 4)),
            std::string::npos)
      << tsr_last_error();
  EXPECT_FALSE(std::filesystem::exists(dir));

  // A file left by an attempt at another step is refused.
  tsr_checkpoint_meta_t stale = makeMeta(0, 4);
  ASSERT_EQ(writeShard(dir, 2, stale, {tensor}), TSR_OK) << tsr_last_error();
  EXPECT_EQ(tsr_checkpoint_commit(dir.c_str(), 4, &meta), TSR_ERROR_MISMATCH);
  ASSERT_EQ(writeShard(dir, 2, meta, {tensor}), TSR_OK) << tsr_last_error();
  EXPECT_EQ(tsr_checkpoint_commit(dir.c_str(), 4, &meta), TSR_OK)
      << tsr_last_error();
}

TEST(Checkpoint, CommitReplacesExistingCheckpoint) {
  std::string root = scratchDir();
  std::string dir = root + "/step-00000010";
  writeCheckpoint(dir, makeMeta(10, 4), shardedState());

  // A resumed run on 2 ranks saves the same step again; a leftover of an
  // earlier attempt in the temporary directory is dropped.
  std::filesystem::create_directories(dir + ".tmp");
  writeBytes(shardPath(dir + ".tmp", 5, 8), "stale");
  tsr_checkpoint_meta_t meta = makeMeta(10, 2, "model-def");
  std::vector<GlobalTensor> tensors = {
      randomTensor("w", TSR_DTYPE_FLOAT32, {7}, 2, 11)};
  writeCheckpoint(dir, meta, tensors);

  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));
  EXPECT_FALSE(std::filesystem::exists(dir + ".old"));
  std::vector<std::string> files;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"manifest.json",
                                             "shard-00000-of-00002.bin",
                                             "shard-00001-of-00002.bin"}));
  CheckpointPtr checkpoint = openCheckpoint(dir);
  ASSERT_TRUE(checkpoint);
  tsr_checkpoint_meta_t read;
  ASSERT_EQ(tsr_checkpoint_meta(checkpoint.get(), &read), TSR_OK);
  EXPECT_STREQ(read.fingerprint, "model-def");
  EXPECT_EQ(read.world_size, 2);
  EXPECT_EQ(tsr_checkpoint_num_tensors(checkpoint.get()), 1u);
  expectReadsAll(checkpoint.get(), tensors, 2);
}

TEST(Checkpoint, LatestIgnoresIncompleteDirectories) {
  std::string root = scratchDir();
  char path[512];
  ASSERT_EQ(tsr_checkpoint_latest(root.c_str(), path, sizeof(path)), TSR_OK);
  EXPECT_STREQ(path, "");
  ASSERT_EQ(
      tsr_checkpoint_latest((root + "/absent").c_str(), path, sizeof(path)),
      TSR_OK);
  EXPECT_STREQ(path, "");

  std::vector<GlobalTensor> tensors = shardedState();
  writeCheckpoint(root + "/step-00000009", makeMeta(9, 4), tensors);
  writeCheckpoint(root + "/step-00000010", makeMeta(10, 4), tensors);
  // A save that crashed before its commit, one without a manifest, and
  // names that are not checkpoints.
  for (int64_t r = 0; r < 4; ++r)
    ASSERT_EQ(writeShard(root + "/step-00000030", r, makeMeta(30, 4), tensors),
              TSR_OK);
  std::filesystem::create_directories(root + "/step-00000020");
  std::filesystem::create_directories(root + "/step-00000040.old");
  std::filesystem::create_directories(root + "/step-x");
  writeBytes(root + "/step-00000050", "a file");

  ASSERT_EQ(tsr_checkpoint_latest(root.c_str(), path, sizeof(path)), TSR_OK)
      << tsr_last_error();
  EXPECT_EQ(std::string(path), root + "/step-00000010");
  EXPECT_TRUE(openCheckpoint(path));
  ASSERT_EQ(tsr_checkpoint_latest((root + "/").c_str(), path, sizeof(path)),
            TSR_OK);
  EXPECT_EQ(std::string(path), root + "/step-00000010");

  EXPECT_EQ(tsr_checkpoint_latest(root.c_str(), path, 8),
            TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tsr_checkpoint_latest((root + "/step-00000050").c_str(), path,
                                  sizeof(path)),
            TSR_ERROR_IO);
}

TEST(Checkpoint, DocumentedExample) {
  // docs/checkpoints.md shows the manifest.json this writes.
  std::string dir = scratchDir() + "/step-00000100";
  tsr_checkpoint_meta_t meta = makeMeta(100, 2, "sha256:5d41402abc4b2a76");
  meta.mesh = "dp=2";
  std::vector<GlobalTensor> tensors = {
      randomTensor("fc.weight", TSR_DTYPE_FLOAT32, {3, 5}, 2, 1),
      randomTensor("fc.bias", TSR_DTYPE_FLOAT32, {5}, 1, 2),
      randomTensor("fc.weight.adam_m", TSR_DTYPE_FLOAT32, {3, 5}, 2, 3)};
  writeCheckpoint(dir, meta, tensors);
  CheckpointPtr checkpoint = openCheckpoint(dir);
  ASSERT_TRUE(checkpoint);
  expectReadsAll(checkpoint.get(), tensors, 3);
}
