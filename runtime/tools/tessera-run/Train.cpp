//===- Train.cpp - Training "train" artifacts -----------------------------===//
//
// Sets up training on an .npz file or a token stream (resuming from a
// checkpoint), then runs the runtime's training loop (tsr_trainer_run),
// printing the loss of each step (and logging it as JSON) and the files it
// writes. On a mesh every rank runs this, and the ranks agree on every setup
// error before the first step.
//
//===----------------------------------------------------------------------===//

#include "TesseraRun.h"
#include "tessera-runtime/Checkpoint.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace tessera_run;

namespace {

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

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
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

/// Opens `path` (--data or --eval-data) as an .npz file or a token stream,
/// by its extension; errors about the evaluation data name `flag`.
std::string openDataset(const Options &options, const char *flag,
                        const std::string &path, tsr_artifact_t *artifact,
                        DatasetPtr &out) {
  std::string prefix =
      flag == std::string("--data") ? "" : flag + std::string(": ");
  tsr_dataset_t *dataset = nullptr;
  tsr_status_t status;
  if (endsWith(path, ".npz")) {
    if (!options.tokenDtype.empty())
      return "--token-dtype applies to token streams (.bin), not to " + path;
    status = tsr_dataset_open_npz(artifact, path.c_str(), &dataset);
  } else if (endsWith(path, ".bin")) {
    tsr_dtype_t dtype =
        options.tokenDtype == "uint32" ? TSR_DTYPE_UINT32 : TSR_DTYPE_UINT16;
    status = tsr_dataset_open_tokens(artifact, path.c_str(), dtype, &dataset);
  } else {
    return prefix + path +
           ": unknown data format (expected FILE.npz or a FILE.bin token "
           "stream)";
  }
  if (status != TSR_OK)
    return prefix + tsr_last_error();
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

/// What each rank reports at the end of a run: a worker's bytes
/// (--memory-report), a parameter server's statistics.
struct RankReport {
  bool server = false;
  size_t params = 0, gradients = 0, state = 0, peak = 0;
  tsr_server_stats_t stats{};

  std::vector<int64_t> pack() const {
    return {server,
            static_cast<int64_t>(params),
            static_cast<int64_t>(gradients),
            static_cast<int64_t>(state),
            static_cast<int64_t>(peak),
            stats.server,
            stats.workers,
            stats.staleness,
            stats.steps,
            stats.updates,
            stats.waits,
            stats.max_lead};
  }
  static RankReport unpack(const int64_t *v) {
    RankReport r;
    r.server = v[0] != 0;
    r.params = static_cast<size_t>(v[1]);
    r.gradients = static_cast<size_t>(v[2]);
    r.state = static_cast<size_t>(v[3]);
    r.peak = static_cast<size_t>(v[4]);
    r.stats = {v[5], v[6], v[7], v[8], v[9], v[10], v[11]};
    return r;
  }
  static constexpr size_t kValues = 12;

  /// The report line of rank `rank` of `size`.
  std::string line(int rank, int size) const {
    char text[512];
    if (!server) {
      std::snprintf(text, sizeof(text),
                    "memory rank %d of %d: params %zu bytes, gradients %zu "
                    "bytes, optimizer state %zu bytes, step peak %zu bytes\n",
                    rank, size, params, gradients, state, peak);
      return text;
    }
    std::string how =
        stats.staleness < 0
            ? "bulk-synchronous: one update of the mean gradient per step"
            : "asynchronous: a worker waited " + std::to_string(stats.waits) +
                  " time" + (stats.waits == 1 ? "" : "s") +
                  " for the slowest, and started a step at most " +
                  std::to_string(stats.max_lead) + " ahead of it (staleness " +
                  std::to_string(stats.staleness) + ")";
    std::snprintf(text, sizeof(text),
                  "parameter server %" PRId64 " (rank %d): %" PRId64
                  " steps of %" PRId64 " workers, %" PRId64 " updates; %s\n",
                  stats.server, rank, stats.steps, stats.workers, stats.updates,
                  how.c_str());
    return text;
  }
};

/// Gathers every rank's report at the end of a run, and rank 0 prints them
/// in rank order: the workers' memory lines (with `memory`), then the
/// parameter servers' lines, so that the output of a run does not depend on
/// which rank finishes first. Each rank also writes its own line to its
/// --log-dir log. Collective over the world communicator.
int reportRanks(Process &process, const RankReport &mine, bool memory) {
  std::vector<int64_t> all;
  if (!process.gather(mine.pack(), all))
    return process.fail(std::string("gathering the ranks' reports: ") +
                        tsr_last_error());
  if (process.log && (mine.server || memory)) {
    std::fputs(mine.line(process.rank, process.size).c_str(),
               process.log.get());
    std::fflush(process.log.get());
  }
  if (process.rank != 0)
    return 0;
  for (bool servers : {false, true})
    for (int rank = 0; rank < process.size; ++rank) {
      RankReport report =
          RankReport::unpack(all.data() + rank * RankReport::kValues);
      if (report.server == servers && (servers || memory))
        std::fputs(report.line(rank, process.size).c_str(), stdout);
    }
  std::fflush(stdout);
  return 0;
}

/// Runs parameter server `trainer` until the workers finish, then reports
/// what it did (rank 0 prints it, reportRanks).
int serve(tsr_trainer_t *trainer, Process &process, bool memoryReport) {
  if (int status = agreeOn(process, ""))
    return status;
  RankReport report;
  report.server = true;
  if (tsr_trainer_serve(trainer, &report.stats) != TSR_OK)
    return process.fail(tsr_last_error());
  return reportRanks(process, report, memoryReport);
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

/// One output with role "metric" (a value the step reports: a MoE layer's
/// tokens per expert, the learning rate): its name, index, dtype and
/// whether it is a scalar.
struct Metric {
  std::string name;
  size_t output;
  tsr_dtype_t dtype;
  bool scalar;
};

std::vector<Metric> findMetrics(tsr_artifact_t *artifact) {
  std::vector<Metric> metrics;
  for (size_t i = 0; i < tsr_artifact_num_outputs(artifact); ++i) {
    tsr_tensor_info_t info;
    if (tsr_artifact_output_info(artifact, i, &info) == TSR_OK &&
        info.role == TSR_ROLE_METRIC)
      metrics.push_back({info.name, i, info.dtype, info.rank == 0});
  }
  return metrics;
}

/// The elements of a metric tensor as doubles (integers up to 2^53 exact).
std::vector<double> metricValues(tsr_tensor_t *tensor) {
  int64_t n = tsr_tensor_num_elements(tensor);
  std::vector<double> values(n);
  const void *data = tsr_tensor_data(tensor);
  for (int64_t i = 0; i < n; ++i) {
    switch (tsr_tensor_dtype(tensor)) {
    case TSR_DTYPE_INT64:
      values[i] = double(static_cast<const int64_t *>(data)[i]);
      break;
    case TSR_DTYPE_INT32:
      values[i] = static_cast<const int32_t *>(data)[i];
      break;
    case TSR_DTYPE_FLOAT64:
      values[i] = static_cast<const double *>(data)[i];
      break;
    case TSR_DTYPE_FLOAT32:
      values[i] = static_cast<const float *>(data)[i];
      break;
    default:
      values[i] = std::nan("");
    }
  }
  return values;
}

/// A metric for the progress line: its values separated by spaces, in
/// brackets unless it is a scalar; a long vector as its range and sum.
std::string formatMetric(const std::vector<double> &values, bool scalar) {
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", v);
    return std::string(text);
  };
  if (scalar && values.size() == 1)
    return number(values.front());
  std::string text = "[";
  if (values.size() <= 16) {
    for (size_t i = 0; i < values.size(); ++i)
      text += (i ? " " : "") + number(values[i]);
  } else {
    auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    double total = 0;
    for (double v : values)
      total += v;
    text += std::to_string(values.size()) + " values " + number(*lo) + ".." +
            number(*hi) + ", sum " + number(total);
  }
  return text + "]";
}

/// Where tsr_trainer_run's callbacks print: the progress lines, and with
/// --log-json (rank 0) one JSON record per step.
struct Progress {
  Process &process;
  std::FILE *log;
  tsr_trainer_t *trainer;
  std::vector<Metric> metrics;
  long logEvery;
  /// --slow-rank on this rank: milliseconds to sleep after every step.
  long sleepMs;
  /// Whether the data is a token stream (its samples are windows).
  bool tokens;
  /// The evaluations so far: how many, the best and the last loss.
  int64_t evals = 0, bestEvalStep = 0;
  double bestEval = 0, lastEval = 0;
  /// The steps run so far: their time, items, and losses.
  int64_t ran = 0, firstStep = 0, lastStep = 0, bestStep = 0;
  double seconds = 0, items = 0;
  float firstLoss = 0, lastLoss = 0, bestLoss = 0;
  /// --profile or --trace: the options that ask for it, whether the profile
  /// runs (from the second step on, or from the first of a one-step run),
  /// and the steps it covers.
  const Options *profile = nullptr;
  bool profiling = false;
  int64_t profiledSteps = 0, firstProfiled = 0;
  double profiledSeconds = 0;
};

/// A duration for the progress line: "42.0 s", "3m05s", "2h07m".
std::string formatDuration(double seconds) {
  char text[32];
  if (seconds < 60)
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  else if (seconds < 3600)
    std::snprintf(text, sizeof text, "%dm%02ds", int(seconds / 60),
                  int(seconds) % 60);
  else
    std::snprintf(text, sizeof text, "%dh%02dm", int(seconds / 3600),
                  int(seconds / 60) % 60);
  return text;
}

void printStep(void *user, const tsr_step_record_t *record) {
  auto &progress = *static_cast<Progress *>(user);
  if (progress.sleepMs > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(progress.sleepMs));
  if (progress.ran++ == 0) {
    progress.firstStep = record->step;
    progress.firstLoss = record->loss;
  }
  progress.lastStep = record->step;
  progress.lastLoss = record->loss;
  if (progress.ran == 1 || record->loss < progress.bestLoss) {
    progress.bestLoss = record->loss;
    progress.bestStep = record->step;
  }
  progress.seconds += record->seconds;
  progress.items += record->items_per_second * record->seconds;
  if (progress.profiling) {
    if (progress.profiledSteps++ == 0)
      progress.firstProfiled = record->step;
    progress.profiledSeconds += record->seconds;
  } else if (progress.profile && record->step < record->steps) {
    // The first step faults its buffers in; the profile starts after it.
    startProfile(*progress.profile);
    progress.profiling = true;
  }
  // The remaining steps at the mean time of those run so far.
  std::string eta;
  if (record->step < record->steps)
    eta = "  eta " + formatDuration(progress.seconds / double(progress.ran) *
                                    double(record->steps - record->step));
  char scale[96] = "";
  if (record->loss_scale > 0)
    std::snprintf(scale, sizeof scale, "  scale %.9g%s", record->loss_scale,
                  record->skipped ? " (overflow: step skipped)" : "");
  // The metric outputs hold the step's values until the next step.
  std::vector<std::vector<double>> values;
  for (const Metric &metric : progress.metrics)
    values.push_back(
        metricValues(tsr_trainer_output(progress.trainer, metric.output)));
  if (record->step % progress.logEvery == 0 || progress.ran == 1 ||
      record->step == record->steps) {
    std::string metrics;
    for (size_t i = 0; i < values.size(); ++i)
      metrics += "  " + progress.metrics[i].name + " " +
                 formatMetric(values[i], progress.metrics[i].scalar);
    progress.process.print(
        "step %" PRId64 "/%" PRId64 "  loss %s  %.1f %s/s  %.2f ms%s%s%s\n",
        record->step, record->steps, formatLoss(record->loss).c_str(),
        record->items_per_second, record->unit, record->seconds * 1000, scale,
        metrics.c_str(), eta.c_str());
  }
  if (!progress.log)
    return;
  // Non-finite numbers are written as null.
  nlohmann::ordered_json line = {
      {"step", record->step},
      {"loss", shortestDecimal(record->loss)},
      {"seconds", record->seconds},
      {std::string(record->unit) + "_per_second", record->items_per_second},
      {"page_faults", record->page_faults}};
  if (record->loss_scale > 0) {
    line["loss_scale"] = record->loss_scale;
    line["skipped"] = record->skipped != 0;
  }
  if (!progress.metrics.empty()) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (size_t i = 0; i < values.size(); ++i) {
      const Metric &metric = progress.metrics[i];
      // Counts stay integers.
      tsr_dtype_t dtype = metric.dtype;
      bool integer = dtype == TSR_DTYPE_INT64 || dtype == TSR_DTYPE_INT32;
      nlohmann::ordered_json array = nlohmann::ordered_json::array();
      // float32 values as their shortest decimal, like the loss.
      for (double v : values[i])
        array.push_back(integer ? nlohmann::ordered_json(int64_t(v))
                        : dtype == TSR_DTYPE_FLOAT32
                            ? nlohmann::ordered_json(shortestDecimal(float(v)))
                            : nlohmann::ordered_json(v));
      object[metric.name] = metric.scalar ? array[0] : array;
    }
    line["metrics"] = object;
  }
  std::fprintf(progress.log, "%s\n", line.dump().c_str());
  std::fflush(progress.log);
}

void printEval(void *user, const tsr_eval_record_t *record) {
  auto &progress = *static_cast<Progress *>(user);
  progress.process.print(
      "eval after step %" PRId64 ": loss %s (%" PRId64 " batches, %" PRId64
      " %s, %.1f s)\n",
      record->step, formatLoss(static_cast<float>(record->loss)).c_str(),
      record->batches, record->samples, progress.tokens ? "windows" : "samples",
      record->seconds);
  if (progress.evals++ == 0 || record->loss < progress.bestEval) {
    progress.bestEval = record->loss;
    progress.bestEvalStep = record->step;
  }
  progress.lastEval = record->loss;
  if (!progress.log)
    return;
  nlohmann::ordered_json line = {
      {"step", record->step},
      {"eval_loss", shortestDecimal(static_cast<float>(record->loss))},
      {"eval_batches", record->batches},
      {"eval_seconds", record->seconds}};
  std::fprintf(progress.log, "%s\n", line.dump().c_str());
  std::fflush(progress.log);
}

void printWrite(void *user, tsr_train_write_t what, const char *path) {
  auto &progress = *static_cast<Progress *>(user);
  progress.process.print(what == TSR_TRAIN_WROTE_CHECKPOINT
                             ? "wrote checkpoint %s\n"
                             : "wrote %s\n",
                         path);
}

} // namespace

int tessera_run::agreeOn(Process &process, const std::string &problem) {
  bool ok = problem.empty();
  if (process.agree(ok))
    return 0;
  return process.fail(ok ? "stopping: another rank failed to set up (see its "
                           "error)"
                         : problem);
}

int tessera_run::runTrain(const Options &options, tsr_artifact_t *artifact,
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
  if (problem.empty() &&
      (!options.checkpointDir.empty() || !options.resume.empty()) &&
      tsr_trainer_check_checkpoints(trainer.get()) != TSR_OK)
    problem = std::string(options.resume.empty() ? "--checkpoint-dir: "
                                                 : "--resume: ") +
              tsr_last_error();
  // A parameter server takes no data: it serves the workers' pushes.
  if (problem.empty() && tsr_trainer_parameter_server(trainer.get()) >= 0)
    return serve(trainer.get(), process, options.memoryReport);
  DatasetPtr dataset;
  if (problem.empty())
    problem = openDataset(options, "--data", options.data, artifact, dataset);
  DatasetPtr evalDataset;
  if (problem.empty() && !options.evalData.empty())
    problem = openDataset(options, "--eval-data", options.evalData, artifact,
                          evalDataset);
  // A global batch larger than the data repeats samples within every
  // batch, which is rarely meant.
  int64_t steps = options.steps;
  if (problem.empty()) {
    int64_t samples = tsr_dataset_num_samples(dataset.get());
    int64_t global = train.global_batch_size;
    if (samples < global && !options.allowRepeats)
      problem = "--data " + options.data + " holds " + std::to_string(samples) +
                (tsr_dataset_num_tokens(dataset.get()) > 0 ? " windows"
                                                           : " samples") +
                ", fewer than the global batch of " + std::to_string(global) +
                ": every batch would repeat samples; use more data, compile "
                "a smaller --batch-size, or pass --allow-repeats";
    if (options.epochs > 0)
      steps = (options.epochs * samples + global - 1) / global;
    tsr_dataset_set_order(dataset.get(), options.shuffle ? 1 : 0, options.seed);
    tsr_trainer_set_order(trainer.get(), options.shuffle ? 1 : 0, options.seed);
    tsr_trainer_allow_changed_hparams(trainer.get(),
                                      options.allowChangedHparams ? 1 : 0);
  }
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
    if (done >= steps)
      return process.fail("--resume: " + resumeFrom + " is after step " +
                          std::to_string(done) + ", and " +
                          (options.epochs > 0
                               ? "--epochs " + std::to_string(options.epochs) +
                                     " (" + std::to_string(steps) + " steps)"
                               : "--steps " + std::to_string(steps)) +
                          " leaves nothing to run");
    process.print("resumed from %s after step %" PRId64 "\n",
                  resumeFrom.c_str(), done);
  }

  // A token stream is cut into windows of T tokens.
  int64_t windowTokens = 1;
  if (train.token_input >= 0) {
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
  if (options.shuffle)
    source +=
        ", shuffled every epoch (seed " + std::to_string(options.seed) + ")";
  else if (options.seedGiven)
    source += ", in order (seed " + std::to_string(options.seed) + ")";
  if (options.epochs > 0)
    source += "; " + std::to_string(options.epochs) +
              " epochs = " + std::to_string(steps) + " steps";
  // "2 ranks of 2" on a dp mesh; "4 ranks on the mesh dp=2,tp=2, 2 per dp
  // rank" on one with more axes.
  std::string mesh, axes;
  bool dpOnly = true;
  int64_t meshRanks = 1;
  for (size_t i = 0; i < tsr_artifact_num_mesh_axes(artifact); ++i) {
    const char *name = nullptr;
    int64_t size = 0;
    tsr_artifact_mesh_axis(artifact, i, &name, &size);
    axes += (i ? "," : "") + std::string(name) + "=" + std::to_string(size);
    dpOnly = dpOnly && std::string(name) == "dp";
    meshRanks *= size;
  }
  // Parameter servers are the ranks after the mesh's workers.
  if (process.size > meshRanks)
    mesh = ", " + std::to_string(meshRanks) + " workers of " +
           std::to_string(train.batch_size) + " and " +
           std::to_string(process.size - meshRanks) + " parameter server" +
           (process.size - meshRanks == 1 ? "" : "s");
  else if (process.size > 1)
    mesh = ", " + std::to_string(process.size) + " ranks " +
           (dpOnly ? "of " : "on the mesh " + axes + ", ") +
           std::to_string(train.batch_size) + (dpOnly ? "" : " per dp rank") +
           " (ZeRO-" + std::to_string(tsr_artifact_zero_stage(artifact)) + ")";
  process.print("training %s: batch size %" PRId64 "%s, micro_batches %" PRId64
                ", data %s: %s\n",
                options.artifact.c_str(), train.global_batch_size, mesh.c_str(),
                train.micro_batches, options.data.c_str(), source.c_str());

  if (options.deviceMemory)
    tsr_memory_set_device_capacity(options.deviceMemory);
  if (options.hostBandwidth > 0 &&
      tsr_set_host_bandwidth(options.hostBandwidth) != TSR_OK)
    return process.fail(tsr_last_error());
  tsr_memory_reset_peak();
  tsr_host_pool_reset_peak();
  tsr_transfer_reset_stats();
  Progress progress{process,
                    log.get(),
                    trainer.get(),
                    findMetrics(artifact),
                    options.logEvery,
                    process.rank == options.slowRank ? options.slowMs : 0,
                    train.token_input >= 0};
  tsr_train_options_t run{};
  run.steps = steps;
  run.first_step = done;
  run.save_every = options.saveEvery;
  run.checkpoint_every = options.checkpointEvery;
  if (!options.saveOnnx.empty())
    run.save_onnx = options.saveOnnx.c_str();
  if (!options.checkpointDir.empty())
    run.checkpoint_dir = options.checkpointDir.c_str();
  run.on_step = printStep;
  run.on_write = printWrite;
  if (evalDataset) {
    run.eval_dataset = evalDataset.get();
    run.eval_every = options.evalEvery;
    run.eval_batches = options.evalBatches;
    run.on_eval = printEval;
  }
  run.user = &progress;
  if (options.profile || !options.trace.empty()) {
    progress.profile = &options;
    if (steps - done == 1) {
      startProfile(options);
      progress.profiling = true;
    }
  }
  if (tsr_trainer_run(trainer.get(), dataset.get(), &run) != TSR_OK)
    return process.fail(tsr_last_error());
  if (log && std::ferror(log.get()))
    return process.fail(options.logJson + ": write error");
  if (progress.ran > 0)
    process.print("trained steps %" PRId64 "-%" PRId64
                  " in %s (%.1f %s/s); loss first %s, last %s, lowest %s "
                  "at step %" PRId64 "\n",
                  progress.firstStep, progress.lastStep,
                  formatDuration(progress.seconds).c_str(),
                  progress.seconds > 0 ? progress.items / progress.seconds : 0,
                  train.token_input >= 0 ? "tokens" : "samples",
                  formatLoss(progress.firstLoss).c_str(),
                  formatLoss(progress.lastLoss).c_str(),
                  formatLoss(progress.bestLoss).c_str(), progress.bestStep);
  if (progress.evals > 0)
    process.print("eval loss last %s, lowest %s after step %" PRId64 "\n",
                  formatLoss(static_cast<float>(progress.lastEval)).c_str(),
                  formatLoss(static_cast<float>(progress.bestEval)).c_str(),
                  progress.bestEvalStep);
  if (progress.profiledSteps > 0) {
    int64_t last = progress.firstProfiled + progress.profiledSteps - 1;
    std::string what = progress.profiledSteps == 1
                           ? "step " + std::to_string(last)
                           : "steps " + std::to_string(progress.firstProfiled) +
                                 "-" + std::to_string(last);
    if (int status =
            reportProfile(options, artifact, process, what, "step",
                          progress.profiledSteps, progress.profiledSeconds))
      return status;
  }
  size_t peak = 0, held = 0, onHost = 0, arena = 0;
  tsr_memory_stats(nullptr, &peak);
  tsr_memory_arena_stats(&arena);
  for (size_t i = 0; i < tsr_artifact_num_inputs(artifact); ++i) {
    size_t bytes = tsr_tensor_byte_size(tsr_trainer_input(trainer.get(), i));
    held += bytes;
    if (tsr_artifact_input_on_host(artifact, i))
      onHost += bytes;
  }
  std::string hostPart =
      onHost ? " (" + std::to_string(onHost) + " of them in host memory)" : "";
  process.print("peak step memory: %zu bytes (artifact allocations; arena "
                "%zu bytes), params+state+batch: %zu bytes%s%s\n",
                peak, arena, held, hostPart.c_str(),
                options.deviceMemory
                    ? (", of a device pool of " +
                       std::to_string(options.deviceMemory) + " bytes")
                          .c_str()
                    : "");
  tsr_transfer_stats_t moved{};
  tsr_transfer_stats(&moved);
  if (moved.transfers > 0 && progress.ran > 0) {
    size_t hostPeak = 0;
    tsr_host_pool_stats(nullptr, &hostPeak);
    double steps = static_cast<double>(progress.ran);
    double hidden =
        moved.busy_seconds > 0
            ? std::max(0.0, 1 - moved.waited_seconds / moved.busy_seconds)
            : 1;
    process.print("offload: %.0f values a step, %.0f bytes to host memory "
                  "and back; copies %.3f ms a step, waited %.3f ms (%.0f%% "
                  "hidden); host pool peak %zu bytes\n",
                  moved.transfers / steps, moved.bytes_to_host / steps,
                  1e3 * moved.busy_seconds / steps,
                  1e3 * moved.waited_seconds / steps, 100 * hidden, hostPeak);
  }
  tsr_transfer_stats_t update{};
  tsr_host_program_stats(&update);
  if (update.transfers > 0 && progress.ran > 0) {
    size_t hostNow = 0, hostPeak = 0;
    tsr_host_pool_stats(&hostNow, &hostPeak);
    double steps = static_cast<double>(progress.ran);
    process.print("optimizer on the host: %.0f bytes of gradients to host "
                  "memory and %.0f bytes of parameters back a step, %.3f ms "
                  "(not overlapped); host pool holds %zu bytes, peak %zu\n",
                  update.bytes_to_host / steps, update.bytes_to_device / steps,
                  1e3 * update.busy_seconds / steps, hostNow, hostPeak);
  }
  // Rank 0 prints every rank's --memory-report line and the parameter
  // servers' statistics, in rank order.
  if (options.memoryReport || process.size > meshRanks) {
    RankReport report;
    report.peak = peak;
    if (options.memoryReport) {
      tsr_trainer_state_bytes(trainer.get(), &report.params, &report.state);
      tsr_memory_gradient_stats(nullptr, &report.gradients);
    }
    return reportRanks(process, report, options.memoryReport);
  }
  return 0;
}
