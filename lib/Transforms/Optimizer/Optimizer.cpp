//===- Optimizer.cpp - The optimizer update of a training step ------------===//
//
// Every formula is computed in the parameter's element type from scalars
// (learning rate, bias corrections) computed in f64. The step counter is an
// i64 state tensor, so schedules and bias corrections need no host logic.
// Moments may be stored in bf16 or as 8-bit block-wise quantized codes; they
// are widened to the parameter's type for the update either way.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Optimizer/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/GradientRules.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "tessera/Transforms/Parallel/Sharding.h"
#include "tessera/Transforms/Precision/LossScale.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

namespace mlir::tessera {
#define GEN_PASS_DEF_TSROPTIMIZER
#include "tessera/Transforms/Optimizer/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

StringRef argName(func::FuncOp f, unsigned i) {
  return getArgString(f, i, tsr::attr::kName);
}

/// The repeated layer (tsr.layer, tsr-layer-plan) of the forward ops that
/// read parameter `p`, directly or through casts, views and gathers; none
/// when they are of several layers or of none.
std::optional<int64_t> layerOf(Value p) {
  std::optional<int64_t> layer;
  SmallVector<Value> work{p};
  for (int depth = 0; depth < 4 && !work.empty(); ++depth) {
    SmallVector<Value> next;
    for (Value v : work)
      for (Operation *user : v.getUsers()) {
        if (user->hasAttr(tsr::attr::kBackward))
          continue;
        if (auto k = user->getAttrOfType<IntegerAttr>(tsr::attr::kLayer)) {
          if (layer && *layer != k.getInt())
            return std::nullopt;
          layer = k.getInt();
        } else if (isa<tsr::CastOp, tsr::ReshapeOp, tsr::AllGatherOp,
                       tsr::WaitOp>(user)) {
          llvm::append_range(next, user->getResults());
        }
      }
    work = std::move(next);
  }
  return layer;
}

/// While in scope, marks the ops `b` builds for parameter `p` with its
/// layer, so that tsr-outline-layers outlines them with the layer's other
/// work after the backward pass.
class LayerListener : public OpBuilder::Listener {
public:
  LayerListener(OpBuilder &b, Value p) : b(b) {
    if (std::optional<int64_t> k = layerOf(p))
      layer = b.getI64IntegerAttr(*k);
    b.setListener(this);
  }
  ~LayerListener() override { b.setListener(nullptr); }
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (layer)
      op->setAttr(tsr::attr::kLayer, layer);
  }

private:
  OpBuilder &b;
  IntegerAttr layer;
};

/// Elements per quantization block of an int8 moment: bitsandbytes' block
/// of 256 (Dettmers et al. 2022 used 2048).
constexpr int64_t kQuantBlock = 256;

/// The names of the parameters that a tsr.gather reads as its table (the
/// embeddings), through casts, reshapes, slices and all-gathers, and from a
/// callee's argument (a micro-step's) to its callers' operands.
llvm::StringSet<> embeddingTables(ModuleOp module) {
  llvm::StringSet<> names;
  SmallVector<Value> work;
  module.walk([&](tsr::GatherOp op) { work.push_back(op.getData()); });
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (Operation *def = v.getDefiningOp()) {
      if (isa<tsr::CastOp, tsr::ReshapeOp, tsr::SliceOp, tsr::AllGatherOp>(def))
        work.push_back(def->getOperand(0));
      continue;
    }
    auto arg = cast<BlockArgument>(v);
    auto f = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!f)
      continue;
    if (auto name = f.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                   tsr::attr::kName))
      names.insert(name.getValue());
    module.walk([&](func::CallOp call) {
      if (call.getCallee() == f.getSymName())
        work.push_back(call.getOperand(arg.getArgNumber()));
    });
  }
  return names;
}

/// The dynamic tree map of 8-bit Adam, sorted: for exponents e = 0..6 the
/// midpoints of 2^e (signed; 2^(e+1) unsigned) equal steps of
/// [0.1, 1]·10^(e−6), with both signs when signed, plus 0 and 1.
std::array<float, 256> dynamicMap(bool isSigned) {
  std::vector<double> codes{0.0, 1.0};
  for (int e = 0; e < 7; ++e) {
    int items = isSigned ? 1 << e : 1 << (e + 1);
    double scale = std::pow(10.0, e - 6);
    for (int j = 0; j < items; ++j) {
      double mean = 0.1 + 0.9 * (j + 0.5) / items;
      codes.push_back(scale * mean);
      if (isSigned)
        codes.push_back(-scale * mean);
    }
  }
  llvm::sort(codes);
  std::array<float, 256> out;
  for (size_t i = 0; i < 256; ++i)
    out[i] = static_cast<float>(codes[i]);
  return out;
}

struct TsrOptimizerPass : tessera::impl::TsrOptimizerBase<TsrOptimizerPass> {
  using Base::Base;

  /// A state tensor: its argument (current value) and its new value.
  struct State {
    BlockArgument arg;
    Value next;
  };
  /// An element-wise moment of a parameter: its state (the value, or with
  /// int8 the codes) and with int8 the state of its per-block maxima.
  struct Moment {
    size_t index;
    std::optional<size_t> absmax;
    bool isSigned = true;
    /// The moment as the update computes with it (the parameter's type).
    RankedTensorType type;
  };

  func::FuncOp func;
  SmallVector<State> states;
  /// ZeRO >= 1: the update works on this rank's shards; state tensors are
  /// shards too.
  std::optional<ZeroUpdate> zero;
  /// The mesh axes each parameter (by name) is split over by tensor
  /// parallelism (its argument's tsr.sharding): its norms sum over them.
  llvm::StringMap<SmallVector<StringRef>> splitAxes;
  /// The code tables of int8 moments: [signed][midpoints].
  Value tables[2][2];
  /// Parameters read as embedding tables: their moments stay in f32 with
  /// state-type=int8, as 8-bit Adam's StableEmbedding keeps them.
  llvm::StringSet<> embeddings;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f))
      return signalPassFailure();
    func = *f;
    if (stateType == "int8")
      embeddings = embeddingTables(getOperation());
    if (failed(checkOptions()) || failed(run()))
      signalPassFailure();
  }

  LogicalResult checkOptions() {
    if (!llvm::is_contained(
            {"sgd", "adam", "adamw", "lamb", "lars", "adafactor"}, optimizer))
      return func.emitError("unknown optimizer '")
             << optimizer
             << "' (supported: sgd, adam, adamw, lamb, lars, adafactor)";
    if (!llvm::is_contained({"constant", "warmup", "cosine"}, schedule))
      return func.emitError("unknown learning-rate schedule '")
             << schedule << "' (supported: constant, warmup, cosine)";
    if (!(lr > 0) || !std::isfinite(lr))
      return func.emitError("learning rate must be positive, got ")
             << lr.getValue();
    if (momentum < 0 || weightDecay < 0 || clipNorm < 0 || warmupSteps < 0)
      return func.emitError("momentum, weight decay, clip norm and warm-up "
                            "steps must not be negative");
    // A parameter server's update (tsr-parameter-server) holds some of the
    // parameters, and the servers share no collective.
    if (func->hasAttr(tsr::attr::kServer) && clipNorm > 0)
      return func.emitError("gradient clipping needs the norm over every "
                            "parameter, which parameter servers hold in "
                            "parts: not supported with parameter servers");
    if (nesterov && (optimizer != "sgd" || momentum <= 0))
      return func.emitError("nesterov needs optimizer sgd with momentum > 0");
    if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1)
      return func.emitError("beta1 and beta2 must lie in [0, 1)");
    if (!llvm::is_contained({"fp32", "bf16", "int8"}, stateType))
      return func.emitError("unknown optimizer state type '")
             << stateType << "' (supported: fp32, bf16, int8)";
    if (stateType == "int8" && optimizer == "adafactor")
      return func.emitError("int8 optimizer states quantize element-wise "
                            "moments; adafactor's are factored (use fp32 or "
                            "bf16)");
    if (int8MinElements < 0)
      return func.emitError("int8-min-elements must not be negative");
    if (freezeVarianceAfter < 0)
      return func.emitError("freeze-variance-after must not be negative");
    if (freezeVarianceAfter > 0 && optimizer != "adam" && optimizer != "adamw")
      return func.emitError("freeze-variance-after freezes Adam's second "
                            "moment: it needs optimizer adam or adamw, not '")
             << optimizer << "'";
    if (schedule == "warmup" && warmupSteps == 0)
      return func.emitError("schedule warmup needs warmup-steps > 0");
    if (schedule == "cosine" && totalSteps <= warmupSteps)
      return func.emitError("schedule cosine needs total-steps (")
             << totalSteps.getValue() << ") greater than warmup-steps ("
             << warmupSteps.getValue() << ")";
    if ((batchSize > 0) != (baseBatchSize > 0))
      return func.emitError("the linear scaling rule needs both batch-size "
                            "and base-batch-size");
    return success();
  }

  /// Adds a zero-initialized state argument of `type`; with `shardOf`, a
  /// shard of a tensor of that global shape; with `sharding`, this rank's
  /// block of a state split like its parameter.
  BlockArgument addState(Type type, const Twine &name,
                         std::optional<ArrayRef<int64_t>> shardOf = {},
                         tsr::ShardingAttr sharding = {}) {
    OpBuilder b(func.getContext());
    unsigned index = func.getNumArguments();
    Attribute init = b.getF64FloatAttr(0.0);
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr(tsr::attr::kName, b.getStringAttr(name.str())),
        b.getNamedAttr(tsr::attr::kRole,
                       tsr::RoleAttr::get(b.getContext(), tsr::Role::state)),
        b.getNamedAttr(tsr::attr::kInit, init)};
    if (shardOf)
      llvm::append_range(attrs, zero->stateAttrs(b, *shardOf));
    if (sharding)
      attrs.push_back(b.getNamedAttr(tsr::attr::kSharding, sharding));
    (void)func.insertArgument(index, type, b.getDictionaryAttr(attrs),
                              func.getLoc());
    return func.getArgument(index);
  }

  /// Adds the state of element-wise moment `slot` of parameter `name`
  /// (whose view on this rank has `type`), stored as `state-type` says.
  Moment addMoment(StringRef slot, StringRef name, RankedTensorType type,
                   ArrayRef<int64_t> globalShape, tsr::ShardingAttr sharding,
                   bool isSigned) {
    MLIRContext *ctx = func.getContext();
    std::string stateName =
        (Twine(optimizer.getValue()) + "." + slot + "." + name).str();
    // The whole parameter's size, whatever the layout: `globalShape` is
    // this rank's tensor-parallel block.
    int64_t globalElements = 1;
    for (int64_t d : globalShape)
      globalElements *= d;
    if (SmallVector<StringRef> axes = splitAxes.lookup(name); !axes.empty()) {
      tsr::MeshAttr mesh = *tsr::getEnclosingMesh(func);
      for (StringRef axis : axes)
        globalElements *= *mesh.getAxisSize(axis);
    }
    // Why an int8 moment stays f32, if it does.
    StringRef keep;
    if (stateType == "int8" && embeddings.contains(name))
      keep = "f32: an embedding table (sparse rows; 8-bit Adam's "
             "StableEmbedding keeps 32-bit states)";
    else if (stateType == "int8" && globalElements < int8MinElements)
      keep = "f32: fewer elements than int8-min-elements";
    bool quantize = stateType == "int8" && keep.empty();
    Type storage = type.getElementType();
    if (stateType == "bf16")
      storage = BFloat16Type::get(ctx);
    if (quantize)
      storage = IntegerType::get(ctx, 8);
    Moment moment{states.size(), std::nullopt, isSigned, type};
    BlockArgument arg = addState(type.clone(storage), stateName,
                                 std::optional(globalShape), sharding);
    states.push_back({arg, Value()});
    if (!keep.empty())
      func.setArgAttr(arg.getArgNumber(), tsr::attr::kReason,
                      StringAttr::get(ctx, keep));
    if (!quantize)
      return moment;
    // One maximum per block of this rank's view; the state's global shape
    // is [tensor-parallel parts,] [ZeRO shards,] blocks. (A ZeRO shard's
    // tsr.global_shape is that of this rank's tensor-parallel block.)
    int64_t blocks = llvm::divideCeil(type.getNumElements(), kQuantBlock);
    SmallVector<StringRef> axes = splitAxes.lookup(name);
    SmallVector<int64_t> global;
    SmallVector<Attribute> dims;
    if (!axes.empty()) {
      global.push_back(1);
      SmallVector<StringRef> names(axes);
      dims.push_back(Builder(ctx).getStrArrayAttr(names));
    }
    if (zero->isSharded())
      global.push_back(zero->getLayout().size);
    global.push_back(blocks);
    while (dims.size() < global.size())
      dims.push_back(ArrayAttr::get(ctx, {}));
    auto f32 = Float32Type::get(ctx);
    RankedTensorType local = RankedTensorType::get({blocks}, f32);
    if (!axes.empty() && !zero->isSharded())
      local = RankedTensorType::get({1, blocks}, f32);
    std::optional<ArrayRef<int64_t>> shardOf;
    if (zero->isSharded())
      shardOf = ArrayRef<int64_t>(global);
    tsr::ShardingAttr absmaxSharding;
    if (!axes.empty())
      absmaxSharding =
          tsr::ShardingAttr::get(ctx, ArrayAttr::get(ctx, dims), ArrayAttr());
    moment.absmax = states.size();
    states.push_back(
        {addState(local, stateName + ".absmax", shardOf, absmaxSharding),
         Value()});
    return moment;
  }

  /// The 256 codes of a dynamic map as a constant; with `midpoints`, the
  /// table whose entry k > 0 is the midpoint of codes k − 1 and k.
  Value codeTable(GradientBuilder &g, bool isSigned, bool midpoints) {
    Value &cached = tables[isSigned][midpoints];
    if (cached)
      return cached;
    std::array<float, 256> codes = dynamicMap(isSigned);
    SmallVector<float> values(codes.begin(), codes.end());
    if (midpoints) {
      values.assign(1, -std::numeric_limits<float>::infinity());
      for (size_t i = 0; i + 1 < codes.size(); ++i)
        values.push_back(static_cast<float>(
            (double(codes[i]) + double(codes[i + 1])) / 2.0));
    }
    // At the top of the function, so every parameter's update can use it.
    OpBuilder::InsertionGuard guard(g.builder());
    g.builder().setInsertionPointToStart(&func.getBody().front());
    auto type = RankedTensorType::get({int64_t(values.size())},
                                      g.builder().getF32Type());
    cached = tsr::ConstantOp::create(
        g.builder(), g.getLoc(),
        DenseElementsAttr::get(type, ArrayRef<float>(values)));
    return cached;
  }

  /// The view of `v` (n elements) as [blocks, width] quantization blocks,
  /// padded with zeros, and its block count and width.
  std::tuple<Value, int64_t, int64_t> blocked(GradientBuilder &g, Value v) {
    int64_t n = cast<RankedTensorType>(v.getType()).getNumElements();
    int64_t blocks = llvm::divideCeil(n, kQuantBlock);
    int64_t width = blocks == 1 ? n : kQuantBlock;
    Value flat = g.reshape(v, {n});
    if (blocks * width != n) {
      OpBuilder &b = g.builder();
      flat = tsr::PadOp::create(
          b, g.getLoc(), flat, b.getDenseI64ArrayAttr({0, blocks * width - n}),
          tsr::PadModeAttr::get(b.getContext(), tsr::PadMode::constant),
          b.getF64FloatAttr(0));
    }
    return {g.reshape(flat, {blocks, width}), blocks, width};
  }
  /// The inverse of `blocked`: the first elements of `v`, shaped `type`.
  Value unblocked(GradientBuilder &g, Value v, RankedTensorType type) {
    auto vt = cast<RankedTensorType>(v.getType());
    int64_t n = type.getNumElements(), padded = vt.getNumElements();
    Value flat = g.reshape(v, {padded});
    if (padded != n)
      flat = g.slice(flat, {0}, {n}, {1});
    return g.reshape(flat, type.getShape());
  }

  /// The current value of a moment, in the parameter's type.
  Value load(GradientBuilder &g, const Moment &m) {
    Value stored = states[m.index].arg;
    if (!m.absmax)
      return g.castTo(stored, m.type.getElementType());
    OpBuilder &b = g.builder();
    auto [codes, blocks, width] = blocked(g, stored);
    Type i32 = b.getI32Type();
    Value index = g.add(g.castTo(codes, i32), g.scalar(i32, 128.0));
    Value unit =
        tsr::GatherOp::create(b, g.getLoc(), codeTable(g, m.isSigned, false),
                              index, b.getI64IntegerAttr(0));
    Value absmax = g.reshape(states[*m.absmax].arg, {blocks, 1});
    return g.castTo(unblocked(g, g.mul(unit, absmax), m.type),
                    m.type.getElementType());
  }

  /// Stores `next` (in the parameter's type) as the moment's new value.
  void store(GradientBuilder &g, const Moment &m, Value next) {
    State &st = states[m.index];
    Type storage = getElementTypeOrSelf(st.arg.getType());
    if (!m.absmax) {
      st.next = g.castTo(next, storage);
      return;
    }
    OpBuilder &b = g.builder();
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    auto [x, blocks, width] = blocked(g, g.castTo(next, f32));
    Value absmax = g.reduceMax(tsr::AbsOp::create(b, g.getLoc(), x), {1},
                               /*keepdims=*/false);
    Value zero = g.scalar(f32, 0.0);
    Value divisor =
        g.select(g.greater(absmax, zero), absmax, g.scalar(f32, 1.0));
    Value unit =
        g.mul(x, g.reshape(g.div(g.scalar(f32, 1.0), divisor), {blocks, 1}));
    // The nearest code's index is the number of code midpoints below the
    // value: a binary search over the 255 sorted midpoints. Each probe adds
    // its step times the comparison (0 or 1) rather than selecting, which
    // compiles to flag arithmetic, not to a branch per probe that random
    // data mispredicts half the time.
    Value mids = codeTable(g, m.isSigned, true);
    auto indexType = RankedTensorType::get({blocks, width}, i32);
    Value lo = g.splat(indexType, 0.0);
    for (int64_t step = 128; step >= 1; step /= 2) {
      Value stepSize = g.scalar(i32, double(step));
      Value mid = tsr::GatherOp::create(
          b, g.getLoc(), mids, g.add(lo, stepSize), b.getI64IntegerAttr(0));
      lo = g.add(lo, g.mul(g.castTo(g.less(mid, unit), i32), stepSize));
    }
    Value codes = g.castTo(g.sub(lo, g.scalar(i32, 128.0)), storage);
    st.next = unblocked(g, codes, cast<RankedTensorType>(st.arg.getType()));
    State &am = states[*m.absmax];
    am.next =
        g.reshape(absmax, cast<RankedTensorType>(am.arg.getType()).getShape());
  }

  /// The learning rate at 1-based step `t` (both f64 scalars).
  Value learningRate(GradientBuilder &g, Value t) {
    double base = lr;
    if (batchSize > 0)
      base *= double(batchSize) / double(baseBatchSize);
    Type f64 = g.builder().getF64Type();
    Value baseLr = g.scalar(f64, base);
    if (schedule == "constant")
      return baseLr;
    Value one = g.scalar(f64, 1.0);
    Value warm = g.mul(
        baseLr,
        g.div(t, g.scalar(f64, double(std::max<int64_t>(warmupSteps, 1)))));
    if (schedule == "warmup")
      return g.select(g.less(t, g.scalar(f64, double(warmupSteps))), warm,
                      baseLr);
    // cosine: progress p = clamp((t − w)/(T − w), 0, 1).
    Value w = g.scalar(f64, double(warmupSteps));
    Value p =
        g.div(g.sub(t, w), g.scalar(f64, double(totalSteps - warmupSteps)));
    p = tsr::MinOp::create(
        g.builder(), g.getLoc(),
        tsr::MaxOp::create(g.builder(), g.getLoc(), p, g.scalar(f64, 0.0)),
        one);
    Value cosine =
        g.mul(g.scalar(f64, 0.5),
              g.add(one, tsr::CosOp::create(g.builder(), g.getLoc(),
                                            g.mul(p, g.scalar(f64, M_PI)))));
    Value decayed =
        g.mul(baseLr, g.add(g.scalar(f64, minLrRatio),
                            g.mul(g.scalar(f64, 1.0 - minLrRatio), cosine)));
    if (warmupSteps == 0)
      return decayed;
    return g.select(g.less(t, w), warm, decayed);
  }

  Value sumAll(GradientBuilder &g, Value v) {
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    return g.reduceSum(v, llvm::to_vector(llvm::seq<int64_t>(0, rank)),
                       /*keepdims=*/false);
  }
  /// The sum of `v` over every rank's shard when the update is sharded.
  Value sumAllShards(GradientBuilder &g, Value v, ArrayRef<StringRef> serves) {
    return zero->sumOverShards(g, sumAll(g, v), serves);
  }
  /// `v` summed over the ranks that hold the other blocks of the tensors
  /// in `serves` (the tensor-parallel axes `axes` they are split over).
  Value sumOverBlocks(GradientBuilder &g, Value v, ArrayRef<StringRef> axes,
                      ArrayRef<StringRef> serves) {
    if (axes.empty())
      return v;
    OpBuilder &b = g.builder();
    Value sum = tsr::AllReduceOp::create(
        b, g.getLoc(), v, tsr::CollectiveReduction::sum,
        b.getStrArrayAttr(axes), b.getStrArrayAttr(serves));
    sum.getDefiningOp()->setAttr(
        tsr::attr::kReason,
        b.getStringAttr("a norm over the whole of " + llvm::join(serves, ", ") +
                        " (split over " + llvm::join(axes, ", ") + ")"));
    return sum;
  }
  /// The norm of the whole parameter `name` (or of a tensor shaped like
  /// it), from this rank's shard of this rank's block of it.
  Value norm(GradientBuilder &g, Value v, StringRef name) {
    return g.sqrt(sumOverBlocks(g, sumAllShards(g, g.mul(v, v), {name}),
                                splitAxes.lookup(name), {name}));
  }
  /// num/den where both are positive, else 1 (the trust-ratio convention).
  Value ratioOrOne(GradientBuilder &g, Value num, Value den, Value guard) {
    Value zero = g.scalarLike(num, 0.0), one = g.scalarLike(num, 1.0);
    Value inner = g.select(g.greater(den, zero), g.div(num, den), one);
    return g.select(g.greater(guard, zero), inner, one);
  }

  /// The update of parameter `name` of shape `globalShape` (its value, or
  /// this rank's shard of it, `p`), split over the mesh by `sharding` (its
  /// element-wise states are split alike); returns its new value.
  Value update(GradientBuilder &g, Value p, StringRef name,
               ArrayRef<int64_t> globalShape, tsr::ShardingAttr sharding,
               Value grad, Value lr64, Value t64) {
    Type elem = getElementTypeOrSelf(p.getType());
    auto type = cast<RankedTensorType>(p.getType());
    auto s = [&](double v) { return g.scalar(elem, v); };
    Value lrv = g.castTo(lr64, elem);
    Value t = g.castTo(t64, elem);
    auto moment = [&](StringRef slot, bool isSigned) {
      return addMoment(slot, name, type, globalShape, sharding, isSigned);
    };

    if (optimizer == "sgd") {
      Value d = grad;
      if (weightDecay > 0)
        d = g.add(d, g.mul(s(weightDecay), p));
      if (momentum > 0) {
        Moment buf = moment("momentum", /*isSigned=*/true);
        Value next = g.add(g.mul(s(momentum), load(g, buf)), d);
        store(g, buf, next);
        d = nesterov ? g.add(d, g.mul(s(momentum), next)) : next;
      }
      return g.sub(p, g.mul(lrv, d));
    }
    if (optimizer == "lars") {
      Value pn = norm(g, p, name), gn = norm(g, grad, name);
      Value local =
          g.mul(s(larsEta),
                ratioOrOne(g, pn, g.add(gn, g.mul(s(weightDecay), pn)), gn));
      Value d = g.add(grad, g.mul(s(weightDecay), p));
      Value step = g.mul(g.mul(lrv, local), d);
      if (momentum > 0) {
        Moment buf = moment("momentum", /*isSigned=*/true);
        step = g.add(g.mul(s(momentum), load(g, buf)), step);
        store(g, buf, step);
      }
      return g.sub(p, step);
    }
    if (optimizer == "adafactor")
      return adafactor(g, p, name, grad, lrv, t);

    // adam, adamw, lamb
    Value d = grad;
    if (optimizer == "adam" && weightDecay > 0)
      d = g.add(d, g.mul(s(weightDecay), p));
    Moment m = moment("m", /*isSigned=*/true);
    Moment v = moment("v", /*isSigned=*/false);
    Value mNext = g.add(g.mul(s(beta1), load(g, m)), g.mul(s(1.0 - beta1), d));
    Value vPrev = load(g, v);
    Value vNext =
        g.add(g.mul(s(beta2), vPrev), g.mul(s(1.0 - beta2), g.mul(d, d)));
    OpBuilder &b = g.builder();
    Value tv = t;
    if (freezeVarianceAfter > 0) {
      Value frozen = g.greater(t, s(double(freezeVarianceAfter)));
      vNext = g.select(frozen, vPrev, vNext);
      tv = tsr::MinOp::create(b, g.getLoc(), t, s(double(freezeVarianceAfter)));
    }
    store(g, m, mNext);
    store(g, v, vNext);
    Value c1 = g.sub(s(1.0), tsr::PowOp::create(b, g.getLoc(), s(beta1), t));
    Value c2 = g.sub(s(1.0), tsr::PowOp::create(b, g.getLoc(), s(beta2), tv));
    Value dir =
        g.div(g.div(mNext, c1), g.add(g.sqrt(g.div(vNext, c2)), s(eps)));
    if (optimizer == "adam")
      return g.sub(p, g.mul(lrv, dir));
    if (optimizer == "adamw")
      return g.sub(g.sub(p, g.mul(g.mul(lrv, s(weightDecay)), p)),
                   g.mul(lrv, dir));
    // lamb: r = dir + wd·p, scaled by the trust ratio ‖p‖/‖r‖.
    Value r = g.add(dir, g.mul(s(weightDecay), p));
    Value pn = norm(g, p, name);
    Value trust = ratioOrOne(g, pn, norm(g, r, name), pn);
    return g.sub(p, g.mul(g.mul(lrv, trust), r));
  }

  Value adafactor(GradientBuilder &g, Value p, StringRef name, Value grad,
                  Value lrv, Value t) {
    auto type = cast<RankedTensorType>(p.getType());
    Type elem = type.getElementType();
    auto s = [&](double v) { return g.scalar(elem, v); };
    OpBuilder &b = g.builder();
    // β₂(t) = 1 − t^decay-rate
    Value beta =
        g.sub(s(1.0), tsr::PowOp::create(b, g.getLoc(), t, s(decayRate)));
    Value g2 = g.add(g.mul(grad, grad), s(eps));
    auto ema = [&](Value old, Value fresh) {
      return g.add(g.mul(beta, old), g.mul(g.sub(s(1.0), beta), fresh));
    };
    // Factored states are not split: stored in bf16 with state-type=bf16.
    auto newState = [&](StringRef slot, RankedTensorType shape) {
      Moment moment{states.size(), std::nullopt, true, shape};
      Type storage = shape.getElementType();
      if (stateType == "bf16")
        storage = BFloat16Type::get(func.getContext());
      states.push_back(
          {addState(shape.clone(storage), "adafactor." + slot + "." + name),
           Value()});
      return moment;
    };
    Value vhat;
    int64_t rank = type.getRank();
    if (rank >= 2) {
      // Row means (over the last dim) and column means (over the one before).
      SmallVector<int64_t> rowShape(type.getShape().drop_back());
      SmallVector<int64_t> colShape(type.getShape());
      colShape.erase(colShape.end() - 2);
      int64_t n = type.getDimSize(rank - 1), m = type.getDimSize(rank - 2);
      Moment row = newState("row", type.clone(rowShape));
      Moment col = newState("col", type.clone(colShape));
      Value rowMean =
          g.div(g.reduceSum(g2, {rank - 1}, /*keepdims=*/false), s(double(n)));
      Value colMean =
          g.div(g.reduceSum(g2, {rank - 2}, /*keepdims=*/false), s(double(m)));
      Value r = ema(load(g, row), rowMean);
      Value c = ema(load(g, col), colMean);
      store(g, row, r);
      store(g, col, c);
      // V̂ = r cᵀ / mean(r)
      Value rMean =
          g.div(g.reduceSum(r, {rank - 2}, /*keepdims=*/true), s(double(m)));
      SmallVector<int64_t> rCol(rowShape), cRow(colShape), rMeanShape(rowShape);
      rCol.push_back(1);
      cRow.insert(cRow.end() - 1, 1);
      rMeanShape[rank - 2] = 1;
      rMeanShape.push_back(1);
      vhat = g.div(g.mul(g.reshape(r, rCol), g.reshape(c, cRow)),
                   g.reshape(rMean, rMeanShape));
    } else {
      Moment v = newState("v", type);
      vhat = ema(load(g, v), g2);
      store(g, v, vhat);
    }
    Value u = g.div(grad, g.sqrt(vhat));
    Value rms =
        g.sqrt(g.div(sumAll(g, g.mul(u, u)), s(double(type.getNumElements()))));
    Value denom =
        tsr::MaxOp::create(b, g.getLoc(), s(1.0), g.div(rms, s(clipThreshold)));
    Value next = g.sub(p, g.mul(lrv, g.div(u, denom)));
    if (weightDecay > 0)
      next = g.sub(next, g.mul(g.mul(lrv, s(weightDecay)), p));
    return next;
  }

  LogicalResult run() {
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<std::pair<BlockArgument, Value>> params;
    SmallVector<unsigned> carried;
    // A host program's update (tsr-offload-optimizer) takes gradients
    // alone: the loss stays with the step on the device.
    bool onHost = func->hasAttr(tsr::attr::kOnHost);
    for (unsigned i = onHost ? 0 : 1, e = func.getNumResults(); i < e; ++i) {
      auto of = func.getResultAttrOfType<IntegerAttr>(i, tsr::attr::kGradOf);
      if (!of && (func.getResultAttr(i, tsr::attr::kUpdates) ||
                  isMetricResult(func, i))) {
        // A state update from the forward pass (running statistics), or a
        // metric.
        carried.push_back(i);
        continue;
      }
      if (!of)
        return func.emitError(onHost
                                  ? "tsr-optimizer expects a host "
                                    "program's results to be gradients "
                                    "(tsr.grad_of); result "
                                  : "tsr-optimizer expects the loss followed "
                                    "by gradients (tsr.grad_of), as "
                                    "tsr-autodiff returns them; result ")
               << i << " is not a gradient";
      params.push_back({func.getArgument(of.getInt()), ret.getOperand(i)});
    }
    if (params.empty())
      return func.emitError("no trainable parameters: every parameter is "
                            "frozen or the model has none");
    zero.emplace(func);
    for (auto &[p, grad] : params) {
      auto sharding = func.getArgAttrOfType<tsr::ShardingAttr>(
          p.getArgNumber(), tsr::attr::kSharding);
      if (!sharding)
        continue;
      SmallVector<StringRef> axes;
      for (Attribute dim : sharding.getDims())
        for (Attribute a : cast<ArrayAttr>(dim))
          axes.push_back(cast<StringAttr>(a).getValue());
      if (axes.empty())
        continue;
      if (optimizer == "adafactor")
        return func.emitError("adafactor's factored second moments are row "
                              "and column means, which tensor parallelism "
                              "splits ('")
               << argName(func, p.getArgNumber())
               << "' is split): use another optimizer";
      // The verifier checked that a sharding's axes are the mesh's.
      FailureOr<tsr::MeshAttr> mesh = tsr::getEnclosingMesh(func);
      if (failed(mesh))
        return failure();
      llvm::sort(axes, [&](StringRef x, StringRef y) {
        return *mesh->getAxisIndex(x) < *mesh->getAxisIndex(y);
      });
      splitAxes[argName(func, p.getArgNumber())] = axes;
    }
    if (zero->isSharded() && optimizer == "adafactor")
      return func.emitError("adafactor's factored second moments are row and "
                            "column means, which ZeRO's flat shards would "
                            "split: use --zero=0 with adafactor");

    OpBuilder b(ret);
    Location loc = NameLoc::get(b.getStringAttr(optimizer), ret.getLoc());
    GradientBuilder g(b, loc);
    auto i64 = RankedTensorType::get({}, b.getI64Type());
    BlockArgument step = addState(i64, "step");
    states.push_back({step, g.add(step, g.splat(i64, 1.0))});
    Value t64 = g.castTo(states.back().next, b.getF64Type());
    Value lr64 = learningRate(g, t64);

    // This rank's view of every parameter and gradient: the whole tensors,
    // or with ZeRO >= 1 its shards (ZeRO-2 and 3 already reduce-scattered
    // the gradients, ZeRO-3 also stores the parameters as shards).
    SmallVector<Value> paramViews;
    for (auto &[p, grad] : params) {
      paramViews.push_back(zero->paramView(g, p));
      grad = zero->gradView(g, grad, paramViews.back());
    }

    // Σ over every parameter of `term(grad)` (an f64 scalar per gradient)
    // for the whole model: the terms of the blocks of split parameters add
    // up over the ranks holding the other blocks, one sum per group of
    // axes; whole parameters are the same on those ranks and count once.
    // The parameters of one layer (tsr.layer) are summed one after the
    // other, so that each layer's part of the sum is outlined with its
    // update (the order of the other parameters is kept).
    SmallVector<size_t> sumOrder;
    {
      SmallVector<std::optional<int64_t>> layers;
      llvm::DenseMap<int64_t, size_t> firstOf;
      for (auto [i, entry] : llvm::enumerate(params)) {
        layers.push_back(layerOf(entry.first));
        if (layers.back())
          firstOf.try_emplace(*layers.back(), i);
        sumOrder.push_back(i);
      }
      auto group = [&](size_t i) {
        return layers[i] ? firstOf.lookup(*layers[i]) : i;
      };
      llvm::stable_sort(
          sumOrder, [&](size_t a, size_t b) { return group(a) < group(b); });
    }
    auto globalSum = [&](function_ref<Value(Value)> term) {
      Value total;
      SmallVector<StringRef> names;
      std::map<SmallVector<StringRef>, std::pair<Value, SmallVector<StringRef>>>
          split;
      for (size_t i : sumOrder) {
        auto &[p, grad] = params[i];
        StringRef name = argName(func, p.getArgNumber());
        names.push_back(name);
        SmallVector<StringRef> axes = splitAxes.lookup(name);
        // The term and its addition are the parameter's layer's.
        LayerListener listener(b, p);
        Value s = term(grad);
        if (axes.empty()) {
          total = total ? g.add(total, s) : s;
          continue;
        }
        auto &[sum, serves] = split[axes];
        sum = sum ? g.add(sum, s) : s;
        serves.push_back(name);
      }
      for (auto &[axes, entry] : split) {
        Value s = sumOverBlocks(g, entry.first, axes, entry.second);
        total = total ? g.add(total, s) : s;
      }
      total = zero->sumOverShards(g, total, names);
      // A pipeline stage's function (tsr.ranks, tsr-pipeline) holds some
      // of the parameters: the other stages add theirs.
      if (auto ranks = func->getAttrOfType<DictionaryAttr>(tsr::attr::kRanks))
        for (NamedAttribute axis : ranks) {
          total = tsr::AllReduceOp::create(
              b, g.getLoc(), total, tsr::CollectiveReduction::sum,
              b.getStrArrayAttr({axis.getName().getValue()}),
              b.getStrArrayAttr({"all stages"}));
          total.getDefiningOp()->setAttr(
              tsr::attr::kReason,
              b.getStringAttr("a sum over every parameter, which the "
                              "pipeline's stages on " +
                              axis.getName().getValue() + " hold in parts"));
        }
      return total;
    };

    Value loss = onHost ? Value() : ret.getOperand(0);
    if (onHost && lossScale != "none")
      return func.emitError("loss scaling unscales the loss, which a host "
                            "program's update does not take");
    // With dynamic loss scaling: whether every gradient is finite (an i1
    // scalar), and the scale's states, which are updated even when the
    // step is skipped.
    Value finite;
    SmallVector<State> scaleStates;
    if (lossScale != "none") {
      Type f32 = b.getF32Type();
      Value scale;
      if (lossScale == "dynamic") {
        for (BlockArgument arg : func.getArguments())
          if (getArgRole(func, arg.getArgNumber()) == tsr::Role::state &&
              argName(func, arg.getArgNumber()) == kLossScaleState)
            scale = arg;
        if (!scale)
          return func.emitError("dynamic loss scaling needs the loss_scale "
                                "state that tsr-loss-scale adds before "
                                "autodiff");
      } else {
        std::optional<double> constant = parseConstantLossScale(lossScale);
        if (!constant)
          return func.emitError("loss scale '")
                 << lossScale << "' is not none, dynamic or a positive number";
        scale = g.scalar(f32, *constant);
      }
      if (lossScaleGrowthInterval < 1 || !(lossScaleGrowth >= 1) ||
          !(lossScaleBackoff > 0) || !(lossScaleBackoff < 1))
        return func.emitError("loss-scale growth interval must be at least "
                              "1, growth at least 1 and backoff in (0, 1)");
      Value inverse = g.div(g.scalar(f32, 1.0), scale);
      for (auto &entry : params)
        entry.second = g.mul(
            entry.second,
            g.castTo(inverse, getElementTypeOrSelf(entry.second.getType())));
      loss = g.div(loss, g.castTo(scale, getElementTypeOrSelf(loss.getType())));
      if (lossScale == "dynamic") {
        Type f64 = b.getF64Type();
        // inf·0 and NaN·0 are NaN: the sum is 0 exactly when every
        // gradient element is finite, on every rank alike.
        Value poisoned = globalSum([&](Value grad) {
          return sumAll(g, g.castTo(g.mul(grad, g.scalarLike(grad, 0.0)), f64));
        });
        finite = g.equal(poisoned, g.scalar(f64, 0.0));
        auto i64 = RankedTensorType::get({}, b.getI64Type());
        BlockArgument clean = addState(i64, "loss_scale.clean_steps");
        Value next = g.add(clean, g.splat(i64, 1.0));
        // Due when this clean step is the interval's last.
        Value due =
            g.less(g.splat(i64, double(lossScaleGrowthInterval - 2)), clean);
        Value grown =
            g.select(due, g.mul(scale, g.scalar(f32, lossScaleGrowth)), scale);
        scaleStates.push_back(
            {cast<BlockArgument>(scale),
             g.select(finite, grown,
                      g.mul(scale, g.scalar(f32, lossScaleBackoff)))});
        scaleStates.push_back(
            {clean, g.select(finite, g.select(due, g.splat(i64, 0.0), next),
                             g.splat(i64, 0.0))});
      }
    }

    // Σ‖g‖² over every parameter, for clipping and the grad_norm metric,
    // squared in f64: exact for f32 elements, and not shared (by CSE) with
    // an optimizer's own g², which fuses into its update instead.
    Value sq;
    if (clipNorm > 0 || (metrics && !func->hasAttr(tsr::attr::kServer)))
      sq = globalSum([&](Value grad) {
        Value wide = g.castTo(grad, b.getF64Type());
        return sumAll(g, g.mul(wide, wide));
      });
    SmallVector<std::pair<Value, StringRef>> reported;
    if (metrics) {
      reported.push_back({g.castTo(lr64, b.getF32Type()), "lr"});
      if (!func->hasAttr(tsr::attr::kServer))
        reported.push_back({g.castTo(g.sqrt(sq), b.getF32Type()), "grad_norm"});
    }
    if (clipNorm > 0) {
      Type f64 = b.getF64Type();
      Value scale =
          tsr::MinOp::create(b, loc, g.scalar(f64, 1.0),
                             g.div(g.scalar(f64, clipNorm),
                                   g.add(g.sqrt(sq), g.scalar(f64, 1e-6))));
      for (auto &entry : params)
        entry.second = g.mul(
            entry.second,
            g.castTo(scale, getElementTypeOrSelf(entry.second.getType())));
    }

    SmallVector<Value> results;
    SmallVector<DictionaryAttr> attrs;
    if (!onHost) {
      results.push_back(loss);
      attrs.push_back(func.getResultAttrDict(0) ? func.getResultAttrDict(0)
                                                : b.getDictionaryAttr({}));
    }
    // A new value is laid out as the argument it updates.
    auto updated = [&](Value v, BlockArgument arg, tsr::Role role) {
      results.push_back(v);
      unsigned index = arg.getArgNumber();
      SmallVector<NamedAttribute> attr{
          b.getNamedAttr(tsr::attr::kName,
                         b.getStringAttr(argName(func, index))),
          b.getNamedAttr(tsr::attr::kRole,
                         tsr::RoleAttr::get(b.getContext(), role)),
          b.getNamedAttr(tsr::attr::kUpdates, b.getI64IntegerAttr(index))};
      for (StringRef layout :
           {tsr::attr::kSharding, tsr::attr::kShards, tsr::attr::kGlobalShape})
        if (Attribute value = func.getArgAttr(index, layout))
          attr.push_back(b.getNamedAttr(layout, value));
      attrs.push_back(b.getDictionaryAttr(attr));
    };
    for (auto [entry, view] : llvm::zip(params, paramViews)) {
      auto [p, grad] = entry;
      StringRef name = argName(func, p.getArgNumber());
      auto full = cast<RankedTensorType>(p.getType());
      if (auto shape = func.getArgAttrOfType<DenseI64ArrayAttr>(
              p.getArgNumber(), tsr::attr::kGlobalShape))
        full = full.clone(shape.asArrayRef());
      // The update is the parameter's layer's: tsr-outline-layers puts it
      // in the layer's update cell, which writes the new values into the
      // parameter's and states' buffers (tsr-donate-updates).
      LayerListener listener(b, p);
      Value next = update(g, view, name, full.getShape(),
                          func.getArgAttrOfType<tsr::ShardingAttr>(
                              p.getArgNumber(), tsr::attr::kSharding),
                          grad, lr64, t64);
      // ZeRO 1 and 2 keep whole parameters on every rank.
      next = zero->nextParam(g, next, p, full, name);
      if (finite)
        next = g.select(finite, next, p);
      updated(next, p, tsr::Role::param);
    }
    for (State &st : states)
      updated(finite ? g.select(finite, st.next, st.arg) : st.next, st.arg,
              tsr::Role::state);
    for (State &st : scaleStates)
      updated(st.next, st.arg, tsr::Role::state);
    for (unsigned i : carried) {
      results.push_back(ret.getOperand(i));
      attrs.push_back(func.getResultAttrDict(i));
    }
    for (auto [value, name] : reported) {
      results.push_back(value);
      attrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(tsr::attr::kName, b.getStringAttr(name)),
           b.getNamedAttr(
               tsr::attr::kRole,
               tsr::RoleAttr::get(b.getContext(), tsr::Role::metric))}));
    }

    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    SmallVector<Type> types;
    for (Value v : results)
      types.push_back(v.getType());
    func.setType(b.getFunctionType(func.getArgumentTypes(), types));
    func.setAllResultAttrs(ArrayRef<DictionaryAttr>(attrs));
    return success();
  }
};

} // namespace
