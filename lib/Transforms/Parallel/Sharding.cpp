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
  if (auto module = f->getParentOfType<ModuleOp>())
    if (auto mesh = module->getAttrOfType<DictionaryAttr>("tsr.mesh"))
      if (auto size = mesh.getAs<IntegerAttr>(kDataParallelAxis))
        layout.size = size.getInt();
  if (auto zero = f->getAttrOfType<IntegerAttr>("tsr.zero"))
    layout.zero = zero.getInt();
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
  return tsr::PadOp::create(b, g.getLoc(), flat,
                            b.getDenseI64ArrayAttr({0, padded - n}),
                            b.getStringAttr("constant"), b.getF64FloatAttr(0));
}

Value mlir::tessera::localShard(GradientBuilder &g, Value v,
                                int64_t numShards) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t c = getShardSize(type.getNumElements(), numShards);
  OpBuilder &b = g.builder();
  return tsr::LocalShardOp::create(
      b, g.getLoc(), RankedTensorType::get({c}, type.getElementType()),
      flattenPadded(g, v, numShards), kDataParallelAxis);
}

Value mlir::tessera::gatherShards(GradientBuilder &g, Value shard,
                                  RankedTensorType full, int64_t numShards,
                                  ArrayRef<StringRef> serves) {
  OpBuilder &b = g.builder();
  auto type = cast<RankedTensorType>(shard.getType());
  int64_t c = type.getDimSize(0), n = full.getNumElements();
  Value v = tsr::AllGatherOp::create(
      b, g.getLoc(),
      RankedTensorType::get({numShards * c}, type.getElementType()), shard,
      kDataParallelAxis, b.getStrArrayAttr(serves), IntegerAttr(),
      IntegerAttr());
  if (numShards * c != n)
    v = g.slice(v, {0}, {n}, {1});
  return g.reshape(v, full.getShape());
}
