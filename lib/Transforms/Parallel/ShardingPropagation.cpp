//===- ShardingPropagation.cpp - Decide the shardings of a forward graph --===//
//
// The decision half of tensor parallelism over one mesh axis (attributes
// only; tsr-sharding-partition applies them). The walk follows the program
// order of the loss function. At every op with a sharding rule it weighs
// the candidates (split none of the op's factors, or one factor whose size
// the axis divides, or run on partial operands where the op is linear in
// them) by the bytes the reshards of their operands would move (the
// coefficient of beta in the alpha-beta model of lib/Analysis/CostModel.h:
// every candidate communicates over the same axis, so bytes decide, then
// the number of messages), under two policies:
//
// - a weight (a parameter of rank 2 or more that a matmul, einsum,
//   convolution or gather reads) that is not decided yet is split along
//   one of its dimensions by the first op that uses it: tensor parallelism
//   exists to split the model;
// - an activation is split only along a factor that a weight operand of
//   the op has, or that an operand arrives split along: activations follow
//   the weights (biases and norm scales follow the activations). With
//   sequence-parallel, also along the sequence: the dimension of the data
//   and label inputs that `sequence-dim` names, followed through the rules
//   (Korthikanti et al., "Reducing Activation Recomputation in Large
//   Transformer Models", 2022).
//
// A lookup table (a gather's data) splits by its rows, the vocabulary: each
// rank looks up what it holds (Megatron's vocabulary-parallel embedding).
// Ties go to a result that is not a pending sum, then to splitting over
// not splitting (less work per rank), then to the lower factor. A matmul
// whose input is whole thus splits its weight's columns (no communication,
// the result split along them); one whose input arrives split along its
// contracted dimension splits its weight's rows (no communication, the
// result a pending sum, resolved by the first op that cannot take one):
// Megatron's layout, found from the costs rather than named.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Parallel/Passes.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "tessera/Transforms/Parallel/ShardingRules.h"
#include "llvm/Support/GlobPattern.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRSHARDINGPROPAGATION
#include "tessera/Transforms/Parallel/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;
using tsr::ShardingRule;

namespace {

/// A value's layout over the planning axis: the dimension split over it
/// (-1: none) or a pending sum over it.
struct Layout {
  int dim = -1;
  bool partial = false;
  bool operator==(const Layout &o) const {
    return dim == o.dim && partial == o.partial;
  }
};

/// What a candidate costs: bytes the reshards move per rank and messages.
struct Cost {
  double bytes = 0;
  int messages = 0;
  Cost &operator+=(const Cost &o) {
    bytes += o.bytes;
    messages += o.messages;
    return *this;
  }
};

struct Candidate {
  /// The split factor, or none (and `keepPartial`: run on partial operands).
  std::optional<unsigned> factor;
  bool keepPartial = false;
  SmallVector<Layout> operands, results;
  Cost cost;
};

struct TsrShardingPropagationPass
    : tessera::impl::TsrShardingPropagationBase<TsrShardingPropagationPass> {
  using Base::Base;

  int64_t n = 1;
  DenseMap<Value, Layout> layouts;
  /// Parameters whose layout the first use decides.
  DenseSet<Value> undecided;
  DenseSet<Value> params;
  /// Parameters whose layout `shard` pins.
  DenseSet<Value> pinned;
  /// The dimensions of each value that follow the inputs' sequence
  /// dimension (with sequence-parallel; the batch with expert-parallel).
  DenseMap<Value, SmallVector<bool>> sequenceDims;
  /// The dimensions of each value that follow a MoE buffer's expert
  /// dimension (with expert-parallel).
  DenseMap<Value, SmallVector<bool>> expertDims;
  /// With expert-parallel: results of transposes and reshapes of undecided
  /// parameters, standing for them until their first use decides, and the
  /// op that makes each.
  DenseMap<Value, Operation *> aliases;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f) || failed(run(*f)))
      signalPassFailure();
  }

  static int64_t bytesOf(Value v) {
    return tsr::getStaticTensorBytes(v.getType());
  }

  /// The cost of bringing `v` from `from` to `to` (α-β coefficients of
  /// the ring algorithms, lib/Analysis/CostModel.h).
  Cost reshardCost(Value v, Layout from, Layout to) const {
    if (from == to || undecided.contains(v))
      return {};
    double b = double(bytesOf(v)), share = double(n - 1) / double(n);
    Cost c;
    if (from.partial) {
      if (to.dim >= 0) // reduce_scatter
        return {share * b, int(n - 1)};
      c = {2 * share * b, int(2 * (n - 1))}; // all_reduce
      from = Layout();
    }
    if (expertParallel && from.dim >= 0 && to.dim >= 0 && from.dim != to.dim &&
        c.bytes == 0)
      return {share * b / double(n), int(n - 1)}; // all_to_all
    if (from.dim >= 0 && from.dim != to.dim)      // all_gather
      c += {share * b, int(n - 1)};
    // Splitting a whole value is a local slice.
    return c;
  }

  /// Whether factor `f` of `rule` may be split over an axis of size n.
  bool splittable(const ShardingRule &rule, unsigned f) const {
    const ShardingRule::Factor &factor = rule.factors[f];
    if (factor.kind == ShardingRule::Kind::Replicated || factor.size % n != 0)
      return false;
    auto majorWherever = [&](ArrayRef<SmallVector<SmallVector<unsigned>>> vs) {
      for (const auto &dims : vs)
        for (const auto &dim : dims)
          if (llvm::is_contained(dim, f) && dim.front() != f)
            return false;
      return true;
    };
    return majorWherever(rule.operands) && majorWherever(rule.results);
  }

  static int dimOf(ArrayRef<SmallVector<unsigned>> dims, unsigned f) {
    for (auto [d, factors] : llvm::enumerate(dims))
      if (!factors.empty() && factors.front() == f)
        return d;
    return -1;
  }

  /// Whether `v` is a weight: a parameter of rank 2 or more that a
  /// contraction or a lookup reads (biases, norm scales and masks follow
  /// the activations instead).
  bool isWeight(Value v) const {
    return params.contains(v) &&
           cast<RankedTensorType>(v.getType()).getRank() >= 2 &&
           llvm::any_of(v.getUsers(), [](Operation *user) {
             return isa<tsr::MatMulOp, tsr::EinsumOp, tsr::ConvOp,
                        tsr::GatherOp>(user);
           });
  }

  static bool marked(const DenseMap<Value, SmallVector<bool>> &marks, Value v,
                     int d) {
    auto it = marks.find(v);
    return it != marks.end() && it->second[d];
  }
  bool isSequenceDim(Value v, int d) const {
    return marked(sequenceDims, v, d);
  }

  /// Marks the result dimensions of `op` whose major factor is a marked
  /// dimension of an operand.
  static void follow(Operation *op, const ShardingRule &rule,
                     DenseMap<Value, SmallVector<bool>> &marks) {
    llvm::SmallDenseSet<unsigned> factors;
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      for (auto [d, dims] : llvm::enumerate(rule.operands[i]))
        if (!dims.empty() && marked(marks, v, d))
          factors.insert(dims.front());
    if (factors.empty())
      return;
    for (auto [r, result] : llvm::enumerate(op->getResults())) {
      SmallVector<bool> resultMarks;
      for (const auto &dims : rule.results[r])
        resultMarks.push_back(!dims.empty() && factors.contains(dims.front()));
      marks[result] = resultMarks;
    }
  }

  /// Whether factor `f` of `op` is an expert dimension of an operand.
  bool isExpertFactor(Operation *op, const ShardingRule &rule,
                      unsigned f) const {
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      int d = dimOf(rule.operands[i], f);
      if (d >= 0 && marked(expertDims, v, d))
        return true;
    }
    return false;
  }

  /// Whether the operand is a weight still to be split.
  bool isUndecidedWeight(Value v) const {
    return isWeight(v) && undecided.contains(v);
  }

  /// Whether a user of `v` needs dimension `d` whole whatever it decides:
  /// its rule cannot split the factor there. A split that such a user
  /// gathers again saves nothing, so the split costs that gather (a
  /// reshape of a whole input straight into the loss stays whole rather
  /// than being sliced and gathered back).
  bool gatheredByAUser(Value v, int d) const {
    for (OpOperand &use : v.getUses()) {
      std::optional<ShardingRule> rule = getShardingRule(use.getOwner());
      if (!rule)
        continue;
      ArrayRef<unsigned> factors = rule->operands[use.getOperandNumber()][d];
      if (!factors.empty() && !splittable(*rule, factors.front()))
        return true;
    }
    return false;
  }

  SmallVector<Candidate> candidates(Operation *op, const ShardingRule &rule) {
    SmallVector<Layout> current;
    for (Value v : op->getOperands())
      current.push_back(layouts.lookup(v));
    auto build = [&](std::optional<unsigned> f, bool keepPartial) {
      Candidate c;
      c.factor = f;
      c.keepPartial = keepPartial;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        Layout need;
        if (f)
          need.dim = dimOf(rule.operands[i], *f);
        if (keepPartial && current[i].partial)
          need.partial = true;
        c.operands.push_back(need);
        c.cost += reshardCost(v, current[i], need);
      }
      for (unsigned r = 0; r < op->getNumResults(); ++r) {
        Layout out;
        if (f && rule.factors[*f].kind == ShardingRule::Kind::Reduction)
          out.partial = true;
        else if (f)
          out.dim = dimOf(rule.results[r], *f);
        if (keepPartial)
          out.partial = true;
        if (out.dim >= 0 && !out.partial &&
            gatheredByAUser(op->getResult(r), out.dim))
          c.cost += reshardCost(op->getResult(r), out, Layout());
        c.results.push_back(out);
      }
      return c;
    };
    SmallVector<Candidate> all{build(std::nullopt, false)};
    SmallVector<bool> partial;
    for (const Layout &l : current)
      partial.push_back(l.partial);
    if (llvm::is_contained(partial, true) && acceptsPartial(op, partial))
      all.push_back(build(std::nullopt, true));
    for (unsigned f = 0; f < rule.factors.size(); ++f) {
      if (!splittable(rule, f))
        continue;
      // Activations follow the weights: a factor some weight operand has,
      // or one an operand arrives split along.
      bool allowed = false;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        int d = dimOf(rule.operands[i], f);
        if (d < 0)
          continue;
        bool weightFactor =
            isWeight(v) && (!expertParallel || isExpertFactor(op, rule, f));
        if (weightFactor || current[i].dim == d ||
            ((sequenceParallel || expertParallel) && isSequenceDim(v, d)))
          allowed = true;
      }
      if (allowed)
        all.push_back(build(f, false));
    }
    // An undecided weight is split by its first use, if any candidate can.
    // With expert-parallel, only along an expert dimension: dense weights
    // stay whole.
    auto splitsWeights = [&](const Candidate &c) {
      if (expertParallel && (!c.factor || !isExpertFactor(op, rule, *c.factor)))
        return false;
      for (auto [i, v] : llvm::enumerate(op->getOperands()))
        if (isUndecidedWeight(v) && c.operands[i].dim < 0)
          return false;
      return true;
    };
    // A lookup table splits by its rows (an embedding's vocabulary), the
    // split that a vocabulary-parallel output layer and loss share. Decided
    // before the weights are marked split below.
    auto gather = dyn_cast<tsr::GatherOp>(op);
    if (gather && !expertParallel) {
      auto byRows = [&](const Candidate &c) {
        return c.operands[0].dim == int(gather.getAxis());
      };
      if (isUndecidedWeight(gather.getData()) && llvm::any_of(all, byRows))
        llvm::erase_if(all, [&](const Candidate &c) { return !byRows(c); });
    }
    if (llvm::any_of(all, splitsWeights))
      llvm::erase_if(all,
                     [&](const Candidate &c) { return !splitsWeights(c); });
    return all;
  }

  static bool better(const Candidate &a, const Candidate &b) {
    if (a.cost.bytes != b.cost.bytes)
      return a.cost.bytes < b.cost.bytes;
    if (a.cost.messages != b.cost.messages)
      return a.cost.messages < b.cost.messages;
    bool ap = llvm::any_of(a.results, [](Layout l) { return l.partial; });
    bool bp = llvm::any_of(b.results, [](Layout l) { return l.partial; });
    if (ap != bp)
      return !ap;
    if (a.factor.has_value() != b.factor.has_value())
      return a.factor.has_value();
    return a.factor.value_or(0) < b.factor.value_or(0);
  }

  tsr::ShardingAttr toAttr(Value v, Layout l) const {
    MLIRContext *ctx = v.getContext();
    Builder b(ctx);
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    SmallVector<Attribute> dims(rank, b.getArrayAttr({}));
    if (l.dim >= 0)
      dims[l.dim] = b.getStrArrayAttr({axis});
    return tsr::ShardingAttr::get(ctx, b.getArrayAttr(dims),
                                  l.partial ? b.getStrArrayAttr({axis})
                                            : ArrayAttr());
  }

  /// `mine` added to `earlier`, the layout a decision over another axis
  /// wrote before this one (null: none): each dimension split over the
  /// earlier axes and then this one (the earlier major), pending sums over
  /// both.
  static tsr::ShardingAttr merge(tsr::ShardingAttr earlier,
                                 tsr::ShardingAttr mine) {
    if (!earlier)
      return mine;
    MLIRContext *ctx = mine.getContext();
    SmallVector<Attribute> dims;
    for (unsigned d = 0; d < mine.getDims().size(); ++d) {
      SmallVector<Attribute> axes(earlier.getDimAxes(d).getValue());
      llvm::append_range(axes, mine.getDimAxes(d).getValue());
      dims.push_back(ArrayAttr::get(ctx, axes));
    }
    SmallVector<Attribute> partial;
    for (tsr::ShardingAttr s : {earlier, mine})
      if (s.getPartial())
        llvm::append_range(partial, s.getPartial().getValue());
    return tsr::ShardingAttr::get(
        ctx, ArrayAttr::get(ctx, dims),
        partial.empty() ? ArrayAttr() : ArrayAttr::get(ctx, partial));
  }

  /// Sets the op's `name` (one layout per operand or result), merged with
  /// what an earlier decision over another axis wrote there.
  static void setLayouts(Operation *op, StringRef name,
                         ArrayRef<Attribute> mine) {
    SmallVector<Attribute> merged(mine);
    if (auto earlier = op->getAttrOfType<ArrayAttr>(name))
      for (size_t i = 0; i < merged.size(); ++i)
        merged[i] = merge(cast<tsr::ShardingAttr>(earlier[i]),
                          cast<tsr::ShardingAttr>(merged[i]));
    op->setAttr(name, ArrayAttr::get(op->getContext(), merged));
  }

  LogicalResult run(func::FuncOp f) {
    ModuleOp module = getOperation();
    auto mesh = module->getAttrOfType<tsr::MeshAttr>(tsr::attr::kMesh);
    if (!mesh)
      return f.emitError("tsr-sharding-propagation needs the module's "
                         "tsr.mesh (e.g. #tsr.mesh<[\"tp\"=2]>)");
    std::optional<int64_t> size = mesh.getAxisSize(axis);
    if (!size)
      return f.emitError("the tensor-parallel axis '")
             << axis << "' is not an axis of the module's mesh " << mesh;
    n = *size;
    if (n == 1)
      return success();

    for (BlockArgument arg : f.getArguments()) {
      if (!isa<RankedTensorType>(arg.getType()))
        continue;
      tsr::Role role = getArgRole(f, arg.getArgNumber());
      if (role == tsr::Role::param) {
        params.insert(arg);
        undecided.insert(arg);
      }
      int64_t rank = cast<RankedTensorType>(arg.getType()).getRank();
      if (expertParallel &&
          (role == tsr::Role::data || role == tsr::Role::label) &&
          cast<RankedTensorType>(arg.getType()).getRank() >= 1 &&
          cast<RankedTensorType>(arg.getType()).getDimSize(0) % n != 0)
        return f.emitError("expert parallelism splits the batch over '")
               << axis << "', but the batch of "
               << cast<RankedTensorType>(arg.getType()).getDimSize(0)
               << " rows does not split into " << n << " equal blocks";
      int64_t seed = expertParallel ? 0 : sequenceDim;
      if ((role == tsr::Role::data || role == tsr::Role::label) && seed >= 0 &&
          seed < rank) {
        SmallVector<bool> marks(rank, false);
        marks[seed] = true;
        sequenceDims[arg] = marks;
      }
    }

    if (failed(pin(f)))
      return failure();
    if (expertParallel) {
      WalkResult experts = f.walk([&](tsr::MoeDispatchOp op) {
        int64_t count = op.getType().getDimSize(0);
        if (count % n == 0)
          return WalkResult::advance();
        op.emitError("expert parallelism over '")
            << axis << "' needs the experts in " << n
            << " equal blocks, but this layer has " << count;
        return WalkResult::interrupt();
      });
      if (experts.wasInterrupted())
        return failure();
    }

    WalkResult walk = f.getBody().front().walk([&](Operation *op) {
      if (isa<func::ReturnOp>(op))
        return WalkResult::advance();
      if (failed(decide(op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();

    // The params, split or whole, as their first use decided.
    for (Value p : params) {
      auto arg = dyn_cast<BlockArgument>(p);
      if (!arg)
        continue;
      Layout l = layouts.lookup(p);
      if (l.dim >= 0)
        f.setArgAttr(arg.getArgNumber(), tsr::attr::kSharding,
                     merge(f.getArgAttrOfType<tsr::ShardingAttr>(
                               arg.getArgNumber(), tsr::attr::kSharding),
                           toAttr(p, l)));
    }
    return success();
  }

  /// Applies the `shard` pins to the parameters they match.
  LogicalResult pin(func::FuncOp f) {
    for (const std::string &spec : shard) {
      auto [glob, layout] = StringRef(spec).split('=');
      llvm::Expected<llvm::GlobPattern> pattern =
          llvm::GlobPattern::create(glob);
      if (!pattern || layout.empty()) {
        if (!pattern)
          llvm::consumeError(pattern.takeError());
        return f.emitError("malformed shard pin '")
               << spec << "' (expected GLOB=SPEC, e.g. fc1.weight=-:" << axis
               << ")";
      }
      SmallVector<StringRef> dims;
      layout.split(dims, ':');
      bool matched = false;
      for (Value p : params) {
        auto arg = cast<BlockArgument>(p);
        StringRef name = getArgString(f, arg.getArgNumber(), tsr::attr::kName);
        if (!pattern->match(name))
          continue;
        matched = true;
        auto type = cast<RankedTensorType>(p.getType());
        if (int64_t(dims.size()) != type.getRank())
          return f.emitError("shard pin '")
                 << spec << "' gives " << dims.size() << " dimensions to '"
                 << name << "' of rank " << type.getRank();
        Layout l;
        for (auto [d, entry] : llvm::enumerate(dims)) {
          if (entry == "-")
            continue;
          if (entry != StringRef(axis) || l.dim >= 0)
            return f.emitError("shard pin '")
                   << spec << "': each entry is '-' or the tensor-parallel "
                   << "axis '" << axis << "', once";
          if (type.getDimSize(d) % n != 0)
            return f.emitError("shard pin '")
                   << spec << "': dimension " << d << " of '" << name
                   << "' (size " << type.getDimSize(d)
                   << ") does not split into " << n << " equal blocks";
          l.dim = d;
        }
        layouts[p] = l;
        undecided.erase(p);
        pinned.insert(p);
      }
      if (!matched)
        return f.emitError("shard pin '") << spec << "' matches no parameter";
    }
    return success();
  }

  /// Whether `v` arrives at a contraction over experts: its one user is a
  /// matmul whose other operand has an expert dimension (a MoE layer's
  /// buffer).
  bool feedsExperts(Value v) const {
    if (!v.hasOneUse())
      return false;
    auto matmul = dyn_cast<tsr::MatMulOp>(*v.getUsers().begin());
    if (!matmul)
      return false;
    Value other = matmul.getLhs() == v ? matmul.getRhs() : matmul.getLhs();
    auto it = expertDims.find(other);
    return it != expertDims.end() && llvm::is_contained(it->second, true);
  }

  /// A transpose or reshape that is the only use of an undecided parameter
  /// stands for it until its own first use: with expert-parallel always
  /// (so the experts' biases split with their weights), otherwise when it
  /// feeds the experts' contraction (tensor parallelism inside the
  /// experts, whose weights a MoE layer transposes).
  bool deferParameter(Operation *op) {
    if (!isa<tsr::TransposeOp, tsr::ReshapeOp>(op))
      return false;
    Value p = op->getOperand(0);
    if (!undecided.contains(p) || pinned.contains(p) || !p.hasOneUse())
      return false;
    if (!expertParallel && !feedsExperts(op->getResult(0)))
      return false;
    Value alias = op->getResult(0);
    params.insert(alias);
    undecided.insert(alias);
    aliases[alias] = op;
    return true;
  }

  /// The first use of an alias decided `l`: its op runs on the block of
  /// the parameter it stands for (whole when the layout op cannot carry
  /// the split back).
  void resolveAlias(Value alias, Layout l) {
    Operation *op = aliases.lookup(alias);
    Value p = op->getOperand(0);
    std::optional<ShardingRule> rule = getShardingRule(op);
    Layout in, out;
    if (rule && l.dim >= 0 && !l.partial) {
      ArrayRef<unsigned> dims = rule->results[0][l.dim];
      int d = dims.empty() ? -1 : dimOf(rule->operands[0], dims.front());
      if (d >= 0 && rule->factors[dims.front()].size % n == 0) {
        in.dim = d;
        out = l;
      }
    }
    undecided.erase(alias);
    layouts[alias] = out;
    if (undecided.erase(p)) {
      layouts[p] = in;
      if (aliases.count(p))
        resolveAlias(p, in);
    }
    if (in == Layout())
      return;
    setLayouts(op, tsr::attr::kOperandShardings, {toAttr(p, in)});
    setLayouts(op, tsr::attr::kSharding, {toAttr(alias, out)});
  }

  LogicalResult decide(Operation *op) {
    if (deferParameter(op))
      return success();
    std::optional<ShardingRule> rule;
    if (!isa<tsr::AllReduceOp, tsr::ReduceScatterOp, tsr::AllGatherOp,
             tsr::AllToAllOp, tsr::BroadcastFromOp, tsr::WaitOp,
             tsr::LocalShardOp>(op))
      rule = getShardingRule(op);
    Candidate chosen;
    if (rule) {
      follow(op, *rule, sequenceDims);
      if (isa<tsr::MoeDispatchOp>(op)) {
        SmallVector<bool> marks(4, false);
        marks[0] = true;
        expertDims[op->getResult(0)] = marks;
      } else {
        follow(op, *rule, expertDims);
      }
      SmallVector<Candidate> all = candidates(op, *rule);
      chosen = all.front();
      for (const Candidate &c : llvm::drop_begin(all))
        if (better(c, chosen))
          chosen = c;
    } else {
      // No rule: the op runs on whole values.
      bool gathers = false;
      for (Value v : op->getOperands()) {
        chosen.operands.push_back(Layout());
        Layout l = layouts.lookup(v);
        gathers |= (l.dim >= 0 || l.partial) && !undecided.contains(v);
      }
      chosen.results.assign(op->getNumResults(), Layout());
      if (gathers)
        op->emitWarning("has no sharding rule: it runs replicated, on "
                        "operands gathered over '")
            << axis << "'";
    }
    for (auto [v, need] : llvm::zip(op->getOperands(), chosen.operands)) {
      if (aliases.count(v) && undecided.contains(v))
        resolveAlias(v, need);
      if (undecided.erase(v))
        layouts[v] = need;
      if (pinned.contains(v) && !(layouts.lookup(v) == need)) {
        auto arg = cast<BlockArgument>(v);
        auto f = cast<func::FuncOp>(arg.getOwner()->getParentOp());
        op->emitWarning("uses '")
            << getArgString(f, arg.getArgNumber(), tsr::attr::kName) << "' as "
            << toAttr(v, need) << " but it is pinned to "
            << toAttr(v, layouts.lookup(v)) << ": it is resharded here";
      }
    }
    for (auto [r, l] : llvm::zip(op->getResults(), chosen.results))
      layouts[r] = l;

    bool interesting = false;
    for (auto [v, need] : llvm::zip(op->getOperands(), chosen.operands))
      interesting |= !(need == Layout()) || !(layouts.lookup(v) == Layout());
    for (const Layout &l : chosen.results)
      interesting |= !(l == Layout());
    if (!interesting)
      return success();
    SmallVector<Attribute> operands, results;
    for (auto [v, need] : llvm::zip(op->getOperands(), chosen.operands))
      operands.push_back(toAttr(v, need));
    for (auto [r, l] : llvm::zip(op->getResults(), chosen.results))
      results.push_back(toAttr(r, l));
    setLayouts(op, tsr::attr::kOperandShardings, operands);
    setLayouts(op, tsr::attr::kSharding, results);
    return success();
  }
};

} // namespace
