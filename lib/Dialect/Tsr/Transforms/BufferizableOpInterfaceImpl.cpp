//===- BufferizableOpInterfaceImpl.cpp - Bufferization of tsr -------------===//
//
// tsr.remat_barrier is an alias: it neither reads nor writes its operand,
// and its result is the operand's buffer (equivalent, as for tensor.cast).
// Where a later op would write that buffer in place while the operand is
// still read, one-shot bufferization's conflict analysis copies as it does
// for any alias.
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

} // namespace

void mlir::tsr::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, TsrDialect *) {
    RematBarrierOp::attachInterface<RematBarrierOpInterface>(*ctx);
  });
}
