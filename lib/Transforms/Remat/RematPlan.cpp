//===- RematPlan.cpp - Which saved activations to recompute ---------------===//
//
// The decide half of rematerialization: marks the forward ops whose results
// the backward pass will recompute (tsr.remat = "recompute") and records
// the policy on the public functions. Under a memory budget (policy auto)
// a solver (RematSolver.h) picks the recomputations on a graph model of
// each differentiated function, and the pass searches the model's budget
// for the largest whose schedule, applied to a copy of the module, fits the
// real budget by the tsr-level peak prediction. tsr-remat applies the
// marks.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Remat/Passes.h"
#include "tessera/Transforms/Remat/Remat.h"
#include "tessera/Transforms/Remat/RematSolver.h"

#include "tessera/Analysis/CostModel.h"
#include "tessera/Analysis/PeakMemory.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRREMATPLAN
#include "tessera/Transforms/Remat/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

bool isBackward(Operation *op) { return op->hasAttr(tsr::attr::kBackward); }

/// Whether the backward pass may repeat `op`: a pure tsr op without regions
/// that communicates nothing. Constants are never repeated: they are not
/// activations.
bool isRecomputable(Operation *op) {
  return isa<tsr::TsrDialect>(op->getDialect()) && isMemoryEffectFree(op) &&
         op->getNumRegions() == 0 && !CostModel::isCollective(op) &&
         !isa<tsr::ConstantOp, tsr::RematBarrierOp>(op);
}

/// Whether a backward op reads a result of `op`.
bool isSaved(Operation *op) {
  for (Value result : op->getResults())
    for (Operation *user : result.getUsers())
      if (isBackward(user))
        return true;
  return false;
}

/// The saved results the policy recomputes: the roots of the marking.
SmallVector<Operation *> roots(func::FuncOp f, StringRef policy) {
  SmallVector<Operation *> forward;
  for (Operation &op : f.getBody().front())
    if (!isBackward(&op) && isRecomputable(&op) && isSaved(&op))
      forward.push_back(&op);
  if (policy == "selective") {
    // The attention core: what has the shape of a softmax's result.
    SmallPtrSet<Type, 4> scores;
    for (Operation &op : f.getBody().front())
      if (!isBackward(&op) && isa<tsr::SoftmaxOp>(op))
        scores.insert(op.getResult(0).getType());
    return llvm::filter_to_vector(forward, [&](Operation *op) {
      return llvm::all_of(op->getResultTypes(),
                          [&](Type t) { return scores.contains(t); });
    });
  }
  // full: everything but the inputs of the normalizations.
  DenseSet<Value> kept;
  for (Operation &op : f.getBody().front())
    if (!isBackward(&op) && isa<tsr::LayerNormOp, tsr::BatchNormOp>(op))
      kept.insert(op.getOperand(0));
  return llvm::filter_to_vector(forward, [&](Operation *op) {
    return llvm::none_of(op->getResults(),
                         [&](Value v) { return kept.contains(v); });
  });
}

/// The bytes `f` needs while it runs: its arguments, its results (but those
/// written into an argument's buffer) and the peak of its own allocations
/// (the tsr-level prediction, equal to the runtime allocator's count).
int64_t footprint(func::FuncOp f) {
  PeakMemory peak = predictPeakMemory(f);
  int64_t bytes = peak.peakBytes;
  for (Type t : f.getArgumentTypes())
    bytes += tsr::getStaticTensorBytes(t);
  for (auto [k, t] : llvm::enumerate(f.getResultTypes()))
    if (!llvm::is_contained(peak.inPlaceResults, k))
      bytes += tsr::getStaticTensorBytes(t);
  return bytes;
}

/// The ops of `f` that are nodes of its rematerialization problem, in
/// order: every op but views, constants and the terminator.
SmallVector<Operation *> nodeOps(func::FuncOp f) {
  SmallVector<Operation *> ops;
  for (Operation &op : f.getBody().front())
    if (!isRematView(&op) && !op.hasTrait<OpTrait::ConstantLike>() &&
        !op.hasTrait<OpTrait::IsTerminator>())
      ops.push_back(&op);
  return ops;
}

/// The functions of `module` with a backward pass.
SmallVector<func::FuncOp> differentiated(ModuleOp module) {
  SmallVector<func::FuncOp> functions;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal() && llvm::any_of(f.getBody().front(), [](Operation &op) {
          return isBackward(&op);
        }))
      functions.push_back(f);
  return functions;
}

/// The largest footprint of the module's device programs once `mark` has
/// marked the differentiated functions of a copy and tsr-remat and
/// tsr-offload have applied the marks.
int64_t footprintAfter(ModuleOp module,
                       function_ref<void(unsigned, func::FuncOp)> mark,
                       const CostModel &costs, const OffloadOptions &offload) {
  OwningOpRef<ModuleOp> copy(module.clone());
  int64_t transfer = 0;
  for (auto [i, f] : llvm::enumerate(differentiated(*copy))) {
    mark(i, f);
    applyRemat(f);
    transfer = applyOffload(f, costs, offload, transfer);
  }
  // A host program's buffers (tsr-offload-optimizer's update) are in host
  // memory, outside the budget.
  int64_t bytes = 0;
  for (auto f : copy->getOps<func::FuncOp>())
    if (f.isPublic() && !f.isExternal() && !f->hasAttr(tsr::attr::kOnHost))
      bytes = std::max(bytes, footprint(f));
  return bytes;
}

/// Graphs up to this many nodes go to the MILP under solver=auto; its
/// branch and bound explores at most kMilpSearchNodes nodes.
constexpr int kMilpNodes = 120;
constexpr int kMilpSearchNodes = 5000;
/// The beam search's width and the candidates it tries per step: 32 and 16
/// on small graphs, narrower as they grow, so that a GPT-2-sized training
/// step (12 layers, 4400 nodes) is solved in a tenth of a second.
int beamWidth(const remat::Graph &graph) {
  return std::clamp(8192 / std::max<int>(graph.nodes.size(), 1), 1, 32);
}
int beamTried(const remat::Graph &graph) {
  return graph.nodes.size() <= 1024 ? 16 : 2;
}

/// What the solver decided for every differentiated function under one
/// budget of its graph model.
struct Decision {
  SmallVector<remat::Stages> stages;
  /// The recomputations' time by the cost model.
  double addedSeconds = 0;
};

/// Solves every graph under the same model budget: with the MILP where
/// `solver` says so (auto: where the graph is small enough), else with
/// the beam search. Nothing when a graph cannot meet it.
std::optional<Decision> solve(ArrayRef<remat::Graph> graphs,
                              ArrayRef<std::vector<std::vector<bool>>> seeds,
                              int64_t budget, StringRef solver) {
  Decision decision;
  for (auto [graph, graphSeeds] : llvm::zip(graphs, seeds)) {
    std::optional<remat::Solution> solution;
    if (solver == "milp" ||
        (solver == "auto" && int(graph.nodes.size()) <= kMilpNodes)) {
      remat::MilpResult milp =
          remat::solveMilp(graph, budget, kMilpSearchNodes);
      if (milp.status == remat::MilpResult::Status::Infeasible)
        return std::nullopt;
      solution = milp.solution;
    }
    if (!solution)
      solution = remat::solveBeam(graph, budget, beamWidth(graph),
                                  beamTried(graph), graphSeeds);
    if (!solution)
      return std::nullopt;
    decision.stages.push_back(solution->stages);
    decision.addedSeconds += solution->result.addedCost;
  }
  return decision;
}

struct TsrRematPlanPass : tessera::impl::TsrRematPlanBase<TsrRematPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (policy != "none" && policy != "selective" && policy != "full" &&
        policy != "auto") {
      module.emitError("unknown rematerialization policy '")
          << policy.getValue() << "' (expected none, selective, full or auto)";
      return signalPassFailure();
    }
    if (solver != "auto" && solver != "milp" && solver != "beam") {
      module.emitError("unknown rematerialization solver '")
          << solver.getValue() << "' (expected auto, milp or beam)";
      return signalPassFailure();
    }
    if ((policy == "auto") != (budget > 0)) {
      module.emitError("policy auto needs a memory budget, and a budget "
                       "needs policy auto");
      return signalPassFailure();
    }
    Builder b(module.getContext());
    if (policy == "auto") {
      if (failed(planUnderBudget(module)))
        return signalPassFailure();
    } else {
      for (auto f : module.getOps<func::FuncOp>())
        if (!f.isExternal())
          planRemat(f, policy);
    }
    for (auto f : module.getOps<func::FuncOp>())
      if (f.isPublic() && !f.isExternal() && !f->hasAttr(tsr::attr::kOnHost))
        f->setAttr(tsr::attr::kRemat, b.getStringAttr(policy));
  }

  /// Searches the model budget for the largest whose schedule fits
  /// `budget` by the peak prediction (the model counts every result as a
  /// buffer of its own; the prediction knows fusion and scratch), and marks
  /// that schedule. Fails naming the smallest footprint it met.
  LogicalResult planUnderBudget(ModuleOp module) {
    CostModel costs({peakFlops, bandwidth}, {});
    SmallVector<func::FuncOp> functions = differentiated(module);
    SmallVector<remat::Graph> graphs =
        llvm::map_to_vector(functions, [&](func::FuncOp f) {
          return buildRematGraph(f, costs, bandwidth);
        });
    SmallVector<std::vector<std::vector<bool>>> seeds;
    for (auto [f, graph] : llvm::zip(functions, graphs))
      seeds.push_back(getPolicySeeds(f, graph));
    OffloadOptions offloadOptions{hostBandwidth, bandwidth};
    // Offloaded values: (function, position in its body), largest first.
    SmallVector<std::pair<unsigned, unsigned>> offloadable;
    if (offload) {
      SmallVector<std::tuple<int64_t, unsigned, unsigned>> sized;
      for (auto [i, f] : llvm::enumerate(functions)) {
        DenseMap<Operation *, unsigned> position;
        for (auto [k, op] : llvm::enumerate(f.getBody().front()))
          position[&op] = k;
        for (Operation *op : getOffloadCandidates(f))
          sized.emplace_back(
              tsr::getStaticTensorBytes(op->getResult(0).getType()), i,
              position[op]);
      }
      llvm::stable_sort(sized, [](const auto &a, const auto &b) {
        return std::get<0>(a) > std::get<0>(b);
      });
      for (auto [bytes, i, k] : sized)
        offloadable.emplace_back(i, k);
    }
    // Marks the first `offloaded` of `offloadable` that `d` keeps.
    auto measure = [&](const Decision &d, size_t offloaded = 0) {
      return footprintAfter(
          module,
          [&](unsigned i, func::FuncOp f) {
            markRemat(f, d.stages[i]);
            markOffload(f, i, offloadable, offloaded);
          },
          costs, offloadOptions);
    };
    Decision keepAll;
    int64_t high = 0;
    for (const remat::Graph &graph : graphs) {
      keepAll.stages.push_back(remat::Stages(graph.nodes.size(), -1));
      high = std::max(high,
                      remat::simulate(graph, keepAll.stages.back()).peakBytes);
    }
    int64_t smallest = measure(keepAll);
    if (smallest <= budget) {
      for (auto [f, stages] : llvm::zip(functions, keepAll.stages))
        markRemat(f, stages);
      return success();
    }
    // The footprint is the model's peak plus what the model does not count
    // (arguments, results) less what it counts and the lowering does not
    // allocate (fused producers, scratch): the first try starts from the
    // offset measured without recomputation and the second corrects by what
    // it missed; then bisection between the largest model budget that fit
    // (or that the solver could not meet) and the smallest that failed, as
    // the footprint moves in steps and not always with the model.
    std::optional<Decision> chosen;
    int64_t fitting = 0, failing = high + 1;
    int64_t model = budget - (smallest - high);
    for (int step = 0; step < 12; ++step) {
      if (step >= 2 || model <= fitting || model >= failing)
        model = fitting + (failing - fitting) / 2;
      if (failing - fitting <= std::max<int64_t>(high / 1000, 1))
        break;
      std::optional<Decision> d = solve(graphs, seeds, model, solver);
      if (!d) {
        fitting = model;
        continue;
      }
      int64_t bytes = measure(*d);
      smallest = std::min(smallest, bytes);
      if (bytes <= budget) {
        if (!chosen || d->addedSeconds < chosen->addedSeconds)
          chosen = std::move(d);
        fitting = model;
        // Within half a percent of the budget: little left to gain.
        if (budget - bytes <= budget / 200)
          break;
        model += budget - bytes;
      } else {
        failing = model;
        model -= bytes - budget;
      }
    }
    if (!chosen) {
      // The smallest footprint: that of the smallest model budget the
      // solver meets.
      int64_t infeasible = 0, feasible = high;
      std::optional<Decision> tightest;
      while (feasible - infeasible > std::max<int64_t>(high / 1000, 1)) {
        int64_t mid = infeasible + (feasible - infeasible) / 2;
        if (std::optional<Decision> d = solve(graphs, seeds, mid, solver)) {
          feasible = mid;
          tightest = std::move(d);
        } else {
          infeasible = mid;
        }
      }
      if (tightest)
        smallest = std::min(smallest, measure(*tightest));
      // The fixed policies may do better than the solver's graph says.
      for (unsigned policy = 0; policy < 2; ++policy) {
        Decision d;
        for (auto [graph, graphSeeds] : llvm::zip(graphs, seeds))
          d.stages.push_back(remat::firstNeedStages(graph, graphSeeds[policy]));
        smallest = std::min(smallest, measure(d));
      }
      // Recomputation alone cannot meet the budget: offload the fewest
      // saved values (largest first) that make it fit, first instead of
      // recomputing, then on top of the schedule that recomputes most.
      if (!offloadable.empty()) {
        SmallVector<Decision *> bases = {&keepAll};
        if (tightest)
          bases.push_back(&*tightest);
        for (Decision *base : bases) {
          int64_t all = measure(*base, offloadable.size());
          smallest = std::min(smallest, all);
          if (all > budget)
            continue;
          size_t fits = offloadable.size(), fails = 0;
          while (fits - fails > 1) {
            size_t mid = fails + (fits - fails) / 2;
            if (measure(*base, mid) <= budget)
              fits = mid;
            else
              fails = mid;
          }
          for (auto [i, f] : llvm::enumerate(functions)) {
            markRemat(f, base->stages[i]);
            markOffload(f, i, offloadable, fits);
          }
          return success();
        }
      }
      return module.emitError("the step needs at least ")
             << smallest << " bytes per rank (recomputing "
             << (offloadable.empty() ? "" : "and offloading ")
             << "all it can), over the memory budget of " << budget.getValue()
             << " bytes";
    }
    for (auto [f, stages] : llvm::zip(functions, chosen->stages))
      markRemat(f, stages);
    return success();
  }

  /// Marks with tsr.remat = "offload" the ops of function `i`, `f`, among
  /// the first `count` of `offloadable` that are not recomputed.
  static void markOffload(func::FuncOp f, unsigned i,
                          ArrayRef<std::pair<unsigned, unsigned>> offloadable,
                          size_t count) {
    SmallVector<Operation *> ops = llvm::map_to_vector(
        f.getBody().front(), [](Operation &op) { return &op; });
    Builder b(f.getContext());
    for (auto [function, position] : offloadable.take_front(count))
      if (function == i && !ops[position]->hasAttr(tsr::attr::kRemat))
        ops[position]->setAttr(tsr::attr::kRemat, b.getStringAttr("offload"));
  }
};

} // namespace

remat::Graph mlir::tessera::buildRematGraph(func::FuncOp f,
                                            const CostModel &costs,
                                            double bandwidth) {
  remat::Graph graph;
  SmallVector<Operation *> ops = nodeOps(f);
  DenseMap<Value, int> nodeOf;
  auto lookup = [&](Value v) {
    // Through views to the node that holds the buffer.
    while (Operation *def = v.getDefiningOp()) {
      if (!isRematView(def))
        break;
      v = def->getOperand(0);
    }
    auto it = nodeOf.find(v);
    return it == nodeOf.end() ? -1 : it->second;
  };
  graph.numForward = ops.size();
  for (int i = 0, e = ops.size(); i < e; ++i) {
    Operation *op = ops[i];
    if (isBackward(op) && graph.numForward == e)
      graph.numForward = i;
    bool forward = graph.numForward == e;
    remat::Node node;
    for (Value result : op->getResults()) {
      node.bytes += tsr::getStaticTensorBytes(result.getType());
      nodeOf[result] = i;
    }
    // The roofline time, and never less than writing the result once.
    node.cost = std::max(costs.getComputeCost(op).seconds,
                         double(node.bytes) / bandwidth);
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (int producer = lookup(operand);
            producer >= 0 && producer < i &&
            !llvm::is_contained(node.operands, producer))
          node.operands.push_back(producer);
    });
    node.recomputable = forward && isRecomputable(op);
    graph.nodes.push_back(std::move(node));
  }
  Operation *terminator = f.getBody().front().getTerminator();
  for (Value v : terminator->getOperands())
    if (int producer = lookup(v); producer >= 0)
      graph.nodes[producer].liveOut = true;
  return graph;
}

remat::Stages mlir::tessera::getPolicyStages(func::FuncOp f,
                                             const remat::Graph &graph,
                                             StringRef policy) {
  planRemat(f, policy);
  std::vector<bool> recompute;
  for (Operation *op : nodeOps(f))
    recompute.push_back(op->hasAttr(tsr::attr::kRemat));
  f.walk([](Operation *op) {
    auto mark = op->getAttrOfType<StringAttr>(tsr::attr::kRemat);
    if (mark && mark.getValue() == "recompute")
      op->removeAttr(tsr::attr::kRemat);
  });
  return remat::firstNeedStages(graph, recompute);
}

std::vector<std::vector<bool>>
mlir::tessera::getPolicySeeds(func::FuncOp f, const remat::Graph &graph) {
  std::vector<std::vector<bool>> seeds;
  for (StringRef policy : {"selective", "full"}) {
    remat::Stages stages = getPolicyStages(f, graph, policy);
    seeds.emplace_back(stages.size());
    for (auto [i, stage] : llvm::enumerate(stages))
      seeds.back()[i] = stage >= 0;
  }
  return seeds;
}

bool mlir::tessera::isRematView(Operation *op) {
  return isa<tsr::ReshapeOp, tsr::StopGradientOp, tsr::RematBarrierOp>(op);
}

void mlir::tessera::markRemat(func::FuncOp f, const remat::Stages &stages) {
  Builder b(f.getContext());
  DenseSet<Operation *> marked;
  for (auto [op, stage] : llvm::zip(nodeOps(f), stages))
    if (stage >= 0) {
      op->setAttr(tsr::attr::kRemat, b.getStringAttr("recompute"));
      marked.insert(op);
    }
  // Views of recomputed values are recomputed with them (free), or the
  // backward pass would keep the buffer alive through them.
  for (Operation &op : f.getBody().front())
    if (isRematView(&op) && !isBackward(&op) && isRecomputable(&op))
      if (Operation *source = op.getOperand(0).getDefiningOp();
          source && marked.contains(source)) {
        op.setAttr(tsr::attr::kRemat, b.getStringAttr("recompute"));
        marked.insert(&op);
      }
}

/// Marks the roots and, recursively, the producers their recomputation
/// needs: every recomputable forward producer that is not itself a saved
/// value the policy keeps.
void mlir::tessera::planRemat(func::FuncOp f, StringRef policy) {
  if (policy == "none")
    return;
  SmallVector<Operation *> worklist = roots(f, policy);
  DenseSet<Operation *> recomputed(worklist.begin(), worklist.end());
  DenseSet<Operation *> saved;
  for (Operation &op : f.getBody().front())
    if (!isBackward(&op) && isSaved(&op))
      saved.insert(&op);
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (!producer || isBackward(producer) || !isRecomputable(producer) ||
          recomputed.contains(producer) || saved.contains(producer))
        continue;
      recomputed.insert(producer);
      worklist.push_back(producer);
    }
  }
  Builder b(f.getContext());
  for (Operation *op : recomputed)
    op->setAttr(tsr::attr::kRemat, b.getStringAttr("recompute"));
}
