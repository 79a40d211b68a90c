//===- tessera-run.cpp - Run or train a compiled Tessera artifact ---------===//
//
// For an "infer" artifact: reads input_<i>.pb (or input_<i>.npy) for each
// manifest input, invokes the entry and writes output_<i>.pb for each output.
// For a "train" artifact (--train): runs N steps over an .npz file or a token
// stream, printing the loss of each step, and can write the trained ONNX
// model. An artifact compiled for a device mesh runs as one process per
// rank, in either mode. Every error is one line on stderr and exit status 1.
//
// This file holds main, the dispatch by mode and what the other parts share
// (TesseraRun.h lists them).
//
//===----------------------------------------------------------------------===//

#include "TesseraRun.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

using namespace tessera_run;

int tessera_run::error(const std::string &message) {
  std::fprintf(stderr, "tessera-run: error: %s\n", message.c_str());
  return 1;
}

bool tessera_run::isFile(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

std::string tessera_run::makeDirectories(const std::string &path) {
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

namespace {

struct ArtifactDeleter {
  void operator()(tsr_artifact_t *artifact) const {
    tsr_artifact_destroy(artifact);
  }
};
using ArtifactPtr = std::unique_ptr<tsr_artifact_t, ArtifactDeleter>;

int run(const Options &options, Process &process) {
  // OpenBLAS reads its thread count when the artifact's library loads it;
  // oneDNN's OpenMP pool is already loaded.
  if (options.threads > 0) {
    setenv("OPENBLAS_NUM_THREADS", std::to_string(options.threads).c_str(), 1);
    tsr_set_num_threads(options.threads);
  }
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
  if (options.sample > 0) {
    if (mode != "infer")
      return process.fail(where + ": --sample needs an \"infer\" artifact "
                                  "(compile the trained model with "
                                  "--mode=infer)");
    return runSample(options, artifact.get(), process);
  }
  if (mode == "train")
    return process.fail(where + " needs --train");
  if (mode == "grad")
    return process.fail(where + " is not run by tessera-run (load it "
                                "in-process, e.g. with the Python binding "
                                "python/tessera)");
  if (!mode.empty() && mode != "infer")
    return process.fail(where + " is not supported (tessera-run runs "
                                "\"infer\" and \"train\" artifacts)");
  if (int status = joinMesh(options, artifact.get(), process))
    return status;
  return runInfer(options, artifact.get(), process);
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
  if (options.version) {
    std::printf("tessera-run (Tessera %s)\n", TESSERA_VERSION);
    return 0;
  }
  Process process;
  int status = run(options, process);
  // A failed rank exits without MPI_Finalize: the launcher then ends the
  // others instead of waiting for them in a collective.
  if (status == 0 && process.world) {
    tsr_mesh_destroy(process.mesh);
    tsr_comm_destroy(process.world);
  }
  return status;
}
