//===- CommNccl.cpp - The NCCL backend, loaded from a plugin --------------===//
//
// NCCL lives in libtessera_comm_nccl.so (runtime/plugins/nccl), loaded on
// the first tsr_comm_init(TSR_COMM_NCCL) so that tessera_runtime itself
// never needs CUDA. This file finds the plugin, bootstraps the world (rank,
// size and NCCL's unique id over MPI or TCP) and forwards the collectives.
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "CommPlugin.h"
#include "RuntimeInternal.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <vector>

using namespace tsr;

namespace {

constexpr const char *kPluginName = "libtessera_comm_nccl.so";

const tsr_comm_plugin_t *plugin = nullptr;
std::mutex pluginMutex;

/// The directory holding libtessera_runtime.so, with a trailing slash.
std::string ownDirectory() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&ownDirectory), &info) ||
      !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

tsr_status_t loadPlugin() {
  std::lock_guard<std::mutex> lock(pluginMutex);
  if (plugin)
    return TSR_OK;
  std::vector<std::string> candidates;
  if (const char *env = std::getenv("TESSERA_COMM_NCCL_PLUGIN"))
    candidates.push_back(env);
  else
    candidates = {ownDirectory() + kPluginName, kPluginName};
  std::string errors;
  for (const std::string &path : candidates) {
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      // One line: tools print the message as their error line.
      errors += std::string(errors.empty() ? " " : "; ") + dlerror();
      continue;
    }
    auto entry = reinterpret_cast<tsr_comm_plugin_entry_t>(
        dlsym(handle, TSR_COMM_PLUGIN_ENTRY));
    const tsr_comm_plugin_t *table = entry ? entry() : nullptr;
    if (!table || table->abi != TSR_COMM_PLUGIN_ABI) {
      dlclose(handle);
      return fail(TSR_ERROR_LOAD, path +
                                      " is not a tessera communicator "
                                      "plugin of ABI " +
                                      std::to_string(TSR_COMM_PLUGIN_ABI));
    }
    plugin = table; // Stays loaded: NCCL does not support unloading.
    return TSR_OK;
  }
  return fail(TSR_ERROR_LOAD,
              "the NCCL backend needs " + std::string(kPluginName) +
                  " (built only where CUDA and NCCL are found; "
                  "TESSERA_COMM_NCCL_PLUGIN names it elsewhere):" +
                  errors);
}

tsr_status_t pluginStatus(int code, const char *what) {
  if (code == TSR_OK)
    return TSR_OK;
  return fail(static_cast<tsr_status_t>(code),
              std::string(what) + ": " + plugin->last_error());
}

int envInt(const char *name, int fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

bool launchedByMpi() {
  return std::getenv("OMPI_COMM_WORLD_RANK") || std::getenv("PMI_RANK") ||
         std::getenv("PMIX_RANK");
}

class NcclComm final : public CommBackend {
public:
  NcclComm(void *handle, int rank, int size, int worldRankOfSelf, bool holdsMpi)
      : handle(handle), myRank(rank), mySize(size),
        worldRankOfSelf(worldRankOfSelf), holdsMpi(holdsMpi) {}
  ~NcclComm() override {
    plugin->destroy(handle);
    if (holdsMpi)
      releaseMpi();
  }

  tsr_comm_backend_t kind() const override { return TSR_COMM_NCCL; }
  int rank() const override { return myRank; }
  int size() const override { return mySize; }
  // Sub-communicators do not know their members' world ranks: they name
  // their own.
  int worldRank(int rank) const override {
    return rank == myRank ? worldRankOfSelf : rank;
  }
  void begin(const std::string &, int) override {}
  void end() override {}

  tsr_status_t allReduce(const void *send, void *recv, size_t count,
                         tsr_dtype_t dtype, tsr_reduce_op_t op,
                         void *stream) override {
    return pluginStatus(
        plugin->all_reduce(handle, send, recv, count, dtype, op, stream),
        "ncclAllReduce");
  }
  tsr_status_t reduceScatter(const void *send, void *recv, size_t recvCount,
                             tsr_dtype_t dtype, tsr_reduce_op_t op,
                             void *stream) override {
    return pluginStatus(plugin->reduce_scatter(handle, send, recv, recvCount,
                                               dtype, op, stream),
                        "ncclReduceScatter");
  }
  tsr_status_t allGather(const void *send, void *recv, size_t sendCount,
                         tsr_dtype_t dtype, void *stream) override {
    return pluginStatus(
        plugin->all_gather(handle, send, recv, sendCount, dtype, stream),
        "ncclAllGather");
  }
  tsr_status_t allToAll(const void *send, void *recv, size_t count,
                        tsr_dtype_t dtype, void *stream) override {
    return pluginStatus(
        plugin->all_to_all(handle, send, recv, count, dtype, stream),
        "all_to_all (ncclSend/ncclRecv)");
  }
  tsr_status_t broadcast(void *buffer, size_t count, tsr_dtype_t dtype,
                         int root, void *stream) override {
    return pluginStatus(
        plugin->broadcast(handle, buffer, count, dtype, root, stream),
        "ncclBroadcast");
  }
  tsr_status_t send(const void *buffer, size_t count, tsr_dtype_t dtype,
                    int peer, void *stream) override {
    return pluginStatus(
        plugin->send(handle, buffer, count, dtype, peer, stream), "ncclSend");
  }
  tsr_status_t recv(void *buffer, size_t count, tsr_dtype_t dtype, int peer,
                    void *stream) override {
    return pluginStatus(
        plugin->recv(handle, buffer, count, dtype, peer, stream), "ncclRecv");
  }
  tsr_status_t recvAny(void *, size_t, tsr_dtype_t, int &) override {
    return fail(TSR_ERROR_UNSUPPORTED,
                "NCCL cannot receive from any rank (ncclRecv names its "
                "peer): use an MPI communicator");
  }
  tsr_status_t barrier() override {
    return pluginStatus(plugin->barrier(handle), "barrier");
  }
  tsr_status_t split(int color, int key,
                     std::unique_ptr<CommBackend> &out) override {
    void *child = nullptr;
    if (tsr_status_t s = pluginStatus(plugin->split(handle, color, key, &child),
                                      "ncclCommSplit"))
      return s;
    int childRank = 0, childSize = 1;
    if (tsr_status_t s =
            pluginStatus(plugin->rank_and_size(child, &childRank, &childSize),
                         "ncclCommUserRank")) {
      plugin->destroy(child);
      return s;
    }
    out = std::make_unique<NcclComm>(child, childRank, childSize,
                                     worldRankOfSelf, false);
    return TSR_OK;
  }

private:
  void *handle;
  int myRank, mySize, worldRankOfSelf;
  bool holdsMpi;
};

} // namespace

tsr_status_t tsr::createNcclWorld(const tsr_comm_options_t &options,
                                  std::unique_ptr<CommBackend> &out) {
  if (tsr_status_t s = loadPlugin())
    return s;
  int device = options.device;
  if (device < 0)
    device = envInt("LOCAL_RANK", envInt("OMPI_COMM_WORLD_LOCAL_RANK",
                                         envInt("SLURM_LOCALID", 0)));
  if (tsr_status_t s = pluginStatus(plugin->check_device(device), "NCCL"))
    return s;
  std::vector<unsigned char> id(plugin->unique_id_size);
  auto make = [&](void *bytes) {
    return pluginStatus(plugin->make_unique_id(bytes), "ncclGetUniqueId");
  };
  int rank = 0, size = 1;
  bool holdsMpi = false;
  if (launchedByMpi()) {
    if (tsr_status_t s =
            mpiBootstrapBroadcast(make, id.data(), id.size(), rank, size))
      return withContext(s, "NCCL bootstrap over MPI");
    holdsMpi = true;
  } else {
    rank = envInt("RANK", 0);
    size = envInt("WORLD_SIZE", 1);
    const char *address = std::getenv("MASTER_ADDR");
    int port = envInt("MASTER_PORT", 0);
    if (size > 1 && (!address || port <= 0))
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "NCCL bootstrap: WORLD_SIZE is " + std::to_string(size) +
                      " but MASTER_ADDR or MASTER_PORT is not set");
    if (rank == 0)
      if (tsr_status_t s = make(id.data()))
        return s;
    double timeout =
        options.timeout_seconds > 0 ? options.timeout_seconds : 300;
    if (tsr_status_t s = tsr_bootstrap_tcp_broadcast(
            address, port, rank, size, id.data(), id.size(), timeout))
      return withContext(s, "NCCL bootstrap");
  }
  void *handle = nullptr;
  if (tsr_status_t s =
          pluginStatus(plugin->init(id.data(), rank, size, device, &handle),
                       "ncclCommInitRank")) {
    if (holdsMpi)
      releaseMpi();
    return s;
  }
  out = std::make_unique<NcclComm>(handle, rank, size, rank, holdsMpi);
  return TSR_OK;
}
