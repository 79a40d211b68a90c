//===- tessera-run.cpp - Run or train a compiled Tessera artifact ---------===//
//
// For an "infer" artifact: reads input_<i>.pb (or input_<i>.npy) for each
// manifest input, invokes the entry and writes output_<i>.pb for each output.
// For a "train" artifact (--train): runs N steps over an .npz file or a token
// stream, printing the loss of each step, and can write the trained ONNX
// model. Every error is one line on stderr and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "tessera-runtime/Runtime.h"

#include <chrono>
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

const char *const kUsage =
    "usage: tessera-run ART --inputs-dir DIR --outputs-dir DIR [--print]\n"
    "                       [--repeat N]\n"
    "       tessera-run ART --train --data FILE --steps N [--batch-size B]\n"
    "                       [--log-json FILE] [--save-onnx PATH [--save-every "
    "K]]\n"
    "                       [--token-dtype uint16|uint32]\n"
    "       (both forms also take [--threads N])\n"
    "\n"
    "Runs the artifact directory ART made by `tessera-compile --mode=infer`, "
    "or\n"
    "trains one made with --mode=train.\n"
    "\n"
    "  --inputs-dir DIR   read input i from DIR/input_<i>.pb (ONNX "
    "TensorProto)\n"
    "                     or else DIR/input_<i>.npy; dtype and shape must "
    "match\n"
    "                     the manifest exactly\n"
    "  --outputs-dir DIR  write output i to DIR/output_<i>.pb (created if\n"
    "                     missing); optional with --print\n"
    "  --print            print each output's name, shape and first values\n"
    "  --repeat N         invoke the model N more times after the first and\n"
    "                     print the mean and minimum time of one invocation\n"
    "\n"
    "  --train            run training steps on a \"train\" artifact\n"
    "  --data FILE        FILE.npz: one array per data and label input, named\n"
    "                     after it, of shape [N, input shape[1:]...];\n"
    "                     FILE.bin: a token stream for artifacts with\n"
    "                     train.tokens\n"
    "  --steps N          run N steps; step s uses samples (s*B + i) mod N\n"
    "  --batch-size B     check that the artifact was compiled for batch B\n"
    "  --log-json FILE    write one JSON object per step to FILE\n"
    "  --save-onnx PATH   write the model with the trained params to PATH\n"
    "  --save-every K     also write PATH.step<k>.onnx after every K steps\n"
    "  --token-dtype T    token ids of FILE.bin are uint16 (default) or "
    "uint32\n"
    "  --threads N        threads of the BLAS library the model calls\n"
    "                     (OPENBLAS_NUM_THREADS; default: its own default,\n"
    "                     one per core); 1 avoids busy-waiting BLAS threads\n"
    "                     on a machine shared with other work\n"
    "  -h, --help         show this help\n";

constexpr int64_t kPrintedValues = 8;

/// Reports `message` as the single error line and returns the exit status.
int error(const std::string &message) {
  std::fprintf(stderr, "tessera-run: error: %s\n", message.c_str());
  return 1;
}

struct TensorDeleter {
  void operator()(tsr_tensor_t *tensor) const { tsr_tensor_destroy(tensor); }
};
using TensorPtr = std::unique_ptr<tsr_tensor_t, TensorDeleter>;

struct ArtifactDeleter {
  void operator()(tsr_artifact_t *artifact) const {
    tsr_artifact_destroy(artifact);
  }
};
using ArtifactPtr = std::unique_ptr<tsr_artifact_t, ArtifactDeleter>;

struct Options {
  std::string artifact, inputsDir, outputsDir;
  bool print = false;
  bool help = false;
  long repeat = 0;
  long threads = 0;

  bool train = false;
  std::string data, logJson, saveOnnx, tokenDtype;
  long steps = 0;
  long batchSize = 0;
  long saveEvery = 0;
};

/// Parses a count flag's value into [1, max].
std::string parseCount(const char *flag, const std::string &value, long max,
                       long &out) {
  char *end = nullptr;
  out = std::strtol(value.c_str(), &end, 10);
  if (*end != '\0' || out < 1 || out > max)
    return std::string(flag) + " needs an integer in [1, " +
           std::to_string(max) + "], got '" + value + "'";
  return "";
}

/// Checks how the flags combine; returns an error message, or "".
std::string checkCombination(const Options &options) {
  if (options.artifact.empty())
    return "missing artifact directory (usage: tessera-run ART --inputs-dir "
           "DIR --outputs-dir DIR, or tessera-run ART --train --data FILE "
           "--steps N)";
  struct Use {
    const char *flag;
    bool given;
  };
  const Use inferOnly[] = {{"--inputs-dir", !options.inputsDir.empty()},
                           {"--outputs-dir", !options.outputsDir.empty()},
                           {"--print", options.print},
                           {"--repeat", options.repeat > 0}};
  const Use trainOnly[] = {{"--data", !options.data.empty()},
                           {"--steps", options.steps > 0},
                           {"--batch-size", options.batchSize > 0},
                           {"--log-json", !options.logJson.empty()},
                           {"--save-onnx", !options.saveOnnx.empty()},
                           {"--save-every", options.saveEvery > 0},
                           {"--token-dtype", !options.tokenDtype.empty()}};
  if (!options.train) {
    for (const Use &use : trainOnly)
      if (use.given)
        return std::string(use.flag) + " needs --train";
    if (options.outputsDir.empty() && !options.print && options.repeat == 0)
      return "missing --outputs-dir (or --print or --repeat)";
    return "";
  }
  for (const Use &use : inferOnly)
    if (use.given)
      return std::string(use.flag) + " cannot be combined with --train";
  if (options.data.empty())
    return "missing --data (an .npz file or a .bin token stream)";
  if (options.steps == 0)
    return "missing --steps";
  if (options.saveEvery > 0 && options.saveOnnx.empty())
    return "--save-every needs --save-onnx";
  if (!options.tokenDtype.empty() && options.tokenDtype != "uint16" &&
      options.tokenDtype != "uint32")
    return "--token-dtype must be uint16 or uint32, got '" +
           options.tokenDtype + "'";
  return "";
}

/// Parses argv; returns an error message, or "" on success.
std::string parseOptions(int argc, char **argv, Options &options) {
  bool sawInputs = false, sawOutputs = false, sawRepeat = false,
       sawThreads = false;
  bool sawData = false, sawSteps = false, sawBatch = false, sawLog = false;
  bool sawSave = false, sawEvery = false, sawToken = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto takeValue = [&](const char *flag, std::string &out,
                         bool &seen) -> std::string {
      std::string prefix = std::string(flag) + "=";
      if (arg.compare(0, prefix.size(), prefix) == 0) {
        out = arg.substr(prefix.size());
      } else if (i + 1 < argc) {
        out = argv[++i];
      } else {
        return std::string(flag) + " needs a value";
      }
      if (out.empty())
        return std::string(flag) + " needs a non-empty value";
      if (seen)
        return std::string(flag) + " given more than once";
      seen = true;
      return "";
    };
    auto takeCount = [&](const char *flag, long max, long &out,
                         bool &seen) -> std::string {
      std::string value;
      std::string problem = takeValue(flag, value, seen);
      return problem.empty() ? parseCount(flag, value, max, out) : problem;
    };
    auto isFlag = [&](const char *flag) {
      std::string name = flag;
      return arg == name || arg.compare(0, name.size() + 1, name + "=") == 0;
    };
    std::string problem;
    if (arg == "-h" || arg == "--help") {
      options.help = true;
    } else if (arg == "--print") {
      options.print = true;
    } else if (arg == "--train") {
      options.train = true;
    } else if (isFlag("--inputs-dir")) {
      problem = takeValue("--inputs-dir", options.inputsDir, sawInputs);
    } else if (isFlag("--outputs-dir")) {
      problem = takeValue("--outputs-dir", options.outputsDir, sawOutputs);
    } else if (isFlag("--repeat")) {
      problem = takeCount("--repeat", 1000000, options.repeat, sawRepeat);
    } else if (isFlag("--threads")) {
      problem = takeCount("--threads", 1024, options.threads, sawThreads);
    } else if (isFlag("--data")) {
      problem = takeValue("--data", options.data, sawData);
    } else if (isFlag("--steps")) {
      problem = takeCount("--steps", 1000000000, options.steps, sawSteps);
    } else if (isFlag("--batch-size")) {
      problem =
          takeCount("--batch-size", 1000000000, options.batchSize, sawBatch);
    } else if (isFlag("--log-json")) {
      problem = takeValue("--log-json", options.logJson, sawLog);
    } else if (isFlag("--save-onnx")) {
      problem = takeValue("--save-onnx", options.saveOnnx, sawSave);
    } else if (isFlag("--save-every")) {
      problem =
          takeCount("--save-every", 1000000000, options.saveEvery, sawEvery);
    } else if (isFlag("--token-dtype")) {
      problem = takeValue("--token-dtype", options.tokenDtype, sawToken);
    } else if (arg.size() > 1 && arg[0] == '-') {
      problem = "unknown option '" + arg + "' (see --help)";
    } else if (options.artifact.empty()) {
      options.artifact = arg;
    } else {
      problem = "unexpected argument '" + arg + "' (artifact is already '" +
                options.artifact + "')";
    }
    if (!problem.empty())
      return problem;
  }
  return options.help ? "" : checkCombination(options);
}

bool isFile(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

std::string describe(const char *kind, size_t index, const char *name) {
  return std::string(kind) + " " + std::to_string(index) + " '" + name + "'";
}

/// Creates `path` and its missing parents.
std::string makeDirectories(const std::string &path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string prefix = path.substr(0, slash);
    struct stat info;
    if (::stat(prefix.c_str(), &info) == 0) {
      if (!S_ISDIR(info.st_mode))
        return prefix + ": exists and is not a directory";
    } else if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
      return prefix + ": cannot create directory: " + std::strerror(errno);
    }
    if (slash == std::string::npos)
      return "";
  }
}

float halfToFloat(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1F;
  int mantissa = bits & 0x3FF;
  float value;
  if (exponent == 0)
    value = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    value = mantissa ? NAN : INFINITY;
  else
    value = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  return (bits & 0x8000) ? -value : value;
}

float bfloat16ToFloat(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}

std::string formatValue(tsr_dtype_t dtype, const void *data, int64_t i) {
  char text[64];
  switch (dtype) {
  case TSR_DTYPE_FLOAT16:
    std::snprintf(text, sizeof(text), "%g",
                  halfToFloat(static_cast<const uint16_t *>(data)[i]));
    break;
  case TSR_DTYPE_BFLOAT16:
    std::snprintf(text, sizeof(text), "%g",
                  bfloat16ToFloat(static_cast<const uint16_t *>(data)[i]));
    break;
  case TSR_DTYPE_FLOAT32:
    std::snprintf(text, sizeof(text), "%g",
                  static_cast<const float *>(data)[i]);
    break;
  case TSR_DTYPE_FLOAT64:
    std::snprintf(text, sizeof(text), "%g",
                  static_cast<const double *>(data)[i]);
    break;
  case TSR_DTYPE_INT8:
    return std::to_string(static_cast<const int8_t *>(data)[i]);
  case TSR_DTYPE_INT16:
    return std::to_string(static_cast<const int16_t *>(data)[i]);
  case TSR_DTYPE_INT32:
    return std::to_string(static_cast<const int32_t *>(data)[i]);
  case TSR_DTYPE_INT64:
    return std::to_string(static_cast<const int64_t *>(data)[i]);
  case TSR_DTYPE_UINT8:
    return std::to_string(static_cast<const uint8_t *>(data)[i]);
  case TSR_DTYPE_UINT16:
    return std::to_string(static_cast<const uint16_t *>(data)[i]);
  case TSR_DTYPE_UINT32:
    return std::to_string(static_cast<const uint32_t *>(data)[i]);
  case TSR_DTYPE_UINT64:
    return std::to_string(static_cast<const uint64_t *>(data)[i]);
  case TSR_DTYPE_BOOL:
    return static_cast<const uint8_t *>(data)[i] ? "true" : "false";
  default:
    return "?";
  }
  return text;
}

void printTensor(size_t index, tsr_tensor_t *tensor) {
  tsr_dtype_t dtype = tsr_tensor_dtype(tensor);
  std::string line = describe("output", index, tsr_tensor_name(tensor)) + ": " +
                     tsr_dtype_name(dtype) + "[";
  const int64_t *shape = tsr_tensor_shape(tensor);
  for (size_t d = 0; d < tsr_tensor_rank(tensor); ++d)
    line += (d ? ", " : "") + std::to_string(shape[d]);
  line += "] = [";
  int64_t count = tsr_tensor_num_elements(tensor);
  for (int64_t i = 0; i < count && i < kPrintedValues; ++i)
    line += (i ? ", " : "") + formatValue(dtype, tsr_tensor_data(tensor), i);
  if (count > kPrintedValues)
    line += ", ... (" + std::to_string(count) + " values)";
  std::printf("%s]\n", line.c_str());
}

int runInfer(const Options &options, tsr_artifact_t *artifact) {
  size_t numInputs = tsr_artifact_num_inputs(artifact);
  size_t numOutputs = tsr_artifact_num_outputs(artifact);
  if (numInputs && options.inputsDir.empty())
    return error("missing --inputs-dir (the artifact takes " +
                 std::to_string(numInputs) + " inputs)");

  std::vector<TensorPtr> inputs, outputs;
  for (size_t i = 0; i < numInputs; ++i) {
    tsr_tensor_info_t info;
    tsr_artifact_input_info(artifact, i, &info);
    std::string base = options.inputsDir + "/input_" + std::to_string(i);
    std::string path = base + ".pb";
    tsr_tensor_t *tensor = nullptr;
    tsr_status_t status;
    if (isFile(path)) {
      status = tsr_tensor_read_pb(path.c_str(), &tensor);
    } else if (isFile(base + ".npy")) {
      path = base + ".npy";
      status = tsr_tensor_read_npy(path.c_str(), &tensor);
    } else {
      return error(describe("input", i, info.name) + ": neither " + path +
                   " nor " + base + ".npy exists");
    }
    if (status != TSR_OK)
      return error(describe("input", i, info.name) + ": " + tsr_last_error());
    inputs.emplace_back(tensor);
    if (tsr_artifact_check_input(artifact, i, tensor) != TSR_OK)
      return error(path + ": " + tsr_last_error());
  }
  for (size_t i = 0; i < numOutputs; ++i) {
    tsr_tensor_t *tensor = nullptr;
    if (tsr_artifact_create_output(artifact, i, &tensor) != TSR_OK)
      return error(tsr_last_error());
    outputs.emplace_back(tensor);
  }
  if (!options.outputsDir.empty()) {
    std::string problem = makeDirectories(options.outputsDir);
    if (!problem.empty())
      return error(problem);
  }

  std::vector<const tsr_tensor_t *> inputPtrs;
  std::vector<tsr_tensor_t *> outputPtrs;
  for (TensorPtr &tensor : inputs)
    inputPtrs.push_back(tensor.get());
  for (TensorPtr &tensor : outputs)
    outputPtrs.push_back(tensor.get());
  auto invoke = [&] {
    return tsr_artifact_invoke(artifact, inputPtrs.data(), inputPtrs.size(),
                               outputPtrs.data(), outputPtrs.size());
  };
  if (invoke() != TSR_OK)
    return error(tsr_last_error());
  if (options.repeat > 0) {
    using Clock = std::chrono::steady_clock;
    double total = 0, best = 0;
    for (long r = 0; r < options.repeat; ++r) {
      auto start = Clock::now();
      if (invoke() != TSR_OK)
        return error(tsr_last_error());
      double ms =
          std::chrono::duration<double, std::milli>(Clock::now() - start)
              .count();
      total += ms;
      best = r == 0 ? ms : std::min(best, ms);
    }
    std::printf("time per invocation: mean %.4f ms, min %.4f ms over %ld "
                "runs\n",
                total / options.repeat, best, options.repeat);
  }

  for (size_t i = 0; i < numOutputs; ++i) {
    if (options.print)
      printTensor(i, outputs[i].get());
    if (options.outputsDir.empty())
      continue;
    std::string path =
        options.outputsDir + "/output_" + std::to_string(i) + ".pb";
    if (tsr_tensor_write_pb(outputs[i].get(), path.c_str()) != TSR_OK)
      return error(tsr_last_error());
  }
  return 0;
}

struct TrainerDeleter {
  void operator()(tsr_trainer_t *trainer) const {
    tsr_trainer_destroy(trainer);
  }
};
using TrainerPtr = std::unique_ptr<tsr_trainer_t, TrainerDeleter>;

struct DatasetDeleter {
  void operator()(tsr_dataset_t *dataset) const {
    tsr_dataset_destroy(dataset);
  }
};
using DatasetPtr = std::unique_ptr<tsr_dataset_t, DatasetDeleter>;

struct FileCloser {
  void operator()(std::FILE *file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The file --save-every writes after step `step`: PATH without its .onnx
/// suffix, then ".step<step>.onnx".
std::string checkpointPath(const std::string &path, long step) {
  std::string stem =
      endsWith(path, ".onnx") ? path.substr(0, path.size() - 5) : path;
  return stem + ".step" + std::to_string(step) + ".onnx";
}

/// Checks that the directory a file will be written into exists.
std::string checkParentDirectory(const std::string &flag,
                                 const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0)
    return "";
  std::string parent = path.substr(0, slash);
  struct stat info;
  if (::stat(parent.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    return "";
  return flag + " " + path + ": directory '" + parent + "' does not exist";
}

/// Opens --data as an .npz file or a token stream, by its extension.
std::string openDataset(const Options &options, tsr_artifact_t *artifact,
                        DatasetPtr &out) {
  tsr_dataset_t *dataset = nullptr;
  tsr_status_t status;
  if (endsWith(options.data, ".npz")) {
    if (!options.tokenDtype.empty())
      return "--token-dtype applies to token streams (.bin), not to " +
             options.data;
    status = tsr_dataset_open_npz(artifact, options.data.c_str(), &dataset);
  } else if (endsWith(options.data, ".bin")) {
    tsr_dtype_t dtype =
        options.tokenDtype == "uint32" ? TSR_DTYPE_UINT32 : TSR_DTYPE_UINT16;
    status = tsr_dataset_open_tokens(artifact, options.data.c_str(), dtype,
                                     &dataset);
  } else {
    return options.data + ": unknown data format (expected FILE.npz or a "
                          "FILE.bin token stream)";
  }
  if (status != TSR_OK)
    return tsr_last_error();
  out.reset(dataset);
  return "";
}

/// Formats a loss with 6 decimals, or as nan, inf or -inf.
std::string formatLoss(float loss) {
  if (std::isnan(loss))
    return "nan";
  if (std::isinf(loss))
    return loss > 0 ? "inf" : "-inf";
  char text[64];
  std::snprintf(text, sizeof(text), "%.6f", loss);
  return text;
}

/// Formats a double for JSON: %.9g, or null when not finite.
std::string jsonNumber(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

int runTrain(const Options &options, tsr_artifact_t *artifact) {
  tsr_train_info_t train;
  if (tsr_artifact_train_info(artifact, &train) != TSR_OK)
    return error(tsr_last_error());
  if (options.batchSize > 0 && options.batchSize != train.batch_size)
    return error(options.artifact + ": the artifact was compiled for " +
                 "batch size " + std::to_string(train.batch_size) + ", not " +
                 std::to_string(options.batchSize) +
                 " (recompile it with batch size " +
                 std::to_string(options.batchSize) + ")");

  tsr_trainer_t *rawTrainer = nullptr;
  if (tsr_trainer_create(artifact, &rawTrainer) != TSR_OK)
    return error(tsr_last_error());
  TrainerPtr trainer(rawTrainer);
  if (!options.saveOnnx.empty()) {
    if (tsr_trainer_check_save_onnx(trainer.get()) != TSR_OK)
      return error(std::string("--save-onnx: ") + tsr_last_error());
    std::string problem = checkParentDirectory("--save-onnx", options.saveOnnx);
    if (!problem.empty())
      return error(problem);
  }
  DatasetPtr dataset;
  std::string problem = openDataset(options, artifact, dataset);
  if (!problem.empty())
    return error(problem);
  FilePtr log;
  if (!options.logJson.empty()) {
    log.reset(std::fopen(options.logJson.c_str(), "w"));
    if (!log)
      return error(options.logJson +
                   ": cannot create: " + std::strerror(errno));
  }

  // Token artifacts report tokens per second, B * T per step.
  bool tokens = train.token_input >= 0;
  int64_t windowTokens = 1;
  if (tokens) {
    tsr_tensor_info_t info;
    tsr_artifact_input_info(artifact, train.token_input, &info);
    windowTokens = info.shape[1];
  }
  int64_t samples = tsr_dataset_num_samples(dataset.get());
  int64_t streamTokens = tsr_dataset_num_tokens(dataset.get());
  std::string source =
      streamTokens > 0
          ? std::to_string(streamTokens) + " " +
                (options.tokenDtype.empty() ? "uint16" : options.tokenDtype) +
                " tokens, " + std::to_string(samples) + " windows of " +
                std::to_string(windowTokens)
          : std::to_string(samples) + " samples";
  std::printf("training %s: batch size %" PRId64 ", micro_batches %" PRId64
              ", data %s: %s\n",
              options.artifact.c_str(), train.batch_size, train.micro_batches,
              options.data.c_str(), source.c_str());
  std::fflush(stdout);

  double perStep = static_cast<double>(train.batch_size * windowTokens);
  const char *unit = tokens ? "tokens" : "samples";
  tsr_memory_reset_peak();
  using Clock = std::chrono::steady_clock;
  for (long step = 1; step <= options.steps; ++step) {
    float loss = 0;
    auto start = Clock::now();
    if (tsr_trainer_step(trainer.get(), dataset.get(), step - 1, &loss) !=
        TSR_OK)
      return error("step " + std::to_string(step) + ": " + tsr_last_error());
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    double rate = seconds > 0 ? perStep / seconds : 0;
    std::printf("step %ld/%ld  loss %s  %.1f %s/s  %.2f ms\n", step,
                options.steps, formatLoss(loss).c_str(), rate, unit,
                seconds * 1000);
    std::fflush(stdout);
    if (log) {
      std::fprintf(log.get(),
                   "{\"step\": %ld, \"loss\": %s, \"seconds\": %s, "
                   "\"%s_per_second\": %s}\n",
                   step, jsonNumber(loss).c_str(), jsonNumber(seconds).c_str(),
                   unit, jsonNumber(rate).c_str());
      std::fflush(log.get());
    }
    if (!std::isfinite(loss))
      return error("step " + std::to_string(step) + ": the loss is " +
                   (std::isnan(loss) ? "nan" : "infinite") +
                   "; training stopped");
    if (options.saveEvery > 0 && step % options.saveEvery == 0) {
      std::string path = checkpointPath(options.saveOnnx, step);
      if (tsr_trainer_save_onnx(trainer.get(), path.c_str()) != TSR_OK)
        return error(tsr_last_error());
      std::printf("wrote %s\n", path.c_str());
    }
  }
  if (log && std::ferror(log.get()))
    return error(options.logJson + ": write error");
  if (!options.saveOnnx.empty()) {
    if (tsr_trainer_save_onnx(trainer.get(), options.saveOnnx.c_str()) !=
        TSR_OK)
      return error(tsr_last_error());
    std::printf("wrote %s\n", options.saveOnnx.c_str());
  }
  size_t peak = 0, held = 0;
  tsr_memory_stats(nullptr, &peak);
  for (size_t i = 0; i < tsr_artifact_num_inputs(artifact); ++i)
    held += tsr_tensor_byte_size(tsr_trainer_input(trainer.get(), i));
  std::printf("peak step memory: %zu bytes (artifact allocations), "
              "params+state+batch: %zu bytes\n",
              peak, held);
  return 0;
}

int run(const Options &options) {
  // OpenBLAS reads its thread count when the artifact's library loads it.
  if (options.threads > 0)
    setenv("OPENBLAS_NUM_THREADS", std::to_string(options.threads).c_str(), 1);
  tsr_artifact_t *rawArtifact = nullptr;
  if (tsr_artifact_load(options.artifact.c_str(), &rawArtifact) != TSR_OK)
    return error(tsr_last_error());
  ArtifactPtr artifact(rawArtifact);
  std::string mode = tsr_artifact_mode(artifact.get());
  std::string where =
      options.artifact + "/manifest.json: mode \"" + mode + "\"";
  if (options.train) {
    if (mode != "train")
      return error(where + " cannot be trained (--train needs a \"train\" "
                           "artifact)");
    return runTrain(options, artifact.get());
  }
  if (mode == "train")
    return error(where + " needs --train");
  if (mode == "grad")
    return error(where + " is not run by tessera-run (load it in-process, "
                         "e.g. with the Python binding python/tessera)");
  if (!mode.empty() && mode != "infer")
    return error(where + " is not supported (tessera-run runs \"infer\" "
                         "and \"train\" artifacts)");
  return runInfer(options, artifact.get());
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  std::string problem = parseOptions(argc, argv, options);
  if (!problem.empty())
    return error(problem);
  if (options.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  return run(options);
}
