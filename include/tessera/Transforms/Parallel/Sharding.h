//===- Sharding.h - The data-parallel layout of a training step -*- C++ -*-===//
//
// What the data-parallel plan and apply passes and the optimizer share: the
// gradient results of a training function, its label-counting loss, and
// ZeRO's flat shards.
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

/// A gradient result of a training function (`tsr.grad_of`).
struct GradientResult {
  unsigned result;
  BlockArgument param;
  Value value;
  /// Position of the op defining `value` in the body (-1 for none).
  int64_t position;
};

/// The gradient results of `f` in result order; `carried` receives the
/// other results after the loss that carry `tsr.updates` (running
/// statistics updated from the batch).
SmallVector<GradientResult>
getGradientResults(func::FuncOp f, SmallVectorImpl<unsigned> &carried);

/// The loss of `f` that ignores a label (its mean counts a different number
/// of labels on every rank), or null if it has none. Fails with an error
/// where such a loss cannot be weighted per rank: it must be the step's
/// result 0, a mean without class weights, computed in `f` itself.
FailureOr<Operation *> getCountedLoss(func::FuncOp f);

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

/// A copy of `v` in a buffer of its own (`bufferization.alloc_tensor`), to
/// yield from a branch of an `scf.if` whose results are step values: when
/// every branch yields buffers of its own, whoever frees the results knows
/// statically that it owns them. A branch that yielded values defined above
/// it would leave the ownership to a runtime check over every buffer
/// (`bufferization.dealloc`'s helper function, which the CPU target's
/// bare-pointer calling convention cannot call).
Value ownedCopy(OpBuilder &b, Location loc, Value v);

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

/// An optimizer update's view of its function's ZeRO layout. At stage >= 1
/// the update works on this rank's shards: of the parameters (unless ZeRO-3
/// already stores them as shards), of the gradients (unless ZeRO 2 and 3
/// already reduce-scattered them), and of its state; norms sum over all
/// shards; ZeRO 1 and 2 gather the updated parameters whole. Without a
/// layout, or at stage 0, every view is the whole tensor.
class ZeroUpdate {
public:
  explicit ZeroUpdate(func::FuncOp f);

  bool isSharded() const { return layout.zero >= 1; }
  const DataParallelLayout &getLayout() const { return layout; }

  /// This rank's part of parameter `p`.
  Value paramView(GradientBuilder &g, BlockArgument p) const;
  /// This rank's part of gradient `grad`, of the type of `paramView`.
  Value gradView(GradientBuilder &g, Value grad, Value paramView) const;
  /// The sum of the per-rank partial sums `v` over all shards.
  Value sumOverShards(GradientBuilder &g, Value v,
                      ArrayRef<StringRef> serves) const;
  /// The next value of parameter `p`, of the whole tensor type `full`, from
  /// its updated view `next` (gathered for ZeRO 1 and 2).
  Value nextParam(GradientBuilder &g, Value next, BlockArgument p,
                  RankedTensorType full, StringRef name) const;
  /// The argument attributes of a state tensor for a parameter of
  /// `globalShape`: a shard of it (`tsr.shards`, `tsr.global_shape`) when
  /// sharded, none otherwise.
  SmallVector<NamedAttribute> stateAttrs(Builder &b,
                                         ArrayRef<int64_t> globalShape) const;

private:
  func::FuncOp f;
  DataParallelLayout layout;
};

} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_PARALLEL_SHARDING_H
