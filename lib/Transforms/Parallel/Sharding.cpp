//===- Sharding.cpp - ZeRO's flat shards of training tensors --------------===//
#include "tessera/Transforms/Parallel/Sharding.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"

using namespace mlir;
using namespace mlir::tessera;

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
