//===- TrainTest.cpp - Train manifests, datasets, trainer, --train --------===//
//
// The fake train artifacts (TrainLinearModel.c, TrainTokenModel.c) compute
// what the reference functions below compute, in the same order of float
// operations, so losses and trained params are compared exactly.
//
//===----------------------------------------------------------------------===//

#include "FakeOnnx.h"
#include "Fixtures.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

using namespace tsr::test;
namespace fs = std::filesystem;

namespace {

struct DatasetDeleter {
  void operator()(tsr_dataset_t *dataset) const {
    tsr_dataset_destroy(dataset);
  }
};
using DatasetPtr = std::unique_ptr<tsr_dataset_t, DatasetDeleter>;

struct TrainerDeleter {
  void operator()(tsr_trainer_t *trainer) const {
    tsr_trainer_destroy(trainer);
  }
};
using TrainerPtr = std::unique_ptr<tsr_trainer_t, TrainerDeleter>;

TrainerPtr createTrainer(tsr_artifact_t *artifact) {
  tsr_trainer_t *trainer = nullptr;
  EXPECT_EQ(tsr_trainer_create(artifact, &trainer), TSR_OK) << tsr_last_error();
  return TrainerPtr(trainer);
}

DatasetPtr openNpz(tsr_artifact_t *artifact, const std::string &path) {
  tsr_dataset_t *dataset = nullptr;
  EXPECT_EQ(tsr_dataset_open_npz(artifact, path.c_str(), &dataset), TSR_OK)
      << tsr_last_error();
  return DatasetPtr(dataset);
}

DatasetPtr openTokens(tsr_artifact_t *artifact, const std::string &path,
                      tsr_dtype_t dtype = TSR_DTYPE_UINT16) {
  tsr_dataset_t *dataset = nullptr;
  EXPECT_EQ(tsr_dataset_open_tokens(artifact, path.c_str(), dtype, &dataset),
            TSR_OK)
      << tsr_last_error();
  return DatasetPtr(dataset);
}

std::string readManifest(const char *artifact) {
  return readBytes(std::string(artifact) + "/manifest.json");
}

//===----------------------------------------------------------------------===//
// The linear model: 6 samples of 2 features, batches of 4.
//===----------------------------------------------------------------------===//

const std::vector<float> kLinearX = {1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 1, -1};
const std::vector<float> kLinearY = {1, 2, 3, 2, 4, 0};
constexpr int kBatch = 4, kSamples = 6;

std::string linearNpz(bool deflated, const std::vector<float> &x = kLinearX) {
  return zipBytes({{"x.npy", npyBytes("<f4", {kSamples, 2}, x)},
                   {"y.npy", npyBytes("<f4", {kSamples}, kLinearY)}},
                  deflated);
}

struct LinearParams {
  std::vector<float> w = {0.5f, -1.0f};
  float b = 0.25f;
};

/// One step of TrainLinearModel.c on the batch of `step`.
float referenceStep(LinearParams &params, int step,
                    const std::vector<float> &x = kLinearX) {
  const float lr = 0.125f;
  float residual[kBatch], grad[3] = {0, 0, 0}, sum = 0;
  int samples[kBatch];
  for (int i = 0; i < kBatch; ++i)
    samples[i] = (step * kBatch + i) % kSamples;
  for (int i = 0; i < kBatch; ++i) {
    float p = params.b;
    for (int f = 0; f < 2; ++f)
      p += params.w[f] * x[samples[i] * 2 + f];
    residual[i] = p - kLinearY[samples[i]];
    sum += residual[i] * residual[i];
  }
  float loss = sum / kBatch;
  for (int i = 0; i < kBatch; ++i) {
    float scale = 2 * residual[i] / kBatch;
    for (int f = 0; f < 2; ++f)
      grad[f] += scale * x[samples[i] * 2 + f];
    grad[2] += scale;
  }
  for (int f = 0; f < 2; ++f)
    params.w[f] = params.w[f] - lr * grad[f];
  params.b = params.b - lr * grad[2];
  return loss;
}

std::vector<float> referenceLosses(int steps, LinearParams *final = nullptr) {
  LinearParams params;
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s)
    losses.push_back(referenceStep(params, s));
  if (final)
    *final = params;
  return losses;
}

//===----------------------------------------------------------------------===//
// The token model: windows of 3 tokens, batches of 2.
//===----------------------------------------------------------------------===//

/// 11 tokens, 10..20: 3 windows; the last token is never used.
std::vector<uint32_t> streamTokens() {
  std::vector<uint32_t> tokens;
  for (uint32_t t = 10; t <= 20; ++t)
    tokens.push_back(t);
  return tokens;
}

template <typename T>
void writeStream(const std::string &path, const std::vector<uint32_t> &tokens) {
  std::vector<T> narrow(tokens.begin(), tokens.end());
  writeBytes(path, std::string(reinterpret_cast<const char *>(narrow.data()),
                               narrow.size() * sizeof(T)));
}

/// The loss TrainTokenModel.c reports at `step` for `tokens`.
float referenceTokenLoss(const std::vector<uint32_t> &tokens, int step) {
  const int windowTokens = 3, batch = 2;
  int windows = (static_cast<int>(tokens.size()) - 1) / windowTokens;
  int64_t sumTokens = 0, sumTargets = 0;
  for (int j = 0; j < batch; ++j) {
    int w = (step * batch + j) % windows;
    for (int t = 0; t < windowTokens; ++t) {
      sumTokens += tokens[w * windowTokens + t];
      sumTargets += tokens[w * windowTokens + t + 1];
    }
  }
  float bias = 1.5f + 0.5f * step;
  return bias + static_cast<float>(sumTokens) +
         1000.0f * static_cast<float>(sumTargets);
}

std::string format(const char *pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), pattern, value);
  return text;
}

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

/// Expects tsr_last_error() to contain `needle` and be one line.
void expectLastError(const std::string &needle) {
  std::string message = tsr_last_error();
  EXPECT_NE(message.find(needle), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

} // namespace

//===----------------------------------------------------------------------===//
// Manifests
//===----------------------------------------------------------------------===//

TEST(TrainManifest, ReadsRolesAndTrainInfo) {
  ArtifactPtr linear = loadArtifact(TSR_TEST_LINEAR_ARTIFACT);
  ASSERT_TRUE(linear);
  EXPECT_STREQ(tsr_artifact_mode(linear.get()), "train");
  EXPECT_EQ(tsr_artifact_onnx(linear.get()),
            std::string(TSR_TEST_LINEAR_ARTIFACT) + "/model.onnx");
  tsr_tensor_info_t info;
  ASSERT_EQ(tsr_artifact_input_info(linear.get(), 2, &info), TSR_OK);
  EXPECT_STREQ(info.name, "lr");
  EXPECT_EQ(info.role, TSR_ROLE_STATE);
  EXPECT_EQ(info.init, 0.125);
  EXPECT_EQ(info.updates, -1);
  ASSERT_EQ(tsr_artifact_input_info(linear.get(), 4, &info), TSR_OK);
  EXPECT_EQ(info.role, TSR_ROLE_DATA);
  ASSERT_EQ(tsr_artifact_output_info(linear.get(), 3, &info), TSR_OK);
  EXPECT_EQ(info.role, TSR_ROLE_STATE);
  EXPECT_EQ(info.updates, 3);
  ASSERT_EQ(tsr_artifact_output_info(linear.get(), 4, &info), TSR_OK);
  EXPECT_EQ(info.role, TSR_ROLE_METRIC);
  EXPECT_STREQ(tsr_role_name(info.role), "metric");
  EXPECT_STREQ(tsr_role_name(TSR_ROLE_NONE), "");

  tsr_train_info_t train;
  ASSERT_EQ(tsr_artifact_train_info(linear.get(), &train), TSR_OK);
  EXPECT_EQ(train.batch_size, 4);
  EXPECT_EQ(train.micro_batches, 2);
  EXPECT_EQ(train.num_classes, 0);
  EXPECT_FALSE(train.has_ignore_index);
  EXPECT_EQ(train.token_input, -1);
  EXPECT_EQ(train.loss_output, 0u);

  ArtifactPtr token = loadArtifact(TSR_TEST_TOKEN_ARTIFACT);
  ASSERT_EQ(tsr_artifact_train_info(token.get(), &train), TSR_OK);
  EXPECT_EQ(train.num_classes, 50);
  EXPECT_TRUE(train.has_ignore_index);
  EXPECT_EQ(train.ignore_index, -100);
  EXPECT_EQ(train.token_input, 1);
  EXPECT_EQ(train.token_label, 2);

  ArtifactPtr infer = loadArtifact(TSR_TEST_FAKE_ARTIFACT);
  ASSERT_EQ(tsr_artifact_input_info(infer.get(), 0, &info), TSR_OK);
  EXPECT_EQ(info.role, TSR_ROLE_DATA);
  ASSERT_EQ(tsr_artifact_output_info(infer.get(), 0, &info), TSR_OK);
  EXPECT_EQ(info.role, TSR_ROLE_NONE);
  EXPECT_EQ(tsr_artifact_onnx(infer.get()), std::string());
  EXPECT_EQ(tsr_artifact_train_info(infer.get(), &train),
            TSR_ERROR_INVALID_ARGUMENT);
  expectLastError("mode \"infer\" has no train information");
}

TEST(TrainManifest, RejectsBadTrainManifests) {
  std::string dir = scratchDir();
  std::string linear = readManifest(TSR_TEST_LINEAR_ARTIFACT);
  std::string token = readManifest(TSR_TEST_TOKEN_ARTIFACT);
  auto expectLoadError = [&](const std::string &manifest,
                             const std::string &needle) {
    std::string art =
        artifactWithManifest(dir, manifest, TSR_TEST_LINEAR_ARTIFACT);
    tsr_artifact_t *artifact = nullptr;
    EXPECT_EQ(tsr_artifact_load(art.c_str(), &artifact), TSR_ERROR_PARSE)
        << needle;
    EXPECT_EQ(artifact, nullptr);
    expectLastError(art + "/manifest.json: " + needle);
  };
  auto linearWith = [&](const std::string &from, const std::string &to) {
    return replaced(linear, from, to);
  };
  const std::string metric =
      R"({"name": "prediction", "dtype": "float32", "shape": [4], )"
      R"("role": "metric"})";
  const std::string trainObject =
      R"("train": {"batch_size": 4, "micro_batches": 2})";

  expectLoadError(
      linearWith(R"("role": "param"})", R"("role": "weights"})"),
      "programs[0].inputs[0].role: unknown input role \"weights\" (expected "
      "param, state, data, label, rng or sync)");
  expectLoadError(
      linearWith(R"("role": "state", "init": 0.125})", R"("role": "rng"})"),
      "input 2 'lr' (rng) is float32[], expected an int64 scalar");
  expectLoadError(
      linearWith(R"("role": "state", "init": 0.125})", R"("role": "sync"})"),
      "input 2 'lr' (sync) is float32[], expected an int64 scalar");
  expectLoadError(
      linearWith(R"("train": {)", R"("local_sgd": {"steps": 0}, "train": {)"),
      "local_sgd.steps must be an integer >= 1");
  expectLoadError(linearWith(R"("train": {)", R"("local_sgd": {}, "train": {)"),
                  "missing \"steps\" in local_sgd");
  expectLoadError(linearWith(R"("train": {)", R"("local_sgd": 4, "train": {)"),
                  "local_sgd must be an object");
  expectLoadError(linearWith(R"("train": {)", R"("train": {"hparams": 3, )"),
                  "train.hparams must be an object");
  expectLoadError(
      linearWith(R"("train": {)", R"("train": {"hparams": {"lr": 0.1}, )"),
      "train.hparams.lr must be a string (the value as the compiler's flag "
      "spelled it)");
  expectLoadError(
      linearWith(R"("role": "metric")", R"("role": "data")"),
      "programs[0].outputs[4].role: unknown output role \"data\" (expected "
      "loss, param, state, metric or grad)");
  expectLoadError(linearWith(R"("role": "metric")", R"("role": 3)"),
                  "programs[0].outputs[4].role must be a string");
  expectLoadError(
      linearWith(R"("updates": 0)", R"("updates": 9)"),
      "programs[0].outputs[1].updates: 9 is not an input index (the artifact "
      "has 6 inputs)");
  expectLoadError(linearWith(R"("updates": 0)", R"("updates": -1)"),
                  "programs[0].outputs[1].updates must be an integer >= 0");
  expectLoadError(
      linearWith(R"("updates": 1)", R"("updates": 0)"),
      "programs[0].outputs[2] 'b' is float32[] but input 0 'w' that it "
      "updates is float32[2]");
  expectLoadError(
      linearWith(R"("updates": 1)", R"("updates": 2)"),
      "programs[0].outputs[2] has role \"param\" but updates input 2 'lr' of "
      "role \"state\"");
  expectLoadError(
      linearWith(metric, R"({"name": "b2", "dtype": "float32", "shape": [], )"
                         R"("role": "param", "updates": 1})"),
      "programs[0].outputs[4] updates input 1 'b', which "
      "programs[0].outputs[2] already updates");
  expectLoadError(
      linearWith(R"(, "updates": 0})", "}"),
      "programs[0].outputs[1] has role \"param\" but no \"updates\"");
  expectLoadError(
      linearWith(R"("role": "metric"})", R"("role": "metric", "updates": 0})"),
      "programs[0].outputs[4].updates is only for param and state outputs");
  expectLoadError(linearWith(R"("role": "metric")", R"("role": "grad")"),
                  "programs[0].outputs[4] has role \"grad\" but no \"of\"");
  expectLoadError(
      linearWith(R"("role": "metric"})", R"("role": "metric", "of": 4})"),
      "programs[0].outputs[4].of is only for grad outputs");
  expectLoadError(
      linearWith(R"("role": "metric"})", R"("role": "grad", "of": 0})"),
      "programs[0].outputs[4] 'prediction' is float32[4] but input 0 'w' that "
      "it is the "
      "gradient of is float32[2]");
  expectLoadError(linearWith(R"("init": 0.125)", R"("init": "x")"),
                  "programs[0].inputs[2].init must be a number");
  expectLoadError(
      linearWith(R"("role": "state"})", R"("role": "state", "init": 0.5})"),
      "programs[0].inputs[3].init: 0.5 is not representable in int64");
  expectLoadError(
      linearWith(R"("init": 0.125)", R"("init": 1e40)"),
      "programs[0].inputs[2].init: 1e+40 is not representable in float32");
  expectLoadError(
      linearWith(R"("role": "param"})", R"("role": "param", "init": 1})"),
      "programs[0].inputs[0].init is only for state inputs");
  expectLoadError(linearWith(trainObject, R"("trian": {})"),
                  "missing \"train\" (required in mode \"train\")");
  expectLoadError(linearWith(trainObject, R"("train": [4])"),
                  "train must be an object");
  expectLoadError(linearWith(R"("batch_size": 4, )", ""),
                  "missing \"batch_size\" in train");
  expectLoadError(linearWith(R"("batch_size": 4)", R"("batch_size": 0)"),
                  "train.batch_size must be an integer >= 1");
  expectLoadError(linearWith(R"("batch_size": 4)", R"("batch_size": 8)"),
                  "input 4 'x' (data) is float32[4, 2] but its first "
                  "dimension must be train.batch_size 8");
  expectLoadError(
      linearWith(R"("micro_batches": 2)", R"("micro_batches": 1.5)"),
      "train.micro_batches must be an integer >= 1");
  expectLoadError(linearWith(R"("micro_batches": 2})",
                             R"("micro_batches": 2, "num_classes": 10})"),
                  "train.num_classes is set but the label input 5 'y' is "
                  "float32[4], not an integer tensor");
  expectLoadError(
      linearWith(R"("micro_batches": 2})",
                 R"("micro_batches": 2, "tokens": {"input": "x"}})"),
      "train.tokens.input: input 4 'x' is float32[4, 2], expected int32 or "
      "int64");
  expectLoadError(
      linearWith(R"("micro_batches": 2})",
                 R"("micro_batches": 2, "tokens": {"input": "zz"}})"),
      "train.tokens.input: no input is named 'zz'");
  expectLoadError(
      linearWith(R"("micro_batches": 2})",
                 R"("micro_batches": 2, "tokens": {"input": "y"}})"),
      "train.tokens.input: input 5 'y' has role \"label\", expected \"data\"");
  expectLoadError(
      replaced(token, R"("label": "targets")", R"("label": "tokens")"),
      "train.tokens.label: input 1 'tokens' has role \"data\", expected "
      "\"label\"");
  expectLoadError(replaced(token, R"(, "label": "targets")", ""),
                  "missing \"label\" in train.tokens");
  expectLoadError(replaced(token, R"("int64", "shape": [2, 3])",
                           R"("int64", "shape": [2, 4])"),
                  "train.tokens: the input 'tokens' is int32[2, 3] but the "
                  "label 'targets' is int64[2, 4]; shapes must be equal");
  expectLoadError(replaced(token, R"("int32", "shape": [2, 3])",
                           R"("int32", "shape": [2, 3, 1])"),
                  "train.tokens.input: input 1 'tokens' is int32[2, 3, 1], "
                  "expected shape [batch, tokens]");
  expectLoadError(
      replaced(token, R"({"input": "tokens", "label": "targets"})", "5"),
      "train.tokens must be an object");
  expectLoadError(linearWith(R"("role": "loss")", R"("role": "metric")"),
                  "no output has role \"loss\" (mode \"train\" needs exactly "
                  "one)");
  expectLoadError(linearWith(metric, R"({"name": "other", "dtype": "float32", )"
                                     R"("shape": [], "role": "loss"})"),
                  "programs[0].outputs[4]: a second output with role \"loss\" "
                  "(programs[0].outputs[0] is one)");
  expectLoadError(
      linearWith(R"("loss", "dtype": "float32", "shape": [])",
                 R"("loss", "dtype": "float32", "shape": [1])"),
      "programs[0].outputs[0] (loss 'loss') is float32[1], expected a float32 "
      "or float64 scalar");
  expectLoadError(
      linearWith(R"("loss", "dtype": "float32", "shape": [])",
                 R"("loss", "dtype": "int64", "shape": [])"),
      "programs[0].outputs[0] (loss 'loss') is int64[], expected a float32 "
      "or float64 scalar");
  expectLoadError(linearWith(R"("onnx": "model.onnx",)", ""),
                  "missing \"onnx\" (param inputs take their initial values "
                  "from its initializers)");
  expectLoadError(linearWith(R"("onnx": "model.onnx")", R"("onnx": 5)"),
                  "onnx must be a string");
  expectLoadError(
      linearWith(R"({"name": "lr")", R"({"name": "w")"),
      "programs[0].inputs[2]: name 'w' is also programs[0].inputs[0]'s");

  // "in_place": a boolean, on an output that updates an input.
  expectLoadError(
      linearWith(R"("updates": 0})", R"("updates": 0, "in_place": 1})"),
      "programs[0].outputs[1].in_place must be true or false");
  expectLoadError(
      linearWith(R"("role": "loss"})", R"("role": "loss", "in_place": true})"),
      "programs[0].outputs[0].in_place is only for outputs that update an "
      "input");

  // "on_host": a boolean, and a host program beside a device's programs is
  // the CPU target's alone.
  expectLoadError(linearWith(R"("entry": "tessera_entry",)",
                             R"("entry": "tessera_entry", "on_host": 1,)"),
                  "programs[0].on_host must be true or false");
  expectLoadError(
      replaced(linearWith(R"("entry": "tessera_entry",)",
                          R"("entry": "tessera_entry", "on_host": true,)"),
               R"("target": "cpu")", R"("target": "cuda")"),
      "programs[0] runs on the host, which only target \"cpu\" artifacts "
      "support (target \"cuda\")");

  // Mode "grad" needs neither "train" nor a loss.
  std::string grad = replaced(linearWith(trainObject, R"("other": {})"),
                              R"("mode": "train")", R"("mode": "grad")");
  std::string art = artifactWithManifest(
      dir,
      replaced(grad, R"("role": "metric"})", R"("role": "grad", "of": 5})"),
      TSR_TEST_LINEAR_ARTIFACT);
  ArtifactPtr artifact = loadArtifact(art);
  tsr_tensor_info_t info;
  ASSERT_EQ(tsr_artifact_output_info(artifact.get(), 4, &info), TSR_OK);
  EXPECT_EQ(info.role, TSR_ROLE_GRAD);
  EXPECT_EQ(info.of, 5);
}

// A param split over tp holds a block of its whole tensor ("sharding" per
// dimension of "global_shape"), under ZeRO a flat dp shard of that block.
TEST(TrainManifest, ReadsAndChecksSplitLayouts) {
  std::string dir = scratchDir();
  std::string linear =
      replaced(readManifest(TSR_TEST_LINEAR_ARTIFACT), R"("target": "cpu",)",
               R"("target": "cpu", "mesh": [{"name": "dp", "size": 2},
                  {"name": "tp", "size": 2}],)");
  linear = replaced(linear, R"("micro_batches": 2)",
                    R"("micro_batches": 2, "global_batch_size": 8)");
  const std::string w =
      R"({"name": "w", "dtype": "float32", "shape": [2], "role": "param"})";
  auto withW = [&](const std::string &entry) {
    return replaced(linear, w, entry);
  };
  // w: the block [3] of a whole [6] on tp, flat over dp: 2 elements.
  std::string split =
      withW(R"({"name": "w", "dtype": "float32", "shape": [2], )"
            R"("role": "param", "sharding": [["tp"]], "global_shape": [6], )"
            R"("shards": 2})");
  ArtifactPtr artifact =
      loadArtifact(artifactWithManifest(dir, split, TSR_TEST_LINEAR_ARTIFACT));
  ASSERT_TRUE(artifact) << tsr_last_error();
  tsr_tensor_info_t info;
  ASSERT_EQ(tsr_artifact_input_info(artifact.get(), 0, &info), TSR_OK);
  EXPECT_EQ(info.shards, 2);
  ASSERT_EQ(info.global_rank, 1u);
  EXPECT_EQ(info.global_shape[0], 6);

  auto expectLoadError = [&](const std::string &entry,
                             const std::string &needle) {
    std::string art =
        artifactWithManifest(dir, withW(entry), TSR_TEST_LINEAR_ARTIFACT);
    tsr_artifact_t *loaded = nullptr;
    EXPECT_EQ(tsr_artifact_load(art.c_str(), &loaded), TSR_ERROR_PARSE)
        << needle;
    EXPECT_EQ(loaded, nullptr);
    expectLastError(art + "/manifest.json: programs[0].inputs[0]" + needle);
  };
  const std::string head =
      R"({"name": "w", "dtype": "float32", "role": "param", )";
  expectLoadError(head + R"("shape": [2], "sharding": [["tp"]]})",
                  ": shards and sharding need a global_shape array");
  expectLoadError(head + R"("shape": [2], "global_shape": [4]})",
                  ": global_shape needs shards or sharding");
  expectLoadError(
      head + R"("shape": [2], "sharding": [["tp"], []], "global_shape": [4]})",
      ".sharding must hold one list of mesh axes per dimension of "
      "global_shape (1)");
  expectLoadError(head +
                      R"("shape": [2], "sharding": [["ep"]], "global_shape": )"
                      R"([4]})",
                  ".sharding[0]: 'ep' is not an axis of mesh");
  expectLoadError(head + R"("shape": [2, 2], "sharding": [["tp"], ["tp"]], )"
                         R"("global_shape": [4, 4]})",
                  ".sharding: mesh axis 'tp' splits two dimensions");
  expectLoadError(
      head + R"("shape": [2], "sharding": [["tp"]], "global_shape": [5]})",
      ".sharding: dimension 0 of global_shape [5] cannot be split into 2 "
      "equal blocks");
  expectLoadError(
      head + R"("shape": [3], "sharding": [["tp"]], "global_shape": [4]})",
      ": the block [2] of [4] has shape [2], not [3]");
  expectLoadError(head + R"("shape": [3], "sharding": [["dp", "tp"]], )"
                         R"("global_shape": [8], "shards": 2})",
                  ": a shard over 2 ranks of the block [2] of [8] has shape "
                  "[1], not [3]");
}

//===----------------------------------------------------------------------===//
// Datasets
//===----------------------------------------------------------------------===//

TEST(Dataset, NpzBatchesWrapAround) {
  std::string dir = scratchDir();
  std::vector<float> x;
  std::vector<float> y;
  for (int i = 0; i < kSamples; ++i) {
    x.insert(x.end(), {float(i), float(10 + i)});
    y.push_back(float(100 + i));
  }
  std::string path = dir + "/data.npz";
  writeBytes(path, zipBytes({{"y.npy", npyBytes("<f4", {kSamples}, y)},
                             {"extra.npy", npyBytes("<f4", {kSamples}, y)},
                             {"x.npy", npyBytes("<f4", {kSamples, 2}, x)}},
                            true));
  ArtifactPtr artifact = loadArtifact(TSR_TEST_LINEAR_ARTIFACT);
  DatasetPtr dataset = openNpz(artifact.get(), path);
  ASSERT_TRUE(dataset);
  EXPECT_EQ(tsr_dataset_num_samples(dataset.get()), kSamples);
  EXPECT_EQ(tsr_dataset_num_tokens(dataset.get()), 0);
  TrainerPtr trainer = createTrainer(artifact.get());
  std::vector<tsr_tensor_t *> inputs;
  for (size_t i = 0; i < 6; ++i)
    inputs.push_back(tsr_trainer_input(trainer.get(), i));
  auto expectBatch = [&](int64_t step, std::vector<int> samples) {
    ASSERT_EQ(tsr_dataset_fill_batch(dataset.get(), step, inputs.data(), 6),
              TSR_OK)
        << tsr_last_error();
    std::vector<float> xs, ys;
    for (int s : samples) {
      xs.insert(xs.end(), {float(s), float(10 + s)});
      ys.push_back(float(100 + s));
    }
    EXPECT_EQ(elements<float>(inputs[4]), xs) << "step " << step;
    EXPECT_EQ(elements<float>(inputs[5]), ys) << "step " << step;
  };
  expectBatch(0, {0, 1, 2, 3});
  expectBatch(1, {4, 5, 0, 1});
  expectBatch(2, {2, 3, 4, 5});
  expectBatch(3, {0, 1, 2, 3});
  // Without overflow: (10^15 + 1) * 4 = 2 and (2^63 - 1) * 4 = 4 (mod 6).
  expectBatch(1000000000000001, {2, 3, 4, 5});
  expectBatch(INT64_MAX, {4, 5, 0, 1});
  // Inputs that are not data or labels are left alone.
  EXPECT_EQ(elements<float>(inputs[2]), (std::vector<float>{0.125f}));

  EXPECT_EQ(tsr_dataset_fill_batch(dataset.get(), -1, inputs.data(), 6),
            TSR_ERROR_INVALID_ARGUMENT);
  expectLastError("step -1 is negative");
  EXPECT_EQ(tsr_dataset_fill_batch(dataset.get(), 0, inputs.data(), 5),
            TSR_ERROR_INVALID_ARGUMENT);
  expectLastError("the artifact takes 6 inputs, got 5");
  std::swap(inputs[4], inputs[5]);
  EXPECT_EQ(tsr_dataset_fill_batch(dataset.get(), 0, inputs.data(), 6),
            TSR_ERROR_MISMATCH);
  expectLastError("input 4 'x': expected a float32[4, 2] tensor");
}

TEST(Dataset, ShuffledEpochsArePermutations) {
  std::string dir = scratchDir();
  std::vector<float> x;
  std::vector<float> y;
  for (int i = 0; i < kSamples; ++i) {
    x.insert(x.end(), {float(i), float(10 + i)});
    y.push_back(float(100 + i));
  }
  std::string path = dir + "/data.npz";
  writeBytes(path, zipBytes({{"x.npy", npyBytes("<f4", {kSamples, 2}, x)},
                             {"y.npy", npyBytes("<f4", {kSamples}, y)}},
                            false));
  ArtifactPtr artifact = loadArtifact(TSR_TEST_LINEAR_ARTIFACT);
  DatasetPtr dataset = openNpz(artifact.get(), path);
  ASSERT_TRUE(dataset);
  TrainerPtr trainer = createTrainer(artifact.get());
  std::vector<tsr_tensor_t *> inputs;
  for (size_t i = 0; i < 6; ++i)
    inputs.push_back(tsr_trainer_input(trainer.get(), i));
  // The samples of steps [0, steps), in order of position (y is 100 + i).
  auto drawn = [&](int64_t steps) {
    std::vector<int> samples;
    for (int64_t step = 0; step < steps; ++step) {
      EXPECT_EQ(tsr_dataset_fill_batch(dataset.get(), step, inputs.data(), 6),
                TSR_OK);
      for (float v : elements<float>(inputs[5]))
        samples.push_back(int(v) - 100);
    }
    return samples;
  };
  // 12 steps of 4 are 8 epochs of 6: each a permutation of the samples.
  tsr_dataset_set_order(dataset.get(), 1, 7);
  std::vector<int> shuffled = drawn(12);
  std::vector<int> sorted(kSamples);
  std::iota(sorted.begin(), sorted.end(), 0);
  std::set<std::vector<int>> epochs;
  for (int e = 0; e < 8; ++e) {
    std::vector<int> epoch(shuffled.begin() + e * kSamples,
                           shuffled.begin() + (e + 1) * kSamples);
    epochs.insert(epoch);
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, sorted) << "epoch " << e;
  }
  EXPECT_GT(epochs.size(), 4u) << "the epochs' orders differ";
  // The order is a function of the seed: again the same, another seed
  // another, and in order once more without shuffling.
  EXPECT_EQ(drawn(12), shuffled);
  tsr_dataset_set_order(dataset.get(), 1, 8);
  EXPECT_NE(drawn(12), shuffled);
  tsr_dataset_set_order(dataset.get(), 0, 7);
  std::vector<int> ordered = drawn(3);
  EXPECT_EQ(ordered, (std::vector<int>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
}

TEST(Dataset, TokenStreamWindows) {
  std::string dir = scratchDir();
  ArtifactPtr artifact = loadArtifact(TSR_TEST_TOKEN_ARTIFACT);
  TrainerPtr trainer = createTrainer(artifact.get());
  std::vector<tsr_tensor_t *> inputs;
  for (size_t i = 0; i < 3; ++i)
    inputs.push_back(tsr_trainer_input(trainer.get(), i));
  for (tsr_dtype_t dtype : {TSR_DTYPE_UINT16, TSR_DTYPE_UINT32}) {
    std::string path = dir + "/tokens.bin";
    if (dtype == TSR_DTYPE_UINT16)
      writeStream<uint16_t>(path, streamTokens());
    else
      writeStream<uint32_t>(path, streamTokens());
    DatasetPtr dataset = openTokens(artifact.get(), path, dtype);
    ASSERT_TRUE(dataset);
    EXPECT_EQ(tsr_dataset_num_tokens(dataset.get()), 11);
    EXPECT_EQ(tsr_dataset_num_samples(dataset.get()), 3);
    auto expectWindows = [&](int64_t step, int first, int second) {
      ASSERT_EQ(tsr_dataset_fill_batch(dataset.get(), step, inputs.data(), 3),
                TSR_OK);
      std::vector<int32_t> tokens;
      std::vector<int64_t> targets;
      for (int w : {first, second}) {
        for (int t = 0; t < 3; ++t) {
          tokens.push_back(10 + w * 3 + t);
          targets.push_back(11 + w * 3 + t);
        }
      }
      EXPECT_EQ(elements<int32_t>(inputs[1]), tokens) << "step " << step;
      EXPECT_EQ(elements<int64_t>(inputs[2]), targets) << "step " << step;
    };
    expectWindows(0, 0, 1);
    expectWindows(1, 2, 0);
    expectWindows(2, 1, 2);
    expectWindows(3, 0, 1);
  }
}

TEST(Dataset, RejectsBadNpzData) {
  std::string dir = scratchDir();
  std::string path = dir + "/data.npz";
  ArtifactPtr linear = loadArtifact(TSR_TEST_LINEAR_ARTIFACT);
  ArtifactPtr token = loadArtifact(TSR_TEST_TOKEN_ARTIFACT);
  auto expectOpenError =
      [&](tsr_artifact_t *artifact,
          const std::vector<std::pair<std::string, std::string>> &members,
          const std::string &needle) {
        writeBytes(path, zipBytes(members, false));
        tsr_dataset_t *dataset = nullptr;
        EXPECT_NE(tsr_dataset_open_npz(artifact, path.c_str(), &dataset),
                  TSR_OK)
            << needle;
        EXPECT_EQ(dataset, nullptr);
        expectLastError(path + ": " + needle);
      };
  std::string x = npyBytes("<f4", {kSamples, 2}, kLinearX);
  std::string y = npyBytes("<f4", {kSamples}, kLinearY);
  expectOpenError(linear.get(), {{"x.npy", x}, {"z.npy", y}},
                  "no array 'y' for input 5 'y' (label); the file holds only "
                  "x, z");
  expectOpenError(linear.get(), {},
                  "no array 'x' for input 4 'x' (data); the file holds no "
                  "arrays");
  expectOpenError(
      linear.get(),
      {{"x.npy",
        npyBytes("<f8", {kSamples, 2},
                 std::vector<double>(kLinearX.begin(), kLinearX.end()))},
       {"y.npy", y}},
      "array 'x' has dtype float64, but input 4 'x' expects float32");
  expectOpenError(linear.get(),
                  {{"x.npy", npyBytes("<f4", {4, 3}, kLinearX)}, {"y.npy", y}},
                  "array 'x' has shape [4, 3], but input 4 'x' (shape [4, 2]) "
                  "needs [N, 2]");
  expectOpenError(linear.get(),
                  {{"x.npy", npyBytes("<f4", {12}, kLinearX)}, {"y.npy", y}},
                  "array 'x' has shape [12], but input 4 'x' (shape [4, 2]) "
                  "needs [N, 2]");
  expectOpenError(
      linear.get(),
      {{"x.npy", x},
       {"y.npy", npyBytes("<f4", {5}, std::vector<float>(5, 1.0f))}},
      "array 'y' has 5 samples, but array 'x' has 6");
  expectOpenError(linear.get(),
                  {{"x.npy", npyBytes<float>("<f4", {0, 2}, {})},
                   {"y.npy", npyBytes<float>("<f4", {0}, {})}},
                  "array 'x' has no samples");

  std::vector<int32_t> tokens(9, 1);
  std::vector<int64_t> targets = {1, 2, 3, -100, 49, 0, 7, 50, 8};
  std::string tokensNpy = npyBytes("<i4", {3, 3}, tokens);
  expectOpenError(token.get(),
                  {{"tokens.npy", tokensNpy},
                   {"targets.npy", npyBytes("<i8", {3, 3}, targets)}},
                  "array 'targets': sample 2 has label 50, which is outside "
                  "[0, 50) and is not ignore_index -100");
  targets[7] = 0;
  targets[1] = -1;
  expectOpenError(token.get(),
                  {{"tokens.npy", tokensNpy},
                   {"targets.npy", npyBytes("<i8", {3, 3}, targets)}},
                  "array 'targets': sample 0 has label -1");
  targets[1] = 2;
  writeBytes(path, zipBytes({{"tokens.npy", tokensNpy},
                             {"targets.npy", npyBytes("<i8", {3, 3}, targets)}},
                            false));
  EXPECT_TRUE(openNpz(token.get(), path));

  writeBytes(path, linearNpz(false).substr(0, 100));
  tsr_dataset_t *dataset = nullptr;
  EXPECT_EQ(tsr_dataset_open_npz(linear.get(), path.c_str(), &dataset),
            TSR_ERROR_PARSE);
  expectLastError(path + ": truncated ZIP archive");
  ArtifactPtr infer = loadArtifact(TSR_TEST_FAKE_ARTIFACT);
  EXPECT_EQ(tsr_dataset_open_npz(infer.get(), path.c_str(), &dataset),
            TSR_ERROR_INVALID_ARGUMENT);
  expectLastError("mode \"infer\" takes no training data");
}

TEST(Dataset, RejectsBadTokenStreams) {
  std::string dir = scratchDir();
  std::string path = dir + "/tokens.bin";
  ArtifactPtr token = loadArtifact(TSR_TEST_TOKEN_ARTIFACT);
  auto expectOpenError = [&](tsr_artifact_t *artifact, const std::string &bytes,
                             const std::string &needle,
                             tsr_dtype_t dtype = TSR_DTYPE_UINT16) {
    writeBytes(path, bytes);
    tsr_dataset_t *dataset = nullptr;
    EXPECT_NE(tsr_dataset_open_tokens(artifact, path.c_str(), dtype, &dataset),
              TSR_OK)
        << needle;
    EXPECT_EQ(dataset, nullptr);
    expectLastError(needle);
  };
  expectOpenError(token.get(), "", path + ": empty token stream");
  expectOpenError(token.get(), std::string(7, '\1'),
                  path + ": 7 bytes are not a whole number of uint16 tokens "
                         "(2 bytes each)");
  expectOpenError(token.get(), std::string(6, '\1'),
                  path + ": 6 bytes are not a whole number of uint32 tokens "
                         "(4 bytes each)",
                  TSR_DTYPE_UINT32);
  expectOpenError(token.get(), std::string(6, '\1'),
                  path + ": 3 tokens are too few for one window of 3 input "
                         "tokens and the label token after them (need 4)");
  std::vector<uint32_t> tokens = streamTokens();
  tokens[7] = 50;
  writeStream<uint16_t>(path, tokens);
  expectOpenError(token.get(), readBytes(path),
                  path + ": token 50 at position 7 is outside [0, 50) "
                         "(train.num_classes)");
  expectOpenError(token.get(), "",
                  "token streams hold uint16 or uint32 ids, "
                  "not int8",
                  TSR_DTYPE_INT8);
  tsr_dataset_t *dataset = nullptr;
  EXPECT_EQ(tsr_dataset_open_tokens(token.get(), (dir + "/none.bin").c_str(),
                                    TSR_DTYPE_UINT16, &dataset),
            TSR_ERROR_IO);
  expectLastError(dir + "/none.bin: cannot open");

  ArtifactPtr linear = loadArtifact(TSR_TEST_LINEAR_ARTIFACT);
  expectOpenError(linear.get(), "\1\0\2\0",
                  path + ": a token stream needs an artifact with "
                         "train.tokens, and " TSR_TEST_LINEAR_ARTIFACT
                         " has none (give an .npz file instead)");

  std::string manifest = readManifest(TSR_TEST_TOKEN_ARTIFACT);
  std::string wide = replaced(manifest, R"("num_classes": 50,)", "");
  ArtifactPtr noClasses = loadArtifact(
      artifactWithManifest(dir + "/wide", wide, TSR_TEST_TOKEN_ARTIFACT));
  tokens = streamTokens();
  tokens[4] = 3000000000u;
  writeStream<uint32_t>(path, tokens);
  expectOpenError(noClasses.get(), readBytes(path),
                  path + ": token 3000000000 at position 4 does not fit the "
                         "int32 token inputs",
                  TSR_DTYPE_UINT32);

  std::string masked =
      replaced(manifest, R"("role": "label"})",
               R"("role": "label"}, {"name": "mask", "dtype": "bool", )"
               R"("shape": [2, 3], "role": "data"})");
  ArtifactPtr withMask = loadArtifact(
      artifactWithManifest(dir + "/masked", masked, TSR_TEST_TOKEN_ARTIFACT));
  writeStream<uint16_t>(path, streamTokens());
  expectOpenError(withMask.get(), readBytes(path),
                  path + ": input 3 'mask' (data) cannot be fed from a token "
                         "stream (give an .npz file instead)");
}

//===----------------------------------------------------------------------===//
// Trainer
//===----------------------------------------------------------------------===//

TEST(Trainer, StepsSwapBuffersAndMatchTheReference) {
  std::string dir = scratchDir();
  std::string path = dir + "/data.npz";
  writeBytes(path, linearNpz(false));
  ArtifactPtr artifact = loadArtifact(TSR_TEST_LINEAR_ARTIFACT);
  DatasetPtr dataset = openNpz(artifact.get(), path);
  TrainerPtr trainer = createTrainer(artifact.get());
  ASSERT_TRUE(trainer && dataset);
  tsr_trainer_t *t = trainer.get();
  EXPECT_EQ(elements<float>(tsr_trainer_input(t, 0)),
            (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(elements<float>(tsr_trainer_input(t, 1)),
            (std::vector<float>{0.25f}));
  EXPECT_EQ(elements<float>(tsr_trainer_input(t, 2)),
            (std::vector<float>{0.125f}));
  EXPECT_EQ(elements<int64_t>(tsr_trainer_input(t, 3)),
            (std::vector<int64_t>{0}));
  EXPECT_STREQ(tsr_tensor_name(tsr_trainer_input(t, 4)), "x");
  EXPECT_STREQ(tsr_tensor_name(tsr_trainer_output(t, 4)), "prediction");
  EXPECT_EQ(tsr_trainer_input(t, 6), nullptr);
  EXPECT_EQ(tsr_trainer_output(t, 5), nullptr);

  size_t base = 0;
  tsr_memory_stats(&base, nullptr);
  tsr_memory_reset_peak();
  LinearParams reference;
  for (int step = 0; step < 7; ++step) {
    void *weights = tsr_tensor_data(tsr_trainer_input(t, 0));
    void *newWeights = tsr_tensor_data(tsr_trainer_output(t, 1));
    float loss = 0;
    ASSERT_EQ(tsr_trainer_step(t, dataset.get(), step, &loss), TSR_OK)
        << tsr_last_error();
    EXPECT_EQ(loss, referenceStep(reference, step)) << "step " << step;
    EXPECT_EQ(elements<float>(tsr_trainer_input(t, 0)), reference.w);
    EXPECT_EQ(elements<float>(tsr_trainer_input(t, 1)),
              (std::vector<float>{reference.b}));
    EXPECT_EQ(elements<int64_t>(tsr_trainer_input(t, 3)),
              (std::vector<int64_t>{step + 1}));
    EXPECT_EQ(elements<float>(tsr_trainer_input(t, 2)),
              (std::vector<float>{0.125f}));
    // Swapped, not copied.
    EXPECT_EQ(tsr_tensor_data(tsr_trainer_input(t, 0)), newWeights);
    EXPECT_EQ(tsr_tensor_data(tsr_trainer_output(t, 1)), weights);
  }
  size_t current = 0, peak = 0;
  tsr_memory_stats(&current, &peak);
  EXPECT_EQ(current, base);
  EXPECT_EQ(peak, base + 28);

  float loss;
  EXPECT_EQ(tsr_trainer_step(t, dataset.get(), -3, &loss),
            TSR_ERROR_INVALID_ARGUMENT);
  expectLastError("step -3 is negative");
}

/// The linear artifact with w, b and step written over their inputs, as
/// tsr-donate-updates compiles them (TrainLinearModel.c reads every input
/// before it writes the output that updates it).
std::string inPlaceLinear(const std::string &dir) {
  std::string manifest = readManifest(TSR_TEST_LINEAR_ARTIFACT);
  for (const char *updates :
       {R"("updates": 0})", R"("updates": 1})", R"("updates": 3})"})
    manifest =
        replaced(manifest, updates,
                 std::string(updates).insert(std::string(updates).size() - 1,
                                             R"(, "in_place": true)"));
  return artifactWithManifest(dir, manifest, TSR_TEST_LINEAR_ARTIFACT);
}

// A trainer passes an in-place output the buffer of the input it updates:
// the step writes over it and nothing is swapped or copied.
TEST(Trainer, InPlaceOutputsWriteOverTheirInputs) {
  std::string dir = scratchDir();
  std::string path = dir + "/data.npz";
  writeBytes(path, linearNpz(false));
  ArtifactPtr artifact = loadArtifact(inPlaceLinear(dir));
  DatasetPtr dataset = openNpz(artifact.get(), path);
  TrainerPtr trainer = createTrainer(artifact.get());
  ASSERT_TRUE(trainer && dataset);
  tsr_trainer_t *t = trainer.get();
  void *weights = tsr_tensor_data(tsr_trainer_input(t, 0));
  EXPECT_EQ(tsr_tensor_data(tsr_trainer_output(t, 1)), weights);
  EXPECT_EQ(tsr_tensor_data(tsr_trainer_output(t, 3)),
            tsr_tensor_data(tsr_trainer_input(t, 3)));
  EXPECT_STREQ(tsr_tensor_name(tsr_trainer_output(t, 1)), "w");
  LinearParams reference;
  for (int step = 0; step < 7; ++step) {
    float loss = 0;
    ASSERT_EQ(tsr_trainer_step(t, dataset.get(), step, &loss), TSR_OK)
        << tsr_last_error();
    EXPECT_EQ(loss, referenceStep(reference, step)) << "step " << step;
    EXPECT_EQ(elements<float>(tsr_trainer_input(t, 0)), reference.w);
    EXPECT_EQ(elements<float>(tsr_trainer_input(t, 1)),
              (std::vector<float>{reference.b}));
    EXPECT_EQ(elements<int64_t>(tsr_trainer_output(t, 3)),
              (std::vector<int64_t>{step + 1}));
    EXPECT_EQ(tsr_tensor_data(tsr_trainer_input(t, 0)), weights);
  }
}

// tsr_artifact_invoke with an output buffer of its own for an in-place
// output copies the input there first: the caller's inputs stay as they
// were. Given the input's buffer as the output, it updates it in place.
TEST(Trainer, InvokeKeepsTheInputsOfInPlaceOutputs) {
  std::string dir = scratchDir();
  ArtifactPtr artifact = loadArtifact(inPlaceLinear(dir));
  std::vector<TensorPtr> inputs;
  inputs.push_back(makeTensor<float>(TSR_DTYPE_FLOAT32, {2}, {0.5f, -1.0f}));
  inputs.push_back(makeTensor<float>(TSR_DTYPE_FLOAT32, {}, {0.25f}));
  inputs.push_back(makeTensor<float>(TSR_DTYPE_FLOAT32, {}, {0.125f}));
  inputs.push_back(makeTensor<int64_t>(TSR_DTYPE_INT64, {}, {0}));
  inputs.push_back(makeTensor<float>(
      TSR_DTYPE_FLOAT32, {4, 2},
      std::vector<float>(kLinearX.begin(), kLinearX.begin() + 8)));
  inputs.push_back(makeTensor<float>(
      TSR_DTYPE_FLOAT32, {4},
      std::vector<float>(kLinearY.begin(), kLinearY.begin() + 4)));
  std::vector<TensorPtr> outputs;
  for (size_t i = 0; i < 5; ++i) {
    tsr_tensor_t *tensor = nullptr;
    ASSERT_EQ(tsr_artifact_create_output(artifact.get(), i, &tensor), TSR_OK);
    outputs.emplace_back(tensor);
  }
  auto invoke = [&](tsr_tensor_t *wOut) {
    std::vector<const tsr_tensor_t *> in;
    for (const TensorPtr &tensor : inputs)
      in.push_back(tensor.get());
    std::vector<tsr_tensor_t *> out;
    for (const TensorPtr &tensor : outputs)
      out.push_back(tensor.get());
    out[1] = wOut;
    return tsr_artifact_invoke(artifact.get(), in.data(), in.size(), out.data(),
                               out.size());
  };
  LinearParams reference;
  float loss = referenceStep(reference, 0);
  ASSERT_EQ(invoke(outputs[1].get()), TSR_OK) << tsr_last_error();
  EXPECT_EQ(elements<float>(outputs[0].get()), (std::vector<float>{loss}));
  EXPECT_EQ(elements<float>(outputs[1].get()), reference.w);
  EXPECT_EQ(elements<float>(outputs[2].get()),
            (std::vector<float>{reference.b}));
  EXPECT_EQ(elements<int64_t>(outputs[3].get()), (std::vector<int64_t>{1}));
  EXPECT_EQ(elements<float>(inputs[0].get()),
            (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(elements<float>(inputs[1].get()), (std::vector<float>{0.25f}));
  EXPECT_EQ(elements<int64_t>(inputs[3].get()), (std::vector<int64_t>{0}));
  ASSERT_EQ(invoke(inputs[0].get()), TSR_OK) << tsr_last_error();
  EXPECT_EQ(elements<float>(inputs[0].get()), reference.w);
}

// The communicators bound to a mesh's groups must have its sizes: here no
// mesh was created (one process), so axis tp has 1 rank instead of 2.
TEST(Trainer, NeedsTheCommunicatorsOfItsMesh) {
  std::string dir = scratchDir();
  std::string manifest =
      replaced(readManifest(TSR_TEST_LINEAR_ARTIFACT), R"("target": "cpu",)",
               R"("target": "cpu", "mesh": [{"name": "dp", "size": 1},
                  {"name": "tp", "size": 2}],)");
  std::string art =
      artifactWithManifest(dir, manifest, TSR_TEST_LINEAR_ARTIFACT);
  ArtifactPtr artifact = loadArtifact(art);
  ASSERT_TRUE(artifact);
  tsr_trainer_t *trainer = nullptr;
  EXPECT_EQ(tsr_trainer_create(artifact.get(), &trainer), TSR_ERROR_MISMATCH);
  EXPECT_EQ(trainer, nullptr);
  expectLastError(art + ": the artifact was compiled for the mesh dp=1,tp=2 "
                        "but its axis tp has 1 rank here (create its "
                        "communicators with tsr_mesh_create_for_artifact)");
}

TEST(Trainer, FillsStatesOfEveryDType) {
  std::string dir = scratchDir();
  auto state = [](const char *name, const char *dtype, const char *init) {
    return std::string(R"({"name": ")") + name + R"(", "dtype": ")" + dtype +
           R"(", "shape": [2], "role": "state", "init": )" + init + "},";
  };
  std::string manifest =
      R"({"format": "tessera-artifact", "version": 2, "mode": "train",
          "library": "model.so", "schedule": [{"program": "main"}],
          "programs": [{"name": "main", "entry": "tessera_entry", "inputs": [)" +
      state("h", "float16", "1.5") + state("hn", "float16", "-1e-05") +
      state("bf", "bfloat16", "-2") + state("d", "float64", "0.1") +
      state("i8", "int8", "-3") + state("u64", "uint64", "7") +
      state("flag", "bool", "1") +
      R"({"name": "x", "dtype": "float32", "shape": [1], "role": "data"}],
          "outputs": [{"name": "loss", "dtype": "float32", "shape": [],
                       "role": "loss"}]}],
          "train": {"batch_size": 1}})";
  std::string art = artifactWithManifest(dir, manifest);
  ArtifactPtr artifact = loadArtifact(art);
  TrainerPtr trainer = createTrainer(artifact.get());
  ASSERT_TRUE(trainer);
  tsr_trainer_t *t = trainer.get();
  EXPECT_EQ(elements<uint16_t>(tsr_trainer_input(t, 0)),
            (std::vector<uint16_t>{0x3E00, 0x3E00}));
  // -1e-05 rounds to the float16 subnormal -168 * 2^-24.
  EXPECT_EQ(elements<uint16_t>(tsr_trainer_input(t, 1)),
            (std::vector<uint16_t>{0x80A8, 0x80A8}));
  EXPECT_EQ(elements<uint16_t>(tsr_trainer_input(t, 2)),
            (std::vector<uint16_t>{0xC000, 0xC000}));
  EXPECT_EQ(elements<double>(tsr_trainer_input(t, 3)),
            (std::vector<double>{0.1, 0.1}));
  EXPECT_EQ(elements<int8_t>(tsr_trainer_input(t, 4)),
            (std::vector<int8_t>{-3, -3}));
  EXPECT_EQ(elements<uint64_t>(tsr_trainer_input(t, 5)),
            (std::vector<uint64_t>{7, 7}));
  EXPECT_EQ(elements<uint8_t>(tsr_trainer_input(t, 6)),
            (std::vector<uint8_t>{1, 1}));

  auto expectInitError = [&](const std::string &from, const std::string &to,
                             const std::string &needle) {
    artifactWithManifest(dir, replaced(manifest, from, to));
    tsr_artifact_t *bad = nullptr;
    EXPECT_EQ(tsr_artifact_load(art.c_str(), &bad), TSR_ERROR_PARSE);
    expectLastError(needle);
  };
  expectInitError(R"("init": 1.5)", R"("init": 70000)",
                  "inputs[0].init: 70000 is not representable in float16");
  expectInitError(R"("init": -3)", R"("init": -129)",
                  "inputs[4].init: -129 is not representable in int8");
  expectInitError(R"("init": 7)", R"("init": -1)",
                  "inputs[5].init: -1 is not representable in uint64");
  expectInitError(R"("init": 1})", R"("init": 2})",
                  "inputs[6].init: 2 is not representable in bool");
}

TEST(Trainer, SavesTheModelWithTrainedParams) {
  std::string dir = scratchDir();
  std::string path = dir + "/data.npz";
  writeBytes(path, linearNpz(true));
  ArtifactPtr artifact = loadArtifact(TSR_TEST_LINEAR_ARTIFACT);
  DatasetPtr dataset = openNpz(artifact.get(), path);
  TrainerPtr trainer = createTrainer(artifact.get());
  ASSERT_TRUE(trainer && dataset);
  EXPECT_EQ(tsr_trainer_check_save_onnx(trainer.get()), TSR_OK);
  LinearParams reference;
  std::string saved = dir + "/trained.onnx";
  for (int round = 0; round < 2; ++round) {
    for (int step = round * 3; step < round * 3 + 3; ++step) {
      float loss;
      ASSERT_EQ(tsr_trainer_step(trainer.get(), dataset.get(), step, &loss),
                TSR_OK);
      referenceStep(reference, step);
    }
    ASSERT_EQ(tsr_trainer_save_onnx(trainer.get(), saved.c_str()), TSR_OK)
        << tsr_last_error();
    for (const fs::directory_entry &entry : fs::directory_iterator(dir))
      EXPECT_EQ(entry.path().filename().string().find(".tmp"),
                std::string::npos)
          << entry.path();
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(readBytes(saved)));
    EXPECT_EQ(model.producer_name(), "tessera-runtime-tests");
    EXPECT_EQ(model.graph().node_size(), 2);
    ASSERT_EQ(model.graph().initializer_size(), 2);
    const onnx::TensorProto &w = model.graph().initializer(0);
    const onnx::TensorProto &b = model.graph().initializer(1);
    EXPECT_EQ(w.name(), "w");
    EXPECT_EQ(w.data_type(), onnx::TensorProto::FLOAT);
    EXPECT_EQ(std::vector<int64_t>(w.dims().begin(), w.dims().end()),
              (std::vector<int64_t>{2}));
    EXPECT_EQ(w.float_data_size(), 0);
    EXPECT_EQ(
        w.raw_data(),
        std::string(reinterpret_cast<const char *>(reference.w.data()), 8));
    EXPECT_EQ(b.name(), "b");
    EXPECT_EQ(b.dims_size(), 0);
    EXPECT_EQ(b.float_data_size(), 0);
    EXPECT_EQ(b.raw_data(),
              std::string(reinterpret_cast<const char *>(&reference.b), 4));
  }
  EXPECT_EQ(
      tsr_trainer_save_onnx(trainer.get(), (dir + "/missing/dir.onnx").c_str()),
      TSR_ERROR_IO);
  expectLastError(dir +
                  "/missing/dir.onnx: cannot create a temporary file in " +
                  dir + "/missing: No such file or directory");
}

TEST(Trainer, RejectsBadModels) {
  std::string dir = scratchDir();
  std::string manifest = readManifest(TSR_TEST_LINEAR_ARTIFACT);
  std::string art =
      artifactWithManifest(dir, manifest, TSR_TEST_LINEAR_ARTIFACT);
  std::string onnxPath = art + "/model.onnx";
  ArtifactPtr artifact = loadArtifact(art);
  auto expectCreateError = [&](const std::string &needle) {
    tsr_trainer_t *trainer = nullptr;
    EXPECT_NE(tsr_trainer_create(artifact.get(), &trainer), TSR_OK) << needle;
    EXPECT_EQ(trainer, nullptr);
    expectLastError(needle);
  };
  auto writeModel = [&](const onnx::ModelProto &model) {
    std::string bytes;
    ASSERT_TRUE(model.SerializeToString(&bytes));
    writeBytes(onnxPath, bytes);
  };
  using onnx::TensorProto;
  writeModel(fakeModel({{"w", TensorProto::FLOAT, {2}, {1, 2}}}));
  expectCreateError(onnxPath +
                    ": no initializer is named 'b' (for input 1 'b' (param))");
  writeModel(fakeModel({{"w", TensorProto::FLOAT, {2}, {1, 2}},
                        {"b", TensorProto::INT64, {}, {1}}}));
  expectCreateError(onnxPath + ": initializer 'b' is int64[] but input 1 'b' "
                               "(param) is float32[]");
  writeModel(fakeModel({{"w", TensorProto::FLOAT, {3}, {1, 2, 3}},
                        {"b", TensorProto::FLOAT, {}, {1}}}));
  expectCreateError(onnxPath + ": initializer 'w' is float32[3] but input 0 "
                               "'w' (param) is float32[2]");
  writeModel(fakeModel({{"w", TensorProto::FLOAT, {2}, {1, 2, 3}},
                        {"b", TensorProto::FLOAT, {}, {1}}}));
  expectCreateError(onnxPath + ": initializer 'w': float_data holds 3 values, "
                               "expected 2 for float32[2]");
  onnx::ModelProto external = linearModel();
  external.mutable_graph()->mutable_initializer(0)->set_data_location(
      TensorProto::EXTERNAL);
  writeModel(external);
  expectCreateError(onnxPath + ": initializer 'w' for input 0 'w' (param) "
                               "keeps its data in an external file, which is "
                               "not supported");
  writeBytes(onnxPath, "\xff\xff\xff not a model");
  expectCreateError(onnxPath +
                    ": not a valid ONNX ModelProto (protobuf parse failed)");
  fs::remove(onnxPath);
  expectCreateError(onnxPath + ": cannot open");

  // An external initializer that is not a param only prevents saving.
  onnx::ModelProto constant = fakeModel({{"w", TensorProto::FLOAT, {2}, {1, 2}},
                                         {"b", TensorProto::FLOAT, {}, {1}},
                                         {"c", TensorProto::FLOAT, {1}, {}}});
  onnx::TensorProto *c = constant.mutable_graph()->mutable_initializer(2);
  c->set_data_location(TensorProto::EXTERNAL);
  onnx::StringStringEntryProto *location = c->add_external_data();
  location->set_key("location");
  location->set_value("c.bin");
  writeModel(constant);
  TrainerPtr trainer = createTrainer(artifact.get());
  ASSERT_TRUE(trainer);
  EXPECT_EQ(elements<float>(tsr_trainer_input(trainer.get(), 0)),
            (std::vector<float>{1, 2}));
  EXPECT_EQ(tsr_trainer_check_save_onnx(trainer.get()), TSR_ERROR_UNSUPPORTED);
  expectLastError(onnxPath + ": initializer 'c' keeps its data in an external "
                             "file; saving such models is not supported");
  EXPECT_EQ(tsr_trainer_save_onnx(trainer.get(), (dir + "/x.onnx").c_str()),
            TSR_ERROR_UNSUPPORTED);
  EXPECT_FALSE(fs::exists(dir + "/x.onnx"));

  ArtifactPtr infer = loadArtifact(TSR_TEST_FAKE_ARTIFACT);
  tsr_trainer_t *raw = nullptr;
  EXPECT_EQ(tsr_trainer_create(infer.get(), &raw), TSR_ERROR_INVALID_ARGUMENT);
  expectLastError("mode \"infer\" cannot be trained");
}

TEST(Trainer, TrainsWithoutAnOnnxModel) {
  std::string dir = scratchDir();
  // The token model's bias as a state: no params, so no model is needed.
  std::string manifest =
      replaced(replaced(readManifest(TSR_TEST_TOKEN_ARTIFACT),
                        R"("onnx": "model.onnx",)", ""),
               R"("shape": [], "role": "param"})",
               R"("shape": [], "role": "state", "init": 1.5})");
  manifest = replaced(manifest, R"("role": "param", "updates": 0)",
                      R"("role": "state", "updates": 0)");
  std::string art =
      artifactWithManifest(dir, manifest, TSR_TEST_TOKEN_ARTIFACT);
  fs::remove(art + "/model.onnx");
  ArtifactPtr artifact = loadArtifact(art);
  TrainerPtr trainer = createTrainer(artifact.get());
  ASSERT_TRUE(trainer);
  std::string path = dir + "/tokens.bin";
  writeStream<uint16_t>(path, streamTokens());
  DatasetPtr dataset = openTokens(artifact.get(), path);
  for (int step = 0; step < 4; ++step) {
    float loss;
    ASSERT_EQ(tsr_trainer_step(trainer.get(), dataset.get(), step, &loss),
              TSR_OK);
    EXPECT_EQ(loss, referenceTokenLoss(streamTokens(), step));
  }
  EXPECT_EQ(tsr_trainer_check_save_onnx(trainer.get()), TSR_ERROR_UNSUPPORTED);
  expectLastError(art + "/manifest.json names no \"onnx\" model to save");
}

//===----------------------------------------------------------------------===//
// tsr_trainer_run: the training loop behind the C API
//===----------------------------------------------------------------------===//

namespace {

/// What tsr_trainer_run reported: every step and every write, in order.
struct RunEvents {
  std::vector<tsr_step_record_t> steps;
  std::vector<std::string> events;

  static void onStep(void *user, const tsr_step_record_t *record) {
    auto &self = *static_cast<RunEvents *>(user);
    self.steps.push_back(*record);
    self.events.push_back("step " + std::to_string(record->step) + " " +
                          record->unit);
  }
  static void onWrite(void *user, tsr_train_write_t what, const char *path) {
    static_cast<RunEvents *>(user)->events.push_back(
        (what == TSR_TRAIN_WROTE_CHECKPOINT ? "checkpoint " : "onnx ") +
        std::string(path));
  }

  tsr_train_options_t options(int64_t steps) {
    tsr_train_options_t options{};
    options.steps = steps;
    options.on_step = onStep;
    options.on_write = onWrite;
    options.user = this;
    return options;
  }
};

/// The linear artifact, a trainer for it, and the dataset of features `x`
/// (written to DIR/data.npz).
struct LinearTraining {
  ArtifactPtr artifact;
  DatasetPtr dataset;
  TrainerPtr trainer;

  LinearTraining(const std::string &dir, const std::vector<float> &x) {
    std::string data = dir + "/data.npz";
    writeBytes(data, linearNpz(false, x));
    artifact = loadArtifact(TSR_TEST_LINEAR_ARTIFACT);
    dataset = openNpz(artifact.get(), data);
    trainer = createTrainer(artifact.get());
  }
};

} // namespace

TEST(TrainerRun, TrainsSavesAndResumes) {
  std::string dir = scratchDir();
  LinearTraining linear(dir, kLinearX);
  auto &[artifact, dataset, trainer] = linear;
  ASSERT_TRUE(trainer && dataset);
  RunEvents run;
  tsr_train_options_t options = run.options(5);
  std::string model = dir + "/model.onnx", checkpoints = dir + "/ckpt";
  options.save_onnx = model.c_str();
  options.save_every = 3;
  options.checkpoint_dir = checkpoints.c_str();
  options.checkpoint_every = 2;
  ASSERT_EQ(tsr_trainer_run(trainer.get(), dataset.get(), &options), TSR_OK)
      << tsr_last_error();

  std::vector<float> losses = referenceLosses(5);
  ASSERT_EQ(run.steps.size(), 5u);
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(run.steps[k].step, k + 1);
    EXPECT_EQ(run.steps[k].steps, 5);
    EXPECT_EQ(run.steps[k].loss, losses[k]) << "step " << k + 1;
    EXPECT_GE(run.steps[k].seconds, 0);
    EXPECT_GE(run.steps[k].items_per_second, 0);
  }
  EXPECT_EQ(
      run.events,
      (std::vector<std::string>{
          "step 1 samples", "step 2 samples",
          "checkpoint " + checkpoints + "/step-00000002", "step 3 samples",
          "onnx " + dir + "/model.step3.onnx", "step 4 samples",
          "checkpoint " + checkpoints + "/step-00000004", "step 5 samples",
          "checkpoint " + checkpoints + "/step-00000005", "onnx " + model}));
  EXPECT_TRUE(fs::exists(checkpoints + "/step-00000005/manifest.json"));
  EXPECT_TRUE(fs::exists(dir + "/model.step3.onnx"));
  LinearParams trained;
  referenceLosses(5, &trained);
  EXPECT_EQ(elements<float>(tsr_trainer_input(trainer.get(), 0)), trained.w);

  // Resuming after step 4 runs step 5 alone, to the same result; no
  // callbacks and no saves are needed.
  TrainerPtr resumed = createTrainer(artifact.get());
  int64_t done = 0;
  ASSERT_EQ(tsr_trainer_load_checkpoint(
                resumed.get(), (checkpoints + "/step-00000004").c_str(), &done),
            TSR_OK)
      << tsr_last_error();
  ASSERT_EQ(done, 4);
  tsr_train_options_t plain{};
  plain.steps = 5;
  plain.first_step = done;
  ASSERT_EQ(tsr_trainer_run(resumed.get(), dataset.get(), &plain), TSR_OK)
      << tsr_last_error();
  EXPECT_EQ(elements<float>(tsr_trainer_input(resumed.get(), 0)), trained.w);
  EXPECT_EQ(elements<float>(tsr_trainer_input(resumed.get(), 1)),
            (std::vector<float>{trained.b}));
}

TEST(TrainerRun, RefusesCheckpointsOfOtherHparams) {
  std::string dir = scratchDir();
  std::string linear = readManifest(TSR_TEST_LINEAR_ARTIFACT);
  auto compiled = [&](const std::string &sub, const std::string &hparams) {
    return artifactWithManifest(
        dir + "/" + sub,
        replaced(linear, R"("train": {)",
                 R"("train": {"hparams": )" + hparams + ", "),
        TSR_TEST_LINEAR_ARTIFACT);
  };
  std::string first = compiled("a", R"({"optimizer": "sgd", "lr": "0.1"})");
  std::string same = compiled("b", R"({"lr": "0.1", "optimizer": "sgd"})");
  std::string other =
      compiled("c", R"({"optimizer": "sgd", "lr": "0.2", "momentum": "0.9"})");
  std::string data = dir + "/data.npz";
  writeBytes(data, linearNpz(false));
  ArtifactPtr artifact = loadArtifact(first);
  DatasetPtr dataset = openNpz(artifact.get(), data);
  TrainerPtr trainer = createTrainer(artifact.get());
  tsr_train_options_t options{};
  options.steps = 2;
  std::string checkpoints = dir + "/ckpt";
  options.checkpoint_dir = checkpoints.c_str();
  ASSERT_EQ(tsr_trainer_run(trainer.get(), dataset.get(), &options), TSR_OK)
      << tsr_last_error();
  std::string saved = checkpoints + "/step-00000002";
  int64_t done = 0;
  // The same hyperparameters, in any order, resume.
  ArtifactPtr again = loadArtifact(same);
  TrainerPtr resumed = createTrainer(again.get());
  EXPECT_EQ(tsr_trainer_load_checkpoint(resumed.get(), saved.c_str(), &done),
            TSR_OK)
      << tsr_last_error();
  // Others are named, each with its old and new value.
  ArtifactPtr changed = loadArtifact(other);
  TrainerPtr refused = createTrainer(changed.get());
  EXPECT_EQ(tsr_trainer_load_checkpoint(refused.get(), saved.c_str(), &done),
            TSR_ERROR_MISMATCH);
  expectLastError(saved + ": written under other hyperparameters than " +
                  other +
                  "'s (checkpoint -> artifact): lr 0.1 -> 0.2, momentum "
                  "(none) -> 0.9; resume with an artifact compiled as the "
                  "checkpoint's run was, or allow the change (tessera-run "
                  "--allow-changed-hparams)");
  tsr_trainer_allow_changed_hparams(refused.get(), 1);
  EXPECT_EQ(tsr_trainer_load_checkpoint(refused.get(), saved.c_str(), &done),
            TSR_OK)
      << tsr_last_error();
  EXPECT_EQ(done, 2);
}

TEST(TrainerRun, CountsTokens) {
  std::string dir = scratchDir();
  std::string path = dir + "/tokens.bin";
  writeStream<uint16_t>(path, streamTokens());
  ArtifactPtr artifact = loadArtifact(TSR_TEST_TOKEN_ARTIFACT);
  DatasetPtr dataset = openTokens(artifact.get(), path);
  TrainerPtr trainer = createTrainer(artifact.get());
  ASSERT_TRUE(trainer && dataset);
  RunEvents run;
  tsr_train_options_t options = run.options(2);
  ASSERT_EQ(tsr_trainer_run(trainer.get(), dataset.get(), &options), TSR_OK)
      << tsr_last_error();
  ASSERT_EQ(run.steps.size(), 2u);
  EXPECT_EQ(run.steps[1].loss, referenceTokenLoss(streamTokens(), 1));
  EXPECT_STREQ(run.steps[1].unit, "tokens");
}

TEST(TrainerRun, StopsAtErrors) {
  std::string dir = scratchDir();
  std::vector<float> x = kLinearX;
  x[8] = NAN; // Sample 4, first used by step 2.
  LinearTraining linear(dir, x);
  auto &[artifact, dataset, trainer] = linear;
  ASSERT_TRUE(trainer && dataset);
  RunEvents run;
  tsr_train_options_t options = run.options(5);
  std::string model = dir + "/model.onnx";
  options.save_onnx = model.c_str();
  EXPECT_EQ(tsr_trainer_run(trainer.get(), dataset.get(), &options),
            TSR_ERROR_NOT_FINITE);
  EXPECT_STREQ(tsr_last_error(), "step 2: the loss is nan; training stopped");
  EXPECT_EQ(run.events,
            (std::vector<std::string>{"step 1 samples", "step 2 samples"}));
  EXPECT_FALSE(fs::exists(model));
  EXPECT_STREQ(tsr_status_name(TSR_ERROR_NOT_FINITE), "TSR_ERROR_NOT_FINITE");

  auto *trainerPtr = trainer.get();
  auto *datasetPtr = dataset.get();
  auto expectInvalid = [&](const tsr_train_options_t &bad,
                           const std::string &message) {
    EXPECT_EQ(tsr_trainer_run(trainerPtr, datasetPtr, &bad),
              TSR_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(tsr_last_error(), message);
  };
  tsr_train_options_t bad{};
  bad.steps = 3;
  bad.first_step = 4;
  expectInvalid(bad, "training options: first_step 4 is not in [0, steps 3]");
  bad.first_step = 0;
  bad.save_every = 2;
  expectInvalid(bad, "training options: save_every needs save_onnx");
  bad.save_every = -1;
  expectInvalid(bad, "training options: save_every and checkpoint_every must "
                     "not be negative");
  bad.save_every = 0;
  bad.checkpoint_every = 2;
  expectInvalid(bad, "training options: checkpoint_every needs "
                     "checkpoint_dir");
  EXPECT_EQ(tsr_trainer_run(trainer.get(), dataset.get(), nullptr),
            TSR_ERROR_INVALID_ARGUMENT);
  expectLastError("null argument");

  // A failing write stops the loop with the write's error.
  tsr_train_options_t unwritable{};
  unwritable.steps = 1;
  std::string missing = dir + "/missing/model.onnx";
  unwritable.save_onnx = missing.c_str();
  TrainerPtr fresh = createTrainer(artifact.get());
  EXPECT_EQ(tsr_trainer_run(fresh.get(), dataset.get(), &unwritable),
            TSR_ERROR_IO);
  expectLastError(missing + ": cannot create a temporary file in " + dir +
                  "/missing: No such file or directory");
}

//===----------------------------------------------------------------------===//
// tessera-run --train
//===----------------------------------------------------------------------===//

namespace {

/// The linear artifact's metric output, [4] float32: how the progress line
/// shows it.
const char *const kPredictionPattern =
    "  prediction \\[(-?[0-9.]+(e[-+][0-9]+)? ){3}-?[0-9.]+(e[-+][0-9]+)?\\]";

/// Checks a progress line: "step S/N  loss L  R UNIT/s  T ms", then the
/// metrics matching `metrics`, then before the last step the time left.
void expectStepLine(const std::string &line, int step, int steps, float loss,
                    const std::string &unit, const std::string &metrics = "") {
  std::regex pattern(
      "step " + std::to_string(step) + "/" + std::to_string(steps) + "  loss " +
      std::regex_replace(format("%.6f", loss), std::regex("\\."), "\\.") +
      "  [0-9]+\\.[0-9] " + unit + "/s  [0-9]+\\.[0-9]{2} ms" + metrics +
      (step < steps ? "  eta [0-9]+\\.[0-9] s" : ""));
  EXPECT_TRUE(std::regex_match(line, pattern)) << line;
}

/// Checks a --log-json line: step, loss (reading back as the float32 loss,
/// null when not finite), seconds, UNIT_per_second and page_faults, in this
/// order, then
/// with `prediction` the linear artifact's metric: 4 numbers.
void expectLogLine(const std::string &line, int step, float loss,
                   const std::string &unit, bool prediction = false) {
  nlohmann::ordered_json record = nlohmann::ordered_json::parse(line);
  std::vector<std::string> keys;
  for (const auto &member : record.items())
    keys.push_back(member.key());
  std::vector<std::string> expected{"step", "loss", "seconds",
                                    unit + "_per_second", "page_faults"};
  if (prediction) {
    expected.push_back("metrics");
    const auto &metrics = record["metrics"];
    EXPECT_TRUE(metrics.size() == 1 && metrics.contains("prediction") &&
                metrics["prediction"].is_array() &&
                metrics["prediction"].size() == 4)
        << line;
  }
  EXPECT_EQ(keys, expected) << line;
  EXPECT_EQ(record["step"], step) << line;
  if (std::isfinite(loss))
    EXPECT_EQ(static_cast<float>(record["loss"].get<double>()), loss) << line;
  else
    EXPECT_TRUE(record["loss"].is_null()) << line;
  EXPECT_TRUE(record["seconds"].is_number()) << line;
  EXPECT_TRUE(record[unit + "_per_second"].is_number()) << line;
  EXPECT_TRUE(record["page_faults"].is_number_integer() &&
              record["page_faults"].get<int64_t>() >= 0)
      << line;
}

} // namespace

/// tessera-run --train of the linear artifact (or `artifact`, another
/// build of its step) on its data set, logging JSON to `log`, with `flags`.
struct LinearRun {
  std::string dir = scratchDir();
  std::string data = dir + "/data.npz";
  std::string log = dir + "/log.jsonl";
  RunResult result;

  explicit LinearRun(const std::string &flags,
                     const std::string &artifact = TSR_TEST_LINEAR_ARTIFACT) {
    writeBytes(data, linearNpz(false));
    result = runTool(quote(artifact) + " --train --data " + quote(data) +
                     " --log-json=" + quote(log) + " " + flags);
  }
};

TEST(TesseraRunTrain, TrainsOnNpzAndLogsJson) {
  LinearRun run("--steps 5 --batch-size 4");
  const RunResult &result = run.result;
  const std::string &data = run.data, &log = run.log;
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err, "");
  std::vector<std::string> out = lines(result.out);
  ASSERT_EQ(out.size(), 8u) << result.out;
  EXPECT_EQ(out[0], "training " TSR_TEST_LINEAR_ARTIFACT
                    ": batch size 4, micro_batches 2, data " +
                        data + ": 6 samples");
  std::vector<float> losses = referenceLosses(5);
  std::vector<std::string> logged = lines(readBytes(log));
  ASSERT_EQ(logged.size(), 5u);
  for (int s = 0; s < 5; ++s) {
    expectStepLine(out[s + 1], s + 1, 5, losses[s], "samples",
                   kPredictionPattern);
    expectLogLine(logged[s], s + 1, losses[s], "samples", true);
  }
  // The summary: the five steps' losses, first, last and lowest.
  auto lowest = std::min_element(losses.begin(), losses.end());
  std::regex summary("trained steps 1-5 in [0-9]+\\.[0-9] s \\([0-9]+\\.[0-9] "
                     "samples/s\\); loss first " +
                     format("%.6f", losses[0]) + ", last " +
                     format("%.6f", losses[4]) + ", lowest " +
                     format("%.6f", *lowest) + " at step " +
                     std::to_string(lowest - losses.begin() + 1));
  EXPECT_TRUE(std::regex_match(out[6], summary)) << out[6];
  EXPECT_EQ(out[7], "peak step memory: 28 bytes (artifact allocations; arena "
                    "4096 bytes), params+state+batch: 72 bytes");
}

TEST(TesseraRunTrain, ReportsOffloadOverAnEmulatedHostLink) {
  // Each step offloads 16 bytes and copies them back: two copies, each at
  // least 1 ms at 16KB/s.
  LinearRun run("--steps 3 --host-bandwidth=16KB/s --device-memory=1KiB",
                TSR_TEST_OFFLOAD_ARTIFACT);
  ASSERT_EQ(run.result.exitCode, 0) << run.result.err;
  std::vector<std::string> out = lines(run.result.out);
  ASSERT_EQ(out.size(), 7u) << run.result.out;
  // The copies are exact: the losses are those of the step without them.
  std::vector<float> losses = referenceLosses(3);
  std::vector<std::string> logged = lines(readBytes(run.log));
  ASSERT_EQ(logged.size(), 3u);
  for (int s = 0; s < 3; ++s)
    expectLogLine(logged[s], s + 1, losses[s], "samples", true);
  EXPECT_EQ(out[5], "peak step memory: 28 bytes (artifact allocations; arena "
                    "4096 bytes), params+state+batch: 72 bytes, of a device "
                    "pool of 1024 bytes");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(
      out[6], match,
      std::regex("offload: 1 values a step, 16 bytes to host memory and "
                 "back; copies ([0-9]+\\.[0-9]{3}) ms a step, waited "
                 "[0-9]+\\.[0-9]{3} ms \\([0-9]+% hidden\\); host pool "
                 "peak 16 bytes")))
      << out[6];
  EXPECT_GE(std::stod(match[1]), 2.0) << out[6];

  // The other spellings of a rate; without transfers, no offload line.
  for (const char *rate : {"25e9", "16GiB/s", "25GB/s"}) {
    LinearRun plain(std::string("--steps 1 --host-bandwidth=") + rate);
    ASSERT_EQ(plain.result.exitCode, 0) << rate << ": " << plain.result.err;
    EXPECT_EQ(lines(plain.result.out).back().rfind("peak step memory: ", 0), 0u)
        << plain.result.out;
  }
}

TEST(TesseraRunTrain, DeviceMemoryEndsTheRunAtTheAllocationPastIt) {
  // The step allocates 16 bytes, then 12 more, beside the runtime's
  // tensors: a pool of tensors + 16 bytes holds the first, not the second.
  std::regex died("tessera-run: rank 0: the device pool of ([0-9]+) bytes "
                  "\\(--device-memory\\) cannot hold ([0-9]+) bytes more: "
                  "compiled code holds ([0-9]+), tensors ([0-9]+)\n");
  LinearRun none("--steps 1 --device-memory=1");
  EXPECT_EQ(none.result.exitCode, 1);
  std::smatch match;
  ASSERT_TRUE(std::regex_match(none.result.err, match, died))
      << none.result.err;
  EXPECT_EQ(match[2], "16");
  EXPECT_EQ(match[3], "0");
  size_t tensors = std::stoul(match[4]);

  LinearRun first("--steps 1 --device-memory=" + std::to_string(tensors + 16));
  EXPECT_EQ(first.result.exitCode, 1);
  ASSERT_TRUE(std::regex_match(first.result.err, match, died))
      << first.result.err;
  EXPECT_EQ(match[2], "12");
  EXPECT_EQ(match[3], "16");
  EXPECT_EQ(match[4], std::to_string(tensors));

  LinearRun both("--steps 3 --device-memory=" + std::to_string(tensors + 28));
  EXPECT_EQ(both.result.exitCode, 0) << both.result.err;
}

TEST(TesseraRunTrain, LogsEveryKthStep) {
  LinearRun run("--steps 7 --log-every 3");
  RunResult result = run.result;
  const std::string &dir = run.dir, &data = run.data, &log = run.log;
  ASSERT_EQ(result.exitCode, 0) << result.err;
  std::vector<std::string> out = lines(result.out);
  // The header, steps 1, 3, 6 and 7 (the first, every third, the last),
  // the summary and the memory line; the JSON log keeps every step.
  ASSERT_EQ(out.size(), 7u) << result.out;
  std::vector<float> losses = referenceLosses(7);
  int shown[] = {1, 3, 6, 7};
  for (int k = 0; k < 4; ++k)
    expectStepLine(out[k + 1], shown[k], 7, losses[shown[k] - 1], "samples",
                   kPredictionPattern);
  EXPECT_EQ(out[5].rfind("trained steps 1-7 in ", 0), 0u) << out[5];
  EXPECT_EQ(lines(readBytes(log)).size(), 7u);
  result = runTool(quote(TSR_TEST_LINEAR_ARTIFACT) + " --log-every 2 " +
                   "--outputs-dir " + quote(dir));
  expectError(result, {"--log-every needs --train"});
  result = runTool(quote(TSR_TEST_LINEAR_ARTIFACT) + " --train --data " +
                   quote(data) + " --steps 2 --log-every 0");
  expectError(result, {"--log-every needs an integer in [1, 1000000000], "
                       "got '0'"});
}

TEST(TesseraRunTrain, EpochsShuffleAndSeed) {
  // 6 samples, batch 4: 2 epochs are 3 steps.
  LinearRun epochs("--epochs 2");
  ASSERT_EQ(epochs.result.exitCode, 0) << epochs.result.err;
  std::vector<std::string> out = lines(epochs.result.out);
  EXPECT_EQ(out[0], "training " TSR_TEST_LINEAR_ARTIFACT
                    ": batch size 4, micro_batches 2, data " +
                        epochs.data + ": 6 samples; 2 epochs = 3 steps");
  EXPECT_EQ(lines(readBytes(epochs.log)).size(), 3u);
  // Shuffled runs repeat themselves under one seed and differ from the
  // ordered run.
  // (The runs share the test's scratch directory: each log is read before
  // the next run.)
  auto losses = [](const LinearRun &run) {
    std::vector<double> values;
    for (const std::string &line : lines(readBytes(run.log)))
      values.push_back(nlohmann::json::parse(line)["loss"].get<double>());
    return values;
  };
  LinearRun first("--steps 3 --shuffle --seed 5");
  ASSERT_EQ(first.result.exitCode, 0) << first.result.err;
  EXPECT_EQ(lines(first.result.out)[0],
            "training " TSR_TEST_LINEAR_ARTIFACT
            ": batch size 4, micro_batches 2, data " +
                first.data + ": 6 samples, shuffled every epoch (seed 5)");
  std::vector<double> shuffled = losses(first);
  EXPECT_EQ(losses(LinearRun("--steps 3 --shuffle --seed 5")), shuffled);
  EXPECT_NE(losses(LinearRun("--steps 3")), shuffled);
  EXPECT_NE(losses(LinearRun("--steps 3 --shuffle --seed 6")), shuffled);

  // A checkpoint records the order; resuming under another is refused.
  std::string dir = first.dir, data = first.data;
  std::string train = quote(TSR_TEST_LINEAR_ARTIFACT) + " --train --data " +
                      quote(data) + " --steps 4 ";
  RunResult result = runTool(train + "--shuffle --seed 5 --checkpoint-dir " +
                             quote(dir + "/ckpt") + " --checkpoint-every 2");
  ASSERT_EQ(result.exitCode, 0) << result.err;
  result = runTool(train + "--seed 5 --resume " +
                   quote(dir + "/ckpt/step-00000002"));
  expectError(result, {dir + "/ckpt/step-00000002: written by a run with "
                             "shuffled data and seed 5, but this run has "
                             "data in order and seed 5; resume with the same "
                             "data order and seed"});
  result = runTool(train + "--shuffle --seed 5 --resume " +
                   quote(dir + "/ckpt/step-00000002"));
  EXPECT_EQ(result.exitCode, 0) << result.err;

  // Fewer samples than the global batch repeats samples within a batch:
  // refused unless asked for.
  std::string small = dir + "/small.npz";
  writeBytes(
      small,
      zipBytes({{"x.npy",
                 npyBytes("<f4", {3, 2}, std::vector<float>{1, 0, 0, 1, 1, 1})},
                {"y.npy", npyBytes("<f4", {3}, std::vector<float>{1, 2, 3})}},
               false));
  std::string onSmall = quote(TSR_TEST_LINEAR_ARTIFACT) + " --train --data " +
                        quote(small) + " --steps 2";
  expectError(runTool(onSmall),
              {"--data " + small +
               " holds 3 samples, fewer than the global batch of 4: every "
               "batch would repeat samples; use more data, compile a smaller "
               "--batch-size, or pass --allow-repeats"});
  EXPECT_EQ(runTool(onSmall + " --allow-repeats").exitCode, 0);

  std::string linear = quote(TSR_TEST_LINEAR_ARTIFACT);
  std::string trainData = linear + " --train --data " + quote(data);
  expectError(runTool(trainData + " --steps 2 --epochs 1"),
              {"--steps and --epochs cannot be combined"});
  expectError(runTool(trainData + " --epochs 0"),
              {"--epochs needs an integer in [1, 1000000], got '0'"});
  expectError(runTool(trainData + " --steps 1 --seed -1"),
              {"--seed needs an integer in [0, 8388607], got '-1'"});
  expectError(runTool(trainData + " --steps 1 --seed 8388608"),
              {"--seed needs an integer in [0, 8388607], got '8388608'"});
  expectError(runTool(linear + " --shuffle --print"),
              {"--shuffle needs --train"});
  expectError(runTool(trainData + " --steps 1 --allow-changed-hparams"),
              {"--allow-changed-hparams needs --resume"});
}

TEST(TesseraRunTrain, SavesOnnxEveryKStepsAndAtTheEnd) {
  std::string dir = scratchDir();
  std::string data = dir + "/data.npz";
  writeBytes(data, linearNpz(true));
  std::string saved = dir + "/out/model.onnx";
  fs::create_directories(dir + "/out");
  RunResult result = runTool(
      quote(TSR_TEST_LINEAR_ARTIFACT) + " --train --data=" + quote(data) +
      " --steps=5 --save-onnx " + quote(saved) + " --save-every 2");
  ASSERT_EQ(result.exitCode, 0) << result.err;
  std::vector<std::string> out = lines(result.out);
  ASSERT_EQ(out.size(), 11u) << result.out;
  EXPECT_EQ(out[3], "wrote " + dir + "/out/model.step2.onnx");
  EXPECT_EQ(out[6], "wrote " + dir + "/out/model.step4.onnx");
  EXPECT_EQ(out[8], "wrote " + saved);
  auto expectParams = [&](const std::string &path, int steps) {
    LinearParams params;
    referenceLosses(steps, &params);
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(readBytes(path))) << path;
    std::vector<float> w(2);
    float b;
    ASSERT_EQ(model.graph().initializer(0).raw_data().size(), 8u);
    std::memcpy(w.data(), model.graph().initializer(0).raw_data().data(), 8);
    std::memcpy(&b, model.graph().initializer(1).raw_data().data(), 4);
    EXPECT_EQ(w, params.w) << path;
    EXPECT_EQ(b, params.b) << path;
  };
  expectParams(dir + "/out/model.step2.onnx", 2);
  expectParams(dir + "/out/model.step4.onnx", 4);
  expectParams(saved, 5);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir + "/out"), {}), 3);

  // Without an .onnx suffix the step number is appended.
  result = runTool(quote(TSR_TEST_LINEAR_ARTIFACT) + " --train --data " +
                   quote(data) + " --steps 1 --save-every 1 --save-onnx " +
                   quote(dir + "/plain"));
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_TRUE(fs::exists(dir + "/plain.step1.onnx"));
  EXPECT_TRUE(fs::exists(dir + "/plain"));
}

TEST(TesseraRunTrain, TrainsOnTokenStreams) {
  std::string dir = scratchDir();
  std::vector<uint32_t> tokens = streamTokens();
  for (const char *dtype : {"uint16", "uint32"}) {
    std::string data = dir + "/tokens-" + dtype + ".bin";
    if (std::string(dtype) == "uint16")
      writeStream<uint16_t>(data, tokens);
    else
      writeStream<uint32_t>(data, tokens);
    std::string flag =
        std::string(dtype) == "uint16" ? "" : " --token-dtype uint32";
    std::string log = dir + "/log.jsonl";
    RunResult result = runTool(quote(TSR_TEST_TOKEN_ARTIFACT) +
                               " --train --data " + quote(data) + " --steps 4" +
                               flag + " --log-json " + quote(log));
    ASSERT_EQ(result.exitCode, 0) << result.err;
    std::vector<std::string> out = lines(result.out);
    ASSERT_EQ(out.size(), 7u) << result.out;
    EXPECT_EQ(out[0], "training " TSR_TEST_TOKEN_ARTIFACT
                      ": batch size 2, micro_batches 1, data " +
                          data + ": 11 " + dtype + " tokens, 3 windows of 3");
    std::vector<std::string> logged = lines(readBytes(log));
    ASSERT_EQ(logged.size(), 4u);
    for (int s = 0; s < 4; ++s) {
      float loss = referenceTokenLoss(tokens, s);
      expectStepLine(out[s + 1], s + 1, 4, loss, "tokens");
      expectLogLine(logged[s], s + 1, loss, "tokens");
    }
    EXPECT_EQ(out[5].rfind("trained steps 1-4 in ", 0), 0u) << out[5];
    EXPECT_EQ(out[6], "peak step memory: 0 bytes (artifact allocations; arena "
                      "0 bytes), params+state+batch: 76 bytes");
  }
}

TEST(TesseraRunTrain, StopsAtANonFiniteLoss) {
  std::string dir = scratchDir();
  std::vector<float> x = kLinearX;
  x[8] = NAN; // Sample 4, first used by step 2.
  std::string data = dir + "/data.npz";
  writeBytes(data, linearNpz(false, x));
  std::string log = dir + "/log.jsonl";
  std::string saved = dir + "/model.onnx";
  RunResult result = runTool(
      quote(TSR_TEST_LINEAR_ARTIFACT) + " --train --data " + quote(data) +
      " --steps 5 --log-json " + quote(log) + " --save-onnx " + quote(saved));
  expectError(result, {"step 2: the loss is nan; training stopped"});
  std::vector<std::string> out = lines(result.out);
  ASSERT_EQ(out.size(), 3u) << result.out;
  expectStepLine(out[1], 1, 5, referenceLosses(1)[0], "samples",
                 kPredictionPattern);
  EXPECT_EQ(out[2].rfind("step 2/5  loss nan  ", 0), 0u) << out[2];
  std::vector<std::string> logged = lines(readBytes(log));
  ASSERT_EQ(logged.size(), 2u);
  expectLogLine(logged[1], 2, NAN, "samples", true);
  EXPECT_FALSE(fs::exists(saved));
}

TEST(TesseraRunTrain, CommandLineErrors) {
  std::string dir = scratchDir();
  std::string linear = quote(TSR_TEST_LINEAR_ARTIFACT);
  std::string data = dir + "/data.npz";
  writeBytes(data, linearNpz(false));
  std::string train = linear + " --train --data " + quote(data);

  expectError(runTool(quote(TSR_TEST_FAKE_ARTIFACT) + " --train --data " +
                      quote(data) + " --steps 1"),
              {TSR_TEST_FAKE_ARTIFACT "/manifest.json: mode \"infer\" cannot "
                                      "be trained (--train needs a \"train\" "
                                      "artifact)"});
  expectError(runTool(linear + " --print"),
              {TSR_TEST_LINEAR_ARTIFACT
               "/manifest.json: mode \"train\" needs --train"});
  std::string grad =
      artifactWithManifest(dir,
                           replaced(readManifest(TSR_TEST_LINEAR_ARTIFACT),
                                    R"("mode": "train")", R"("mode": "grad")"),
                           TSR_TEST_LINEAR_ARTIFACT);
  expectError(runTool(quote(grad) + " --print"),
              {"mode \"grad\" is not run by tessera-run (load it in-process, "
               "e.g. with the Python binding python/tessera)"});
  expectError(runTool(quote(grad) + " --train --data x.npz --steps 1"),
              {"mode \"grad\" cannot be trained"});

  expectError(runTool(linear + " --train --steps 2"),
              {"missing --data (an .npz file or a .bin token stream)"});
  expectError(runTool(train), {"missing --steps"});
  expectError(runTool(linear + " --data x.npz --print"),
              {"--data needs --train"});
  expectError(runTool(linear + " --steps 3 --print"),
              {"--steps needs --train"});
  expectError(runTool(train + " --steps 1 --print"),
              {"--print cannot be combined with --train"});
  expectError(runTool(train + " --steps 1 --inputs-dir x"),
              {"--inputs-dir cannot be combined with --train"});
  expectError(runTool(train + " --steps 0"),
              {"--steps needs an integer in [1, 1000000000], got '0'"});
  expectError(runTool(train + " --steps 1 --steps 2"),
              {"--steps given more than once"});
  expectError(runTool(train + " --steps 1 --save-every 2"),
              {"--save-every needs --save-onnx"});
  expectError(runTool(train + " --steps 1 --token-dtype int8"),
              {"--token-dtype must be uint16 or uint32, got 'int8'"});
  expectError(
      runTool(train + " --steps 1 --token-dtype uint32"),
      {"--token-dtype applies to token streams (.bin), not to " + data});
  expectError(runTool(train + " --steps 1 --batch-size=8"),
              {TSR_TEST_LINEAR_ARTIFACT ": the artifact was compiled for "
                                        "batch size 4, not 8 (recompile it "
                                        "with batch size 8)"});
  expectError(runTool(linear + " --train --steps 1 --data data.csv"),
              {"data.csv: unknown data format (expected FILE.npz or a "
               "FILE.bin token stream)"});
  expectError(runTool(train + " --steps 1 --save-onnx " +
                      quote(dir + "/nowhere/m.onnx")),
              {"--save-onnx " + dir + "/nowhere/m.onnx: directory '" + dir +
               "/nowhere' does not exist"});
  expectError(runTool(train + " --steps 1 --log-json " +
                      quote(dir + "/nowhere/log.jsonl")),
              {dir + "/nowhere/log.jsonl: cannot create: No such file or "
                     "directory"});
}

TEST(TesseraRunTrain, RejectsBadDataBeforeAnyStep) {
  std::string dir = scratchDir();
  std::string linear = quote(TSR_TEST_LINEAR_ARTIFACT);
  std::string token = quote(TSR_TEST_TOKEN_ARTIFACT);
  auto expectDataError = [&](const std::string &artifact,
                             const std::string &file, const std::string &bytes,
                             const std::string &needle) {
    std::string path = dir + "/" + file;
    writeBytes(path, bytes);
    RunResult result =
        runTool(artifact + " --train --steps 3 --data " + quote(path));
    expectError(result, {path + ": " + needle});
    EXPECT_EQ(result.out, "");
  };
  std::string valid = linearNpz(false);
  expectDataError(linear, "cut.npz", valid.substr(0, valid.size() / 2),
                  "truncated ZIP archive");
  std::string flipped = linearNpz(false);
  flipped[flipped.find("NUMPY") + 80] ^= 4;
  expectDataError(linear, "flipped.npz", flipped,
                  "member 'x.npy': CRC-32 mismatch");
  expectDataError(linear, "random.npz", "PK\x03\x04 random bytes",
                  "truncated ZIP archive");
  expectDataError(
      linear, "missing.npz",
      zipBytes({{"x.npy", npyBytes("<f4", {kSamples, 2}, kLinearX)}}, false),
      "no array 'y' for input 5 'y' (label); the file holds only x (the "
      "labels' name is tessera-compile's --labels=NAME: recompile with the "
      "file's name, or rename the array)");
  expectDataError(
      linear, "dtype.npz",
      zipBytes({{"x.npy", npyBytes("<f4", {kSamples, 2}, kLinearX)},
                {"y.npy", npyBytes("<i4", {kSamples},
                                   std::vector<int32_t>(kSamples, 0))}},
               true),
      "array 'y' has dtype int32, but input 5 'y' expects float32");
  std::vector<int64_t> targets(6, 1);
  targets[4] = 77;
  expectDataError(
      token, "labels.npz",
      zipBytes(
          {{"tokens.npy", npyBytes("<i4", {2, 3}, std::vector<int32_t>(6, 0))},
           {"targets.npy", npyBytes("<i8", {2, 3}, targets)}},
          false),
      "array 'targets': sample 1 has label 77, which is outside [0, 50) and "
      "is not ignore_index -100");
  expectDataError(token, "odd.bin", std::string(9, '\0'),
                  "9 bytes are not a whole number of uint16 tokens (2 bytes "
                  "each)");
  expectDataError(token, "empty.bin", "", "empty token stream");
  expectDataError(linear, "tokens.bin", std::string(8, '\0'),
                  "a token stream needs an artifact with train.tokens");
}

TEST(TesseraRunTrain, RefusesToSaveExternalData) {
  std::string dir = scratchDir();
  std::string art = artifactWithManifest(
      dir, readManifest(TSR_TEST_LINEAR_ARTIFACT), TSR_TEST_LINEAR_ARTIFACT);
  onnx::ModelProto model = linearModel();
  onnx::TensorProto *c = model.mutable_graph()->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->set_data_location(onnx::TensorProto::EXTERNAL);
  std::string bytes;
  ASSERT_TRUE(model.SerializeToString(&bytes));
  writeBytes(art + "/model.onnx", bytes);
  std::string data = dir + "/data.npz";
  writeBytes(data, linearNpz(false));
  std::string run = quote(art) + " --train --steps 2 --data " + quote(data);
  RunResult result = runTool(run + " --save-onnx " + quote(dir + "/m.onnx"));
  expectError(result, {"--save-onnx: " + art +
                       "/model.onnx: initializer 'c' keeps its data in an "
                       "external file; saving such models is not supported"});
  EXPECT_EQ(result.out, "");
  result = runTool(run);
  EXPECT_EQ(result.exitCode, 0) << result.err;
}
