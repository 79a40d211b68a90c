//===- ContiguousCollectives.cpp - The tsr-contiguous-collectives pass ----===//
//
// The runtime's collectives read and write contiguous memory. Before they
// become calls, every bufferized tsrt collective that names a strided view
// gets a contiguous temporary instead: an operand is copied into one before
// the op, a destination receives into one that is copied back after the op
// or, for an async collective, after the tsrt.wait that completes it (which
// then waits on the temporary). The copies are ordinary memref.copy ops, so
// a target's codegen makes them what it makes any copy (a loop on the CPU,
// a kernel on the GPU), which is why this runs before codegen and the calls
// (tsr-collectives-to-runtime) may come after it.
//
//===----------------------------------------------------------------------===//
#include "tessera/Conversion/CollectivesToRuntime/Passes.h"
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRCONTIGUOUSCOLLECTIVES
#include "tessera/Conversion/CollectivesToRuntime/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

bool isStrided(Value buffer) {
  auto type = dyn_cast<MemRefType>(buffer.getType());
  return type && !memref::isStaticShapeAndContiguousRowMajor(type);
}

/// A fresh contiguous buffer of `buffer`'s shape, element type and memory
/// space.
Value allocateLike(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  return memref::AllocOp::create(
      b, loc,
      MemRefType::get(type.getShape(), type.getElementType(),
                      MemRefLayoutAttrInterface(), type.getMemorySpace()),
      b.getI64IntegerAttr(64));
}

/// The tsrt.wait that completes the async collective `op` writing
/// `buffer`: the first one on `buffer` after `op` in its block.
tsrt::WaitOp findWait(Operation *op, Value buffer) {
  tsrt::WaitOp first;
  for (Operation *user : buffer.getUsers()) {
    auto wait = dyn_cast<tsrt::WaitOp>(user);
    if (wait && wait->getBlock() == op->getBlock() &&
        op->isBeforeInBlock(wait) && (!first || wait->isBeforeInBlock(first)))
      first = wait;
  }
  return first;
}

/// Gives the collective `op` contiguous buffers; an in-place collective on
/// a strided view gets one temporary for both.
LogicalResult makeContiguous(IRRewriter &rewriter,
                             DestinationStyleOpInterface op) {
  OpOperand &init = *op.getDpsInitOperand(0);
  OpOperand *input = nullptr;
  for (OpOperand &operand : op->getOpOperands())
    if (&operand != &init && !isa<gpu::AsyncTokenType>(operand.get().getType()))
      input = &operand;
  Value send = input->get(), recv = init.get();
  if (!isStrided(send) && !isStrided(recv))
    return success();
  tsrt::WaitOp wait;
  if (isStrided(recv) && op->hasAttr("async") && !(wait = findWait(op, recv)))
    return op->emitOpError("is async and writes a strided view (")
           << recv.getType()
           << "), which it receives into a contiguous temporary that its "
              "tsrt.wait copies back, but no tsrt.wait of that buffer follows "
              "it in its block";

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value sendTemp, recvTemp;
  if (isStrided(send)) {
    sendTemp = allocateLike(rewriter, loc, send);
    memref::CopyOp::create(rewriter, loc, send, sendTemp);
  }
  if (isStrided(recv))
    recvTemp = send == recv ? sendTemp : allocateLike(rewriter, loc, recv);
  rewriter.modifyOpInPlace(op, [&] {
    if (sendTemp)
      input->set(sendTemp);
    if (recvTemp)
      init.set(recvTemp);
  });
  rewriter.setInsertionPointAfter(op);
  // The runtime is done with what it sends when the op returns (an async
  // start copies it).
  if (sendTemp && sendTemp != recvTemp)
    memref::DeallocOp::create(rewriter, loc, sendTemp);
  if (recvTemp) {
    if (wait) {
      rewriter.modifyOpInPlace(
          wait, [&] { wait.getPendingMutable().assign(recvTemp); });
      rewriter.setInsertionPointAfter(wait);
    }
    memref::CopyOp::create(rewriter, loc, recvTemp, recv);
    memref::DeallocOp::create(rewriter, loc, recvTemp);
  }
  return success();
}

struct TsrContiguousCollectivesPass
    : tessera::impl::TsrContiguousCollectivesBase<
          TsrContiguousCollectivesPass> {
  void runOnOperation() override {
    SmallVector<DestinationStyleOpInterface> collectives;
    getOperation().walk([&](DestinationStyleOpInterface op) {
      if (isa<tsrt::AllReduceOp, tsrt::ReduceScatterOp, tsrt::AllGatherOp,
              tsrt::AllToAllOp, tsrt::BroadcastOp, tsrt::PermuteOp>(op) &&
          op.hasPureBufferSemantics())
        collectives.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (DestinationStyleOpInterface op : collectives)
      if (failed(makeContiguous(rewriter, op)))
        return signalPassFailure();
    // What the collectives did not re-point is a wait of nothing.
    WalkResult walk = getOperation().walk([](tsrt::WaitOp wait) {
      if (!isStrided(wait.getPending()))
        return WalkResult::advance();
      wait.emitOpError("waits on a strided view (")
          << wait.getPending().getType()
          << ") that no async tsrt collective before it in its block writes";
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
