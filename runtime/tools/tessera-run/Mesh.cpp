//===- Mesh.cpp - Joining the device mesh of an artifact ------------------===//
//
// An artifact compiled for a device mesh runs as one process per rank
// (mpirun, srun; NCCL also torchrun's environment). Each process creates the
// world communicator of the --comm backend and the communicators of the
// mesh's groups over it (tsr_mesh_create_for_artifact), which compiled
// collectives then use. The backend must be able to move the artifact's
// buffers: MPI moves host memory, NCCL device memory. The ranks agree on
// setup errors over the world communicator.
//
//===----------------------------------------------------------------------===//

#include "TesseraRun.h"
#include "tessera-runtime/Device.h"

#include <cstdlib>

using namespace tessera_run;

namespace {

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

/// Whether any input or output of the artifact lives in device memory.
bool hasDeviceBuffers(const tsr_artifact_t *artifact) {
  tsr_placement_t placement;
  for (size_t i = 0; i < tsr_artifact_num_inputs(artifact); ++i)
    if (tsr_artifact_input_placement(artifact, i, &placement) == TSR_OK &&
        placement == TSR_PLACEMENT_DEVICE)
      return true;
  for (size_t i = 0; i < tsr_artifact_num_outputs(artifact); ++i)
    if (tsr_artifact_output_placement(artifact, i, &placement) == TSR_OK &&
        placement == TSR_PLACEMENT_DEVICE)
      return true;
  return false;
}

/// The number of ranks of the artifact's mesh.
int64_t meshRanks(const tsr_artifact_t *artifact) {
  int64_t ranks = 1;
  for (size_t i = 0; i < tsr_artifact_num_mesh_axes(artifact); ++i) {
    const char *name = nullptr;
    int64_t size = 1;
    tsr_artifact_mesh_axis(artifact, i, &name, &size);
    ranks *= size;
  }
  return ranks;
}

} // namespace

bool Process::agree(bool ok) {
  if (!world)
    return ok;
  int64_t mine = ok, all = 0;
  if (tsr_comm_backend(world) == TSR_COMM_MPI)
    return tsr_comm_all_reduce(world, &mine, &all, 1, TSR_DTYPE_INT64,
                               TSR_REDUCE_MIN, nullptr) == TSR_OK &&
           all == 1;
  // NCCL reduces device memory; the barrier waits for the reduction.
  void *flag = nullptr;
  bool agreed =
      tsr_device_alloc(sizeof(mine), &flag) == TSR_OK &&
      tsr_device_memcpy(flag, &mine, sizeof(mine), nullptr) == TSR_OK &&
      tsr_comm_all_reduce(world, flag, flag, 1, TSR_DTYPE_INT64, TSR_REDUCE_MIN,
                          nullptr) == TSR_OK &&
      tsr_comm_barrier(world) == TSR_OK &&
      tsr_device_memcpy(&all, flag, sizeof(all), nullptr) == TSR_OK && all == 1;
  tsr_device_free(flag);
  return agreed;
}

bool Process::gather(const std::vector<int64_t> &mine,
                     std::vector<int64_t> &all) {
  if (!world) {
    all = mine;
    return true;
  }
  all.assign(mine.size() * static_cast<size_t>(size), 0);
  if (tsr_comm_backend(world) == TSR_COMM_MPI)
    return tsr_comm_all_gather(world, mine.data(), all.data(), mine.size(),
                               TSR_DTYPE_INT64, nullptr) == TSR_OK;
  // NCCL gathers device memory; the barrier waits for the gather.
  size_t bytes = mine.size() * sizeof(int64_t),
         total = all.size() * sizeof(int64_t);
  void *send = nullptr, *recv = nullptr;
  bool gathered =
      tsr_device_alloc(bytes, &send) == TSR_OK &&
      tsr_device_alloc(total, &recv) == TSR_OK &&
      tsr_device_memcpy(send, mine.data(), bytes, nullptr) == TSR_OK &&
      tsr_comm_all_gather(world, send, recv, mine.size(), TSR_DTYPE_INT64,
                          nullptr) == TSR_OK &&
      tsr_comm_barrier(world) == TSR_OK &&
      tsr_device_memcpy(all.data(), recv, total, nullptr) == TSR_OK;
  tsr_device_free(send);
  tsr_device_free(recv);
  return gathered;
}

int tessera_run::joinMesh(const Options &options, tsr_artifact_t *artifact,
                          Process &process) {
  bool nccl = options.comm == "nccl";
  bool device = hasDeviceBuffers(artifact);
  bool many = launchedAsMany();
  size_t axes = tsr_artifact_num_mesh_axes(artifact);
  std::string target = tsr_artifact_target(artifact);
  std::string buffers = "the buffers of " + options.artifact + " (target " +
                        (target.empty() ? "cpu" : target) + ") live in " +
                        (device ? "device" : "host") + " memory";
  if (nccl && !device)
    return process.fail("--comm=nccl: " + buffers +
                        ", and NCCL moves device memory (use --comm=mpi)");
  if (axes == 0 && !many)
    return 0;
  if (!nccl && device)
    return process.fail("--comm=mpi: " + buffers +
                        ", and MPI moves host memory (use --comm=nccl)");
  if (axes == 0)
    return process.fail(
        options.artifact + " has no device mesh, so every rank would " +
        (options.train ? "train the whole batch: compile it with --mesh dp=N"
                       : "compute the same outputs: run it as one process"));
  tsr_comm_options_t commOptions{};
  commOptions.timeout_seconds = options.commTimeout;
  commOptions.device = -1;
  if (tsr_comm_init(nccl ? TSR_COMM_NCCL : TSR_COMM_MPI, &commOptions,
                    &process.world) != TSR_OK)
    return process.fail("--comm=" + options.comm + ": " + tsr_last_error());
  process.rank = tsr_comm_rank(process.world);
  process.size = tsr_comm_size(process.world);
  tsr_status_t status =
      tsr_mesh_create_for_artifact(process.world, artifact, &process.mesh);
  if (status == TSR_ERROR_MISMATCH)
    return process.fail(std::string(tsr_last_error()) +
                        " (launch it with mpirun -np " +
                        std::to_string(meshRanks(artifact)) + ")");
  if (status != TSR_OK)
    return process.fail(tsr_last_error());
  return 0;
}
