//===- Artifact.cpp - Artifact directories and their manifest -------------===//
#include "tessera/Pipelines/Lowering.h"
#include "tessera/Pipelines/Target.h"

#include "tessera/Analysis/CostModel.h"
#include "tessera/Analysis/PeakMemory.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#ifdef __linux__
#include <cerrno>
#include <unistd.h>
#endif

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// The phase of the op that allocates each buffer of training function `f`:
/// the working copies of parameters (a cast of a parameter argument,
/// possibly all-gathered), the backward pass (ops marked tsr.backward,
/// gradients included), the update (after the last of those) and the
/// forward pass (the rest: activations saved for the backward pass). In a
/// pipeline stage's program, the results of a forward cell's call are the
/// forward pass's (the activations of the micro-batches in flight) and a
/// backward or weight-gradient cell's the backward pass's. A function
/// without a backward pass is all "forward".
class Phases {
public:
  explicit Phases(func::FuncOp f) : f(f), body(f.getBody().front()) {
    for (Operation &op : body) {
      CellKind kind = cellKind(&op);
      if (kind == CellKind::None)
        kind = pipelinePass(&op);
      if (kind != CellKind::None)
        cellPass[&op] = kind;
      if (op.hasAttr(tsr::attr::kBackward) || kind == CellKind::Backward)
        lastBackward = &op;
    }
  }

  bool training() const { return lastBackward; }

  StringRef of(const PeakBuffer &buffer) const {
    if (!lastBackward)
      return "forward";
    Operation *op = body.findAncestorOpInBlock(*buffer.op);
    if (!op)
      return "backward";
    if (isa<tsr::CastOp>(op) && isParameter(op->getOperand(0)))
      return "parameter copies";
    if (auto it = cellPass.find(op); it != cellPass.end())
      return it->second == CellKind::Forward ? "forward" : "backward";
    if (op->hasAttr(tsr::attr::kBackward))
      return "backward";
    if (lastBackward->isBeforeInBlock(op))
      return "update";
    return "forward";
  }

private:
  enum class CellKind { None, Forward, Backward };

  /// Whether `op` calls a pipeline cell (tsr-pipeline's @stageK.forward,
  /// @stageK.chunkV.backward, ...), and of which pass.
  CellKind cellKind(Operation *op) const {
    auto call = dyn_cast<func::CallOp>(op);
    auto callee = call ? SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
                             call, call.getCalleeAttr())
                       : func::FuncOp();
    if (!callee || !callee->hasAttr(tsr::attr::kPipelineCell))
      return CellKind::None;
    return callee.getSymName().ends_with(".forward") ? CellKind::Forward
                                                     : CellKind::Backward;
  }

  /// The pass of an op between a pipeline stage's cell calls (a receive,
  /// a gradient's sum over micro-batches): the forward pass's if a forward
  /// cell reads it (an activation received), else the backward pass's if
  /// it reads a backward value or a backward cell reads it.
  CellKind pipelinePass(Operation *op) const {
    if (!f->hasAttr(tsr::attr::kPipelineSchedule))
      return CellKind::None;
    bool backward = false;
    for (Operation *user : op->getUsers()) {
      CellKind kind = cellKind(user);
      if (kind == CellKind::Forward)
        return kind;
      backward |= kind == CellKind::Backward;
    }
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        backward |= cellPass.lookup(def) == CellKind::Backward;
    return backward ? CellKind::Backward : CellKind::None;
  }

  bool isParameter(Value v) const {
    while (Operation *def = v.getDefiningOp()) {
      if (!isa<tsr::AllGatherOp, tsr::WaitOp, tsr::ReshapeOp, tsr::SliceOp>(
              def))
        return false;
      v = def->getOperand(0);
    }
    auto arg = dyn_cast<BlockArgument>(v);
    auto role = arg ? f.getArgAttrOfType<tsr::RoleAttr>(arg.getArgNumber(),
                                                        tsr::attr::kRole)
                    : tsr::RoleAttr();
    return role && role.getValue() == tsr::Role::param;
  }

  mutable func::FuncOp f;
  Block &body;
  Operation *lastBackward = nullptr;
  /// In a pipeline stage's program: the pass of each cell call and of the
  /// ops around them that belong to one.
  DenseMap<Operation *, CellKind> cellPass;
};

} // namespace

/// The buffers live at the predicted peak of training function `f` by
/// phase (Phases); what a callee holds counts as "callee".
static std::map<std::string, int64_t> peakByPhase(func::FuncOp f,
                                                  const PeakMemory &peak) {
  std::map<std::string, int64_t> bytes;
  Phases phases(f);
  if (!phases.training())
    return bytes;
  for (const PeakBuffer &buffer : peak.liveAtPeak)
    bytes[phases.of(buffer).str()] += buffer.bytes + buffer.padding;
  if (peak.calleeBytes)
    bytes["callee"] += peak.calleeBytes;
  return bytes;
}

/// The live bytes of every step of `peak` by phase, padding included.
static ArtifactMemoryTimeline memoryTimeline(func::FuncOp f,
                                             const PeakMemory &peak) {
  ArtifactMemoryTimeline timeline;
  Phases phases(f);
  timeline.phases = {"parameter copies", "forward", "backward", "update",
                     "callee"};
  size_t n = peak.steps.size(), k = timeline.phases.size();
  std::vector<std::vector<int64_t>> change(k, std::vector<int64_t>(n + 1, 0));
  for (const PeakMemory::LiveRange &range : peak.ranges) {
    StringRef phase = phases.of(range.buffer);
    size_t c = llvm::find(timeline.phases, phase) - timeline.phases.begin();
    int64_t bytes = range.buffer.bytes + range.buffer.padding;
    change[c][range.first] += bytes;
    change[c][range.last + 1] -= bytes;
  }
  std::vector<int64_t> live(k, 0);
  for (size_t s = 0; s < n; ++s) {
    for (size_t c = 0; c + 1 < k; ++c)
      live[c] += change[c][s];
    live[k - 1] = peak.calleeBytesAt[s];
    timeline.bytes.push_back(live);
    Operation *op = peak.steps[s];
    std::string node = tsr::getNodeName(op->getLoc());
    timeline.ops.push_back(op->getName().getStringRef().str() +
                           (node.empty() ? "" : " at '" + node + "'"));
    timeline.stepPhases.push_back(
        phases.of(PeakBuffer{Value(), op, "", 0, 0}).str());
  }
  // Offloaded values live in host memory from the start of their copy out
  // to the end of their copy back.
  DenseMap<Operation *, unsigned> position;
  for (auto [k, op] : llvm::enumerate(f.getBody().front()))
    position[&op] = k;
  SmallVector<std::tuple<unsigned, unsigned, int64_t>> offloaded;
  DenseMap<int64_t, tsr::OffloadStartOp> starts;
  f.walk(
      [&](tsr::OffloadStartOp start) { starts[start.getTransfer()] = start; });
  f.walk([&](tsr::PrefetchWaitOp wait) {
    if (auto start = starts.lookup(wait.getTransfer());
        start && position.count(start) && position.count(wait))
      offloaded.emplace_back(position[start], position[wait],
                             tsr::getStaticTensorBytes(start.getX().getType()));
  });
  if (!offloaded.empty())
    for (Operation *op : peak.steps) {
      unsigned at = position.lookup(op);
      int64_t bytes = 0;
      for (auto [first, last, size] : offloaded)
        if (first <= at && at <= last)
          bytes += size;
      timeline.hostBytes.push_back(bytes);
    }
  // Drop the phases no step holds bytes in.
  for (size_t c = k; c-- > 0;) {
    if (llvm::any_of(timeline.bytes, [&](auto &row) { return row[c] != 0; }))
      continue;
    timeline.phases.erase(timeline.phases.begin() + c);
    for (auto &row : timeline.bytes)
      row.erase(row.begin() + c);
  }
  return timeline;
}

std::string mlir::tessera::getDTypeName(Type t) {
  if (t.isF16())
    return "float16";
  if (t.isBF16())
    return "bfloat16";
  if (t.isF32())
    return "float32";
  if (t.isF64())
    return "float64";
  if (auto i = dyn_cast<IntegerType>(t)) {
    if (i.getWidth() == 1)
      return "bool";
    if (i.getWidth() != 8 && i.getWidth() != 16 && i.getWidth() != 32 &&
        i.getWidth() != 64)
      return "";
    return (i.isUnsigned() ? "uint" : "int") + std::to_string(i.getWidth());
  }
  return "";
}

static FailureOr<ArtifactTensor> describe(Operation *where, Type type,
                                          DictionaryAttr attrs, StringRef kind,
                                          unsigned index) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  ArtifactTensor t;
  if (auto name =
          attrs ? attrs.getAs<StringAttr>(tsr::attr::kName) : StringAttr())
    t.name = name.str();
  else
    t.name = (kind + "_" + Twine(index)).str();
  if (!tensor || !tensor.hasStaticShape())
    return where->emitError()
           << kind << " '" << t.name
           << "' is not a statically shaped tensor: " << type;
  t.dtype = getDTypeName(tensor.getElementType());
  if (t.dtype.empty())
    return where->emitError()
           << kind << " '" << t.name << "' has unsupported element type "
           << tensor.getElementType();
  t.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  if (attrs) {
    if (auto role = attrs.getAs<tsr::RoleAttr>(tsr::attr::kRole))
      t.role = tsr::stringifyRole(role.getValue()).str();
    if (auto updates = attrs.getAs<IntegerAttr>(tsr::attr::kUpdates))
      t.updates = updates.getInt();
    if (auto of = attrs.getAs<IntegerAttr>(tsr::attr::kGradOf))
      t.gradOf = of.getInt();
    if (auto init = attrs.getAs<FloatAttr>(tsr::attr::kInit))
      t.init = init.getValueAsDouble();
    t.statistics = bool(attrs.get(tsr::attr::kStatistics));
    if (auto reason = attrs.getAs<StringAttr>(tsr::attr::kReason))
      t.reason = reason.str();
    if (auto sharding = attrs.getAs<tsr::ShardingAttr>(tsr::attr::kSharding))
      for (Attribute dim : sharding.getDims()) {
        t.sharding.emplace_back();
        for (Attribute axis : cast<ArrayAttr>(dim))
          t.sharding.back().push_back(cast<StringAttr>(axis).str());
      }
    // The whole tensor: the dp-unsharded value of a ZeRO shard, each
    // dimension times the sizes of the mesh axes that split it.
    auto shards = attrs.getAs<IntegerAttr>(tsr::attr::kShards);
    if (shards)
      t.shards = shards.getInt();
    if (shards || !t.sharding.empty()) {
      t.globalShape.assign(t.shape.begin(), t.shape.end());
      if (auto global = attrs.getAs<DenseI64ArrayAttr>(tsr::attr::kGlobalShape);
          global && shards)
        t.globalShape.assign(global.asArrayRef().begin(),
                             global.asArrayRef().end());
      if (!t.sharding.empty()) {
        auto mesh = tsr::getEnclosingMesh(where);
        if (failed(mesh))
          return failure();
        for (auto [d, axes] : llvm::enumerate(t.sharding))
          for (const std::string &axis : axes)
            t.globalShape[d] *= mesh->getAxisSize(axis).value_or(1);
      }
    }
  }
  return t;
}

FailureOr<ArtifactProgram>
mlir::tessera::getArtifactProgram(func::FuncOp function) {
  ArtifactProgram program;
  program.name = function.getSymName().str();
  program.entry = "tessera_entry_" + program.name;
  FunctionType type = function.getFunctionType();
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    auto d = describe(function, t, function.getArgAttrDict(i), "input", i);
    if (failed(d))
      return failure();
    program.inputs.push_back(*d);
  }
  for (auto [i, t] : llvm::enumerate(type.getResults())) {
    auto d = describe(function, t, function.getResultAttrDict(i), "output", i);
    if (failed(d))
      return failure();
    program.outputs.push_back(*d);
  }
  return program;
}

static llvm::json::Array toJson(ArrayRef<ArtifactTensor> tensors) {
  llvm::json::Array out;
  for (const ArtifactTensor &t : tensors) {
    llvm::json::Array shape;
    for (int64_t d : t.shape)
      shape.push_back(d);
    llvm::json::Object entry{
        {"name", t.name}, {"dtype", t.dtype}, {"shape", std::move(shape)}};
    if (!t.role.empty())
      entry["role"] = t.role;
    if (t.updates)
      entry["updates"] = *t.updates;
    if (t.inPlace)
      entry["in_place"] = true;
    if (t.gradOf)
      entry["of"] = *t.gradOf;
    if (t.init)
      entry["init"] = *t.init;
    if (t.statistics)
      entry["statistics"] = true;
    if (!t.sharding.empty()) {
      llvm::json::Array dims;
      for (const std::vector<std::string> &axes : t.sharding) {
        llvm::json::Array names;
        for (const std::string &axis : axes)
          names.push_back(axis);
        dims.push_back(std::move(names));
      }
      entry["sharding"] = std::move(dims);
    }
    if (t.shards)
      entry["shards"] = *t.shards;
    if (t.shards || !t.sharding.empty()) {
      llvm::json::Array global;
      for (int64_t d : t.globalShape)
        global.push_back(d);
      entry["global_shape"] = std::move(global);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

/// Reads tsr-pipeline's `tsr.pipeline_schedule` (the dialect verified that
/// it is a dictionary; tsr-pipeline wrote every field).
static ArtifactPipelineStage
getPipelineStage(DictionaryAttr info,
                 ArrayRef<std::pair<std::string, int64_t>> ranks) {
  ArtifactPipelineStage stage;
  if (!ranks.empty())
    stage.stage = ranks.front().second;
  auto number = [&](StringRef key) {
    auto value = info.getAs<FloatAttr>(key);
    return value ? value.getValueAsDouble() : 0.0;
  };
  auto integer = [&](StringRef key) {
    auto value = info.getAs<IntegerAttr>(key);
    return value ? value.getInt() : int64_t(0);
  };
  auto numbers = [&](StringRef key) {
    std::vector<double> out;
    if (auto list = info.getAs<DenseF64ArrayAttr>(key))
      out.assign(list.asArrayRef().begin(), list.asArrayRef().end());
    return out;
  };
  if (auto name = info.getAs<StringAttr>("schedule"))
    stage.schedule = name.str();
  if (auto actions = info.getAs<ArrayAttr>("actions"))
    for (Attribute a : actions)
      if (auto text = dyn_cast<StringAttr>(a))
        stage.actions.push_back(text.str());
  stage.microBatches = integer("micro_batches");
  stage.virtualStages = std::max<int64_t>(1, integer("virtual_stages"));
  stage.peakInFlight = integer("peak_in_flight");
  stage.starts = numbers("starts");
  stage.ends = numbers("ends");
  stage.forwardSeconds = number("forward_seconds");
  stage.backwardSeconds = number("backward_seconds");
  stage.busySeconds = number("busy_seconds");
  stage.stepSeconds = number("step_seconds");
  stage.bubble = number("bubble");
  return stage;
}

FailureOr<ArtifactSignature>
mlir::tessera::lowerModel(ModuleOp module, const TargetBackend &target,
                          const ClusterSpec &cluster, TimingScope *timing) {
  SmallVector<func::FuncOp> publicFuncs;
  for (auto f : module.getOps<func::FuncOp>())
    if (f.isPublic() && !f.isExternal())
      publicFuncs.push_back(f);
  if (publicFuncs.empty())
    return module.emitError("no public function to compile");
  // The cost model with the target's figures and a link per mesh axis,
  // each figure the cluster file gives replacing the target's.
  auto mesh = module->getAttrOfType<tsr::MeshAttr>(tsr::attr::kMesh);
  llvm::StringMap<LinkCost> links;
  if (mesh)
    for (auto [axis, name] : llvm::enumerate(mesh.getNames()))
      links[name] = cluster.getLink(name).resolve(
          target.getDefaultLinkCost(mesh.getSizes(), axis));
  CostModel costModel(cluster.getCostParameters(target.getCostParameters()),
                      std::move(links));
  ArtifactSignature sig;
  for (func::FuncOp f : publicFuncs) {
    FailureOr<ArtifactProgram> program = getArtifactProgram(f);
    if (failed(program) || failed(verifyElementTypes(f, target)))
      return failure();
    program->onHost = f->hasAttr(tsr::attr::kOnHost);
    f->removeAttr(tsr::attr::kOnHost);
    PeakMemory peak = predictPeakMemory(f);
    program->predictedPeakBytes = peak.peakBytes;
    for (const PeakBuffer &buffer : peak.liveAtPeak)
      program->predictedPeakByType[buffer.value
                                       ? getDTypeName(getElementTypeOrSelf(
                                             buffer.value.getType()))
                                       : "scratch"] +=
          buffer.bytes + buffer.padding;
    if (peak.calleeBytes)
      program->predictedPeakByType["callee"] += peak.calleeBytes;
    program->predictedPeakByPhase = peakByPhase(f, peak);
    program->memoryTimeline = memoryTimeline(f, peak);
    if (auto ranks = f->getAttrOfType<DictionaryAttr>(tsr::attr::kRanks))
      for (NamedAttribute entry : ranks)
        program->ranks.emplace_back(
            entry.getName().str(),
            cast<IntegerAttr>(entry.getValue()).getInt());
    if (auto info =
            f->getAttrOfType<DictionaryAttr>(tsr::attr::kPipelineSchedule)) {
      program->pipeline = getPipelineStage(info, program->ranks);
      // The most bytes of activations the stage holds at once: its forward
      // cells' results over the memory timeline.
      const ArtifactMemoryTimeline &t = program->memoryTimeline;
      size_t forward = llvm::find(t.phases, "forward") - t.phases.begin();
      for (const std::vector<int64_t> &step : t.bytes)
        if (forward < step.size())
          program->pipeline->peakActivationBytes =
              std::max(program->pipeline->peakActivationBytes, step[forward]);
    }
    FailureOr<FunctionCost> cost = costModel.getFunctionCost(f);
    if (failed(cost))
      return failure();
    program->computeSeconds = cost->compute.seconds;
    program->communicationSeconds = cost->communication.seconds;
    // The device programs' offloads and recomputations (in the module: a
    // step's callees have them too); a host program has neither.
    Operation *scope = program->onHost ? f.getOperation() : module;
    scope->walk([&](tsr::OffloadStartOp start) {
      ++program->offloadedValues;
      program->offloadedBytes +=
          tsr::getStaticTensorBytes(start.getX().getType());
      if (FloatAttr copy = start.getCopySecondsAttr())
        program->transferSeconds += 2 * copy.getValueAsDouble();
      if (FloatAttr exposed = start.getExposedSecondsAttr())
        program->exposedTransferSeconds += exposed.getValueAsDouble();
    });
    scope->walk([&](Operation *op) {
      auto remat = op->getAttrOfType<StringAttr>(tsr::attr::kRemat);
      if (!remat || remat.getValue() != "recomputed")
        return;
      OpCost cost = costModel.getComputeCost(op);
      ++program->recomputedOps;
      program->recomputeFlops += cost.flops;
      program->recomputeSeconds += cost.seconds;
    });
    // MLIR's bare-pointer calling convention has no strided layout for a
    // zero-sized dimension after the first (its strides fold to 0).
    for (const ArtifactTensor &t :
         llvm::concat<const ArtifactTensor>(program->inputs, program->outputs))
      if (t.shape.size() > 1 &&
          llvm::is_contained(ArrayRef<int64_t>(t.shape).drop_front(), 0))
        return f.emitError("unsupported: tensor '")
               << t.name << "' at the model boundary has a zero-sized "
               << "dimension after the first (shape "
               << llvm::interleaved(t.shape, "x") << ")";
    for (const ArtifactTensor &t : program->outputs) {
      if (t.gradOf && sig.mode == "infer")
        sig.mode = "grad";
      if (t.updates)
        sig.mode = "train";
    }
    sig.programs.push_back(std::move(*program));
  }
  if (auto schedule = module->getAttrOfType<ArrayAttr>(tsr::attr::kSchedule)) {
    // The dialect verified that every entry names a function of the module.
    for (Attribute call : schedule) {
      StringRef name = cast<FlatSymbolRefAttr>(call).getValue();
      if (!llvm::any_of(sig.programs, [&](const ArtifactProgram &p) {
            return p.name == name;
          }))
        return module.emitError("tsr.schedule calls @")
               << name << ", which is not a public function";
      sig.schedule.push_back(name.str());
    }
    module->removeAttr(tsr::attr::kSchedule);
  } else if (sig.programs.size() == 1) {
    sig.schedule.push_back(sig.programs.front().name);
  } else {
    return module.emitError("the module has ")
           << sig.programs.size()
           << " public functions but no tsr.schedule attribute naming the "
              "calls of a step";
  }
  // The mesh, the ZeRO stage and every collective, numbered in program
  // order: the lowering passes the number to the runtime, whose messages
  // then name the collective's parameters.
  if (mesh)
    for (auto [name, size] : llvm::zip(mesh.getNames(), mesh.getSizes()))
      sig.mesh.push_back({name.str(), size});
  for (func::FuncOp f : publicFuncs) {
    if (auto frozen = f->getAttrOfType<DictionaryAttr>(tsr::attr::kFrozen)) {
      // Each stage of a pipeline lists the model's frozen initializers.
      for (NamedAttribute entry : frozen)
        if (!llvm::any_of(sig.frozen, [&](const auto &known) {
              return known.first == entry.getName().getValue();
            }))
          sig.frozen.push_back({entry.getName().str(),
                                cast<StringAttr>(entry.getValue()).str()});
      f->removeAttr(tsr::attr::kFrozen);
    }
    if (auto period = f->getAttrOfType<IntegerAttr>(tsr::attr::kLocalSteps)) {
      sig.localSGD = ArtifactLocalSGD{period.getInt()};
      int64_t n = 1;
      if (auto zero = f->getAttrOfType<tsr::ZeroAttr>(tsr::attr::kZero))
        for (Attribute axis : zero.getAxes())
          n *= mesh ? mesh.getAxisSize(cast<StringAttr>(axis).getValue())
                          .value_or(1)
                    : 1;
      for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i) {
        auto role = f.getArgAttrOfType<tsr::RoleAttr>(i, tsr::attr::kRole);
        if (role && role.getValue() == tsr::Role::param)
          sig.localSGD->gradientBytes +=
              2.0 * double(n - 1) / double(n) *
              double(tsr::getStaticTensorBytes(f.getArgument(i).getType()));
      }
      f->removeAttr(tsr::attr::kLocalSteps);
    }
    if (auto plan =
            f->getAttrOfType<DictionaryAttr>(tsr::attr::kParameterServer)) {
      if (!sig.parameterServer)
        sig.parameterServer.emplace();
      sig.parameterServer->servers =
          plan.getAs<IntegerAttr>("servers").getInt();
      sig.parameterServer->staleness =
          plan.getAs<IntegerAttr>("staleness").getInt();
      for (unsigned i = 0, e = f.getNumResults(); i < e; ++i)
        f.removeResultAttr(i,
                           StringAttr::get(f.getContext(), tsr::attr::kServer));
      f->removeAttr(tsr::attr::kParameterServer);
    }
    if (auto server = f->getAttrOfType<IntegerAttr>(tsr::attr::kServer)) {
      if (!sig.parameterServer)
        sig.parameterServer.emplace();
      ArtifactParameterServer &ps = *sig.parameterServer;
      size_t s = server.getInt();
      if (ps.programs.size() <= s) {
        ps.programs.resize(s + 1);
        ps.heldBytes.resize(s + 1);
      }
      ps.programs[s] = f.getSymName().str();
      for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i) {
        auto role = f.getArgAttrOfType<tsr::RoleAttr>(i, tsr::attr::kRole);
        int64_t bytes = tsr::getStaticTensorBytes(f.getArgument(i).getType());
        if (role && role.getValue() == tsr::Role::param) {
          ps.heldBytes[s] += bytes;
          ps.pullBytes += bytes;
        } else if (role && role.getValue() == tsr::Role::grad) {
          ps.pushBytes += bytes;
        }
      }
      f->removeAttr(tsr::attr::kServer);
    }
    if (auto zero = f->getAttrOfType<tsr::ZeroAttr>(tsr::attr::kZero)) {
      sig.zero = zero.getStage();
      f->removeAttr(tsr::attr::kZero);
    }
    if (auto remat = f->getAttrOfType<StringAttr>(tsr::attr::kRemat)) {
      for (ArtifactProgram &program : sig.programs)
        if (program.name == f.getSymName())
          program.remat = remat.str();
      f->removeAttr(tsr::attr::kRemat);
    }
    f->removeAttr(tsr::attr::kPipelineSchedule);
    f->removeAttr(tsr::attr::kRanks);
  }
  for (func::FuncOp f : publicFuncs)
    if (auto policy = f->getAttrOfType<StringAttr>(tsr::attr::kPrecision)) {
      sig.precision = policy.str();
      f->removeAttr(tsr::attr::kPrecision);
    }
  module.walk([&](Operation *op) {
    auto type = op->getAttrOfType<StringAttr>(tsr::attr::kPrecision);
    if (!type)
      return;
    ArtifactPrecision d;
    d.op = op->getName().getStringRef().str();
    d.node = tsr::getNodeName(op->getLoc());
    d.type = type.str();
    if (auto reason = op->getAttrOfType<StringAttr>(tsr::attr::kReason))
      d.reason = reason.str();
    sig.precisionDecisions.push_back(std::move(d));
  });
  module.walk([&](Operation *op) {
    if (!isa<tsr::AllReduceOp, tsr::ReduceScatterOp, tsr::AllGatherOp,
             tsr::AllToAllOp, tsr::BroadcastFromOp, tsr::SendOp, tsr::RecvOp>(
            op))
      return;
    ArtifactCollective c;
    c.kind = op->getName().stripDialect().str();
    for (Attribute axis : op->getAttrOfType<ArrayAttr>("mesh_axes"))
      c.axes.push_back(cast<StringAttr>(axis).str());
    for (Attribute s : op->getAttrOfType<ArrayAttr>("serves"))
      c.serves.push_back(cast<StringAttr>(s).str());
    if (auto bucket = op->getAttrOfType<IntegerAttr>("bucket"))
      c.bucket = bucket.getInt();
    if (auto reason = op->getAttrOfType<StringAttr>(tsr::attr::kReason))
      c.reason = reason.str();
    c.node = tsr::getNodeName(op->getLoc());
    c.backward = op->hasAttr(tsr::attr::kBackward);
    if (!CostModel::isCollective(op))
      c.bytes = double(tsr::getStaticTensorBytes(
          (op->getNumResults() ? op->getResult(0) : op->getOperand(0))
              .getType()));
    else if (FailureOr<OpCost> cost = costModel.getCollectiveCost(op);
             succeeded(cost))
      c.bytes = cost->bytes;
    if (auto method = op->getAttrOfType<StringAttr>(tsr::attr::kCompression)) {
      if (!sig.compression)
        sig.compression = ArtifactCompression{method.str()};
      sig.compression->sentBytes += c.bytes;
      if (auto dense = op->getAttrOfType<IntegerAttr>(tsr::attr::kDenseBytes)) {
        int64_t n = 1;
        for (const std::string &axis : c.axes)
          n *= mesh ? mesh.getAxisSize(axis).value_or(1) : 1;
        sig.compression->denseBytes +=
            2.0 * double(n - 1) / double(n) * double(dense.getInt());
      }
      op->removeAttr(tsr::attr::kCompression);
      op->removeAttr(tsr::attr::kDenseBytes);
    }
    if (op->hasAttr(tsr::attr::kLocalSteps)) {
      if (sig.localSGD)
        sig.localSGD->averageBytes += c.bytes;
      op->removeAttr(tsr::attr::kLocalSteps);
    }
    op->setAttr("id", IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                       sig.collectives.size()));
    sig.collectives.push_back(std::move(c));
  });
  // The names now live in the signature (the manifest); LLVM IR has no place
  // for them and would warn about every one.
  for (func::FuncOp f : publicFuncs)
    for (StringRef attr :
         {tsr::attr::kName, tsr::attr::kRole, tsr::attr::kGradOf,
          tsr::attr::kInit, tsr::attr::kStatistics, tsr::attr::kShards,
          tsr::attr::kGlobalShape, tsr::attr::kSharding, tsr::attr::kReason}) {
      StringAttr name = StringAttr::get(module.getContext(), attr);
      for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i)
        f.removeArgAttr(i, name);
      for (unsigned i = 0, e = f.getNumResults(); i < e; ++i)
        f.removeResultAttr(i, name);
    }

  PassManager pm(module.getContext());
  TimingScope noTiming;
  TimingScope passTiming =
      (timing ? *timing : noTiming).nest("lower to the target's LLVM dialect");
  pm.enableTiming(passTiming);
  buildLoweringPipeline(pm, target);
  if (failed(pm.run(module)))
    return failure();
  if (auto regions =
          module->getAttrOfType<ArrayAttr>(tsr::attr::kProfileRegions)) {
    for (auto region : regions.getAsRange<DictionaryAttr>())
      sig.profileRegions.push_back(
          {region.getAs<StringAttr>("kind").str(),
           region.getAs<StringAttr>("callee").str(),
           region.getAs<StringAttr>("node").str(),
           region.getAs<BoolAttr>("backward").getValue()});
    module->removeAttr(tsr::attr::kProfileRegions);
  }
  // tsr-cpu-memory-plan put each function's peak on it and
  // tsr-donate-updates its in-place results; both are kept on the lowered
  // function (the entry it became, on the CPU target).
  for (ArtifactProgram &program : sig.programs) {
    Operation *lowered = SymbolTable::lookupSymbolIn(module, program.name);
    if (!lowered)
      continue;
    if (auto inPlace =
            lowered->getAttrOfType<DenseI64ArrayAttr>(tsr::attr::kInPlace)) {
      for (auto [k, j] : llvm::enumerate(inPlace.asArrayRef()))
        if (j >= 0 && k < program.outputs.size())
          program.outputs[k].inPlace = true;
      lowered->removeAttr(tsr::attr::kInPlace);
    }
    if (auto peak =
            lowered->getAttrOfType<IntegerAttr>(tsr::attr::kPeakAllocBytes)) {
      program.peakAllocBytes = peak.getInt();
      lowered->removeAttr(tsr::attr::kPeakAllocBytes);
    }
    // On the CPU target the program's body is its entry's by now: the
    // declaration left only carried these.
    if (auto function = dyn_cast<FunctionOpInterface>(lowered);
        function && function.isExternal() &&
        SymbolTable::symbolKnownUseEmpty(lowered, module))
      lowered->erase();
  }
  return sig;
}

/// Copies the ONNX model (the weights the runtime starts from, hundreds of
/// MB) into the artifact. Inside the kernel where Linux can
/// (copy_file_range, which also shares extents on filesystems that can):
/// llvm::sys::fs::copy_file moves it through a 4 KiB buffer, which took a
/// GPT-2-shaped compile a second of system time.
static std::error_code copyModel(StringRef from, StringRef to) {
#ifdef __linux__
  int in = -1, out = -1;
  if (std::error_code ec = llvm::sys::fs::openFileForRead(from, in))
    return ec;
  uint64_t size = 0;
  std::error_code ec = llvm::sys::fs::file_size(from, size);
  if (!ec)
    ec = llvm::sys::fs::openFileForWrite(to, out);
  uint64_t done = 0;
  while (!ec && done < size) {
    ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, size - done, 0);
    if (n > 0) {
      done += n;
      continue;
    }
    if (n == 0 || errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
        errno == EOPNOTSUPP) {
      // Not here (another filesystem, an old kernel): the portable way.
      ::close(in);
      ::close(out);
      return llvm::sys::fs::copy_file(from, to);
    }
    if (errno != EINTR)
      ec = std::error_code(errno, std::generic_category());
  }
  ::close(in);
  if (out >= 0 && ::close(out) != 0 && !ec)
    ec = std::error_code(errno, std::generic_category());
  return ec;
#else
  return llvm::sys::fs::copy_file(from, to);
#endif
}

LogicalResult mlir::tessera::compileToArtifact(
    ModuleOp module, const TargetBackend &target, StringRef dir,
    const TrainingManifest *train, ArtifactSignature *outSig,
    const ClusterSpec &cluster, TimingScope *timing) {
  FailureOr<ArtifactSignature> sig =
      lowerModel(module, target, cluster, timing);
  if (failed(sig))
    return failure();
  if (outSig)
    *outSig = *sig;
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return module.emitError("cannot create output directory '")
           << dir << "': " << ec.message();
  TimingScope noTiming;
  if (failed(target.emitLibrary(module, dir, timing ? *timing : noTiming)))
    return failure();
  TimingScope writing =
      (timing ? *timing : noTiming).nest("write the manifest");

  llvm::json::Array programs, schedule;
  for (const ArtifactProgram &program : sig->programs) {
    llvm::json::Object entry{{"name", program.name},
                             {"entry", program.entry},
                             {"inputs", toJson(program.inputs)},
                             {"outputs", toJson(program.outputs)}};
    if (program.peakAllocBytes)
      entry["peak_alloc_bytes"] = *program.peakAllocBytes;
    entry["predicted_peak_alloc_bytes"] = program.predictedPeakBytes;
    if (program.onHost)
      entry["on_host"] = true;
    if (const auto &stage = program.pipeline) {
      llvm::json::Array actions;
      for (const std::string &a : stage->actions)
        actions.push_back(a);
      entry["pipeline"] = llvm::json::Object{
          {"stage", stage->stage},
          {"schedule", stage->schedule},
          {"micro_batches", stage->microBatches},
          {"actions", std::move(actions)},
          {"predicted_bubble", stage->bubble},
          {"predicted_step_seconds", stage->stepSeconds},
          {"peak_in_flight", stage->peakInFlight},
          {"predicted_peak_activation_bytes", stage->peakActivationBytes}};
    }
    if (!program.remat.empty()) {
      entry["remat"] = program.remat;
      entry["recomputed_ops"] = program.recomputedOps;
      entry["recompute_flops"] = program.recomputeFlops;
      entry["recompute_seconds"] = program.recomputeSeconds;
      entry["offloaded_values"] = program.offloadedValues;
      entry["offloaded_bytes"] = program.offloadedBytes;
      entry["transfer_seconds"] = program.transferSeconds;
      entry["exposed_transfer_seconds"] = program.exposedTransferSeconds;
    }
    programs.push_back(std::move(entry));
  }
  for (const std::string &call : sig->schedule) {
    llvm::json::Object entry{{"program", call}};
    for (const ArtifactProgram &program : sig->programs) {
      if (program.name != call || program.ranks.empty())
        continue;
      llvm::json::Object ranks;
      for (const auto &[axis, coord] : program.ranks)
        ranks[axis] = coord;
      entry["ranks"] = std::move(ranks);
    }
    schedule.push_back(std::move(entry));
  }
  llvm::json::Object manifest{{"format", "tessera-artifact"},
                              {"version", 2},
                              {"mode", sig->mode},
                              {"target", target.getName()},
                              {"library", "model.so"},
                              {"programs", std::move(programs)},
                              {"schedule", std::move(schedule)}};
  if (!sig->precision.empty())
    manifest["precision"] = sig->precision;
  if (!sig->mesh.empty()) {
    llvm::json::Array mesh, collectives;
    for (auto &[name, size] : sig->mesh)
      mesh.push_back(llvm::json::Object{{"name", name}, {"size", size}});
    manifest["mesh"] = std::move(mesh);
    if (sig->zero)
      manifest["zero"] = *sig->zero;
    for (const ArtifactCollective &c : sig->collectives) {
      llvm::json::Array serves;
      for (const std::string &s : c.serves)
        serves.push_back(s);
      llvm::json::Array axes;
      for (const std::string &a : c.axes)
        axes.push_back(a);
      llvm::json::Object entry{{"kind", c.kind},
                               {"axes", std::move(axes)},
                               {"serves", std::move(serves)}};
      if (c.bucket)
        entry["bucket"] = *c.bucket;
      entry["bytes"] = int64_t(c.bytes);
      collectives.push_back(std::move(entry));
    }
    manifest["collectives"] = std::move(collectives);
    if (sig->compression)
      manifest["gradient_compression"] = llvm::json::Object{
          {"method", sig->compression->method},
          {"sent_bytes", int64_t(sig->compression->sentBytes)},
          {"dense_bytes", int64_t(sig->compression->denseBytes)}};
  }
  if (sig->localSGD)
    manifest["local_sgd"] = llvm::json::Object{
        {"steps", sig->localSGD->steps},
        {"average_bytes", int64_t(sig->localSGD->averageBytes)},
        {"gradient_bytes", int64_t(sig->localSGD->gradientBytes)}};
  if (const std::optional<ArtifactParameterServer> &ps = sig->parameterServer) {
    llvm::json::Object entry{{"servers", ps->servers},
                             {"mode", ps->staleness < 0 ? "sync" : "async"},
                             {"programs", llvm::json::Array(ps->programs)},
                             {"held_bytes", llvm::json::Array(ps->heldBytes)},
                             {"push_bytes", ps->pushBytes},
                             {"pull_bytes", ps->pullBytes}};
    if (ps->staleness >= 0)
      entry["staleness"] = ps->staleness;
    manifest["parameter_server"] = std::move(entry);
  }
  if (!sig->profileRegions.empty()) {
    llvm::json::Array regions;
    for (const ArtifactProfileRegion &region : sig->profileRegions)
      regions.push_back(llvm::json::Object{{"kind", region.kind},
                                           {"callee", region.callee},
                                           {"node", region.node},
                                           {"backward", region.backward}});
    manifest["profile_regions"] = std::move(regions);
  }
  if (!sig->frozen.empty()) {
    llvm::json::Object frozen;
    for (auto &[name, reason] : sig->frozen)
      frozen[name] = reason;
    manifest["frozen"] = std::move(frozen);
  }
  if (train) {
    llvm::json::Object info{
        {"batch_size", train->batchSize},
        {"global_batch_size", train->batchSize * train->dataParallel},
        {"micro_batches", train->microBatches}};
    if (train->numClasses)
      info["num_classes"] = *train->numClasses;
    if (train->ignoreIndex)
      info["ignore_index"] = *train->ignoreIndex;
    if (!train->evalProgram.empty())
      info["eval"] = train->evalProgram;
    if (!train->tokensInput.empty())
      info["tokens"] = llvm::json::Object{{"input", train->tokensInput},
                                          {"label", train->tokensLabel}};
    if (!train->hparams.empty()) {
      llvm::json::Object hparams;
      for (const auto &[name, value] : train->hparams)
        hparams[name] = value;
      info["hparams"] = std::move(hparams);
    }
    manifest["train"] = std::move(info);
    SmallString<256> copy(dir);
    llvm::sys::path::append(copy, "model.onnx");
    TimingScope copying = writing.nest("copy the ONNX model");
    if (std::error_code ec = copyModel(train->onnxPath, copy))
      return module.emitError("cannot copy '")
             << train->onnxPath << "' to '" << copy << "': " << ec.message();
    manifest["onnx"] = "model.onnx";
  }
  SmallString<256> path(dir);
  llvm::sys::path::append(path, "manifest.json");
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return module.emitError("cannot write '") << path << "': " << ec.message();
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
  return success();
}
