//===- Dataset.cpp - Training data: .npz arrays and token streams ---------===//
//
// A dataset feeds the data and label inputs of a "train" artifact, one batch
// per step, drawing samples in order and wrapping around. Everything a step
// could trip over (missing arrays, wrong dtypes or shapes, labels out of
// range) is checked when the dataset is opened, before any step runs.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>

using namespace tsr;

struct tsr_dataset {
  virtual ~tsr_dataset() = default;

  /// Writes the batch of `step` into the fed tensors among `inputs`.
  virtual void fill(int64_t step, tsr_tensor_t *const *inputs) const = 0;

  /// Whether input `index` is written by fill.
  virtual bool feeds(size_t index) const = 0;

  std::vector<TensorSpec> inputs;
  /// This rank's rows B, the global batch G of all ranks, and where this
  /// rank's rows start in it (dp rank * B).
  int64_t batchSize = 0;
  int64_t globalBatchSize = 0;
  int64_t rankOffset = 0;
  int64_t numSamples = 0;
  int64_t numTokens = 0;
  /// The data order (tsr_dataset_set_order): in order, or each epoch's
  /// permutation drawn from `seed`.
  bool shuffle = false;
  uint64_t seed = 0;

  /// The sample of this rank's batch row `row` at `step`: position p =
  /// step * G + offset + row of the endless stream of epochs (computed
  /// without overflow); in order, sample p mod N; shuffled, epoch p / N's
  /// permutation at p mod N. Ranks together take exactly the samples a
  /// single process with batch G would.
  int64_t sample(int64_t step, int64_t row) const {
    unsigned __int128 position =
        static_cast<unsigned __int128>(step) *
            static_cast<unsigned __int128>(globalBatchSize) +
        static_cast<unsigned __int128>(rankOffset) +
        static_cast<unsigned __int128>(row);
    auto index = static_cast<int64_t>(position % numSamples);
    if (!shuffle)
      return index;
    return permutation(static_cast<uint64_t>(position / numSamples))[index];
  }

  /// Epoch `epoch`'s order of the N samples: a Fisher-Yates shuffle driven
  /// by splitmix64 from (seed, epoch). The last two epochs are cached (a
  /// batch spans at most two when G <= N).
  const std::vector<int64_t> &permutation(uint64_t epoch) const {
    std::lock_guard<std::mutex> lock(cacheMutex);
    for (const auto &[cached, order] : cache)
      if (cached == epoch && !order.empty())
        return order;
    auto &[slot, order] = cache[nextSlot];
    nextSlot ^= 1;
    slot = epoch;
    order.resize(static_cast<size_t>(numSamples));
    std::iota(order.begin(), order.end(), int64_t{0});
    uint64_t state = seed ^ (epoch * 0x9e3779b97f4a7c15ULL);
    for (int64_t i = numSamples - 1; i > 0; --i) {
      // splitmix64
      uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      z ^= z >> 31;
      auto j = static_cast<int64_t>(z % static_cast<uint64_t>(i + 1));
      std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
    }
    return order;
  }

  mutable std::mutex cacheMutex;
  mutable std::pair<uint64_t, std::vector<int64_t>> cache[2];
  mutable int nextSlot = 0;
};

namespace {

struct NpzDeleter {
  void operator()(tsr_npz_t *npz) const { tsr_npz_destroy(npz); }
};

/// Arrays of samples, one per data and label input.
class NpzDataset : public tsr_dataset {
public:
  struct Feed {
    size_t input;
    size_t sampleBytes;
    const tsr_tensor *array;
  };

  std::unique_ptr<tsr_npz_t, NpzDeleter> npz;
  std::vector<Feed> feedList;

  void fill(int64_t step, tsr_tensor_t *const *tensors) const override {
    for (const Feed &feed : feedList) {
      auto *dst = static_cast<char *>(tensors[feed.input]->data);
      const auto *src = static_cast<const char *>(feed.array->data);
      for (int64_t i = 0; i < batchSize; ++i)
        std::memcpy(dst + i * feed.sampleBytes,
                    src + sample(step, i) * feed.sampleBytes, feed.sampleBytes);
    }
  }

  bool feeds(size_t index) const override {
    for (const Feed &feed : feedList)
      if (feed.input == index)
        return true;
    return false;
  }
};

/// A flat stream of token ids cut into windows of T + 1 tokens that overlap
/// by one: the input window and the label window shifted by one token.
class TokenDataset : public tsr_dataset {
public:
  std::string bytes;
  tsr_dtype_t tokenDtype = TSR_DTYPE_UINT16;
  size_t input = 0, label = 0;
  int64_t windowTokens = 0;

  uint32_t token(int64_t position) const {
    if (tokenDtype == TSR_DTYPE_UINT16) {
      uint16_t value;
      std::memcpy(&value, bytes.data() + position * 2, 2);
      return value;
    }
    uint32_t value;
    std::memcpy(&value, bytes.data() + position * 4, 4);
    return value;
  }

  void write(tsr_tensor_t *tensor, int64_t row, int64_t start) const {
    for (int64_t t = 0; t < windowTokens; ++t) {
      int64_t at = row * windowTokens + t;
      uint32_t value = token(start + t);
      if (tensor->dtype == TSR_DTYPE_INT64)
        static_cast<int64_t *>(tensor->data)[at] = value;
      else
        static_cast<int32_t *>(tensor->data)[at] = static_cast<int32_t>(value);
    }
  }

  void fill(int64_t step, tsr_tensor_t *const *tensors) const override {
    for (int64_t j = 0; j < batchSize; ++j) {
      int64_t window = sample(step, j);
      write(tensors[input], j, window * windowTokens);
      write(tensors[label], j, window * windowTokens + 1);
    }
  }

  bool feeds(size_t index) const override {
    return index == input || index == label;
  }
};

bool isBatched(const TensorSpec &spec) {
  return spec.role == TSR_ROLE_DATA || spec.role == TSR_ROLE_LABEL;
}

std::string roleOf(size_t index, const TensorSpec &spec) {
  return describe("input", index, spec) + " (" + tsr_role_name(spec.role) + ")";
}

tsr_status_t requireTrain(const tsr_artifact_t &artifact) {
  if (artifact.manifest.mode == "train")
    return TSR_OK;
  return fail(TSR_ERROR_INVALID_ARGUMENT, artifact.dir + ": mode \"" +
                                              artifact.manifest.mode +
                                              "\" takes no training data");
}

tsr_status_t initDataset(const tsr_artifact_t &artifact, tsr_dataset &dataset) {
  dataset.inputs = artifact.manifest.inputs;
  dataset.batchSize = artifact.manifest.train.batchSize;
  dataset.globalBatchSize = artifact.manifest.train.globalBatchSize;
  int64_t rank = 0, size = 1;
  if (tsr_status_t s = getDataParallelPosition(artifact.manifest, rank, size))
    return s;
  dataset.rankOffset = rank * dataset.batchSize;
  return TSR_OK;
}

/// Returns the index of the first label not in [0, num_classes) and not
/// ignore_index, or -1, and its value in `outValue`.
template <typename T>
int64_t firstBadLabel(const tsr_tensor &array, const TrainSpec &train,
                      std::string &outValue) {
  const T *values = static_cast<const T *>(array.data);
  for (int64_t i = 0; i < array.numElements; ++i) {
    __int128 value = values[i];
    bool inRange = value >= 0 && value < train.numClasses;
    if (!inRange && !(train.hasIgnoreIndex && value == train.ignoreIndex)) {
      outValue = std::to_string(values[i]);
      return i;
    }
  }
  return -1;
}

int64_t firstBadLabel(const tsr_tensor &array, const TrainSpec &train,
                      std::string &outValue) {
  switch (array.dtype) {
  case TSR_DTYPE_INT8:
    return firstBadLabel<int8_t>(array, train, outValue);
  case TSR_DTYPE_INT16:
    return firstBadLabel<int16_t>(array, train, outValue);
  case TSR_DTYPE_INT32:
    return firstBadLabel<int32_t>(array, train, outValue);
  case TSR_DTYPE_INT64:
    return firstBadLabel<int64_t>(array, train, outValue);
  case TSR_DTYPE_UINT8:
    return firstBadLabel<uint8_t>(array, train, outValue);
  case TSR_DTYPE_UINT16:
    return firstBadLabel<uint16_t>(array, train, outValue);
  case TSR_DTYPE_UINT32:
    return firstBadLabel<uint32_t>(array, train, outValue);
  case TSR_DTYPE_UINT64:
    return firstBadLabel<uint64_t>(array, train, outValue);
  default:
    // The manifest check admits only integer labels with num_classes.
    return -1;
  }
}

std::string labelRange(const TrainSpec &train) {
  std::string range = "[0, " + std::to_string(train.numClasses) + ")";
  if (train.hasIgnoreIndex)
    range += " and is not ignore_index " + std::to_string(train.ignoreIndex);
  return range;
}

/// Finds and checks the array that feeds input `index`.
tsr_status_t addFeed(NpzDataset &dataset, size_t index,
                     const tsr_artifact_t &artifact) {
  const TensorSpec &spec = dataset.inputs[index];
  const tsr_tensor *array = nullptr;
  std::string names;
  for (size_t i = 0; i < tsr_npz_num_arrays(dataset.npz.get()); ++i) {
    const tsr_tensor *candidate = tsr_npz_array(dataset.npz.get(), i);
    names += (names.empty() ? "" : ", ") + candidate->name;
    if (candidate->name == spec.name)
      array = candidate;
  }
  if (!array)
    return fail(TSR_ERROR_MISMATCH,
                "no array '" + spec.name + "' for " + roleOf(index, spec) +
                    "; the file holds " +
                    (names.empty() ? "no arrays" : "only " + names) +
                    (spec.role == TSR_ROLE_LABEL
                         ? " (the labels' name is tessera-compile's "
                           "--labels=NAME: recompile with the file's name, or "
                           "rename the array)"
                         : ""));
  std::string arrayName = "array '" + spec.name + "'";
  if (array->dtype != spec.dtype)
    return fail(TSR_ERROR_MISMATCH,
                arrayName + " has dtype " + tsr_dtype_name(array->dtype) +
                    ", but " + describe("input", index, spec) + " expects " +
                    tsr_dtype_name(spec.dtype));
  std::vector<int64_t> sampleShape(spec.shape.begin() + 1, spec.shape.end());
  bool sameSample = array->shape.size() == spec.shape.size() &&
                    std::equal(sampleShape.begin(), sampleShape.end(),
                               array->shape.begin() + 1);
  if (!sameSample) {
    std::string expected = formatShape(spec.shape);
    expected.replace(1, std::to_string(spec.shape[0]).size(), "N");
    return fail(TSR_ERROR_MISMATCH,
                arrayName + " has shape " + formatShape(array->shape) +
                    ", but " + describe("input", index, spec) + " (shape " +
                    formatShape(spec.shape) + ") needs " + expected);
  }
  int64_t samples = array->shape[0];
  if (samples == 0)
    return fail(TSR_ERROR_MISMATCH, arrayName + " has no samples");
  if (dataset.feedList.empty()) {
    dataset.numSamples = samples;
  } else if (samples != dataset.numSamples) {
    return fail(TSR_ERROR_MISMATCH,
                arrayName + " has " + std::to_string(samples) +
                    " samples, but array '" +
                    dataset.feedList.front().array->name + "' has " +
                    std::to_string(dataset.numSamples));
  }
  size_t sampleBytes = array->byteSize / static_cast<size_t>(samples);
  dataset.feedList.push_back({index, sampleBytes, array});

  const TrainSpec &train = artifact.manifest.train;
  if (spec.role != TSR_ROLE_LABEL || !train.numClasses)
    return TSR_OK;
  std::string value;
  int64_t bad = firstBadLabel(*array, train, value);
  if (bad < 0)
    return TSR_OK;
  int64_t perSample = array->numElements / samples;
  return fail(TSR_ERROR_MISMATCH,
              arrayName + ": sample " + std::to_string(bad / perSample) +
                  " has label " + value + ", which is outside " +
                  labelRange(train));
}

tsr_status_t openNpz(const tsr_artifact_t &artifact, const std::string &path,
                     std::unique_ptr<tsr_dataset> &out) {
  auto dataset = std::make_unique<NpzDataset>();
  if (tsr_status_t s = initDataset(artifact, *dataset))
    return s;
  tsr_npz_t *npz = nullptr;
  if (tsr_status_t s = tsr_npz_read(path.c_str(), &npz))
    return s;
  dataset->npz.reset(npz);
  for (size_t i = 0; i < dataset->inputs.size(); ++i)
    if (isBatched(dataset->inputs[i]))
      if (tsr_status_t s = addFeed(*dataset, i, artifact))
        return withContext(s, path);
  if (dataset->feedList.empty())
    return fail(TSR_ERROR_MISMATCH,
                path + ": the artifact has no data or label inputs to feed");
  out = std::move(dataset);
  return TSR_OK;
}

/// Checks every token against num_classes and against the integer dtypes of
/// the inputs it feeds.
tsr_status_t checkTokens(const TokenDataset &dataset, const TrainSpec &train) {
  bool narrow = dataset.inputs[dataset.input].dtype == TSR_DTYPE_INT32 ||
                dataset.inputs[dataset.label].dtype == TSR_DTYPE_INT32;
  for (int64_t p = 0; p < dataset.numTokens; ++p) {
    uint32_t value = dataset.token(p);
    std::string where =
        "token " + std::to_string(value) + " at position " + std::to_string(p);
    if (train.numClasses && value >= train.numClasses)
      return fail(TSR_ERROR_MISMATCH, where + " is outside [0, " +
                                          std::to_string(train.numClasses) +
                                          ") (train.num_classes)");
    if (narrow && value > INT32_MAX)
      return fail(TSR_ERROR_MISMATCH,
                  where + " does not fit the int32 token inputs");
  }
  return TSR_OK;
}

tsr_status_t openTokens(const tsr_artifact_t &artifact, const std::string &path,
                        tsr_dtype_t tokenDtype,
                        std::unique_ptr<tsr_dataset> &out) {
  if (tokenDtype != TSR_DTYPE_UINT16 && tokenDtype != TSR_DTYPE_UINT32)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                std::string("token streams hold uint16 or uint32 ids, not ") +
                    tsr_dtype_name(tokenDtype));
  const TrainSpec &train = artifact.manifest.train;
  if (train.tokenInput < 0)
    return fail(TSR_ERROR_MISMATCH,
                path +
                    ": a token stream needs an artifact with train.tokens, "
                    "and " +
                    artifact.dir + " has none (give an .npz file instead)");
  auto dataset = std::make_unique<TokenDataset>();
  if (tsr_status_t s = initDataset(artifact, *dataset))
    return s;
  dataset->tokenDtype = tokenDtype;
  dataset->input = static_cast<size_t>(train.tokenInput);
  dataset->label = static_cast<size_t>(train.tokenLabel);
  for (size_t i = 0; i < dataset->inputs.size(); ++i)
    if (isBatched(dataset->inputs[i]) && !dataset->feeds(i))
      return fail(TSR_ERROR_MISMATCH,
                  path + ": " + roleOf(i, dataset->inputs[i]) +
                      " cannot be fed from a token stream (give an .npz "
                      "file instead)");
  if (tsr_status_t s = readFile(path, dataset->bytes))
    return s;
  size_t tokenSize = tsr_dtype_size(tokenDtype);
  size_t size = dataset->bytes.size();
  if (size == 0)
    return fail(TSR_ERROR_PARSE, path + ": empty token stream");
  if (size % tokenSize)
    return fail(TSR_ERROR_PARSE, path + ": " + std::to_string(size) +
                                     " bytes are not a whole number of " +
                                     tsr_dtype_name(tokenDtype) + " tokens (" +
                                     std::to_string(tokenSize) +
                                     " bytes each)");
  dataset->numTokens = static_cast<int64_t>(size / tokenSize);
  dataset->windowTokens = dataset->inputs[dataset->input].shape[1];
  int64_t window = dataset->windowTokens;
  if (window == 0)
    return fail(TSR_ERROR_MISMATCH, path + ": the token input '" +
                                        dataset->inputs[dataset->input].name +
                                        "' has windows of 0 tokens");
  dataset->numSamples = (dataset->numTokens - 1) / window;
  if (dataset->numSamples < 1)
    return fail(TSR_ERROR_MISMATCH,
                path + ": " + std::to_string(dataset->numTokens) +
                    " tokens are too few for one window of " +
                    std::to_string(window) +
                    " input tokens and the label token after them (need " +
                    std::to_string(window + 1) + ")");
  if (tsr_status_t s = checkTokens(*dataset, train))
    return withContext(s, path);
  out = std::move(dataset);
  return TSR_OK;
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

tsr_status_t tsr_dataset_open_npz(const tsr_artifact_t *artifact,
                                  const char *path,
                                  tsr_dataset_t **out_dataset) {
  return guard([&] {
    if (!artifact || !path || !out_dataset)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    if (tsr_status_t s = requireTrain(*artifact))
      return s;
    std::unique_ptr<tsr_dataset> dataset;
    if (tsr_status_t s = openNpz(*artifact, path, dataset))
      return s;
    *out_dataset = dataset.release();
    return TSR_OK;
  });
}

tsr_status_t tsr_dataset_open_tokens(const tsr_artifact_t *artifact,
                                     const char *path, tsr_dtype_t token_dtype,
                                     tsr_dataset_t **out_dataset) {
  return guard([&] {
    if (!artifact || !path || !out_dataset)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    if (tsr_status_t s = requireTrain(*artifact))
      return s;
    std::unique_ptr<tsr_dataset> dataset;
    if (tsr_status_t s = openTokens(*artifact, path, token_dtype, dataset))
      return s;
    *out_dataset = dataset.release();
    return TSR_OK;
  });
}

void tsr_dataset_destroy(tsr_dataset_t *dataset) { delete dataset; }

int64_t tsr_dataset_num_samples(const tsr_dataset_t *dataset) {
  return dataset->numSamples;
}

int64_t tsr_dataset_num_tokens(const tsr_dataset_t *dataset) {
  return dataset->numTokens;
}

void tsr_dataset_set_order(tsr_dataset_t *dataset, int shuffle, uint64_t seed) {
  std::lock_guard<std::mutex> lock(dataset->cacheMutex);
  dataset->shuffle = shuffle != 0;
  dataset->seed = seed;
  for (auto &[epoch, order] : dataset->cache)
    order.clear();
}

tsr_status_t tsr_dataset_fill_batch(const tsr_dataset_t *dataset, int64_t step,
                                    tsr_tensor_t *const *inputs,
                                    size_t num_inputs) {
  return guard([&] {
    if (!dataset || (num_inputs && !inputs))
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    if (step < 0)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "step " + std::to_string(step) + " is negative");
    if (num_inputs != dataset->inputs.size())
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "the artifact takes " +
                      std::to_string(dataset->inputs.size()) + " inputs, got " +
                      std::to_string(num_inputs));
    for (size_t i = 0; i < num_inputs; ++i) {
      if (!dataset->feeds(i))
        continue;
      const TensorSpec &spec = dataset->inputs[i];
      if (!inputs[i] || inputs[i]->dtype != spec.dtype ||
          inputs[i]->shape != spec.shape)
        return fail(TSR_ERROR_MISMATCH,
                    describe("input", i, spec) + ": expected a " +
                        tsr_dtype_name(spec.dtype) + formatShape(spec.shape) +
                        " tensor");
      if (tsr_status_t s =
              requireHostReadable(*inputs[i], describe("input", i, spec)))
        return s;
    }
    dataset->fill(step, inputs);
    return TSR_OK;
  });
}
