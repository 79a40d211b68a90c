//===- TsrAttrNames.h - Names of tsr's discardable attributes ---*- C++ -*-===//
//
// Every `tsr.*` attribute that passes put on functions, their arguments and
// results, or modules, in one place. The dialect verifies each of them
// (TsrDialect.cpp): an unknown `tsr.` name or a value of the wrong kind is
// an error, so a misspelling cannot pass silently.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_DIALECT_TSR_IR_TSRATTRNAMES_H
#define TESSERA_DIALECT_TSR_IR_TSRATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace mlir::tsr::attr {

// On arguments and results of a training function.
/// The value's name in the model and the manifest (a string).
inline constexpr llvm::StringLiteral kName = "tsr.name";
/// What the value is to the training loop (#tsr.role<...>).
inline constexpr llvm::StringLiteral kRole = "tsr.role";
/// On a result: the index of the argument whose next value it is.
inline constexpr llvm::StringLiteral kUpdates = "tsr.updates";
/// On a gradient result: the index of the argument it is the gradient of.
inline constexpr llvm::StringLiteral kGradOf = "tsr.grad_of";
/// On a gradient result: the data-parallel bucket that reduces it, from
/// tsr-data-parallel-plan.
inline constexpr llvm::StringLiteral kBucket = "tsr.bucket";
/// How a gradient is reduced over the data-parallel ranks when not in a
/// bucket: a compressor's spec such as "topk:0.01" (a string), from
/// tsr-data-parallel-plan. On an op: the collectives tsr-data-parallel
/// built for such a gradient.
inline constexpr llvm::StringLiteral kCompression = "tsr.compression";
/// On a collective that carries a compressed gradient: the bytes of the
/// gradient an all-reduce would have carried (an integer).
inline constexpr llvm::StringLiteral kDenseBytes = "tsr.dense_bytes";
/// On a training step: local SGD's period H, the ranks' parameters and
/// optimizer state averaged every H steps instead of their gradients every
/// step (an integer >= 1), from tsr-data-parallel-plan; on the collectives
/// of that average, from tsr-local-sgd.
inline constexpr llvm::StringLiteral kLocalSteps = "tsr.local_steps";
/// On a training step: the parameter-server mode, a dictionary
/// {servers = S, staleness = K} (K = -1: bulk-synchronous), from
/// tsr-data-parallel-plan; tsr-parameter-server applies it.
inline constexpr llvm::StringLiteral kParameterServer = "tsr.parameter_server";
/// On a gradient result of a training step: the parameter server that
/// holds its parameter, from tsr-data-parallel-plan. On a function: the
/// server whose update it is, from tsr-parameter-server.
inline constexpr llvm::StringLiteral kServer = "tsr.server";
/// On a function: it runs on the host, beside the device programs of the
/// step (tsr-offload-optimizer's update: ZeRO-Offload). The runtime keeps
/// the step inputs it reads in host memory and copies what crosses between
/// the two.
inline constexpr llvm::StringLiteral kOnHost = "tsr.on_host";
/// On optimizer state: the value every element starts from (a float).
inline constexpr llvm::StringLiteral kInit = "tsr.init";
/// On a parameter: running statistics, updated from the batch, no gradient.
inline constexpr llvm::StringLiteral kStatistics = "tsr.statistics";
/// On a result of an imported model: an auxiliary loss (a float scalar, a
/// mixture-of-experts layer's load-balancing loss) that tsr-append-loss
/// adds to the training loss (a unit attribute).
inline constexpr llvm::StringLiteral kAuxLoss = "tsr.aux_loss";
/// On a ZeRO-sharded value: the number of flat shards.
inline constexpr llvm::StringLiteral kShards = "tsr.shards";
/// On a sharded value: the shape of the whole tensor.
inline constexpr llvm::StringLiteral kGlobalShape = "tsr.global_shape";
/// How a value is split over the mesh (#tsr.sharding<...>): on arguments
/// and results; on an op, an array with one per result. From
/// tsr-sharding-propagation.
inline constexpr llvm::StringLiteral kSharding = "tsr.sharding";

// On an op.
/// The layout each operand must be brought to before the op runs (one
/// #tsr.sharding per operand), from tsr-sharding-propagation; the op's
/// results have the layouts of its `tsr.sharding`.
inline constexpr llvm::StringLiteral kOperandShardings =
    "tsr.operand_shardings";
/// Why a pass decided what it did (a string), for `tessera-compile
/// --explain`: on a collective a pass inserted, on an op with
/// `tsr.precision`, on an optimizer state argument whose storage type is
/// not the one asked for.
inline constexpr llvm::StringLiteral kReason = "tsr.reason";
/// Built by tsr-autodiff: part of the backward pass (a unit attribute).
inline constexpr llvm::StringLiteral kBackward = "tsr.backward";
/// On an op of a training function: the pipeline stage that runs it
/// (tsr-pipeline-plan on forward ops, tsr-autodiff on their gradients').
inline constexpr llvm::StringLiteral kStage = "tsr.stage";
/// On an op of a function: the repeated layer it belongs to
/// (tsr-layer-plan on forward ops, tsr-autodiff on their gradients'),
/// which tsr-outline-layers outlines with the layer's other ops. On a
/// function of tsr-outline-layers: the layers it computes (array<i64>).
inline constexpr llvm::StringLiteral kLayer = "tsr.layer";
/// On a forward op, from tsr-remat-plan: "recompute" if the backward pass
/// recomputes the results it reads rather than keeping them (tsr-remat
/// clones the op there, marking the clone "recomputed"), "offload" if its
/// result is copied to host memory and back instead (tsr-offload). On a
/// public function: the policy chosen (none, selective, full or auto).
inline constexpr llvm::StringLiteral kRemat = "tsr.remat";
/// On an op, from tsr-precision-plan: the type it computes and stores its
/// floating-point results in ("f32", "bf16" or "f16"). On a public
/// function: the policy (bf16 or fp16).
inline constexpr llvm::StringLiteral kPrecision = "tsr.precision";

// On a function.
/// The initializers that training leaves frozen, each with the reason
/// (a dictionary from initializer name to a string).
inline constexpr llvm::StringLiteral kFrozen = "tsr.frozen";
/// The ZeRO layout of a data-parallel training function (#tsr.zero<...>).
inline constexpr llvm::StringLiteral kZero = "tsr.zero";
/// The mesh axes a function was partitioned over by
/// tsr-sharding-partition (a list of axis names): its loss is the same on
/// every rank of those axes.
inline constexpr llvm::StringLiteral kPartitioned = "tsr.partitioned";

// On a module.
/// The device mesh (#tsr.mesh<...>).
inline constexpr llvm::StringLiteral kMesh = "tsr.mesh";
/// The calls of one step, in order: an array of symbol references to the
/// module's functions (the artifact's schedule).
inline constexpr llvm::StringLiteral kSchedule = "tsr.schedule";

// On a function of a pipeline.
/// The stage split that tsr-pipeline-plan chose (a dictionary: axis,
/// stages, each stage's estimated seconds, the bytes crossing each cut).
inline constexpr llvm::StringLiteral kPipeline = "tsr.pipeline";
/// On a public function: the ranks that run it, by their coordinates on
/// some mesh axes (a dictionary such as {pp = 1 : i64}); without it, every
/// rank does.
inline constexpr llvm::StringLiteral kRanks = "tsr.ranks";
/// On a stage's function, from tsr-pipeline: its actions in order and
/// their simulated timing (a dictionary).
inline constexpr llvm::StringLiteral kPipelineSchedule =
    "tsr.pipeline_schedule";
/// On a private function of tsr-pipeline: one cell (a chunk's forward,
/// backward or weight-gradient pass; a unit attribute). Each call of it is
/// an action of the schedule, which tsr-cpu-profile-regions times, named
/// by the call's location ("F3.1").
inline constexpr llvm::StringLiteral kPipelineCell = "tsr.pipeline_cell";

// On an scf.for of tsr-to-linalg.
/// The loop of a scatter (ScatterElements): [axis, d0, d1, ...], the axis
/// and the shape of its updates, over which the loop runs in row-major
/// order. Iterations that differ outside the axis write different elements,
/// so a target may run them in parallel, keeping the order along the axis
/// (tsr-gpu-map does).
inline constexpr llvm::StringLiteral kScatterShape = "tsr.scatter_shape";

// On a public function.
/// The peak bytes allocated by one call, from tsr-cpu-memory-plan.
inline constexpr llvm::StringLiteral kPeakAllocBytes = "tsr.peak_alloc_bytes";

/// Per result, the argument whose buffer it is returned in, or -1: the
/// caller passes that argument's buffer as the result's (array<i64>, from
/// tsr-donate-updates).
inline constexpr llvm::StringLiteral kInPlace = "tsr.in_place";

// On a private function of tsr-cpu-outline-kernels.
/// The function is one kernel (a unit attribute): a loop nest that
/// tsr-cpu-profile-regions times as one region.
inline constexpr llvm::StringLiteral kKernel = "tsr.kernel";

// On a module.
/// The regions tsr-cpu-profile-regions timed, indexed by the id that the
/// program passes to tsr_profile_begin/tsr_profile_end: dictionaries
/// {kind, callee, node, backward} (the manifest's "profile_regions").
inline constexpr llvm::StringLiteral kProfileRegions = "tsr.profile_regions";

} // namespace mlir::tsr::attr

#endif // TESSERA_DIALECT_TSR_IR_TSRATTRNAMES_H
