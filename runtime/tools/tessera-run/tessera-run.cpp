//===- tessera-run.cpp - Run or train a compiled Tessera artifact ---------===//
//
// For an "infer" artifact: reads input_<i>.pb (or input_<i>.npy) for each
// manifest input, invokes the entry and writes output_<i>.pb for each output.
// For a "train" artifact (--train): runs N steps over an .npz file or a token
// stream, printing the loss of each step, and can write the trained ONNX
// model. Every error is one line on stderr and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "Float16.h"
#include "tessera-runtime/Checkpoint.h"
#include "tessera-runtime/Comm.h"
#include "tessera-runtime/Runtime.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
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
    "                       [--checkpoint-dir DIR [--checkpoint-every K]]\n"
    "                       [--resume PATH] [--log-dir DIR] [--comm-timeout "
    "S]\n"
    "                       [--memory-report]\n"
    "       mpirun -np N tessera-run ART --train ... (an artifact compiled "
    "with\n"
    "                       --mesh dp=N; srun works the same way)\n"
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
    "  --checkpoint-dir D write the whole training state to D/step-<k> after\n"
    "                     every K steps (--checkpoint-every, default: at the\n"
    "                     end only); every rank writes its shard\n"
    "  --resume PATH      continue from a checkpoint (a step-<k> directory, "
    "or\n"
    "                     a --checkpoint-dir whose newest one is taken); the\n"
    "                     run ends after --steps steps in all\n"
    "  --log-dir DIR      every rank also writes its progress and errors to\n"
    "                     DIR/rank-<r>.log (rank 0 prints to stdout anyway)\n"
    "  --comm-timeout S   a collective that waits longer than S seconds ends\n"
    "                     the job, naming the ranks that never arrived\n"
    "                     (default 30; 0 disables)\n"
    "  --memory-report    each rank prints the bytes of params, gradients and\n"
    "                     optimizer state it held\n"
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
  std::string checkpointDir, resume, logDir;
  long checkpointEvery = 0;
  double commTimeout = 30;
  bool commTimeoutGiven = false;
  bool memoryReport = false;
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
                           {"--token-dtype", !options.tokenDtype.empty()},
                           {"--checkpoint-dir", !options.checkpointDir.empty()},
                           {"--checkpoint-every", options.checkpointEvery > 0},
                           {"--resume", !options.resume.empty()},
                           {"--log-dir", !options.logDir.empty()},
                           {"--comm-timeout", options.commTimeoutGiven},
                           {"--memory-report", options.memoryReport}};
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
  if (options.checkpointEvery > 0 && options.checkpointDir.empty())
    return "--checkpoint-every needs --checkpoint-dir";
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
  bool sawCheckpoint = false, sawCheckpointEvery = false, sawResume = false,
       sawLogDir = false;
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
    } else if (arg == "--memory-report") {
      options.memoryReport = true;
    } else if (isFlag("--checkpoint-dir")) {
      problem =
          takeValue("--checkpoint-dir", options.checkpointDir, sawCheckpoint);
    } else if (isFlag("--checkpoint-every")) {
      problem = takeCount("--checkpoint-every", 1000000000,
                          options.checkpointEvery, sawCheckpointEvery);
    } else if (isFlag("--resume")) {
      problem = takeValue("--resume", options.resume, sawResume);
    } else if (isFlag("--log-dir")) {
      problem = takeValue("--log-dir", options.logDir, sawLogDir);
    } else if (isFlag("--comm-timeout")) {
      std::string value;
      problem = takeValue("--comm-timeout", value, options.commTimeoutGiven);
      char *end = nullptr;
      options.commTimeout = std::strtod(value.c_str(), &end);
      if (problem.empty() && (*end != '\0' || !(options.commTimeout >= 0) ||
                              options.commTimeout > 86400))
        problem =
            "--comm-timeout needs seconds in [0, 86400], got '" + value + "'";
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

std::string formatValue(tsr_dtype_t dtype, const void *data, int64_t i) {
  char text[64];
  switch (dtype) {
  case TSR_DTYPE_FLOAT16:
    std::snprintf(text, sizeof(text), "%g",
                  tsr::halfToFloat(static_cast<const uint16_t *>(data)[i]));
    break;
  case TSR_DTYPE_BFLOAT16:
    std::snprintf(text, sizeof(text), "%g",
                  tsr::bfloat16ToFloat(static_cast<const uint16_t *>(data)[i]));
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
/// The directory of the checkpoint after `step` steps: step-00000010.
std::string checkpointName(long step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%08ld", step);
  return name;
}

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

/// The float32 `value` as the double of its shortest decimal form, so that
/// a JSON log shows 0.6931472 rather than 0.6931471824645996 and still reads
/// back as the same float32.
double shortestDecimal(float value) {
  char text[32];
  auto result = std::to_chars(text, text + sizeof(text) - 1, value);
  *result.ptr = '\0';
  return std::strtod(text, nullptr);
}

/// Where a process stands in a multi-process run, and its output: rank 0
/// prints progress to stdout; with --log-dir every rank also writes its
/// lines to DIR/rank-<r>.log.
struct Process {
  tsr_comm_t *world = nullptr;
  int rank = 0, size = 1;
  FilePtr log;

  /// A progress line: stdout on rank 0, and the rank's log.
  void print(const char *format, ...) __attribute__((format(printf, 2, 3))) {
    va_list args;
    if (rank == 0) {
      va_start(args, format);
      std::vprintf(format, args);
      va_end(args);
      std::fflush(stdout);
    }
    if (log) {
      va_start(args, format);
      std::vfprintf(log.get(), format, args);
      va_end(args);
      std::fflush(log.get());
    }
  }

  /// Reports an error (naming the rank when there are several) and returns
  /// the exit status.
  int fail(const std::string &message) {
    std::string text =
        size > 1 ? "rank " + std::to_string(rank) + ": " + message : message;
    if (log)
      std::fprintf(log.get(), "error: %s\n", text.c_str());
    return error(text);
  }

  /// Whether every rank reached this point with `ok`: setup errors stop all
  /// ranks together instead of leaving the others waiting in a collective.
  bool agree(bool ok) {
    if (!world)
      return ok;
    int64_t mine = ok, all = 0;
    if (tsr_comm_all_reduce(world, &mine, &all, 1, TSR_DTYPE_INT64,
                            TSR_REDUCE_MIN, nullptr) != TSR_OK)
      return false;
    return all == 1;
  }
};

/// Runs `setup`; then every rank learns whether all succeeded. A failing
/// rank reports its own error, the others that one failed.
int agreeOn(Process &process, const std::string &problem) {
  bool ok = problem.empty();
  if (process.agree(ok))
    return 0;
  return process.fail(ok ? "stopping: another rank failed to set up (see its "
                           "error)"
                         : problem);
}

/// The checkpoint to resume from: PATH itself when it holds a manifest,
/// else the newest step-<k> directory under it.
std::string resolveResume(const std::string &path, std::string &out) {
  if (isFile(path + "/manifest.json")) {
    out = path;
    return "";
  }
  char latest[4096];
  if (tsr_checkpoint_latest(path.c_str(), latest, sizeof(latest)) != TSR_OK)
    return std::string("--resume: ") + tsr_last_error();
  if (latest[0] == '\0')
    return "--resume: " + path +
           " is neither a checkpoint nor a directory "
           "holding step-<k> checkpoints";
  out = latest;
  return "";
}

int runTrain(const Options &options, tsr_artifact_t *artifact,
             Process &process) {
  tsr_train_info_t train;
  if (tsr_artifact_train_info(artifact, &train) != TSR_OK)
    return process.fail(tsr_last_error());
  if (options.batchSize > 0 && options.batchSize != train.global_batch_size)
    return process.fail(
        options.artifact + ": the artifact was compiled for " + "batch size " +
        std::to_string(train.global_batch_size) + ", not " +
        std::to_string(options.batchSize) + " (recompile it with batch size " +
        std::to_string(options.batchSize) + ")");

  // Everything that can fail on one rank only happens before the first
  // step, and the ranks agree on it.
  std::string problem;
  tsr_trainer_t *rawTrainer = nullptr;
  if (tsr_trainer_create(artifact, &rawTrainer) != TSR_OK)
    problem = tsr_last_error();
  TrainerPtr trainer(rawTrainer);
  if (problem.empty() && !options.saveOnnx.empty()) {
    if (tsr_trainer_check_save_onnx(trainer.get()) != TSR_OK)
      problem = std::string("--save-onnx: ") + tsr_last_error();
    else
      problem = checkParentDirectory("--save-onnx", options.saveOnnx);
  }
  DatasetPtr dataset;
  if (problem.empty())
    problem = openDataset(options, artifact, dataset);
  FilePtr log;
  if (problem.empty() && !options.logJson.empty() && process.rank == 0) {
    log.reset(std::fopen(options.logJson.c_str(), "w"));
    if (!log)
      problem = options.logJson + ": cannot create: " + std::strerror(errno);
  }
  std::string resumeFrom;
  if (problem.empty() && !options.resume.empty())
    problem = resolveResume(options.resume, resumeFrom);
  if (int status = agreeOn(process, problem))
    return status;
  int64_t done = 0;
  if (!resumeFrom.empty()) {
    if (tsr_trainer_load_checkpoint(trainer.get(), resumeFrom.c_str(), &done) !=
        TSR_OK)
      return process.fail(std::string("--resume: ") + tsr_last_error());
    if (done >= options.steps)
      return process.fail("--resume: " + resumeFrom + " is after step " +
                          std::to_string(done) + ", and --steps " +
                          std::to_string(options.steps) +
                          " leaves nothing to run");
    process.print("resumed from %s after step %" PRId64 "\n",
                  resumeFrom.c_str(), done);
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
  std::string mesh;
  if (process.size > 1)
    mesh = ", " + std::to_string(process.size) + " ranks of " +
           std::to_string(train.batch_size) + " (ZeRO-" +
           std::to_string(tsr_artifact_zero_stage(artifact)) + ")";
  process.print("training %s: batch size %" PRId64 "%s, micro_batches %" PRId64
                ", data %s: %s\n",
                options.artifact.c_str(), train.global_batch_size, mesh.c_str(),
                train.micro_batches, options.data.c_str(), source.c_str());

  double perStep = static_cast<double>(train.global_batch_size * windowTokens);
  const char *unit = tokens ? "tokens" : "samples";
  tsr_memory_reset_peak();
  using Clock = std::chrono::steady_clock;
  auto checkpoint = [&](long step) -> int {
    std::string dir = options.checkpointDir + "/" + checkpointName(step);
    if (tsr_trainer_save_checkpoint(trainer.get(), dir.c_str(), step) != TSR_OK)
      return process.fail(tsr_last_error());
    process.print("wrote checkpoint %s\n", dir.c_str());
    return 0;
  };
  for (long step = done + 1; step <= options.steps; ++step) {
    float loss = 0;
    auto start = Clock::now();
    if (tsr_trainer_step(trainer.get(), dataset.get(), step - 1, &loss) !=
        TSR_OK)
      return process.fail("step " + std::to_string(step) + ": " +
                          tsr_last_error());
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    double rate = seconds > 0 ? perStep / seconds : 0;
    process.print("step %ld/%ld  loss %s  %.1f %s/s  %.2f ms\n", step,
                  options.steps, formatLoss(loss).c_str(), rate, unit,
                  seconds * 1000);
    if (log) {
      // Non-finite numbers are written as null.
      nlohmann::ordered_json record = {
          {"step", step},
          {"loss", shortestDecimal(loss)},
          {"seconds", seconds},
          {std::string(unit) + "_per_second", rate}};
      std::fprintf(log.get(), "%s\n", record.dump().c_str());
      std::fflush(log.get());
    }
    // The loss is the mean over all ranks: they stop together.
    if (!std::isfinite(loss))
      return process.fail("step " + std::to_string(step) + ": the loss is " +
                          (std::isnan(loss) ? "nan" : "infinite") +
                          "; training stopped");
    if (options.saveEvery > 0 && step % options.saveEvery == 0) {
      std::string path = checkpointPath(options.saveOnnx, step);
      if (tsr_trainer_save_onnx(trainer.get(), path.c_str()) != TSR_OK)
        return process.fail(tsr_last_error());
      process.print("wrote %s\n", path.c_str());
    }
    if (options.checkpointEvery > 0 && step % options.checkpointEvery == 0)
      if (int status = checkpoint(step))
        return status;
  }
  if (log && std::ferror(log.get()))
    return process.fail(options.logJson + ": write error");
  if (!options.checkpointDir.empty() &&
      (options.checkpointEvery == 0 ||
       options.steps % options.checkpointEvery != 0))
    if (int status = checkpoint(options.steps))
      return status;
  if (!options.saveOnnx.empty()) {
    if (tsr_trainer_save_onnx(trainer.get(), options.saveOnnx.c_str()) !=
        TSR_OK)
      return process.fail(tsr_last_error());
    process.print("wrote %s\n", options.saveOnnx.c_str());
  }
  size_t peak = 0, held = 0;
  tsr_memory_stats(nullptr, &peak);
  for (size_t i = 0; i < tsr_artifact_num_inputs(artifact); ++i)
    held += tsr_tensor_byte_size(tsr_trainer_input(trainer.get(), i));
  process.print("peak step memory: %zu bytes (artifact allocations), "
                "params+state+batch: %zu bytes\n",
                peak, held);
  if (options.memoryReport) {
    size_t params = 0, state = 0, gradients = 0;
    tsr_trainer_state_bytes(trainer.get(), &params, &state);
    tsr_memory_gradient_stats(nullptr, &gradients);
    // Every rank reports its own line, on stdout.
    std::printf("memory rank %d of %d: params %zu bytes, gradients %zu "
                "bytes, optimizer state %zu bytes\n",
                process.rank, process.size, params, gradients, state);
    std::fflush(stdout);
  }
  return 0;
}

/// Whether this process was started by a launcher for several ranks.
bool launchedAsMany() {
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"}) {
    const char *value = std::getenv(name);
    if (value && std::atol(value) > 1)
      return true;
  }
  return false;
}

/// Joins the job of an artifact with a mesh: one MPI communicator for its
/// dp axis (the only axis so far).
int joinMesh(const Options &options, tsr_artifact_t *artifact,
             Process &process) {
  size_t axes = tsr_artifact_num_mesh_axes(artifact);
  if (axes == 0) {
    if (launchedAsMany())
      return process.fail(options.artifact +
                          " has no device mesh, so every rank would train "
                          "the whole batch: compile it with --mesh dp=N");
    return 0;
  }
  const char *name = nullptr;
  int64_t size = 0;
  tsr_artifact_mesh_axis(artifact, 0, &name, &size);
  if (axes != 1 || std::string(name) != "dp")
    return process.fail(options.artifact +
                        ": only a mesh with the one axis dp is supported");
  tsr_comm_options_t commOptions{};
  commOptions.timeout_seconds = options.commTimeout;
  commOptions.device = -1;
  if (tsr_comm_init(TSR_COMM_MPI, &commOptions, &process.world) != TSR_OK)
    return process.fail(tsr_last_error());
  process.rank = tsr_comm_rank(process.world);
  process.size = tsr_comm_size(process.world);
  if (process.size != size)
    return process.fail(
        options.artifact + " was compiled for dp=" + std::to_string(size) +
        " but runs on " + std::to_string(process.size) + " rank" +
        (process.size == 1 ? "" : "s") + " (launch it with mpirun -np " +
        std::to_string(size) + ")");
  if (tsr_comm_bind_axis(0, process.world) != TSR_OK)
    return process.fail(tsr_last_error());
  return 0;
}

int run(const Options &options, Process &process) {
  // OpenBLAS reads its thread count when the artifact's library loads it.
  if (options.threads > 0)
    setenv("OPENBLAS_NUM_THREADS", std::to_string(options.threads).c_str(), 1);
  tsr_artifact_t *rawArtifact = nullptr;
  if (tsr_artifact_load(options.artifact.c_str(), &rawArtifact) != TSR_OK)
    return process.fail(tsr_last_error());
  ArtifactPtr artifact(rawArtifact);
  std::string mode = tsr_artifact_mode(artifact.get());
  std::string where =
      options.artifact + "/manifest.json: mode \"" + mode + "\"";
  if (options.train) {
    if (mode != "train")
      return process.fail(where + " cannot be trained (--train needs a "
                                  "\"train\" artifact)");
    if (int status = joinMesh(options, artifact.get(), process))
      return status;
    if (!options.logDir.empty()) {
      std::string problem = makeDirectories(options.logDir);
      std::string path =
          options.logDir + "/rank-" + std::to_string(process.rank) + ".log";
      if (problem.empty()) {
        process.log.reset(std::fopen(path.c_str(), "w"));
        if (!process.log)
          problem = path + ": cannot create: " + std::strerror(errno);
      }
      if (int status = agreeOn(process, problem))
        return status;
    }
    return runTrain(options, artifact.get(), process);
  }
  if (launchedAsMany())
    return process.fail("inference runs on one process; launch tessera-run "
                        "without mpirun/srun");
  if (mode == "train")
    return process.fail(where + " needs --train");
  if (mode == "grad")
    return process.fail(where + " is not run by tessera-run (load it "
                                "in-process, e.g. with the Python binding "
                                "python/tessera)");
  if (!mode.empty() && mode != "infer")
    return process.fail(where + " is not supported (tessera-run runs "
                                "\"infer\" and \"train\" artifacts)");
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
  Process process;
  int status = run(options, process);
  // A failed rank exits without MPI_Finalize: the launcher then ends the
  // others instead of waiting for them in a collective.
  if (status == 0 && process.world)
    tsr_comm_destroy(process.world);
  return status;
}
