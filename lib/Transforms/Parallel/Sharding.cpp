//===- Sharding.cpp - The data-parallel layout of a training step ---------===//
#include "tessera/Transforms/Parallel/Sharding.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"

using namespace mlir;
using namespace mlir::tessera;

SmallVector<GradientResult>
mlir::tessera::getGradientResults(func::FuncOp f,
                                  SmallVectorImpl<unsigned> &carried) {
  Block &body = f.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i;
  SmallVector<GradientResult> grads;
  for (unsigned i = 1, e = f.getNumResults(); i < e; ++i) {
    if (auto of = f.getResultAttrOfType<IntegerAttr>(i, tsr::attr::kGradOf)) {
      Value v = ret.getOperand(i);
      Operation *def = v.getDefiningOp();
      grads.push_back(
          {i, f.getArgument(of.getInt()), v, def ? position.lookup(def) : -1});
    } else if (f.getResultAttr(i, tsr::attr::kUpdates)) {
      carried.push_back(i);
    }
  }
  return grads;
}

FailureOr<Operation *> mlir::tessera::getCountedLoss(func::FuncOp f) {
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  Operation *counted = nullptr;
  WalkResult walk = f->getParentOfType<ModuleOp>().walk([&](Operation *op) {
    auto ignore = op->getAttrOfType<IntegerAttr>("ignore_index");
    if (!ignore ||
        !isa<tsr::SoftmaxCrossEntropyLossOp, tsr::NegativeLogLikelihoodLossOp>(
            op))
      return WalkResult::advance();
    bool weighted = op->getNumOperands() > 2;
    tsr::LossReduction reduction =
        isa<tsr::SoftmaxCrossEntropyLossOp>(op)
            ? cast<tsr::SoftmaxCrossEntropyLossOp>(op).getReduction()
            : cast<tsr::NegativeLogLikelihoodLossOp>(op).getReduction();
    if (counted || ret.getOperand(0) != op->getResult(0) || weighted ||
        reduction != tsr::LossReduction::mean) {
      op->emitError("a loss that ignores label ")
          << ignore.getInt()
          << " is supported with dp > 1 only as the step's one loss, a "
             "mean without class weights, computed in the step itself "
             "(not with --micro-batches > 1)";
      return WalkResult::interrupt();
    }
    counted = op;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return counted;
}

int64_t mlir::tessera::getShardSize(int64_t numElements, int64_t numShards) {
  return (numElements + numShards - 1) / numShards;
}

DataParallelLayout mlir::tessera::getDataParallelLayout(func::FuncOp f) {
  DataParallelLayout layout;
  auto zero = f->getAttrOfType<tsr::ZeroAttr>(tsr::attr::kZero);
  if (!zero)
    return layout;
  layout.zero = zero.getStage();
  layout.axes = zero.getAxes();
  if (auto module = f->getParentOfType<ModuleOp>())
    if (auto mesh = module->getAttrOfType<tsr::MeshAttr>(tsr::attr::kMesh))
      for (Attribute axis : layout.axes)
        layout.size *= mesh.getAxisSize(cast<StringAttr>(axis)).value_or(1);
  return layout;
}

Value mlir::tessera::ownedCopy(OpBuilder &b, Location loc, Value v) {
  return bufferization::AllocTensorOp::create(
      b, loc, cast<RankedTensorType>(v.getType()), ValueRange{}, v);
}

Value mlir::tessera::flattenPadded(GradientBuilder &g, Value v,
                                   int64_t numShards) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t n = type.getNumElements();
  int64_t padded = numShards * getShardSize(n, numShards);
  Value flat = g.reshape(v, {n});
  if (padded == n)
    return flat;
  OpBuilder &b = g.builder();
  return tsr::PadOp::create(
      b, g.getLoc(), flat, b.getDenseI64ArrayAttr({0, padded - n}),
      tsr::PadModeAttr::get(b.getContext(), tsr::PadMode::constant),
      b.getF64FloatAttr(0));
}

Value mlir::tessera::localShard(GradientBuilder &g, Value v, int64_t numShards,
                                ArrayAttr axes) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t c = getShardSize(type.getNumElements(), numShards);
  OpBuilder &b = g.builder();
  return tsr::LocalShardOp::create(
      b, g.getLoc(), RankedTensorType::get({c}, type.getElementType()),
      flattenPadded(g, v, numShards), axes, b.getI64IntegerAttr(0));
}

Value mlir::tessera::gatherShards(GradientBuilder &g, Value shard,
                                  RankedTensorType full, int64_t numShards,
                                  ArrayAttr axes, ArrayRef<StringRef> serves) {
  OpBuilder &b = g.builder();
  auto type = cast<RankedTensorType>(shard.getType());
  int64_t c = type.getDimSize(0), n = full.getNumElements();
  Value v = tsr::AllGatherOp::create(
      b, g.getLoc(),
      RankedTensorType::get({numShards * c}, type.getElementType()), shard,
      b.getI64IntegerAttr(0), axes, b.getStrArrayAttr(serves), IntegerAttr(),
      IntegerAttr(), UnitAttr());
  if (numShards * c != n)
    v = g.slice(v, {0}, {n}, {1});
  return g.reshape(v, full.getShape());
}

ZeroUpdate::ZeroUpdate(func::FuncOp f)
    : f(f), layout(getDataParallelLayout(f)) {}

Value ZeroUpdate::paramView(GradientBuilder &g, BlockArgument p) const {
  // A ZeRO-3 parameter is stored as its shard already.
  func::FuncOp fn = f;
  if (!isSharded() || fn.getArgAttr(p.getArgNumber(), tsr::attr::kShards))
    return p;
  return localShard(g, p, layout.size, layout.axes);
}

Value ZeroUpdate::gradView(GradientBuilder &g, Value grad,
                           Value paramView) const {
  if (!isSharded() || grad.getType() == paramView.getType())
    return grad;
  return localShard(g, grad, layout.size, layout.axes);
}

Value ZeroUpdate::sumOverShards(GradientBuilder &g, Value v,
                                ArrayRef<StringRef> serves) const {
  if (!isSharded())
    return v;
  OpBuilder &b = g.builder();
  return tsr::AllReduceOp::create(
      b, g.getLoc(), v.getType(), v,
      tsr::CollectiveReductionAttr::get(b.getContext(),
                                        tsr::CollectiveReduction::sum),
      layout.axes, b.getStrArrayAttr(serves), IntegerAttr(), IntegerAttr(),
      UnitAttr());
}

Value ZeroUpdate::nextParam(GradientBuilder &g, Value next, BlockArgument p,
                            RankedTensorType full, StringRef name) const {
  if (!isSharded() || next.getType() == p.getType())
    return next;
  return gatherShards(g, next, full, layout.size, layout.axes, {name});
}

SmallVector<NamedAttribute>
ZeroUpdate::stateAttrs(Builder &b, ArrayRef<int64_t> globalShape) const {
  if (!isSharded())
    return {};
  return {b.getNamedAttr(tsr::attr::kShards, b.getI64IntegerAttr(layout.size)),
          b.getNamedAttr(tsr::attr::kGlobalShape,
                         b.getDenseI64ArrayAttr(globalShape))};
}
