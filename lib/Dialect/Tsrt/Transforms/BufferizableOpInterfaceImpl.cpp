//===- BufferizableOpInterfaceImpl.cpp - Bufferization of tsrt ------------===//
//
// One-shot bufferization of the collectives through the upstream model of
// destination-passing-style ops (DstBufferizableOpInterfaceExternalModel):
// a collective's result is the buffer of its destination, which the
// analysis reuses in place where that is legal (nothing reads its old
// contents later and it is writable: a function's inputs are not) and
// otherwise replaces by a fresh buffer, without a copy, since a collective
// never reads its destination (the GPU's fused attention,
// tsrt.gpu_attention, likewise). all_reduce and broadcast may read and write
// one buffer (the runtime passes send == recv through), so for
// `ins(%x) outs(%x)` the analysis reuses %x's buffer when %x dies there.
//
// An async collective writes its destination until its wait: the analysis
// sees the write at the start and a read and write of the same buffer at
// the tsrt.wait, which must bufferize in place. So no op between them may
// read the destination's old contents or write the buffer (either would be
// a read-after-write conflict that sends the op, or the collective, to
// another buffer), and the pending result's one use is the wait.
//
//===----------------------------------------------------------------------===//
#include "tessera/Dialect/Tsrt/Transforms/BufferizableOpInterfaceImpl.h"
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::tsrt;

namespace {

/// Rebuilds `op` on the buffers of its operands (no results) and replaces
/// each tensor result by its destination's buffer.
template <typename OpT>
LogicalResult bufferizeOnBuffers(OpT op, RewriterBase &rewriter,
                                 const BufferizationOptions &options,
                                 BufferizationState &state) {
  if (op.hasPureBufferSemantics())
    return success();
  SmallVector<Value> buffers;
  for (Value operand : op->getOperands()) {
    FailureOr<Value> buffer = getBuffer(rewriter, operand, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  rewriter.setInsertionPoint(op);
  OpT::create(rewriter, op.getLoc(), TypeRange(), buffers, op->getAttrs());
  SmallVector<Value> results;
  for (OpOperand &init : op.getDpsInitsMutable())
    results.push_back(buffers[init.getOperandNumber()]);
  replaceOpWithBufferizedValues(rewriter, op, results);
  return success();
}

template <typename OpT>
struct CollectiveOpInterface
    : DstBufferizableOpInterfaceExternalModel<CollectiveOpInterface<OpT>, OpT> {
  /// `ins` is read; the destination is overwritten whole, never read.
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    return !cast<DestinationStyleOpInterface>(op).isDpsInit(&operand);
  }

  /// The runtime takes send == recv for all-reduce and broadcast.
  bool bufferizesToElementwiseAccess(Operation *, const AnalysisState &,
                                     ArrayRef<OpOperand *>) const {
    return std::is_same_v<OpT, AllReduceOp> || std::is_same_v<OpT, BroadcastOp>;
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    return bufferizeOnBuffers(cast<OpT>(op), rewriter, options, state);
  }
};

struct WaitOpInterface
    : DstBufferizableOpInterfaceExternalModel<WaitOpInterface, WaitOp> {
  /// The wait reads the destination (the data arrives there) and returns
  /// it: an in-place read and write.
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }

  /// A copy of the pending value would read it before it arrived.
  bool mustBufferizeInPlace(Operation *, OpOperand &,
                            const AnalysisState &) const {
    return true;
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    return bufferizeOnBuffers(cast<WaitOp>(op), rewriter, options, state);
  }
};

/// Attention (forward or backward) reads its inputs and overwrites its
/// destinations (output and stats, or the gradients), which bufferize like
/// a linalg op's: in place where legal, else in a fresh buffer without a
/// copy.
template <typename OpT>
struct AttentionOpInterface
    : DstBufferizableOpInterfaceExternalModel<AttentionOpInterface<OpT>, OpT> {
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    return !cast<DestinationStyleOpInterface>(op).isDpsInit(&operand);
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    return bufferizeOnBuffers(cast<OpT>(op), rewriter, options, state);
  }
};

} // namespace

void mlir::tsrt::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, TsrtDialect *) {
    AllReduceOp::attachInterface<CollectiveOpInterface<AllReduceOp>>(*ctx);
    ReduceScatterOp::attachInterface<CollectiveOpInterface<ReduceScatterOp>>(
        *ctx);
    AllGatherOp::attachInterface<CollectiveOpInterface<AllGatherOp>>(*ctx);
    AllToAllOp::attachInterface<CollectiveOpInterface<AllToAllOp>>(*ctx);
    BroadcastOp::attachInterface<CollectiveOpInterface<BroadcastOp>>(*ctx);
    PermuteOp::attachInterface<CollectiveOpInterface<PermuteOp>>(*ctx);
    WaitOp::attachInterface<WaitOpInterface>(*ctx);
    GpuAttentionOp::attachInterface<AttentionOpInterface<GpuAttentionOp>>(*ctx);
    GpuAttentionBackwardOp::attachInterface<
        AttentionOpInterface<GpuAttentionBackwardOp>>(*ctx);
  });
}
