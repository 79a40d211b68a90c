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
//
// (a change of the split dimension gathers, then cuts). The function's
// results are brought to whole values. Split parameters become arguments
// holding this rank's block, with `tsr.global_shape` and `tsr.sharding`
// saying which; the function records the axes in `tsr.partitioned`, which
// tsr-autodiff reads (the loss is the same on every rank of them).
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Parallel/Passes.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
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

  /// Brings `v` (laid out as `from`) to `to`; `serves` names what it carries.
  Value reshard(OpBuilder &b, Location loc, Value v, ShardingAttr from,
                ShardingAttr to, ArrayAttr serves) {
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
      auto sum = tsr::CollectiveReductionAttr::get(
          b.getContext(), tsr::CollectiveReduction::sum);
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
        v = tsr::ReduceScatterOp::create(
            b, loc, shapeWith(*scatter, groupSize(pending), true), v, sum,
            b.getI64IntegerAttr(*scatter), axes, serves, IntegerAttr(),
            IntegerAttr(), UnitAttr());
        have[*scatter] = want[*scatter];
      } else {
        v = tsr::AllReduceOp::create(b, loc, v.getType(), v, sum, axes, serves,
                                     IntegerAttr(), IntegerAttr(), UnitAttr());
      }
    }
    for (unsigned d = 0; d < rank; ++d) {
      if (have[d] == want[d])
        continue;
      if (!have[d].empty()) {
        v = tsr::AllGatherOp::create(
            b, loc, shapeWith(d, groupSize(have[d]), false), v,
            b.getI64IntegerAttr(d), meshOrdered(b, have[d]), serves,
            IntegerAttr(), IntegerAttr(), UnitAttr());
      }
      if (!want[d].empty()) {
        v = tsr::LocalShardOp::create(
            b, loc, shapeWith(d, groupSize(want[d]), true), v,
            meshOrdered(b, want[d]), b.getI64IntegerAttr(d));
      }
    }
    return v;
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
        auto global = cast<RankedTensorType>(arg.getType());
        f.setArgAttr(arg.getArgNumber(), tsr::attr::kGlobalShape,
                     builder.getDenseI64ArrayAttr(global.getShape()));
        arg.setType(localType(global, sharding));
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
          local = reshard(b, op.getLoc(), v, layouts.lookup(v), want,
                          servesOf(f, v));
        use.set(local);
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
      use.set(reshard(b, ret.getLoc(), use.get(), layouts.lookup(use.get()),
                      ShardingAttr(), b.getArrayAttr({})));
    f.setType(FunctionType::get(f.getContext(), inputs, ret.getOperandTypes()));
    if (usedAxes.empty())
      return success();
    f->setAttr(tsr::attr::kPartitioned,
               meshOrdered(builder, usedAxes.getArrayRef()));
    return success();
  }
};

} // namespace
