//===- ShardingPartition.cpp - Rewrite a sharded graph per rank -----------===//
//
// The apply half of tsr-sharding-propagation: every value takes the shape
// of its block, and before each op its operands are brought to the layouts
// its `tsr.operand_shardings` asks for with explicit collectives over the
// axes involved:
//
//   pending sum -> split along d   reduce_scatter (sum) along d
//   pending sum -> not split       all_reduce (sum)
//   split along d -> not split     all_gather along d
//   not split -> split along d     local_shard along d (no communication)
//   split along a -> split along b all_to_all along b, then a reshape and a
//                                  transpose that put a's blocks in order
//                                  (on the `all-to-all` axes: ep)
//
// (any other change of the split dimensions gathers every dimension it
// must, then cuts). Two ops whose
// summed-over dimension is split are not the same op on blocks, and are
// rewritten: a gather from a table split by rows looks up the rows this
// rank holds and gives zeros for the others (Megatron's
// vocabulary-parallel embedding); a cross-entropy loss whose classes are
// split computes the log-sum-exp from an all-reduced maximum and sum and
// takes the target's score where this rank holds it, each rank's result a
// share of the loss (vocabulary-parallel cross-entropy: the scores are
// never gathered). The function's
// results are brought to whole values. Split parameters become arguments
// holding this rank's block, with `tsr.sharding` saying which; the
// function records the axes in `tsr.partitioned` (which makes its values
// blocks: a ZeRO shard of such an argument is a shard of the block), which
// tsr-autodiff reads (the loss is the same on every rank of them).
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Parallel/Passes.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/GradientRules.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"

#include <algorithm>

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRSHARDINGPARTITION
#include "tessera/Transforms/Parallel/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;
using tsr::ShardingAttr;

namespace {

/// The global index of the first element of this rank's block of a
/// dimension of `size` split into `n` over `axes`: this rank's block of a
/// constant 0..size-1, its first element.
Value blockOffset(GradientBuilder &g, Type elementType, int64_t size, int64_t n,
                  ArrayAttr axes) {
  OpBuilder &b = g.builder();
  auto type = RankedTensorType::get({size}, elementType);
  SmallVector<APInt> values;
  for (int64_t i = 0; i < size; ++i)
    values.push_back(APInt(elementType.getIntOrFloatBitWidth(), i));
  Value range = tsr::ConstantOp::create(b, g.getLoc(),
                                        DenseElementsAttr::get(type, values));
  Value block = tsr::LocalShardOp::create(
      b, g.getLoc(), RankedTensorType::get({size / n}, elementType), range,
      axes, b.getI64IntegerAttr(0));
  return g.reshape(g.slice(block, {0}, {1}, {1}), {});
}

/// Where `index` (integers) falls in this rank's block [0, rows) once the
/// block's offset is taken off: (index - offset, in range).
std::pair<Value, Value> localIndex(GradientBuilder &g, Value index,
                                   int64_t rows, int64_t n, ArrayAttr axes) {
  Type elem = getElementTypeOrSelf(index.getType());
  Value local = g.sub(index, blockOffset(g, elem, rows * n, n, axes));
  Value inRange = tsr::AndOp::create(
      g.builder(), g.getLoc(), g.greater(local, g.scalarLike(local, -1.0)),
      g.less(local, g.scalarLike(local, double(rows))));
  return {g.select(inRange, local, g.scalarLike(local, 0.0)), inRange};
}

/// A gather from a table whose gathered dimension is split: the rows this
/// rank holds, zeros for the others (a share of the result).
Value gatherSplitRows(OpBuilder &b, tsr::GatherOp op, ArrayAttr axes,
                      int64_t n) {
  GradientBuilder g(b, op.getLoc());
  int64_t axis = op.getAxis();
  auto data = cast<RankedTensorType>(op.getData().getType());
  auto [index, inRange] =
      localIndex(g, op.getIndices(), data.getDimSize(axis), n, axes);
  Value rows = tsr::GatherOp::create(b, op.getLoc(), op.getData(), index,
                                     op.getAxisAttr());
  SmallVector<int64_t> maskShape(axis, 1);
  llvm::append_range(
      maskShape, cast<RankedTensorType>(op.getIndices().getType()).getShape());
  maskShape.append(data.getRank() - axis - 1, 1);
  return g.select(g.reshape(inRange, maskShape), rows, g.scalarLike(rows, 0.0));
}

/// Softmax cross-entropy over classes split across the group: every rank
/// returns its share of the loss, (log Σ_c e^{s_c})/n minus the target's
/// score where this rank holds it. The maximum that keeps the exponentials
/// finite is all-reduced without a gradient (the log-sum-exp does not
/// depend on it).
Value crossEntropySplitClasses(OpBuilder &b, tsr::SoftmaxCrossEntropyLossOp op,
                               ArrayAttr axes, int64_t n) {
  GradientBuilder g(b, op.getLoc());
  Location loc = op.getLoc();
  Value scores = op.getScores(), target = op.getTarget();
  auto scoresType = cast<RankedTensorType>(scores.getType());
  auto targetType = cast<RankedTensorType>(target.getType());
  Value localMax = g.reduceMax(scores, {1}, /*keepdims=*/true);
  auto explain = [&](Value collective, StringRef why) {
    collective.getDefiningOp()->setAttr(
        tsr::attr::kReason,
        b.getStringAttr("vocabulary-parallel cross-entropy: " + why));
    return collective;
  };
  Value max = tsr::StopGradientOp::create(
      b, loc,
      explain(tsr::AllReduceOp::create(b, loc, localMax,
                                       tsr::CollectiveReduction::max, axes),
              "each sample's largest score, over the classes every rank "
              "holds a block of"));
  Value localSum =
      g.reduceSum(g.exp(g.sub(scores, max)), {1}, /*keepdims=*/false);
  Value sum = explain(
      tsr::AllReduceOp::create(b, loc, localSum, tsr::CollectiveReduction::sum,
                               axes),
      "each sample's sum of exponentials, over the classes every rank holds "
      "a block of");
  Value logSumExp = g.add(g.log(sum), g.reshape(max, targetType.getShape()));
  auto [index, inRange] =
      localIndex(g, target, scoresType.getDimSize(1), n, axes);
  SmallVector<int64_t> pickedShape(targetType.getShape());
  pickedShape.insert(pickedShape.begin() + 1, 1);
  Value picked = tsr::GatherElementsOp::create(
      b, loc, RankedTensorType::get(pickedShape, scoresType.getElementType()),
      scores, g.reshape(index, pickedShape), b.getI64IntegerAttr(1));
  Value targetScore =
      g.select(inRange, g.reshape(picked, targetType.getShape()),
               g.scalarLike(scores, 0.0));
  Value share = g.sub(g.mul(logSumExp, g.scalarLike(scores, 1.0 / double(n))),
                      targetScore);
  Value counted;
  if (std::optional<int64_t> ignore = op.getIgnoreIndex()) {
    Value kept = tsr::NotOp::create(
        b, loc, g.equal(target, g.scalarLike(target, double(*ignore))));
    share = g.select(kept, share, g.scalarLike(share, 0.0));
    counted = g.castTo(kept, scoresType.getElementType());
  }
  if (op.getReduction() == tsr::LossReduction::none)
    return share;
  SmallVector<int64_t> all =
      llvm::to_vector(llvm::seq<int64_t>(0, targetType.getRank()));
  Value total = g.reduceSum(share, all, /*keepdims=*/false);
  if (op.getReduction() == tsr::LossReduction::sum)
    return total;
  Value count = counted
                    ? g.reduceSum(counted, all, /*keepdims=*/false)
                    : g.scalarLike(total, double(targetType.getNumElements()));
  return g.div(total, count);
}

struct TsrShardingPartitionPass
    : tessera::impl::TsrShardingPartitionBase<TsrShardingPartitionPass> {
  using Base::Base;

  tsr::MeshAttr mesh;
  /// The layout each (new) value has.
  DenseMap<Value, ShardingAttr> layouts;
  /// Every axis some value is split or summed over.
  llvm::SetVector<StringRef> usedAxes;
  /// Reshards made so far, by value and target layout: later uses of the
  /// same value in the same layout share the first one's collective.
  DenseMap<std::pair<Value, Attribute>, Value> reshards;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f) || failed(run(*f)))
      signalPassFailure();
  }

  SmallVector<StringRef> names(ArrayAttr axes) const {
    SmallVector<StringRef> out;
    for (Attribute a : axes)
      out.push_back(cast<StringAttr>(a).getValue());
    return out;
  }

  int64_t groupSize(ArrayRef<StringRef> axes) const {
    int64_t size = 1;
    for (StringRef a : axes)
      size *= *mesh.getAxisSize(a);
    return size;
  }

  /// `axes` in the mesh's order, as collectives want them.
  ArrayAttr meshOrdered(Builder &b, ArrayRef<StringRef> axes) const {
    SmallVector<StringRef> sorted(axes);
    llvm::sort(sorted, [&](StringRef x, StringRef y) {
      return *mesh.getAxisIndex(x) < *mesh.getAxisIndex(y);
    });
    return b.getStrArrayAttr(sorted);
  }

  /// The type of one block of a `type` value laid out as `sharding`.
  RankedTensorType localType(Type type, ShardingAttr sharding) const {
    auto t = cast<RankedTensorType>(type);
    if (!sharding)
      return t;
    SmallVector<int64_t> shape(t.getShape());
    for (unsigned d = 0; d < shape.size(); ++d)
      shape[d] /= groupSize(names(sharding.getDimAxes(d)));
    return RankedTensorType::get(shape, t.getElementType());
  }

  ShardingAttr replicated(Value v) const {
    return ShardingAttr::getReplicated(
        v.getContext(), cast<RankedTensorType>(v.getType()).getRank());
  }

  /// Brings `v` (laid out as `from`) to `to`; `serves` names what it
  /// carries, `user` what needs it (for the collectives' tsr.reason).
  Value reshard(OpBuilder &b, Location loc, Value v, ShardingAttr from,
                ShardingAttr to, ArrayAttr serves, StringRef user) {
    std::string what = describe(v);
    auto explain = [&](Value collective, const Twine &why) {
      collective.getDefiningOp()->setAttr(tsr::attr::kReason,
                                          b.getStringAttr(why.str()));
      return collective;
    };
    if (!from)
      from = replicated(v);
    if (!to)
      to = replicated(v);
    if (from == to)
      return v;
    auto type = cast<RankedTensorType>(v.getType());
    unsigned rank = type.getRank();
    SmallVector<SmallVector<StringRef>> have, want;
    for (unsigned d = 0; d < rank; ++d) {
      have.push_back(names(from.getDimAxes(d)));
      want.push_back(names(to.getDimAxes(d)));
    }
    SmallVector<StringRef> pending = from.getPartialAxes();
    SmallVector<StringRef> keep = to.getPartialAxes();
    auto shapeWith = [&](unsigned d, int64_t factor, bool divide) {
      SmallVector<int64_t> shape(
          cast<RankedTensorType>(v.getType()).getShape());
      shape[d] = divide ? shape[d] / factor : shape[d] * factor;
      return RankedTensorType::get(shape, type.getElementType());
    };
    if (!pending.empty() && pending != keep) {
      // A dimension the target splits over exactly the pending axes, and
      // that is whole now, takes a reduce-scatter.
      std::optional<unsigned> scatter;
      for (unsigned d = 0; d < rank; ++d)
        if (have[d].empty() && !want[d].empty() &&
            std::is_permutation(want[d].begin(), want[d].end(), pending.begin(),
                                pending.end()))
          scatter = d;
      ArrayAttr axes = meshOrdered(b, pending);
      if (scatter) {
        v = explain(tsr::ReduceScatterOp::create(
                        b, loc, shapeWith(*scatter, groupSize(pending), true),
                        v, tsr::CollectiveReduction::sum, *scatter, axes,
                        serves),
                    user + " takes the pending sum of " + what +
                        " split along dimension " + Twine(*scatter));
        have[*scatter] = want[*scatter];
      } else {
        v = explain(tsr::AllReduceOp::create(
                        b, loc, v, tsr::CollectiveReduction::sum, axes, serves),
                    user + " needs the pending sum of " + what + " whole");
      }
    }
    // One split moving from dimension a to dimension b over the same axes:
    // an all-to-all along b, whose received blocks (one per source rank,
    // each that rank's block of a) are then put back in a's order.
    std::optional<unsigned> from1, to1;
    bool others = false;
    for (unsigned d = 0; d < rank; ++d) {
      if (have[d] == want[d])
        continue;
      if (!have[d].empty() && want[d].empty() && !from1)
        from1 = d;
      else if (have[d].empty() && !want[d].empty() && !to1)
        to1 = d;
      else
        others = true;
    }
    bool exchange = from1 && llvm::all_of(have[*from1], [&](StringRef axis) {
                      return llvm::is_contained(allToAll, axis.str());
                    });
    if (exchange && to1 && !others && have[*from1] == want[*to1]) {
      unsigned a = *from1, bdim = *to1;
      int64_t n = groupSize(have[a]);
      ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
      if (shape[bdim] % n == 0) {
        GradientBuilder g(b, loc);
        v = explain(tsr::AllToAllOp::create(b, loc, v.getType(), v, bdim,
                                            meshOrdered(b, have[a]), serves),
                    user + " needs " + what + " split along dimension " +
                        Twine(bdim) + " rather than " + Twine(a));
        SmallVector<int64_t> split(shape.take_front(bdim));
        split.push_back(n);
        split.push_back(shape[bdim] / n);
        llvm::append_range(split, shape.drop_front(bdim + 1));
        v = g.reshape(v, split);
        unsigned pa = a < bdim ? a : a + 1;
        SmallVector<int64_t> perm;
        for (unsigned d = 0; d < split.size(); ++d) {
          if (d == bdim)
            continue;
          if (d == pa)
            perm.push_back(bdim);
          perm.push_back(d);
        }
        v = g.transpose(v, perm);
        SmallVector<int64_t> merged(shape);
        merged[a] *= n;
        merged[bdim] /= n;
        return g.reshape(v, merged);
      }
    }
    // Every gather before any cut: an axis that moves from one dimension
    // to another must stop splitting the first before it splits the second
    // (a block cut along both by one axis is no block of the whole).
    for (unsigned d = 0; d < rank; ++d)
      if (have[d] != want[d] && !have[d].empty())
        v = explain(
            tsr::AllGatherOp::create(b, loc,
                                     shapeWith(d, groupSize(have[d]), false), v,
                                     d, meshOrdered(b, have[d]), serves),
            user + " needs dimension " + Twine(d) + " of " + what + " whole");
    for (unsigned d = 0; d < rank; ++d)
      if (have[d] != want[d] && !want[d].empty())
        v = tsr::LocalShardOp::create(
            b, loc, shapeWith(d, groupSize(want[d]), true), v,
            meshOrdered(b, want[d]), b.getI64IntegerAttr(d));
    return v;
  }

  /// `v` in a reason: the parameter or input it is, or the op and node
  /// that make it.
  std::string describe(Value v) const {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto f = cast<func::FuncOp>(arg.getOwner()->getParentOp());
      bool param = getArgRole(f, arg.getArgNumber()) == tsr::Role::param;
      return ((param ? "parameter '" : "input '") +
              getArgString(f, arg.getArgNumber(), tsr::attr::kName) + "'")
          .str();
    }
    return ("'" + v.getDefiningOp()->getName().getStringRef() + "'" +
            at(v.getLoc()))
        .str();
  }

  static std::string at(Location loc) {
    std::string node = tsr::getNodeName(loc);
    return node.empty() ? "" : " at '" + node + "'";
  }

  /// What a reshard of `v` carries: the parameter's name, if it is one.
  ArrayAttr servesOf(func::FuncOp f, Value original) {
    Builder b(f.getContext());
    if (auto arg = dyn_cast<BlockArgument>(original))
      if (auto name = f.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                     tsr::attr::kName))
        return b.getArrayAttr({name});
    return b.getArrayAttr({});
  }

  LogicalResult run(func::FuncOp f) {
    auto module = getOperation();
    mesh = module->getAttrOfType<tsr::MeshAttr>(tsr::attr::kMesh);
    bool any = false;
    f.walk([&](Operation *op) {
      any |= op->hasAttr(tsr::attr::kOperandShardings);
    });
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      any |= bool(f.getArgAttr(i, tsr::attr::kSharding));
    if (!any)
      return success();
    if (!mesh)
      return f.emitError("tsr-sharding-partition needs the module's tsr.mesh");

    Block &body = f.getBody().front();
    Builder builder(f.getContext());
    // Arguments: this rank's block.
    SmallVector<Type> inputs;
    for (BlockArgument arg : body.getArguments()) {
      auto sharding = f.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                       tsr::attr::kSharding);
      if (sharding && !sharding.isReplicated()) {
        arg.setType(localType(arg.getType(), sharding));
        layouts[arg] = sharding;
        for (Attribute d : sharding.getDims())
          for (StringRef a : names(cast<ArrayAttr>(d)))
            usedAxes.insert(a);
      }
      inputs.push_back(arg.getType());
    }

    for (Operation &op :
         llvm::make_early_inc_range(body.without_terminator())) {
      auto wanted = op.getAttrOfType<ArrayAttr>(tsr::attr::kOperandShardings);
      auto produced = op.getAttrOfType<ArrayAttr>(tsr::attr::kSharding);
      OpBuilder b(&op);
      for (OpOperand &use : op.getOpOperands()) {
        Value v = use.get();
        ShardingAttr want =
            wanted ? cast<ShardingAttr>(wanted[use.getOperandNumber()])
                   : ShardingAttr();
        Value &local = reshards[{v, want ? Attribute(want) : replicated(v)}];
        if (!local)
          local = reshard(
              b, op.getLoc(), v, layouts.lookup(v), want, servesOf(f, v),
              ("'" + op.getName().getStringRef() + "'" + at(op.getLoc()))
                  .str());
        use.set(local);
      }
      // Ops that are not the same op on blocks when their summed-over
      // dimension is split.
      auto splitAxes = [&](unsigned operand, unsigned dim) -> ArrayAttr {
        if (!wanted)
          return ArrayAttr();
        ArrayAttr axes = cast<ShardingAttr>(wanted[operand]).getDimAxes(dim);
        return axes.empty() ? ArrayAttr() : meshOrdered(b, names(axes));
      };
      Value rewritten;
      ArrayAttr axes;
      if (auto gather = dyn_cast<tsr::GatherOp>(op)) {
        if ((axes = splitAxes(0, gather.getAxis())))
          rewritten = gatherSplitRows(b, gather, axes, groupSize(names(axes)));
      } else if (auto loss = dyn_cast<tsr::SoftmaxCrossEntropyLossOp>(op)) {
        if ((axes = splitAxes(0, 1)))
          rewritten =
              crossEntropySplitClasses(b, loss, axes, groupSize(names(axes)));
      }
      if (rewritten) {
        auto layout = cast<ShardingAttr>(produced[0]);
        layouts[rewritten] = layout;
        for (StringRef a : layout.getPartialAxes())
          usedAxes.insert(a);
        op.getResult(0).replaceAllUsesWith(rewritten);
        op.erase();
        continue;
      }
      for (auto [i, result] : llvm::enumerate(op.getResults())) {
        ShardingAttr layout =
            produced ? cast<ShardingAttr>(produced[i]) : ShardingAttr();
        if (!layout)
          continue;
        result.setType(localType(result.getType(), layout));
        layouts[result] = layout;
        for (Attribute d : layout.getDims())
          for (StringRef a : names(cast<ArrayAttr>(d)))
            usedAxes.insert(a);
        for (StringRef a : layout.getPartialAxes())
          usedAxes.insert(a);
      }
      // A slice of a split dimension keeps all of it: its bound is local.
      if (auto slice = dyn_cast<tsr::SliceOp>(op)) {
        SmallVector<int64_t> limits(slice.getLimits());
        auto in = cast<RankedTensorType>(slice.getX().getType());
        auto out = cast<RankedTensorType>(slice.getType());
        for (unsigned d = 0; d < limits.size(); ++d)
          if (out.getDimSize(d) == in.getDimSize(d))
            limits[d] = in.getDimSize(d);
        slice.setLimits(limits);
      }
      op.removeAttr(tsr::attr::kOperandShardings);
      op.removeAttr(tsr::attr::kSharding);
    }

    // Results: whole values.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder b(ret);
    for (OpOperand &use : ret->getOpOperands())
      use.set(reshard(
          b, ret.getLoc(), use.get(), layouts.lookup(use.get()), ShardingAttr(),
          b.getArrayAttr({}),
          ("result " + Twine(use.getOperandNumber()) + " of the function")
              .str()));
    f.setType(FunctionType::get(f.getContext(), inputs, ret.getOperandTypes()));
    if (usedAxes.empty())
      return success();
    f->setAttr(tsr::attr::kPartitioned,
               meshOrdered(builder, usedAxes.getArrayRef()));
    return success();
  }
};

} // namespace
