//===- TsrCommOps.cpp - Verifiers of the collectives ----------------------===//
//
// A collective names a group of axes of the enclosing module's `tsr.mesh`;
// its verifier checks them against the mesh and the block structure of its
// `dim` against the group's size.
//
//===----------------------------------------------------------------------===//
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::tsr;

/// An `async` collective's one user is the tsr.wait that completes it.
static LogicalResult verifyAsync(Operation *op) {
  if (!op->hasAttr("async"))
    return success();
  Value result = op->getResult(0);
  if (!result.hasOneUse() || !isa<WaitOp>(*result.getUsers().begin()) ||
      result.getUses().begin()->getOperandNumber() != 0)
    return op->emitOpError("is async: its result must have exactly one use, "
                           "as the pending operand of a tsr.wait");
  return success();
}

static RankedTensorType getTensor(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static LogicalResult verifyReduction(Operation *op,
                                     CollectiveReduction reduction,
                                     Type elementType) {
  if (reduction == CollectiveReduction::mean && !isa<FloatType>(elementType))
    return op->emitOpError("reduction mean needs a float element type");
  return success();
}

/// Checks that dimension `dim` of `big` is `size` times that of `small`, the
/// other dimensions and the element type agreeing.
static LogicalResult verifyBlocks(Operation *op, RankedTensorType big,
                                  RankedTensorType small, int64_t size,
                                  int64_t dim, StringRef bigName,
                                  StringRef smallName) {
  if (big.getElementType() != small.getElementType())
    return op->emitOpError("operand and result element types differ");
  if (big.getRank() == 0 || big.getRank() != small.getRank())
    return op->emitOpError("operand and result must have one rank >= 1");
  if (dim < 0 || dim >= big.getRank())
    return op->emitOpError("dim ") << dim << " is not a dimension of a rank-"
                                   << big.getRank() << " tensor";
  for (int64_t d = 0, e = big.getRank(); d < e; ++d)
    if (d != dim && big.getDimSize(d) != small.getDimSize(d))
      return op->emitOpError("operand and result differ beyond dimension ")
             << dim;
  if (big.getDimSize(dim) != size * small.getDimSize(dim))
    return op->emitOpError("dimension ")
           << dim << " of the " << bigName << " (" << big.getDimSize(dim)
           << ") must be the group size (" << size << ") times that of the "
           << smallName << " (" << small.getDimSize(dim) << ")";
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (failed(verifyAsync(*this)))
    return failure();
  if (failed(getMeshGroupSize(*this, getMeshAxes())))
    return failure();
  if (getX().getType() != getType())
    return emitOpError("result type must equal the operand type");
  return verifyReduction(*this, getReduction(),
                         getTensor(getX()).getElementType());
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyAsync(*this)))
    return failure();
  FailureOr<int64_t> size = getMeshGroupSize(*this, getMeshAxes());
  if (failed(size) ||
      failed(verifyReduction(*this, getReduction(),
                             getTensor(getX()).getElementType())))
    return failure();
  return verifyBlocks(*this, getTensor(getX()), getType(), *size, getDim(),
                      "operand", "result");
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyAsync(*this)))
    return failure();
  FailureOr<int64_t> size = getMeshGroupSize(*this, getMeshAxes());
  if (failed(size))
    return failure();
  return verifyBlocks(*this, getType(), getTensor(getX()), *size, getDim(),
                      "result", "operand");
}

/// The axis size of a synchronous collective whose result has its operand's
/// type (all_to_all, broadcast_from).
template <typename OpT>
static FailureOr<int64_t> verifySynchronousSameType(OpT op) {
  if (op.getAsync())
    return op.emitOpError("cannot be async (only all_reduce, reduce_scatter "
                          "and all_gather can)");
  FailureOr<int64_t> size = getMeshGroupSize(op, op.getMeshAxes());
  if (succeeded(size) && op.getX().getType() != op.getType())
    return op.emitOpError("result type must equal the operand type");
  return size;
}

LogicalResult AllToAllOp::verify() {
  FailureOr<int64_t> size = verifySynchronousSameType(*this);
  if (failed(size))
    return failure();
  RankedTensorType type = getType();
  int64_t dim = getDim();
  if (dim < 0 || dim >= type.getRank() || type.getDimSize(dim) % *size != 0)
    return emitOpError("dimension ")
           << dim << " must exist and split into " << *size << " equal blocks";
  return success();
}

LogicalResult BroadcastFromOp::verify() {
  FailureOr<int64_t> size = verifySynchronousSameType(*this);
  if (failed(size))
    return failure();
  int64_t root = getRootAttr().getInt();
  if (root < 0 || root >= *size)
    return emitOpError("root ") << root << " is not a rank of the group "
                                << getMeshAxes() << " (size " << *size << ")";
  return success();
}

/// A point-to-point message goes to another rank of the group.
static LogicalResult verifyPeer(Operation *op, ArrayAttr axes, int64_t peer) {
  FailureOr<int64_t> size = getMeshGroupSize(op, axes);
  if (failed(size))
    return failure();
  if (peer < 0 || peer >= *size)
    return op->emitOpError("peer ") << peer << " is not a rank of the group "
                                    << axes << " (size " << *size << ")";
  return success();
}

LogicalResult SendOp::verify() {
  return verifyPeer(*this, getMeshAxes(), getPeer());
}

LogicalResult RecvOp::verify() {
  return verifyPeer(*this, getMeshAxes(), getPeer());
}

LogicalResult LocalShardOp::verify() {
  FailureOr<int64_t> size = getMeshGroupSize(*this, getMeshAxes());
  if (failed(size))
    return failure();
  return verifyBlocks(*this, getTensor(getX()), getType(), *size, getDim(),
                      "operand", "result");
}

LogicalResult WaitOp::verify() {
  Operation *def = getPending().getDefiningOp();
  if (!def || !def->hasAttr("async") || def->getNumOperands() != 1)
    return emitOpError("pending operand must be the result of an async "
                       "collective");
  if (getType() != getPending().getType())
    return emitOpError("result type must equal the pending operand's type");
  return success();
}

//===----------------------------------------------------------------------===//
// Transfers to and from host memory (TsrTransferOps.td)
//===----------------------------------------------------------------------===//

/// A transfer op is queued on a stream (`[deps]`, a token) only on memrefs.
static LogicalResult verifyQueued(Operation *op, Value buffer, ValueRange deps,
                                  bool token) {
  if ((token || !deps.empty()) && !isa<MemRefType>(buffer.getType()))
    return op->emitOpError("is queued on a stream (async dependencies or a "
                           "token) only on memrefs");
  return success();
}

LogicalResult OffloadStartOp::verify() {
  return verifyQueued(*this, getX(), getAsyncDependencies(),
                      bool(getAsyncToken()));
}

LogicalResult OffloadWaitOp::verify() {
  return verifyQueued(*this, getX(), getAsyncDependencies(),
                      bool(getAsyncToken()));
}

LogicalResult PrefetchStartOp::verify() {
  Value result = getResult();
  bool token = result && isa<gpu::AsyncTokenType>(result.getType());
  if (bool(getBuffer()) == (result && !token))
    return emitOpError("needs a result (on tensors) or an `into` buffer (on "
                       "memrefs), not both");
  if (result && !token && !isa<TensorType>(result.getType()))
    return emitOpError("on tensors returns a tensor, not ") << result.getType();
  if (!getBuffer() && !getAsyncDependencies().empty())
    return emitOpError("is queued on a stream (async dependencies) only "
                       "into a memref");
  return success();
}

LogicalResult PrefetchWaitOp::verify() {
  Type pending = getPending().getType();
  if (failed(verifyQueued(*this, getPending(), getAsyncDependencies(),
                          bool(getAsyncToken()))))
    return failure();
  if (isa<MemRefType>(pending)) {
    if (getResult() && !getAsyncToken())
      return emitOpError("on a memref has no result but an async token");
    return success();
  }
  if (!getResult() || getResult().getType() != pending)
    return emitOpError("on a tensor returns it: the result type must equal "
                       "the pending operand's type");
  auto start = getPending().getDefiningOp<PrefetchStartOp>();
  if (!start || start.getTransfer() != getTransfer() ||
      !getPending().hasOneUse())
    return emitOpError("pending operand must be the result of the "
                       "tsr.prefetch_start of transfer ")
           << getTransfer() << ", and this op its one use";
  return success();
}
