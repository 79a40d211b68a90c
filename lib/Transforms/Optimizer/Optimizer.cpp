//===- Optimizer.cpp - The optimizer update of a training step ------------===//
//
// Every formula is computed in the parameter's element type from scalars
// (learning rate, bias corrections) computed in f64. The step counter is an
// i64 state tensor, so schedules and bias corrections need no host logic.
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

#include <cmath>
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

struct TsrOptimizerPass : tessera::impl::TsrOptimizerBase<TsrOptimizerPass> {
  using Base::Base;

  /// A state tensor: its argument (current value) and its new value.
  struct State {
    BlockArgument arg;
    Value next;
  };

  func::FuncOp func;
  SmallVector<State> states;
  /// ZeRO >= 1: the update works on this rank's shards; state tensors are
  /// shards too.
  std::optional<ZeroUpdate> zero;
  /// The mesh axes each parameter (by name) is split over by tensor
  /// parallelism (its argument's tsr.sharding): its norms sum over them.
  llvm::StringMap<SmallVector<StringRef>> splitAxes;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f))
      return signalPassFailure();
    func = *f;
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
    if (nesterov && (optimizer != "sgd" || momentum <= 0))
      return func.emitError("nesterov needs optimizer sgd with momentum > 0");
    if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1)
      return func.emitError("beta1 and beta2 must lie in [0, 1)");
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
    auto state = [&](StringRef slot, Type stateType) {
      BlockArgument arg = addState(
          stateType, Twine(optimizer.getValue()) + "." + slot + "." + name,
          std::optional(globalShape), sharding);
      states.push_back({arg, Value()});
      return states.size() - 1;
    };

    if (optimizer == "sgd") {
      Value d = grad;
      if (weightDecay > 0)
        d = g.add(d, g.mul(s(weightDecay), p));
      if (momentum > 0) {
        size_t buf = state("momentum", type);
        Value next = g.add(g.mul(s(momentum), states[buf].arg), d);
        states[buf].next = next;
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
        size_t buf = state("momentum", type);
        step = g.add(g.mul(s(momentum), states[buf].arg), step);
        states[buf].next = step;
      }
      return g.sub(p, step);
    }
    if (optimizer == "adafactor")
      return adafactor(g, p, name, grad, lrv, t);

    // adam, adamw, lamb
    Value d = grad;
    if (optimizer == "adam" && weightDecay > 0)
      d = g.add(d, g.mul(s(weightDecay), p));
    size_t m = state("m", type), v = state("v", type);
    Value mNext =
        g.add(g.mul(s(beta1), states[m].arg), g.mul(s(1.0 - beta1), d));
    Value vNext = g.add(g.mul(s(beta2), states[v].arg),
                        g.mul(s(1.0 - beta2), g.mul(d, d)));
    states[m].next = mNext;
    states[v].next = vNext;
    OpBuilder &b = g.builder();
    Value c1 = g.sub(s(1.0), tsr::PowOp::create(b, g.getLoc(), s(beta1), t));
    Value c2 = g.sub(s(1.0), tsr::PowOp::create(b, g.getLoc(), s(beta2), t));
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
    auto newState = [&](StringRef slot, RankedTensorType stateType) {
      BlockArgument arg = addState(stateType, "adafactor." + slot + "." + name);
      states.push_back({arg, Value()});
      return states.size() - 1;
    };
    Value vhat;
    int64_t rank = type.getRank();
    if (rank >= 2) {
      // Row means (over the last dim) and column means (over the one before).
      SmallVector<int64_t> rowShape(type.getShape().drop_back());
      SmallVector<int64_t> colShape(type.getShape());
      colShape.erase(colShape.end() - 2);
      int64_t n = type.getDimSize(rank - 1), m = type.getDimSize(rank - 2);
      size_t row = newState("row", type.clone(rowShape));
      size_t col = newState("col", type.clone(colShape));
      Value rowMean =
          g.div(g.reduceSum(g2, {rank - 1}, /*keepdims=*/false), s(double(n)));
      Value colMean =
          g.div(g.reduceSum(g2, {rank - 2}, /*keepdims=*/false), s(double(m)));
      Value r = ema(states[row].arg, rowMean);
      Value c = ema(states[col].arg, colMean);
      states[row].next = r;
      states[col].next = c;
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
      size_t v = newState("v", type);
      vhat = ema(states[v].arg, g2);
      states[v].next = vhat;
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
    for (unsigned i = 1, e = func.getNumResults(); i < e; ++i) {
      auto of = func.getResultAttrOfType<IntegerAttr>(i, tsr::attr::kGradOf);
      if (!of && func.getResultAttr(i, tsr::attr::kUpdates)) {
        // A state update from the forward pass (running statistics).
        carried.push_back(i);
        continue;
      }
      if (!of)
        return func.emitError("tsr-optimizer expects the loss followed by "
                              "gradients (tsr.grad_of), as tsr-autodiff "
                              "returns them; result ")
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
    auto globalSum = [&](function_ref<Value(Value)> term) {
      Value total;
      SmallVector<StringRef> names;
      std::map<SmallVector<StringRef>, std::pair<Value, SmallVector<StringRef>>>
          split;
      for (auto &[p, grad] : params) {
        Value s = term(grad);
        StringRef name = argName(func, p.getArgNumber());
        names.push_back(name);
        SmallVector<StringRef> axes = splitAxes.lookup(name);
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
      return zero->sumOverShards(g, total, names);
    };

    Value loss = ret.getOperand(0);
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

    if (clipNorm > 0) {
      Value sq = globalSum([&](Value grad) {
        return sumAll(g, g.castTo(g.mul(grad, grad), b.getF64Type()));
      });
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

    SmallVector<Value> results{loss};
    SmallVector<DictionaryAttr> attrs{func.getResultAttrDict(0)
                                          ? func.getResultAttrDict(0)
                                          : b.getDictionaryAttr({})};
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
      Value next = update(g, view, name, full.getShape(),
                          func.getArgAttrOfType<tsr::ShardingAttr>(
                              p.getArgNumber(), tsr::attr::kSharding),
                          grad, lr64, t64);
      // ZeRO 1 and 2 keep whole parameters on every rank.
      next = zero->nextParam(g, next, p, full, name);
      updated(finite ? g.select(finite, next, p) : next, p, tsr::Role::param);
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
