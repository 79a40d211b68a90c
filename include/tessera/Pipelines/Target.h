//===- Target.h - Code generation targets -----------------------*- C++ -*-===//
//
// A target turns a module of `tsr` ops into an artifact directory: it owns
// the lowering pipeline after `tsr` and the emission of the loadable library.
// The driver only sees this interface.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_PIPELINES_TARGET_H
#define TESSERA_PIPELINES_TARGET_H

#include "tessera/Analysis/ClusterSpec.h"
#include "tessera/Analysis/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"
#include "mlir/Support/Timing.h"
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tessera {

/// One tensor of the artifact's calling convention.
struct ArtifactTensor {
  std::string name;
  std::string dtype; // numpy-style: float32, int64, bool, ...
  SmallVector<int64_t> shape;
  /// `tsr.role`: param, state, data, label (inputs); loss, param, state,
  /// grad (outputs). Empty for inference artifacts.
  std::string role;
  /// Outputs: the input a param/state output replaces after each step
  /// (`tsr.updates`), or the input a gradient is of (`tsr.grad_of`).
  std::optional<int64_t> updates, gradOf;
  /// An output the program writes in the buffer of the input it updates
  /// (`tsr.in_place`, from tsr-donate-updates): the caller passes that
  /// buffer as both.
  bool inPlace = false;
  /// State inputs: the value they start from (`tsr.init`).
  std::optional<double> init;
  /// Param inputs holding running statistics (`tsr.statistics`), which
  /// training updates from batches rather than by gradient.
  bool statistics = false;
  /// Why an optimizer state input is stored as it is (`tsr.reason`), when
  /// tsr-optimizer said; not in the manifest, `--explain` prints it.
  std::string reason;
  /// A block of a tensor-parallel value (`tsr.sharding`): per dimension of
  /// `globalShape`, the mesh axes it is split over; empty when the value is
  /// whole.
  std::vector<std::vector<std::string>> sharding;
  /// A flat ZeRO shard over dp of the value's block (`tsr.shards`): the
  /// number of shards.
  std::optional<int64_t> shards;
  /// For a split or sharded value, the whole tensor's shape (the block,
  /// `tsr.global_shape` or `shape`, times the sizes of the axes that split
  /// each dimension).
  std::vector<int64_t> globalShape;
};

/// One collective of the per-rank program, numbered in program order.
struct ArtifactCollective {
  std::string kind;
  /// The mesh axes of its group, in mesh order.
  SmallVector<std::string> axes;
  SmallVector<std::string> serves;
  std::optional<int64_t> bucket;
  /// Why a pass inserted it (`tsr.reason`), the model node it serves (its
  /// location's name), whether it is part of the backward pass, and the
  /// bytes one rank sends (the cost model's β coefficient).
  std::string reason, node;
  bool backward = false;
  double bytes = 0;
};

/// Gradient compression on the data-parallel axis (`tsr.compression` on
/// the collectives of compressed gradients): the compressor, and per step
/// the bytes one rank sends for those gradients against what all-reducing
/// them would send (the ring's 2(N−1)/N of their `tsr.dense_bytes`).
struct ArtifactCompression {
  std::string method;
  double sentBytes = 0, denseBytes = 0;
};

/// Local SGD on the data-parallel axis (`tsr.local_steps`): the period H,
/// the bytes one rank sends for one average (the collectives that carry
/// `tsr.local_steps`), and what all-reducing the trained parameters'
/// gradients would send every step (the ring's 2(N−1)/N of their bytes).
struct ArtifactLocalSGD {
  int64_t steps = 1;
  double averageBytes = 0, gradientBytes = 0;
};

/// Parameter servers (`tsr.parameter_server`): how many, the staleness
/// bound (-1: bulk-synchronous), each server's program and the parameter
/// bytes it holds, and the bytes a worker pushes (gradients) and pulls
/// (parameters) per step.
struct ArtifactParameterServer {
  int64_t servers = 0, staleness = -1;
  SmallVector<std::string> programs;
  SmallVector<int64_t> heldBytes;
  int64_t pushBytes = 0, pullBytes = 0;
};

/// One op's compute type, from tsr-precision-plan (`tsr.precision`).
struct ArtifactPrecision {
  /// The op's name (tsr.matmul), its model node, the type and the rule.
  std::string op, node, type, reason;
};

/// What `tessera-run --train` needs beyond the signature.
struct TrainingManifest {
  /// batchSize: this rank's batch (dimension 0 of its data inputs); the
  /// global batch is dataParallel times that.
  int64_t batchSize = 0, microBatches = 1, dataParallel = 1;
  std::optional<int64_t> numClasses, ignoreIndex;
  /// For token-stream language models: the integer data input and the
  /// label input that a token file feeds.
  std::string tokensInput, tokensLabel;
  /// The source model, copied into the artifact for `--save-onnx`.
  std::string onnxPath;
  /// The hyperparameters of the step as the driver spelled them (name,
  /// value): a checkpoint records them, and resuming under others is
  /// refused unless asked.
  std::vector<std::pair<std::string, std::string>> hparams;
  /// The program that evaluates the loss without an update (`--eval`), or
  /// empty.
  std::string evalProgram;
};

/// A pipeline stage's program (`tsr.pipeline_schedule`, tsr-pipeline): its
/// schedule and what the cost model predicts for it.
struct ArtifactPipelineStage {
  /// peakInFlight counts micro-batches per model chunk (a rank holds
  /// virtualStages chunks).
  int64_t stage = 0, microBatches = 1, virtualStages = 1, peakInFlight = 0;
  /// The most bytes of activations (its forward cells' results) the stage
  /// holds at once, from the predicted memory timeline.
  int64_t peakActivationBytes = 0;
  std::string schedule;
  /// Its actions ("F0", "B0", ...) with their simulated start and end.
  std::vector<std::string> actions;
  std::vector<double> starts, ends;
  /// Seconds per micro-batch, busy seconds of a step, the step's seconds,
  /// and the stage's idle fraction.
  double forwardSeconds = 0, backwardSeconds = 0, busySeconds = 0,
         stepSeconds = 0, bubble = 0;
};

/// The predicted live bytes of one call over the steps of its lowering
/// (lib/Analysis/PeakMemory.h), by the phase of the op that allocated them
/// (as ArtifactProgram::predictedPeakByPhase names them).
struct ArtifactMemoryTimeline {
  /// The phases some step holds bytes in, in drawing order.
  std::vector<std::string> phases;
  /// Per step: the bytes live per phase, the op the step lowers (name and
  /// ONNX node), and that op's own phase.
  std::vector<std::vector<int64_t>> bytes;
  std::vector<std::string> ops, stepPhases;
  /// Per step: the bytes of offloaded values held in host memory, from
  /// their tsr.offload_start to their tsr.prefetch_wait (empty when
  /// nothing is offloaded).
  std::vector<int64_t> hostBytes;
};

/// One program of the artifact: a public function of the module, called
/// through its C entry symbol.
struct ArtifactProgram {
  /// The function's name, and the entry symbol `tessera_entry_<name>`.
  std::string name, entry;
  std::vector<ArtifactTensor> inputs, outputs;
  /// Whether it runs on the host beside the device programs (`tsr.on_host`:
  /// tsr-offload-optimizer's update).
  bool onHost = false;
  /// Peak bytes the function allocates itself (tsr-cpu-memory-plan).
  std::optional<int64_t> peakAllocBytes;
  /// The same peak as predicted on tsr before lowering (lib/Analysis).
  int64_t predictedPeakBytes = 0;
  /// The buffers live at the predicted peak by element type (manifest
  /// dtype names; "scratch" for a lowering's scratch buffers, "callee" for
  /// what a called function holds), padding included.
  std::map<std::string, int64_t> predictedPeakByType;
  /// The same buffers by the phase that allocates them (training functions
  /// only): parameter copies, forward, backward, update, callee.
  std::map<std::string, int64_t> predictedPeakByPhase;
  /// The predicted live bytes over the whole call.
  ArtifactMemoryTimeline memoryTimeline;
  /// The rematerialization policy its backward pass follows
  /// (`tsr.remat`: none, selective, full or auto); empty without
  /// tsr-remat-plan.
  std::string remat;
  /// The ops the backward pass recomputes (`tsr.remat = "recomputed"`, in
  /// the module), and their FLOPs and time by the cost model.
  int64_t recomputedOps = 0;
  double recomputeFlops = 0, recomputeSeconds = 0;
  /// The saved values copied to host memory and back (tsr.offload_start),
  /// their bytes, the time of their copies at the host link's bandwidth
  /// and how much of it the cost model leaves exposed (tsr-offload).
  int64_t offloadedValues = 0, offloadedBytes = 0;
  double transferSeconds = 0, exposedTransferSeconds = 0;
  /// Estimated seconds of one call by the cost model (lib/Analysis) with
  /// the target's figures: compute ops and collectives.
  double computeSeconds = 0, communicationSeconds = 0;
  /// The ranks that call it (`tsr.ranks`: mesh axis, coordinate); empty:
  /// every rank.
  SmallVector<std::pair<std::string, int64_t>> ranks;
  /// Set for a pipeline stage's program.
  std::optional<ArtifactPipelineStage> pipeline;
};

/// A region that tsr-cpu-profile-regions times (`tsr.profile_regions`):
/// its kind (gemm, call, kernel, copy), callee, model node and direction.
struct ArtifactProfileRegion {
  std::string kind, callee, node;
  bool backward = false;
};

/// What the manifest records besides the library itself.
struct ArtifactSignature {
  std::string mode = "infer";
  /// Every public function of the module, in module order.
  std::vector<ArtifactProgram> programs;
  /// The calls of one step, in order, as program names (`tsr.schedule`, or
  /// the one program).
  SmallVector<std::string> schedule;
  /// The device mesh (`tsr.mesh`: axis names and sizes in order), the ZeRO
  /// stage, and the collectives.
  SmallVector<std::pair<std::string, int64_t>> mesh;
  std::optional<int64_t> zero;
  SmallVector<ArtifactCollective> collectives;
  std::optional<ArtifactCompression> compression;
  std::optional<ArtifactLocalSGD> localSGD;
  std::optional<ArtifactParameterServer> parameterServer;
  /// The precision policy (`tsr.precision`: bf16 or fp16; empty for the
  /// model's own types) and every decision of it, in program order.
  std::string precision;
  SmallVector<ArtifactPrecision> precisionDecisions;
  /// Initializers that training leaves frozen, with the reason (`tsr.frozen`).
  SmallVector<std::pair<std::string, std::string>> frozen;
  /// The profile's regions, in id order (empty for a target that does not
  /// time its programs).
  SmallVector<ArtifactProfileRegion> profileRegions;
};

/// A memory space of a target: where its buffers can live.
struct TargetMemorySpace {
  /// "host", "device", "pinned-host" (the runtime's tsr_placement_t).
  std::string name;
  /// The memref memory space attribute of its buffers; null is the default
  /// space (0).
  Attribute attribute;
};

/// What a target contributes to the lowering; the target-independent steps
/// around it are `buildLoweringPipeline` (Lowering.h).
class TargetBackend {
public:
  virtual ~TargetBackend() = default;
  virtual StringRef getName() const = 0;
  /// The memory spaces of the target, the default one first.
  virtual SmallVector<TargetMemorySpace>
  getMemorySpaces(MLIRContext *ctx) const = 0;
  /// Whether tensors of `elementType` can be compiled for the target.
  virtual bool isSupportedElementType(Type elementType) const = 0;
  /// The default figures of one device for the cost model (CostModel.h):
  /// those a cluster file (ClusterSpec.h) does not give.
  virtual CostParameters getCostParameters() const = 0;
  /// The default cost of a collective's messages along mesh axis `axis` of
  /// a mesh of `meshSizes` (ranks are numbered row-major over the axes, so
  /// the last axis joins neighbouring ranks), where a cluster file gives
  /// none.
  virtual LinkCost getDefaultLinkCost(ArrayRef<int64_t> meshSizes,
                                      unsigned axis) const = 0;
  /// Adds the target's passes on tsr, run just before it is lowered to
  /// linalg (library calls that replace a pattern of tsr ops). None by
  /// default.
  virtual void buildTsrPipeline(OpPassManager &) const {}
  /// Adds the target's passes on linalg over tensors (fusion), run on every
  /// function between canonicalize and cse, before bufferization.
  virtual void buildTensorPipeline(OpPassManager &funcPm) const = 0;
  /// Adds the passes from bufferized IR (memrefs with explicit deallocation,
  /// collectives still tsrt ops) to the target's lowest dialect; where the
  /// collectives become runtime calls (tsr-contiguous-collectives, then
  /// tsr-collectives-to-runtime) is the target's choice: the CUDA target
  /// makes them once they are queued on its stream.
  virtual void buildCodegenPipeline(OpPassManager &pm) const = 0;
  /// Emits `dir`/model.so from the fully lowered module, timing its stages
  /// under `timing`.
  virtual LogicalResult emitLibrary(ModuleOp lowered, StringRef dir,
                                    TimingScope &timing) const = 0;
};

/// Options of the CPU target.
struct CpuTargetOptions {
  /// Most elements in one vector of `tsr-cpu-vectorize`; 0 lowers every
  /// linalg op that is not a BLAS call to scalar loops instead.
  int64_t vectorSize = 64;
  /// Non-empty: run the CUDA target's kernels (tsr-gpu-map) on the CPU
  /// instead of the CPU's own code, blocks and threads in this order
  /// (tsr-gpu-emulate: forward, reverse or shuffle). A check of the GPU
  /// mapping without a GPU.
  std::string gpuMapping;
  /// The library of f32 matrix products (tsr-linalg-to-blas): "onednn"
  /// (the runtime's tsr_gemm_f32) or "openblas" (cblas_sgemm, which model.so
  /// then links).
  std::string gemmLibrary = "onednn";
};

std::unique_ptr<TargetBackend>
createCpuTarget(const CpuTargetOptions &options = {});

/// Options of the CUDA target.
struct CudaTargetOptions {
  /// The GPU architecture of the SASS in the fatbin. PTX rides along for
  /// the driver to JIT elsewhere: for an arch-specific architecture (sm_90a)
  /// the PTX of its family (sm_90), which later GPUs run; else its own.
  std::string arch = "sm_90a";
  /// The CUDA toolkit: ptxas, fatbinary and libdevice come from there.
  std::string toolkit = "/usr/local/cuda";
  /// What the kernels become: "fatbin" for an artifact (tsr-gpu-fatbin),
  /// "isa" for their PTX (tessera-compile --emit=ptx: the first object's is
  /// for `arch`).
  std::string binaryFormat = "fatbin";
};

std::unique_ptr<TargetBackend>
createCudaTarget(const CudaTargetOptions &options = {});

/// Whether LLVM's NVPTX back end knows `arch` (sm_80, sm_90a, ...); the
/// toolkit's ptxas may still lack it (CUDA 13 has nothing below sm_75).
bool isKnownGpuArch(StringRef arch);

/// Translates a module of host LLVM dialect (and `gpu.binary` ops, embedded
/// as data) to an object for this machine at -O3 and links `dir`/model.so
/// from it with clang and `libraries` (linker arguments); each of the four
/// stages (translation, -O3, machine code, link) is a timer under `timing`.
LogicalResult emitHostLibrary(ModuleOp lowered, StringRef dir,
                              ArrayRef<StringRef> libraries,
                              TimingScope &timing);

/// The numpy-style name of a tensor element type, or "" if unsupported.
std::string getDTypeName(Type elementType);

/// Reads the calling convention of a program (`tsr.name` attributes).
FailureOr<ArtifactProgram> getArtifactProgram(func::FuncOp function);

/// Lowers every public function of `module` (tsr ops) with `target`'s
/// pipeline; returns their signatures, with the cost model's estimates from
/// `target`'s figures and those of `cluster` that it gives, and the schedule
/// of one step: the module's `tsr.schedule`, or else its one public
/// function. With `timing`, the lowering's passes are timed under it.
FailureOr<ArtifactSignature> lowerModel(ModuleOp module,
                                        const TargetBackend &target,
                                        const ClusterSpec &cluster = {},
                                        TimingScope *timing = nullptr);

/// Lowers `module` (tsr ops in public functions) with `target` and writes
/// the artifact directory `dir`: the library plus manifest.json (format
/// version 2: programs and a schedule).
/// With `train`, the manifest's mode is "train" or "grad" (from the
/// signature's roles), it gains a "train" object and the source model is
/// copied to `dir`/model.onnx. `cluster` and `timing` are lowerModel's;
/// emitting the library is timed under `timing` too.
LogicalResult compileToArtifact(ModuleOp module, const TargetBackend &target,
                                StringRef dir,
                                const TrainingManifest *train = nullptr,
                                ArtifactSignature *outSig = nullptr,
                                const ClusterSpec &cluster = {},
                                TimingScope *timing = nullptr);

} // namespace mlir::tessera

#endif // TESSERA_PIPELINES_TARGET_H
