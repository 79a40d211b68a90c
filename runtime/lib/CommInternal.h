//===- CommInternal.h - Communicator backends -------------------*- C++ -*-===//
//
// The interface a communicator backend implements (MPI in CommMpi.cpp, NCCL
// in CommNccl.cpp over the plugin of runtime/plugins/nccl) and the helpers
// shared by Comm.cpp, CommEntry.cpp and the backends. Nothing here is part
// of the C ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_COMMINTERNAL_H
#define TESSERA_RUNTIME_LIB_COMMINTERNAL_H

#include "tessera-runtime/Comm.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tsr {

/// One backend communicator. Comm.cpp has checked the arguments (dtype and
/// op supported, counts fit, ranks in range) before any call reaches it.
class CommBackend {
public:
  virtual ~CommBackend() = default;

  virtual tsr_comm_backend_t kind() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The rank in the world communicator of member `rank` of this one.
  virtual int worldRank(int rank) const = 0;

  /// Brackets every collective (peer < 0) and send/recv (the peer's rank):
  /// the watchdog's deadline, `patience` timeouts, runs between the two.
  virtual void begin(const std::string &label, int peer, double patience) = 0;
  virtual void end() = 0;

  virtual tsr_status_t allReduce(const void *send, void *recv, size_t count,
                                 tsr_dtype_t dtype, tsr_reduce_op_t op,
                                 void *stream) = 0;
  virtual tsr_status_t reduceScatter(const void *send, void *recv,
                                     size_t recvCount, tsr_dtype_t dtype,
                                     tsr_reduce_op_t op, void *stream) = 0;
  virtual tsr_status_t allGather(const void *send, void *recv, size_t sendCount,
                                 tsr_dtype_t dtype, void *stream) = 0;
  virtual tsr_status_t allToAll(const void *send, void *recv, size_t count,
                                tsr_dtype_t dtype, void *stream) = 0;
  virtual tsr_status_t broadcast(void *buffer, size_t count, tsr_dtype_t dtype,
                                 int root, void *stream) = 0;
  virtual tsr_status_t send(const void *buffer, size_t count, tsr_dtype_t dtype,
                            int peer, void *stream) = 0;
  virtual tsr_status_t recv(void *buffer, size_t count, tsr_dtype_t dtype,
                            int peer, void *stream) = 0;
  /// Receives a message from whichever rank sends one first; `outPeer`
  /// is its rank.
  virtual tsr_status_t recvAny(void *buffer, size_t count, tsr_dtype_t dtype,
                               int &outPeer) = 0;
  virtual tsr_status_t barrier() = 0;
  virtual tsr_status_t split(int color, int key,
                             std::unique_ptr<CommBackend> &out) = 0;
};

/// The peer that begin() names for a receive from any rank.
constexpr int kAnyPeer = -2;

/// Creates the MPI world communicator (initializing MPI if needed).
tsr_status_t createMpiWorld(const tsr_comm_options_t &options,
                            std::unique_ptr<CommBackend> &out);

/// Creates the NCCL world communicator through the plugin.
tsr_status_t createNcclWorld(const tsr_comm_options_t &options,
                             std::unique_ptr<CommBackend> &out);

/// Broadcasts `size` bytes that MPI world rank 0 writes with `make`
/// (initializing MPI if needed) and reports this process's world rank and
/// size. When `make` fails on rank 0 every rank fails. The MPI world stays
/// alive until `releaseMpi` is called once per successful call.
tsr_status_t
mpiBootstrapBroadcast(const std::function<tsr_status_t(void *)> &make,
                      void *bytes, size_t size, int &outRank, int &outSize);
void releaseMpi();

/// The value of an enum argument that came through the C ABI, read without
/// assuming that it is one of the enumerators.
template <typename Enum> int64_t rawEnum(const Enum &value) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized");
  int raw;
  std::memcpy(&raw, &value, sizeof(raw));
  return raw;
}

/// Checks that `dtype` is a tsr_dtype_t ("all_gather: invalid dtype 99").
tsr_status_t checkDtype(const char *what, int64_t dtype);

/// Checks that `op` is a tsr_reduce_op_t that applies to `dtype`
/// ("all_reduce: MEAN needs a floating-point dtype, got int32").
tsr_status_t checkReduction(const char *what, int64_t dtype, int64_t op);

/// The name of a reduction: "SUM", "MEAN", ...
const char *reduceOpName(tsr_reduce_op_t op);

/// This process's rank in the world communicator (0 before one exists).
int processRank();

/// How many collectives of NCCL communicators the device watchdog still
/// watches (CommNccl.cpp): those issued on a stream with a timeout whose
/// completion it has not seen yet. For the tests.
TSR_API size_t watchedDeviceCollectives();

/// Multiplies `count` floating-point elements by `factor` in place.
void scaleElements(void *data, size_t count, tsr_dtype_t dtype, double factor);

/// Marks collective `id` of the compiled program as producing reduced
/// gradients: its result buffers count in tsr_memory_gradient_stats.
void markGradientCollective(int64_t id);

/// A device mesh's axis sizes and this rank's coordinate on each
/// (tsr_mesh_create registers the mesh's): a group's size and this rank's
/// position in it follow from them (Comm.h's layout), with or without a
/// communicator.
struct MeshLayout {
  std::vector<int64_t> sizes, coordinates;

  /// The size of group `mask` (bits beyond the axes are ignored).
  int64_t groupSize(int64_t mask) const {
    int64_t size = 1;
    for (size_t i = 0; i < sizes.size(); ++i)
      if (mask >> i & 1)
        size *= sizes[i];
    return size;
  }
  /// This rank's position in group `mask`: row-major over its axes.
  int64_t groupRank(int64_t mask) const {
    int64_t rank = 0;
    for (size_t i = 0; i < sizes.size(); ++i)
      if (mask >> i & 1)
        rank = rank * sizes[i] + coordinates[i];
    return rank;
  }
};

/// Registers the layout tsrt_axis_rank/size fall back on for groups without
/// a communicator (null: none), and returns the registered one.
void registerMeshLayout(const MeshLayout *layout);
const MeshLayout *registeredMeshLayout();

/// The communicator bound to group `mask`, or null.
tsr_comm_t *boundGroup(int64_t mask);

/// The world communicator of a parameter-server artifact (its workers and
/// servers), which tsr_mesh_create_for_artifact binds for the trainer's
/// pushes and pulls; null otherwise.
tsr_comm_t *parameterServerWorld();

/// Describes the collectives of `manifest` for the runtime's messages
/// (tsr_comm_describe_collective) and marks its gradient buckets.
struct Manifest;
tsr_status_t describeCollectives(const Manifest &manifest);

} // namespace tsr

#endif // TESSERA_RUNTIME_LIB_COMMINTERNAL_H
