//===- Options.cpp - tessera-run's command line ---------------------------===//
//
// The usage text, and parsing and checking the flags (every flag at most
// once, values in range, and only in combinations that mean something).
//
//===----------------------------------------------------------------------===//

#include "TesseraRun.h"

#include <cstdlib>
#include <cstring>

using namespace tessera_run;

const char *const tessera_run::kUsage =
    "usage: tessera-run ART --inputs-dir DIR --outputs-dir DIR [--print]\n"
    "                       [--repeat N]\n"
    "       tessera-run ART --train --data FILE --steps N|--epochs E\n"
    "                       [--batch-size B] [--shuffle] [--seed S]\n"
    "                       [--allow-repeats] [--allow-changed-hparams]\n"
    "                       [--log-json FILE] [--save-onnx PATH [--save-every "
    "K]]\n"
    "                       [--token-dtype uint16|uint32]\n"
    "                       [--checkpoint-dir DIR [--checkpoint-every K]]\n"
    "                       [--resume PATH] [--log-dir DIR] [--comm-timeout "
    "S]\n"
    "                       [--memory-report] [--log-every K] [--slow-rank "
    "R:MS]\n"
    "                       [--device-memory SIZE] [--host-bandwidth RATE]\n"
    "                       [--eval-data FILE [--eval-every K] "
    "[--eval-batches N]]\n"
    "       tessera-run ART --sample N --vocab VOCAB.json [--prompt TEXT]\n"
    "                       [--temperature T] [--seed S]\n"
    "       mpirun -np N tessera-run ART ... (an artifact compiled for a "
    "device\n"
    "                       mesh of N ranks; srun works the same way)\n"
    "       (every form also takes [--threads N] [--comm mpi|nccl];\n"
    "       running and training also take [--profile] [--trace FILE])\n"
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
    "  --sample N         generate N tokens from an \"infer\" artifact of a\n"
    "                     causal language model (input [B, T] token ids,\n"
    "                     output [B, T, V] logits) and print the text\n"
    "  --vocab FILE       with --sample: the tokens' strings, a JSON list\n"
    "  --prompt TEXT      with --sample: the text to continue (default: a\n"
    "                     line break)\n"
    "  --temperature T    with --sample: draw from softmax(logits / T)\n"
    "                     (default 1; 0: always the most likely token)\n"
    "\n"
    "  --train            run training steps on a \"train\" artifact\n"
    "  --data FILE        FILE.npz: one array per data and label input, named\n"
    "                     after it, of shape [N, input shape[1:]...];\n"
    "                     FILE.bin: a token stream for artifacts with\n"
    "                     train.tokens\n"
    "  --steps N          run N steps; step s uses samples (s*B + i) mod N\n"
    "  --epochs E         run ceil(E*N/B) steps: E passes over the N samples\n"
    "  --shuffle          draw every epoch's samples in a new random order\n"
    "                     (a permutation of the N samples per epoch)\n"
    "  --seed S           the seed of --shuffle's orders and of the dropout\n"
    "                     masks (default 0); checkpoints record both\n"
    "  --allow-repeats    train on data with fewer samples than the global\n"
    "                     batch (every batch then repeats samples)\n"
    "  --batch-size B     check that the artifact was compiled for batch B\n"
    "  --eval-data FILE   the validation loss on FILE (as --data) by the\n"
    "                     artifact's evaluation program (tessera-compile\n"
    "                     --eval) after the last step, and with\n"
    "                     --eval-every K after every K steps; --eval-batches\n"
    "                     N evaluates N batches (default: every sample "
    "once)\n"
    "  --slow-rank R:MS   rank R sleeps MS milliseconds after every step (a\n"
    "                     straggler, to test --ps-async's staleness bound)\n"
    "  --log-json FILE    write one JSON object per step to FILE\n"
    "  --log-every K      print the line of every K-th step, the first and\n"
    "                     the last (default 1: every step; --log-json still\n"
    "                     gets every step)\n"
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
    "  --allow-changed-hparams\n"
    "                     resume a checkpoint written under other\n"
    "                     hyperparameters (lr, schedule, ...; refused\n"
    "                     otherwise, naming each difference)\n"
    "  --log-dir DIR      every rank also writes its progress and errors to\n"
    "                     DIR/rank-<r>.log (rank 0 prints to stdout anyway)\n"
    "  --comm-timeout S   a collective that waits longer than S seconds ends\n"
    "                     the job, naming the ranks that never arrived\n"
    "                     (default 30; 0 disables)\n"
    "  --memory-report    the bytes of params, gradients and optimizer state\n"
    "                     each rank held (rank 0 prints every rank's line)\n"
    "  --device-memory SIZE  make the step's allocations and the runtime's\n"
    "                     tensors a device pool of SIZE bytes (units KiB MiB\n"
    "                     GiB KB MB GB): an allocation past it ends the run\n"
    "  --host-bandwidth RATE  copies of offloaded activations take at least\n"
    "                     bytes / RATE (bytes/s, e.g. 25GB/s): a host link's\n"
    "                     speed, so that their overlap with compute shows\n"
    "  --comm B           the communicators of a device mesh: mpi (default;\n"
    "                     host memory) or nccl (device memory; loads\n"
    "                     libtessera_comm_nccl.so)\n"
    "  --profile          print where the time of a step (or invocation)\n"
    "                     goes: each model node's kernels, library calls\n"
    "                     and copies, forward and backward apart, with their\n"
    "                     share of the step; training profiles the steps\n"
    "                     after the first (which faults its buffers in)\n"
    "  --trace FILE       write every kernel, library call, copy and program\n"
    "                     call of the profiled steps to FILE, a Chrome trace\n"
    "                     (chrome://tracing, Perfetto); with several ranks\n"
    "                     rank r writes FILE.rank<r>.json\n"
    "  --threads N        threads of the GEMM library the model calls\n"
    "                     (oneDNN's OpenMP threads, or OPENBLAS_NUM_THREADS;\n"
    "                     default: the library's own, one per core); 1\n"
    "                     avoids busy-waiting threads on a machine shared\n"
    "                     with other work\n"
    "  --version          print the version and exit\n"
    "  -h, --help         show this help\n";

namespace {

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
  if (options.comm != "mpi" && options.comm != "nccl")
    return "--comm must be mpi or nccl, got '" + options.comm + "'";
  struct Use {
    const char *flag;
    bool given;
  };
  const Use inferOnly[] = {{"--inputs-dir", !options.inputsDir.empty()},
                           {"--outputs-dir", !options.outputsDir.empty()},
                           {"--print", options.print},
                           {"--repeat", options.repeat > 0}};
  const Use trainOnly[] = {
      {"--data", !options.data.empty()},
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
      {"--memory-report", options.memoryReport},
      {"--device-memory", options.deviceMemory > 0},
      {"--host-bandwidth", options.hostBandwidth > 0},
      {"--log-every", options.logEvery > 1},
      {"--epochs", options.epochs > 0},
      {"--shuffle", options.shuffle},
      {"--seed", options.seedGiven},
      {"--allow-repeats", options.allowRepeats},
      {"--allow-changed-hparams", options.allowChangedHparams},
      {"--slow-rank", options.slowRank >= 0},
      {"--eval-data", !options.evalData.empty()},
      {"--eval-every", options.evalEvery > 0},
      {"--eval-batches", options.evalBatches > 0}};
  if (options.sample > 0 && (options.profile || !options.trace.empty()))
    return std::string(options.profile ? "--profile" : "--trace") +
           " cannot be combined with --sample";
  const Use sampleOnly[] = {{"--vocab", !options.vocab.empty()},
                            {"--prompt", options.promptGiven},
                            {"--temperature", options.temperatureGiven}};
  if (options.sample > 0) {
    if (options.train)
      return "--sample cannot be combined with --train (sample from an "
             "\"infer\" artifact of the trained model)";
    for (const Use &use : inferOnly)
      if (use.given)
        return std::string(use.flag) + " cannot be combined with --sample";
    for (const Use &use : trainOnly)
      if (use.given && std::string(use.flag) != "--seed")
        return std::string(use.flag) + " cannot be combined with --sample";
    if (options.vocab.empty())
      return "--sample needs --vocab FILE (a JSON list of the tokens' "
             "strings)";
    return "";
  }
  for (const Use &use : sampleOnly)
    if (use.given)
      return std::string(use.flag) + " needs --sample N";
  if (!options.train) {
    for (const Use &use : trainOnly)
      if (use.given)
        return std::string(use.flag) + " needs --train";
    if (options.outputsDir.empty() && !options.print && options.repeat == 0 &&
        !options.profile && options.trace.empty())
      return "missing --outputs-dir (or --print, --repeat or --profile) to "
             "run an "
             "inference artifact; a training artifact needs --train --data "
             "FILE --steps N";
    return "";
  }
  for (const Use &use : inferOnly)
    if (use.given)
      return std::string(use.flag) + " cannot be combined with --train";
  if (options.data.empty())
    return "missing --data (an .npz file or a .bin token stream)";
  if (options.steps > 0 && options.epochs > 0)
    return "--steps and --epochs cannot be combined (--epochs E runs "
           "ceil(E*N/B) steps)";
  if (options.steps == 0 && options.epochs == 0)
    return "missing --steps (or --epochs)";
  if (options.saveEvery > 0 && options.saveOnnx.empty())
    return "--save-every needs --save-onnx";
  if (options.checkpointEvery > 0 && options.checkpointDir.empty())
    return "--checkpoint-every needs --checkpoint-dir";
  if ((options.evalEvery > 0 || options.evalBatches > 0) &&
      options.evalData.empty())
    return std::string(options.evalEvery > 0 ? "--eval-every"
                                             : "--eval-batches") +
           " needs --eval-data FILE";
  if (options.allowChangedHparams && options.resume.empty())
    return "--allow-changed-hparams needs --resume";
  if (!options.tokenDtype.empty() && options.tokenDtype != "uint16" &&
      options.tokenDtype != "uint32")
    return "--token-dtype must be uint16 or uint32, got '" +
           options.tokenDtype + "'";
  return "";
}

/// "6GiB", "512MiB", "25GB", "1e9" (with `rate`, an optional "/s" after
/// it): a positive number of bytes (per second), or 0 if malformed. A size
/// is at least one byte: "0.5" would truncate to 0, which means unlimited.
double parseAmount(std::string text, bool rate) {
  static const std::pair<const char *, double> units[] = {
      {"KiB", 1024.0},
      {"MiB", 1024.0 * 1024},
      {"GiB", 1024.0 * 1024 * 1024},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"B", 1.0}};
  if (rate && text.size() > 2 && text.compare(text.size() - 2, 2, "/s") == 0)
    text.resize(text.size() - 2);
  double scale = 1;
  for (auto [suffix, factor] : units) {
    size_t n = std::strlen(suffix);
    if (text.size() > n && text.compare(text.size() - n, n, suffix) == 0) {
      text.resize(text.size() - n);
      scale = factor;
      break;
    }
  }
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value > 0) || value * scale > 9e18 ||
      (!rate && value * scale < 1))
    return 0;
  return value * scale;
}

} // namespace

std::string tessera_run::parseOptions(int argc, char **argv, Options &options) {
  bool sawInputs = false, sawOutputs = false, sawRepeat = false,
       sawThreads = false;
  bool sawData = false, sawSteps = false, sawBatch = false, sawLog = false;
  bool sawSave = false, sawEvery = false, sawToken = false, sawTrace = false;
  bool sawCheckpoint = false, sawCheckpointEvery = false, sawResume = false,
       sawLogDir = false, sawComm = false, sawLogEvery = false,
       sawEpochs = false, sawSample = false, sawVocab = false,
       sawEvalData = false, sawEvalEvery = false, sawEvalBatches = false,
       sawDeviceMemory = false, sawHostBandwidth = false;
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
    } else if (arg == "--version") {
      options.version = true;
    } else if (arg == "--print") {
      options.print = true;
    } else if (arg == "--train") {
      options.train = true;
    } else if (arg == "--memory-report") {
      options.memoryReport = true;
    } else if (arg == "--profile") {
      options.profile = true;
    } else if (arg == "--shuffle") {
      options.shuffle = true;
    } else if (arg == "--allow-repeats") {
      options.allowRepeats = true;
    } else if (arg == "--allow-changed-hparams") {
      options.allowChangedHparams = true;
    } else if (isFlag("--epochs")) {
      problem = takeCount("--epochs", 1000000, options.epochs, sawEpochs);
    } else if (isFlag("--slow-rank")) {
      std::string value;
      bool given = false;
      problem = takeValue("--slow-rank", value, given);
      char *colon = nullptr, *end = nullptr;
      long rank = std::strtol(value.c_str(), &colon, 10);
      long ms = *colon == ':' ? std::strtol(colon + 1, &end, 10) : 0;
      if (problem.empty() &&
          (colon == value.c_str() || rank < 0 || !end || end == colon + 1 ||
           *end != '\0' || ms < 1 || ms > 60000))
        problem = "--slow-rank needs RANK:MS (MS from 1 to 60000), got '" +
                  value + "'";
      options.slowRank = rank;
      options.slowMs = ms;
    } else if (isFlag("--device-memory") || isFlag("--host-bandwidth")) {
      bool rate = isFlag("--host-bandwidth");
      const char *flag = rate ? "--host-bandwidth" : "--device-memory";
      std::string value;
      bool &seen = rate ? sawHostBandwidth : sawDeviceMemory;
      problem = takeValue(flag, value, seen);
      double amount = parseAmount(value, rate);
      if (problem.empty() && amount <= 0)
        problem = std::string(flag) + " needs " +
                  (rate ? "a positive rate in bytes/s, optionally with a "
                          "unit (KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s; "
                          "e.g. 25GB/s)"
                        : "a positive number of bytes, optionally with a "
                          "unit (KiB, MiB, GiB, KB, MB, GB; e.g. 6GiB)") +
                  ", got '" + value + "'";
      if (rate)
        options.hostBandwidth = amount;
      else
        options.deviceMemory = static_cast<size_t>(amount);
    } else if (isFlag("--eval-data")) {
      problem = takeValue("--eval-data", options.evalData, sawEvalData);
    } else if (isFlag("--eval-every")) {
      problem = takeCount("--eval-every", 1000000000, options.evalEvery,
                          sawEvalEvery);
    } else if (isFlag("--eval-batches")) {
      problem = takeCount("--eval-batches", 1000000000, options.evalBatches,
                          sawEvalBatches);
    } else if (isFlag("--sample")) {
      problem = takeCount("--sample", 1000000, options.sample, sawSample);
    } else if (isFlag("--vocab")) {
      problem = takeValue("--vocab", options.vocab, sawVocab);
    } else if (isFlag("--prompt")) {
      problem = takeValue("--prompt", options.prompt, options.promptGiven);
    } else if (isFlag("--temperature")) {
      std::string value;
      problem = takeValue("--temperature", value, options.temperatureGiven);
      char *end = nullptr;
      options.temperature = std::strtod(value.c_str(), &end);
      if (problem.empty() && (*end != '\0' || !(options.temperature >= 0) ||
                              options.temperature > 100))
        problem =
            "--temperature needs a number in [0, 100], got '" + value + "'";
    } else if (isFlag("--seed")) {
      std::string value;
      problem = takeValue("--seed", value, options.seedGiven);
      char *end = nullptr;
      options.seed = std::strtoull(value.c_str(), &end, 10);
      if (problem.empty() &&
          (*end != '\0' || value[0] == '-' || options.seed >= (1ULL << 23)))
        problem =
            "--seed needs an integer in [0, 8388607], got '" + value + "'";
    } else if (isFlag("--checkpoint-dir")) {
      problem =
          takeValue("--checkpoint-dir", options.checkpointDir, sawCheckpoint);
    } else if (isFlag("--checkpoint-every")) {
      problem = takeCount("--checkpoint-every", 1000000000,
                          options.checkpointEvery, sawCheckpointEvery);
    } else if (isFlag("--resume")) {
      problem = takeValue("--resume", options.resume, sawResume);
    } else if (isFlag("--comm")) {
      problem = takeValue("--comm", options.comm, sawComm);
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
    } else if (isFlag("--log-every")) {
      problem =
          takeCount("--log-every", 1000000000, options.logEvery, sawLogEvery);
    } else if (isFlag("--trace")) {
      problem = takeValue("--trace", options.trace, sawTrace);
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
  return options.help || options.version ? "" : checkCombination(options);
}
