//===- BufferizableOpInterfaceImpl.cpp - Bufferization of tsr -------------===//
//
// tsr.remat_barrier is an alias: it neither reads nor writes its operand,
// and its result is the operand's buffer (equivalent, as for tensor.cast).
// Where a later op would write that buffer in place while the operand is
// still read, one-shot bufferization's conflict analysis copies as it does
// for any alias.
//
// The transfer ops keep their form on memrefs: tsr.offload_start and
// tsr.offload_wait read their operand (the wait too, so that the buffer
// lives until the copy has completed), tsr.prefetch_start allocates the
// buffer the copy fills, and tsr.prefetch_wait completes it in place.
//
//===----------------------------------------------------------------------===//
#include "tessera/Dialect/Tsr/Transforms/BufferizableOpInterfaceImpl.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace {

struct RematBarrierOpInterface
    : BufferizableOpInterface::ExternalModel<RematBarrierOpInterface,
                                             tsr::RematBarrierOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return false;
  }

  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }

  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    FailureOr<Value> buffer =
        getBuffer(rewriter, op->getOperand(0), options, state);
    if (failed(buffer))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

/// tsr.offload_start and tsr.offload_wait: read their operand, return
/// nothing.
template <typename OpT>
struct OffloadOpInterface
    : BufferizableOpInterface::ExternalModel<OffloadOpInterface<OpT>, OpT> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }

  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }

  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    FailureOr<Value> buffer =
        getBuffer(rewriter, op->getOperand(0), options, state);
    if (failed(buffer))
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op->setOperand(0, *buffer); });
    return success();
  }
};

/// tsr.prefetch_start: its result is a new buffer.
struct PrefetchStartOpInterface
    : BufferizableOpInterface::ExternalModel<PrefetchStartOpInterface,
                                             tsr::PrefetchStartOp> {
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  bool resultBufferizesToMemoryWrite(Operation *, OpResult,
                                     const AnalysisState &) const {
    return true;
  }

  AliasingOpOperandList getAliasingOpOperands(Operation *, Value,
                                              const AnalysisState &) const {
    return {};
  }

  FailureOr<BufferLikeType> getBufferType(Operation *, Value value,
                                          const BufferizationOptions &,
                                          const BufferizationState &,
                                          SmallVector<Value> &) const {
    auto tensor = cast<RankedTensorType>(value.getType());
    return cast<BufferLikeType>(
        MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &) const {
    auto start = cast<tsr::PrefetchStartOp>(op);
    auto tensor = cast<RankedTensorType>(start.getResult().getType());
    FailureOr<Value> buffer = options.createAlloc(
        rewriter, op->getLoc(),
        MemRefType::get(tensor.getShape(), tensor.getElementType()), {});
    if (failed(buffer))
      return failure();
    tsr::PrefetchStartOp::create(rewriter, op->getLoc(), Type(), ValueRange{},
                                 *buffer, start.getTransfer());
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

/// tsr.prefetch_wait: completes its operand's buffer in place.
struct PrefetchWaitOpInterface
    : BufferizableOpInterface::ExternalModel<PrefetchWaitOpInterface,
                                             tsr::PrefetchWaitOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }

  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }

  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto wait = cast<tsr::PrefetchWaitOp>(op);
    FailureOr<Value> buffer =
        getBuffer(rewriter, wait.getPending(), options, state);
    if (failed(buffer))
      return failure();
    tsr::PrefetchWaitOp::create(rewriter, op->getLoc(), Type(), ValueRange{},
                                *buffer, wait.getTransfer());
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

} // namespace

void mlir::tsr::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, TsrDialect *) {
    RematBarrierOp::attachInterface<RematBarrierOpInterface>(*ctx);
    OffloadStartOp::attachInterface<OffloadOpInterface<OffloadStartOp>>(*ctx);
    OffloadWaitOp::attachInterface<OffloadOpInterface<OffloadWaitOp>>(*ctx);
    PrefetchStartOp::attachInterface<PrefetchStartOpInterface>(*ctx);
    PrefetchWaitOp::attachInterface<PrefetchWaitOpInterface>(*ctx);
  });
}
