//===- Sharding.h - ZeRO's flat shards of training tensors ------*- C++ -*-===//
//
// The layout every ZeRO stage uses for a tensor of n elements over a group
// of N ranks (one or more mesh axes): flattened row-major, zero-padded to N·c
// elements with c = ceil(n / N); rank r owns elements [r·c, (r+1)·c). The
// runtime's checkpoints and parameter initialization use the same layout.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_TRANSFORMS_PARALLEL_SHARDING_H
#define TESSERA_TRANSFORMS_PARALLEL_SHARDING_H

#include "tessera/Transforms/Autodiff/GradientRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tessera {

/// c = ceil(n / N), the elements of one shard.
int64_t getShardSize(int64_t numElements, int64_t numShards);

/// The ZeRO layout of a training function: the stage and axes from the
/// function's `tsr.zero`, N the product of those axes' sizes in the
/// module's `tsr.mesh` (N = 1, stage 0, no axes without them).
struct DataParallelLayout {
  int64_t size = 1;
  int64_t zero = 0;
  ArrayAttr axes;
};
DataParallelLayout getDataParallelLayout(func::FuncOp f);

/// `v` flattened and zero-padded to N·c elements.
Value flattenPadded(GradientBuilder &g, Value v, int64_t numShards);

/// This rank's shard of `v` (a tensor<c>): `tsr.local_shard` of the padded
/// flat form.
Value localShard(GradientBuilder &g, Value v, int64_t numShards,
                 ArrayAttr axes);

/// The whole tensor of type `full` from the shards of all N ranks:
/// `tsr.all_gather` over `axes` (serving `serves`), then the padding cut and
/// the shape restored.
Value gatherShards(GradientBuilder &g, Value shard, RankedTensorType full,
                   int64_t numShards, ArrayAttr axes,
                   ArrayRef<StringRef> serves);

} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_PARALLEL_SHARDING_H
