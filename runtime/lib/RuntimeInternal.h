//===- RuntimeInternal.h - Shared helpers of the runtime --------*- C++ -*-===//
//
// Declarations shared by the translation units of tessera_runtime. Nothing
// here is part of the C ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_RUNTIMEINTERNAL_H
#define TESSERA_RUNTIME_LIB_RUNTIMEINTERNAL_H

#include "ArenaPlan.h"
#include "tessera-runtime/Runtime.h"

#include <cstdint>
#include <dlfcn.h>
#include <initializer_list>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

struct tsr_tensor {
  tsr_dtype_t dtype = TSR_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::string name;
  int64_t numElements = 0;
  size_t byteSize = 0;
  void *data = nullptr;
  tsr_placement_t placement = TSR_PLACEMENT_HOST;
  /// False for a view of another tensor's buffer (a trainer's in-place
  /// output), which that tensor frees.
  bool ownsData = true;
  /// Whether its bytes count in the host pool (a host program's input or
  /// output, tsr::moveToHostPool) rather than the device pool.
  bool inHostPool = false;

  tsr_tensor() = default;
  tsr_tensor(const tsr_tensor &) = delete;
  tsr_tensor &operator=(const tsr_tensor &) = delete;
  ~tsr_tensor();
};

namespace tsr {

/// One input or output of a manifest.
struct TensorSpec {
  std::string name;
  tsr_dtype_t dtype = TSR_DTYPE_INVALID;
  std::vector<int64_t> shape;
  tsr_role_t role = TSR_ROLE_NONE;
  int64_t updates = -1;
  /// An output the program writes in the buffer of the input it updates
  /// ("in_place"): that buffer is passed as both.
  bool inPlace = false;
  int64_t of = -1;
  double init = 0;
  /// The whole tensor across every mesh axis (`shape` when it is neither
  /// split nor sharded).
  std::vector<int64_t> globalShape;
  /// Per dimension of `globalShape`, the mesh axes that split it into equal
  /// blocks ("sharding"; empty when no dimension is split). This rank holds
  /// the block at its coordinates: along a dimension split by axes a, b its
  /// block index is coord(a) * size(b) + coord(b).
  std::vector<std::vector<std::string>> sharding;
  /// `globalShape` with every split dimension divided by its axes' sizes.
  std::vector<int64_t> blockShape;
  /// 1, or N for a flat ZeRO shard of the block over the dp axis (row-major,
  /// zero-padded to N*c elements, dp rank r holds [r*c, (r+1)*c)).
  int64_t shards = 1;
  /// Where its buffer must live ("placement", else the target's default).
  tsr_placement_t placement = TSR_PLACEMENT_HOST;
  /// A step input that a host program reads, or a host program's output:
  /// it lives in the host pool, and a program on the other side reads a
  /// copy (derived from "schedule", not in the JSON).
  bool onHost = false;
};

/// One collective of a per-rank program ("collectives" of the manifest).
struct CollectiveSpec {
  std::string kind;
  /// The mesh axes of its group, in mesh order.
  std::vector<std::string> axes;
  std::vector<std::string> serves;
  int64_t bucket = -1;
  /// E.g. "reduce_scatter #3 (bucket 1 on dp: fc1.weight, fc1.bias)".
  std::string description;
};

/// The "train" object of a manifest, with its names resolved to indices.
struct TrainSpec {
  int64_t batchSize = 0;
  /// batchSize times the dp size: the batch all ranks take together.
  int64_t globalBatchSize = 0;
  int64_t microBatches = 1;
  int64_t numClasses = 0;
  bool hasIgnoreIndex = false;
  int64_t ignoreIndex = 0;
  int64_t tokenInput = -1;
  int64_t tokenLabel = -1;
  size_t lossOutput = 0;
  /// Local SGD's period ("local_sgd": {"steps": H}); 0 without local SGD.
  int64_t localSteps = 0;
  /// The step's hyperparameters ("hparams": name -> value, both strings),
  /// sorted by name; checkpoints record them.
  std::vector<std::pair<std::string, std::string>> hparams;
  /// The evaluation program ("eval", tessera-compile --eval), or -1: the
  /// step input each of its inputs binds to (by name), and its loss output.
  int64_t evalProgram = -1;
  std::vector<size_t> evalInputs;
  size_t evalLoss = 0;
};

/// One program of the artifact: an entry symbol and its calling convention.
struct ProgramSpec {
  std::string name, entry;
  std::vector<TensorSpec> inputs, outputs;
  /// It runs on the host beside the device programs ("on_host": an
  /// optimizer update that tsr-offload-optimizer moved there).
  bool onHost = false;
};

/// Where a program's input comes from in a step: a step input (persistent
/// values, the batch, the rng) or an output of an earlier call.
struct Binding {
  bool fromOutput = false;
  size_t index = 0;
};

/// One call of the schedule: which program, where each of its inputs comes
/// from, and the step output its first output is.
struct CallSpec {
  size_t program = 0;
  std::vector<Binding> inputs;
  size_t firstOutput = 0;
};

/// Parameter servers ("parameter_server"): the mesh's dp ranks are the
/// workers, and `servers` more ranks after them each run one of `programs`.
struct ParameterServerSpec {
  int64_t servers = 0, workers = 0;
  /// How many steps a worker may run ahead of the slowest; -1: "sync"
  /// (the servers average every worker's gradient of a step).
  int64_t staleness = -1;
  std::vector<std::string> programs;
  /// This process's server number (from the launcher's world rank), or -1
  /// on a worker.
  int64_t server = -1;
};

struct Manifest {
  std::string mode, target, library, onnx;
  ParameterServerSpec parameterServer;
  std::vector<ProgramSpec> programs;
  std::vector<CallSpec> schedule;
  /// The step's signature, derived from the schedule: its inputs are the
  /// program inputs no earlier call produces, one per name, in order of
  /// first use; its outputs those of every call in order. `updates` and
  /// `of` index step inputs.
  std::vector<TensorSpec> inputs, outputs;
  TrainSpec train;
  /// The device mesh (axis name, size), in the order compiled code numbers
  /// the axes; the ZeRO stage; the collectives in id order.
  std::vector<std::pair<std::string, int64_t>> mesh;
  /// With calls for some ranks only ("ranks" in the schedule): the world
  /// rank whose calls the step keeps (from the launcher's environment when
  /// the manifest was read), else -1.
  int64_t selectedRank = -1;
  /// The calls other ranks make (program, mesh axis, coordinate): a
  /// pipeline's other stages, whose parameters --save-onnx collects.
  struct OtherCall {
    size_t program;
    int64_t axis, coordinate;
  };
  std::vector<OtherCall> otherCalls;
  int64_t zero = 0;
  std::vector<CollectiveSpec> collectives;
  /// The regions compiled code times ("profile_regions"), in id order.
  struct ProfileRegion {
    std::string kind, callee, node;
    bool backward = false;
  };
  std::vector<ProfileRegion> profileRegions;
};

/// Parses and checks the text of a manifest.json. Messages do not name the
/// file.
tsr_status_t parseManifest(const std::string &text, Manifest &out);

/// The index of mesh axis `name`, or -1.
int64_t findMeshAxis(const Manifest &manifest, const std::string &name);

/// This process's position on the artifact's data-parallel axis (0 of 1
/// without one), checking that the communicator bound to the axis has the
/// size the artifact was compiled for.
tsr_status_t getDataParallelPosition(const Manifest &manifest, int64_t &outRank,
                                     int64_t &outSize);

} // namespace tsr

struct tsr_artifact {
  std::string dir;
  /// The "onnx" member resolved against `dir`, or "".
  std::string onnxPath;
  tsr::Manifest manifest;
  void *handle = nullptr;
  /// The entry of each program, in manifest order.
  std::vector<void (*)(void **)> entries;
  /// Per program, where its calls place their blocks in the runtime's arena
  /// (tsr::ArenaCall); empty until a call was recorded. A call (of a const
  /// artifact) updates its program's plan while it holds the arena, which
  /// one call at a time does.
  mutable std::vector<tsr::ArenaPlan> arenaPlans;
  /// With host programs: the copy on the other side of a step input or
  /// output that a program reads across the host link, keyed by (whether
  /// it is an output, its index); made on first use, refreshed every call.
  mutable std::map<std::pair<bool, size_t>, std::unique_ptr<tsr_tensor>>
      mirrors;

  tsr_artifact() = default;
  tsr_artifact(const tsr_artifact &) = delete;
  tsr_artifact &operator=(const tsr_artifact &) = delete;
  ~tsr_artifact();
};

namespace tsr {

/// Records `message` as this thread's last error and returns `status`.
tsr_status_t fail(tsr_status_t status, std::string message);

/// Points `slot` at the symbol `name` of the dlopen'ed `library` (`handle`);
/// if it has none, sets `error` to "<library> has no <name>" and returns false.
template <typename T>
bool bindSymbol(void *handle, const char *library, const char *name, T &slot,
                std::string &error) {
  slot = reinterpret_cast<T>(dlsym(handle, name));
  if (!slot)
    error = std::string(library) + " has no " + name;
  return slot != nullptr;
}

/// Opens the first of `names` that dlopen finds (RTLD_NOW | RTLD_LOCAL),
/// else `$CUDA_HOME/lib64/<fallback>` (CUDA_HOME defaulting to
/// /usr/local/cuda); null if none opens, with `tried` holding every
/// dlerror on one line (tools print it as their error line).
void *dlopenCudaLibrary(std::initializer_list<const char *> names,
                        const char *fallback, std::string &tried);

/// The first failure of a compiled program's kernel launches or library
/// calls since the last call (Kernels.cpp), or "". Exported for the
/// runtime's tests of library calls (GpuGemmTest.cpp).
TSR_API std::string takeKernelError();

/// Records `message` as that failure unless one is already recorded.
void noteKernelError(const std::string &message);

/// The streams of compiled CUDA programs (Streams.cpp), each created on the
/// current device on first use and kept for the life of the process: the
/// compute stream every kernel and copy of a program runs on (what
/// mgpuStreamCreate returns), the communication stream the collectives
/// enqueue on (CommEntry.cpp), and the transfer stream for copies between
/// device and host that overlap both. Null with tsr_last_error() set when
/// it cannot be created (no CUDA: a later call fails the same way).
/// Exported for the runtime's tests of stream order (CommStreamTest.cpp).
TSR_API void *computeStream();
TSR_API void *communicationStream();
TSR_API void *transferStream();

/// Creates an event that orders streams only (cudaEventDisableTiming): no
/// timestamps, so cheaper to record and wait on than tsr_event_create's.
tsr_status_t createOrderingEvent(void **outEvent);

/// An ordering event from a pool of idle ones (Streams.cpp), and its
/// return: an event may be recorded again as soon as the waits for its
/// last record are queued (a wait holds on to the record it saw).
tsr_status_t takeOrderingEvent(void **outEvent);
void giveOrderingEvent(void *event);

/// Makes the work queued on `waiter` from now on wait for the work queued
/// on `stream` so far (an event recorded on one, waited for by the other);
/// the host does not wait.
tsr_status_t orderStreams(void *waiter, void *stream);

/// A block of `bytes` from the device pool of compiled code (mgpuMemAlloc's,
/// Kernels.cpp), counted in tsr_memory_stats, and its return to the pool.
/// Its reuse is ordered by the compute stream: free a block only once the
/// work queued after the free on that stream may overwrite it.
tsr_status_t allocateDeviceBlock(size_t bytes, void **outPtr);
void freeDeviceBlock(void *ptr);

/// The device copies of compiled code's constants (Kernels.cpp's
/// mgpuMemcpy): those of the library loaded at `base` are freed (an
/// artifact being unloaded), and how many there are.
TSR_API void forgetDeviceConstants(const void *base);
TSR_API size_t residentDeviceConstants();

/// Leaves what runs in its scope out of a running profile (Profile.cpp):
/// evaluation during training.
class ProfilePause {
public:
  ProfilePause();
  ~ProfilePause();
  ProfilePause(const ProfilePause &) = delete;
  ProfilePause &operator=(const ProfilePause &) = delete;

private:
  bool wasRunning;
};

/// Records one invocation of program `program` in a running trace.
class ProfileSpan {
public:
  explicit ProfileSpan(size_t program);
  ~ProfileSpan();
  ProfileSpan(const ProfileSpan &) = delete;
  ProfileSpan &operator=(const ProfileSpan &) = delete;

private:
  size_t program;
  bool active;
  double start;
};

/// Prepends `context + ": "` to the last error if `status` is a failure.
tsr_status_t withContext(tsr_status_t status, const std::string &context);

/// Runs `body` and converts escaping exceptions into error statuses, so that
/// no C++ exception crosses the C ABI.
template <typename Fn> tsr_status_t guard(Fn &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(TSR_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(TSR_ERROR_INVALID_ARGUMENT, "internal error");
  }
}

/// Formats a shape as "[2, 3]" ("[]" for scalars).
std::string formatShape(const int64_t *shape, size_t rank);
inline std::string formatShape(const std::vector<int64_t> &shape) {
  return formatShape(shape.data(), shape.size());
}

/// Names input or output `index` of a manifest: "input 2 'x'".
std::string describe(const char *kind, size_t index, const TensorSpec &spec);

/// Computes the element count and byte size of a shape, rejecting negative
/// dimensions and overflow. On failure the message names the shape only.
tsr_status_t computeSizes(tsr_dtype_t dtype, const int64_t *shape, size_t rank,
                          int64_t &outNumElements, size_t &outByteSize);

/// Allocates a zero-filled tensor in `placement`.
tsr_status_t createTensor(tsr_dtype_t dtype, const std::vector<int64_t> &shape,
                          tsr_tensor_t **outTensor,
                          tsr_placement_t placement = TSR_PLACEMENT_HOST);

/// Allocates `bytes` of zero-filled device or pinned host memory through the
/// CUDA runtime (Device.cpp), and frees it.
tsr_status_t allocatePlaced(tsr_placement_t placement, size_t bytes,
                            void **outPtr);
void freePlaced(tsr_placement_t placement, void *ptr);

/// Whether a buffer in `actual` can stand for one the artifact wants in
/// `required`: the same placement, or pinned host memory for host memory.
bool satisfiesPlacement(tsr_placement_t actual, tsr_placement_t required);

/// Fails with TSR_ERROR_MISMATCH unless the host can read `tensor`'s buffer:
/// "<what>: the tensor lives in device memory; ...".
tsr_status_t requireHostReadable(const tsr_tensor &tensor,
                                 const std::string &what);

/// Counts `bytes` of the block of compiled code (from _mlir_memref_to_llvm_*)
/// at `ptr` as gradients until it is freed (a block is counted once: later
/// tags are ignored, as are pointers from elsewhere). The bytes are what a
/// collective wrote, not the block's size: compiled code over-allocates
/// blocks to align them.
void tagGradientBuffer(void *ptr, size_t bytes);

/// Counts `bytes` of tensor buffers as allocated or freed.
void noteTensorAllocated(size_t bytes);

/// While alive, the calling thread's allocations through
/// _mlir_memref_to_llvm_* are one call of a program, served from the
/// process's arena at the offsets of `plan` for as long as the call repeats
/// the allocations and frees the plan was made from. A call that departs
/// from the plan (or has none) allocates with malloc from there on, and at
/// its end, if it freed every block it allocated, its own events become the
/// plan and the arena grows to fit it (pages touched then, not in the next
/// call). The arena serves one call at a time: a call on another thread
/// meanwhile, or nested in this one, uses malloc and plans nothing. Memory.cpp
/// explains why.
class ArenaCall {
public:
  explicit ArenaCall(ArenaPlan &plan);
  ~ArenaCall();
  ArenaCall(const ArenaCall &) = delete;
  ArenaCall &operator=(const ArenaCall &) = delete;

private:
  bool active = false;
};

/// Counts `bytes` of device memory that compiled code allocated or freed
/// (Kernels.cpp) in tsr_memory_stats, with its host allocations.
void noteCompiledAllocated(size_t bytes);
void noteCompiledFreed(size_t bytes);
void noteTensorFreed(size_t bytes);

/// A copy between the device pool and the host pool.
struct LinkCopy {
  const void *from;
  void *to;
  size_t bytes;
  bool toHost;
};

/// Makes `copies` in order on the transfer thread (at the emulated host
/// link's speed, tsr_set_host_bandwidth) and waits for the last; counted
/// in tsr_host_program_stats (Offload.cpp).
void copyOverHostLink(const std::vector<LinkCopy> &copies);

/// Counts `bytes` of the host pool as allocated or freed.
void noteHostPoolBytes(size_t bytes, bool allocated);

/// Counts a tensor's bytes in the host pool from now on, not the device
/// pool (the tensor keeps its buffer; a no-op for a view).
void moveToHostPool(tsr_tensor &tensor);

/// While one lives, compiled code's allocations on this thread are a host
/// program's: counted in the host pool, not the device pool, and outside
/// its capacity (Memory.cpp).
class HostProgramScope {
public:
  HostProgramScope();
  ~HostProgramScope();
  HostProgramScope(const HostProgramScope &) = delete;
  HostProgramScope &operator=(const HostProgramScope &) = delete;

private:
  bool previous;
};

/// Opens a regular file for reading (`fd`, close-on-exec; the caller closes
/// it). Messages start with `path`.
tsr_status_t openRegularFile(const std::string &path, int &fd);

/// Reads a whole regular file. Messages start with `path`.
tsr_status_t readFile(const std::string &path, std::string &outBytes);

/// Writes a whole file, replacing it. Messages start with `path`.
tsr_status_t writeFile(const std::string &path, const std::string &bytes);

/// Parses the bytes of a `.npy` file. Messages do not name a file.
tsr_status_t parseNpy(const char *bytes, size_t size, tsr_tensor_t **outTensor);

} // namespace tsr

namespace onnx {
class TensorProto;
} // namespace onnx

namespace tsr {

/// Converts a TensorProto (raw_data or typed fields) into a tensor named
/// after it. Messages do not name a file.
tsr_status_t tensorFromProto(const onnx::TensorProto &proto,
                             tsr_tensor_t **outTensor);

} // namespace tsr

#endif // TESSERA_RUNTIME_LIB_RUNTIMEINTERNAL_H
