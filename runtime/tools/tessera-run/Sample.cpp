//===- Sample.cpp - Sampling text from a language model -------------------===//
//
// `tessera-run ART --sample N --vocab VOCAB.json`: ART is an "infer"
// artifact of a causal language model, one integer input of shape [B, T]
// (token ids) and a float output of shape [B, T, V] (the logits). The
// prompt is encoded with the vocabulary (a JSON list of the token
// strings, longest match first), then each new token is drawn from the
// logits at the last position of a window of the last T tokens (a shorter
// window is padded after its end, which a causal model does not read):
// softmax(logits / temperature) by a splitmix64 stream from --seed, or
// the argmax at temperature 0. Every row of the batch gets the same window;
// row 0's logits are read.
//
//===----------------------------------------------------------------------===//

#include "TesseraRun.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <vector>

using namespace tessera_run;

namespace {

struct TensorDeleter {
  void operator()(tsr_tensor_t *tensor) const { tsr_tensor_destroy(tensor); }
};
using TensorPtr = std::unique_ptr<tsr_tensor_t, TensorDeleter>;

/// splitmix64 (Steele et al. 2014): the same stream on every platform.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) from the top 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

/// Reads the vocabulary: a JSON array of strings, token id = index.
std::string readVocab(const std::string &path, std::vector<std::string> &out) {
  std::ifstream in(path);
  if (!in)
    return "--vocab " + path + ": cannot open";
  nlohmann::json root = nlohmann::json::parse(in, nullptr, false);
  if (root.is_discarded() || !root.is_array() || root.empty())
    return "--vocab " + path +
           ": expected a non-empty JSON array of token strings";
  for (size_t i = 0; i < root.size(); ++i) {
    if (!root[i].is_string())
      return "--vocab " + path + ": entry " + std::to_string(i) +
             " is not a string";
    out.push_back(root[i].get<std::string>());
  }
  return "";
}

/// Encodes `text` by the longest vocabulary entry at each position.
std::string encode(const std::string &text,
                   const std::vector<std::string> &vocab,
                   std::vector<int64_t> &out) {
  for (size_t at = 0; at < text.size();) {
    int64_t best = -1;
    for (size_t id = 0; id < vocab.size(); ++id)
      if (!vocab[id].empty() &&
          text.compare(at, vocab[id].size(), vocab[id]) == 0 &&
          (best < 0 || vocab[id].size() > vocab[best].size()))
        best = static_cast<int64_t>(id);
    if (best < 0)
      return "--prompt: the text at byte " + std::to_string(at) + " ('" +
             text.substr(at, 1) + "') is not in the vocabulary";
    out.push_back(best);
    at += vocab[best].size();
  }
  return "";
}

/// Draws a token from `logits` (V values) at `temperature` (0: argmax).
int64_t draw(const float *logits, int64_t v, double temperature,
             SplitMix64 &rng) {
  int64_t best = std::max_element(logits, logits + v) - logits;
  if (temperature == 0)
    return best;
  std::vector<double> p(v);
  double sum = 0;
  for (int64_t i = 0; i < v; ++i)
    sum += p[i] = std::exp((double(logits[i]) - logits[best]) / temperature);
  double u = rng.uniform() * sum;
  for (int64_t i = 0; i < v; ++i) {
    u -= p[i];
    if (u < 0)
      return i;
  }
  return best;
}

} // namespace

int tessera_run::runSample(const Options &options, tsr_artifact_t *artifact,
                           Process &process) {
  if (process.size > 1)
    return process.fail("--sample runs on one process, not under mpirun");
  std::string where = options.artifact + ": --sample needs ";
  if (tsr_artifact_num_inputs(artifact) != 1)
    return process.fail(where +
                        "an artifact with one input (the token ids), "
                        "not " +
                        std::to_string(tsr_artifact_num_inputs(artifact)));
  tsr_tensor_info_t input;
  tsr_artifact_input_info(artifact, 0, &input);
  if ((input.dtype != TSR_DTYPE_INT64 && input.dtype != TSR_DTYPE_INT32) ||
      input.rank != 2)
    return process.fail(where +
                        "an int32 or int64 input of shape [batch, "
                        "tokens]; '" +
                        input.name + "' is " + tsr_dtype_name(input.dtype) +
                        " of rank " + std::to_string(input.rank));
  int64_t batch = input.shape[0], window = input.shape[1];
  int64_t logits = -1;
  for (size_t i = 0; i < tsr_artifact_num_outputs(artifact) && logits < 0;
       ++i) {
    tsr_tensor_info_t out;
    tsr_artifact_output_info(artifact, i, &out);
    if (out.dtype == TSR_DTYPE_FLOAT32 && out.rank == 3 &&
        out.shape[0] == batch && out.shape[1] == window)
      logits = static_cast<int64_t>(i);
  }
  if (logits < 0)
    return process.fail(where + "a float32 output of shape [" +
                        std::to_string(batch) + ", " + std::to_string(window) +
                        ", vocabulary] (the logits)");
  if (std::string(tsr_artifact_target(artifact)) != "cpu")
    return process.fail(where +
                        "a --target=cpu artifact (its buffers in "
                        "host memory), not target \"" +
                        tsr_artifact_target(artifact) + "\"");
  std::vector<std::string> vocab;
  if (std::string problem = readVocab(options.vocab, vocab); !problem.empty())
    return process.fail(problem);

  // The outputs, the logits among them.
  std::vector<TensorPtr> outputs;
  std::vector<tsr_tensor_t *> outputPtrs;
  for (size_t i = 0; i < tsr_artifact_num_outputs(artifact); ++i) {
    tsr_tensor_info_t info;
    tsr_artifact_output_info(artifact, i, &info);
    tsr_tensor_t *tensor = nullptr;
    if (tsr_tensor_create(info.dtype, info.rank, info.shape, &tensor) != TSR_OK)
      return process.fail(tsr_last_error());
    outputs.emplace_back(tensor);
    outputPtrs.push_back(tensor);
  }
  int64_t v = tsr_tensor_shape(outputs[logits].get())[2];
  if (static_cast<int64_t>(vocab.size()) != v)
    return process.fail(
        "--vocab " + options.vocab + " has " + std::to_string(vocab.size()) +
        " tokens but the model's logits have " + std::to_string(v));
  std::vector<int64_t> tokens;
  // Without a prompt the text starts at a line break, else token 0.
  std::string prompt = options.prompt.empty() ? "\n" : options.prompt;
  if (std::string problem = encode(prompt, vocab, tokens); !problem.empty()) {
    if (!options.prompt.empty())
      return process.fail(problem);
    tokens.assign(1, 0);
  }
  tsr_tensor_t *rawInput = nullptr;
  if (tsr_tensor_create(input.dtype, input.rank, input.shape, &rawInput) !=
      TSR_OK)
    return process.fail(tsr_last_error());
  TensorPtr ids(rawInput);
  const tsr_tensor_t *inputPtr = ids.get();

  SplitMix64 rng{options.seed};
  size_t prompted = tokens.size();
  auto start = std::chrono::steady_clock::now();
  for (long n = 0; n < options.sample; ++n) {
    int64_t first = std::max<int64_t>(0, int64_t(tokens.size()) - window);
    int64_t used = static_cast<int64_t>(tokens.size()) - first;
    for (int64_t row = 0; row < batch; ++row)
      for (int64_t t = 0; t < window; ++t) {
        int64_t id = t < used ? tokens[first + t] : 0;
        if (input.dtype == TSR_DTYPE_INT64)
          static_cast<int64_t *>(tsr_tensor_data(ids.get()))[row * window + t] =
              id;
        else
          static_cast<int32_t *>(tsr_tensor_data(ids.get()))[row * window + t] =
              static_cast<int32_t>(id);
      }
    if (tsr_artifact_invoke(artifact, &inputPtr, 1, outputPtrs.data(),
                            outputPtrs.size()) != TSR_OK)
      return process.fail(tsr_last_error());
    const float *row0 =
        static_cast<const float *>(tsr_tensor_data(outputs[logits].get()));
    tokens.push_back(draw(row0 + (used - 1) * v, v, options.temperature, rng));
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::string text;
  for (int64_t id : tokens)
    text += vocab[id];
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
  std::fprintf(stderr,
               "sampled %ld tokens after a prompt of %zu at temperature %g, "
               "seed %llu (%.1f tokens/s)\n",
               options.sample, prompted, options.temperature, options.seed,
               seconds > 0 ? options.sample / seconds : 0.0);
  return 0;
}
