//===- TesseraRun.h - What the parts of tessera-run share -------*- C++ -*-===//
//
// tessera-run is split by concern: Options.cpp parses the command line,
// Mesh.cpp joins the device mesh of an artifact, Infer.cpp runs "infer"
// artifacts and Train.cpp trains "train" artifacts, on one or several
// ranks, and tessera-run.cpp dispatches between them.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_TOOLS_TESSERA_RUN_TESSERARUN_H
#define TESSERA_RUNTIME_TOOLS_TESSERA_RUN_TESSERARUN_H

#include "tessera-runtime/Comm.h"
#include "tessera-runtime/Runtime.h"

#include <cstdarg>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace tessera_run {

/// The text of --help.
extern const char *const kUsage;

struct Options {
  std::string artifact, inputsDir, outputsDir;
  bool print = false;
  bool help = false;
  bool version = false;
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
  /// The communicator backend: "mpi" or "nccl".
  std::string comm = "mpi";
  bool memoryReport = false;
  /// --device-memory: the device pool's capacity in bytes (0: unlimited);
  /// --host-bandwidth: the emulated host link's bytes/s for offloaded
  /// activations' copies (0: memcpy speed).
  size_t deviceMemory = 0;
  double hostBandwidth = 0;
  /// --profile: the time per model node of the profiled steps; --trace
  /// FILE: every region's calls as a Chrome trace.
  bool profile = false;
  std::string trace;
  /// Print every K-th step line (and the first and last); 1: every one.
  long logEvery = 1;
  /// The data order: shuffled per epoch from `seed` (which also seeds
  /// dropout), --epochs instead of --steps, and whether a data set smaller
  /// than the global batch may repeat samples within a batch.
  bool shuffle = false, allowRepeats = false, seedGiven = false;
  /// --sample N: generate N tokens from a language model's "infer"
  /// artifact after --prompt, decoded with --vocab, drawn at --temperature
  /// (0: the most likely token) from --seed.
  long sample = 0;
  std::string vocab, prompt;
  bool promptGiven = false, temperatureGiven = false;
  double temperature = 1.0;
  /// --eval-data FILE: the validation loss by the artifact's evaluation
  /// program after every --eval-every steps (0: only after the last) over
  /// --eval-batches batches (0: every sample once).
  std::string evalData;
  long evalEvery = 0, evalBatches = 0;
  /// --slow-rank R:MS: rank R sleeps MS milliseconds after every step (to
  /// test parameter servers' staleness bound and timeouts).
  long slowRank = -1, slowMs = 0;
  /// Resume a checkpoint written under other hyperparameters.
  bool allowChangedHparams = false;
  unsigned long long seed = 0;
  long epochs = 0;
};

/// Parses argv; returns an error message, or "" on success.
std::string parseOptions(int argc, char **argv, Options &options);

/// Reports `message` as the single error line and returns the exit status.
int error(const std::string &message);

/// Whether `path` exists.
bool isFile(const std::string &path);

/// Creates `path` and its missing parents; returns an error message, or "".
std::string makeDirectories(const std::string &path);

struct FileCloser {
  void operator()(std::FILE *file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

/// Where a process stands in a multi-process run, and its output: rank 0
/// prints progress to stdout; with --log-dir every rank also writes its
/// lines to DIR/rank-<r>.log.
struct Process {
  tsr_comm_t *world = nullptr;
  /// The communicators of the artifact's mesh, over `world`.
  tsr_mesh_t *mesh = nullptr;
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
  bool agree(bool ok);

  /// Every rank's `mine` (the same number of values on each), in rank
  /// order, gathered over the world communicator into `all`; a single
  /// process gets its own. Lets rank 0 print a report line per rank in a
  /// fixed order. Returns false when the collective fails.
  bool gather(const std::vector<int64_t> &mine, std::vector<int64_t> &all);
};

/// Every rank learns whether all set up without a problem. A failing rank
/// reports its own error, the others that one failed; returns the exit
/// status, 0 when all succeeded.
int agreeOn(Process &process, const std::string &problem);

/// Runs an "infer" artifact: reads its inputs, invokes it, writes or prints
/// its outputs (rank 0 of a mesh). Returns the exit status.
int runInfer(const Options &options, tsr_artifact_t *artifact,
             Process &process);

/// Samples --sample tokens from an "infer" artifact of a causal language
/// model after --prompt, decoding with --vocab. Returns the exit status.
int runSample(const Options &options, tsr_artifact_t *artifact,
              Process &process);

/// Joins the job of an artifact with a mesh, after checking that the --comm
/// backend can move the artifact's buffers: creates the backend's world
/// communicator and the mesh's communicators over it. A single process runs
/// an artifact without a mesh alone. Returns the exit status.
int joinMesh(const Options &options, tsr_artifact_t *artifact,
             Process &process);

/// Starts the profile --profile or --trace asks for (none without them).
void startProfile(const Options &options);

/// After a profile of `runs` runs (`unit`: "step" or "invocation";
/// `what` names them, as "steps 2-5") that took `seconds` in all: prints
/// the table of --profile and writes the --trace file. Returns the exit
/// status.
int reportProfile(const Options &options, const tsr_artifact_t *artifact,
                  Process &process, const std::string &what, const char *unit,
                  int64_t runs, double seconds);

/// Trains a "train" artifact for --steps steps. Returns the exit status.
int runTrain(const Options &options, tsr_artifact_t *artifact,
             Process &process);

} // namespace tessera_run

#endif // TESSERA_RUNTIME_TOOLS_TESSERA_RUN_TESSERARUN_H
