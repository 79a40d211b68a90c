//===- tessera-run.cpp - Run a compiled Tessera artifact ------------------===//
//
// Loads an artifact, reads input_<i>.pb (or input_<i>.npy) for each manifest
// input, invokes the entry and writes output_<i>.pb for each output. Every
// error is one line on stderr and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "tessera-runtime/Runtime.h"

#include <chrono>
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

const char *const kUsage =
    "usage: tessera-run ART --inputs-dir DIR --outputs-dir DIR [--print]\n"
    "\n"
    "Runs the artifact directory ART made by `tessera-compile --mode=infer`.\n"
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
};

/// Parses argv; returns an error message, or "" on success.
std::string parseOptions(int argc, char **argv, Options &options) {
  bool sawInputs = false, sawOutputs = false, sawRepeat = false;
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
    auto isFlag = [&](const char *flag) {
      std::string name = flag;
      return arg == name || arg.compare(0, name.size() + 1, name + "=") == 0;
    };
    std::string problem;
    if (arg == "-h" || arg == "--help") {
      options.help = true;
    } else if (arg == "--print") {
      options.print = true;
    } else if (isFlag("--inputs-dir")) {
      problem = takeValue("--inputs-dir", options.inputsDir, sawInputs);
    } else if (isFlag("--outputs-dir")) {
      problem = takeValue("--outputs-dir", options.outputsDir, sawOutputs);
    } else if (isFlag("--repeat")) {
      std::string value;
      problem = takeValue("--repeat", value, sawRepeat);
      char *end = nullptr;
      if (problem.empty()) {
        options.repeat = std::strtol(value.c_str(), &end, 10);
        if (*end != '\0' || options.repeat < 1 || options.repeat > 1000000)
          problem =
              "--repeat needs an integer in [1, 1000000], got '" + value + "'";
      }
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
  if (options.help)
    return "";
  if (options.artifact.empty())
    return "missing artifact directory (usage: tessera-run ART --inputs-dir "
           "DIR --outputs-dir DIR)";
  if (options.outputsDir.empty() && !options.print && options.repeat == 0)
    return "missing --outputs-dir (or --print or --repeat)";
  return "";
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

int run(const Options &options) {
  tsr_artifact_t *rawArtifact = nullptr;
  if (tsr_artifact_load(options.artifact.c_str(), &rawArtifact) != TSR_OK)
    return error(tsr_last_error());
  ArtifactPtr artifact(rawArtifact);
  const char *mode = tsr_artifact_mode(artifact.get());
  if (*mode && std::strcmp(mode, "infer") != 0)
    return error(options.artifact + "/manifest.json: mode \"" + mode +
                 "\" is not supported (tessera-run runs \"infer\" artifacts)");

  size_t numInputs = tsr_artifact_num_inputs(artifact.get());
  size_t numOutputs = tsr_artifact_num_outputs(artifact.get());
  if (numInputs && options.inputsDir.empty())
    return error("missing --inputs-dir (the artifact takes " +
                 std::to_string(numInputs) + " inputs)");

  std::vector<TensorPtr> inputs, outputs;
  for (size_t i = 0; i < numInputs; ++i) {
    tsr_tensor_info_t info;
    tsr_artifact_input_info(artifact.get(), i, &info);
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
    if (tsr_artifact_check_input(artifact.get(), i, tensor) != TSR_OK)
      return error(path + ": " + tsr_last_error());
  }
  for (size_t i = 0; i < numOutputs; ++i) {
    tsr_tensor_t *tensor = nullptr;
    if (tsr_artifact_create_output(artifact.get(), i, &tensor) != TSR_OK)
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
    return tsr_artifact_invoke(artifact.get(), inputPtrs.data(),
                               inputPtrs.size(), outputPtrs.data(),
                               outputPtrs.size());
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
