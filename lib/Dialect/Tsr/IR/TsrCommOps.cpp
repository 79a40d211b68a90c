//===- TsrCommOps.cpp - Verifiers of the collectives ----------------------===//
//
// A collective names an axis of the enclosing module's `tsr.mesh`
// (a dictionary from axis name to size); its verifier looks the size up and
// checks the block structure of dimension 0 against it.
//
//===----------------------------------------------------------------------===//
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::tsr;

FailureOr<int64_t> mlir::tsr::getMeshAxisSize(Operation *op, StringRef axis) {
  for (Operation *p = op; p; p = p->getParentOp()) {
    auto mesh = p->getAttrOfType<DictionaryAttr>("tsr.mesh");
    if (!mesh)
      continue;
    auto size = dyn_cast_or_null<IntegerAttr>(mesh.get(axis));
    if (!size || size.getInt() < 1)
      return op->emitOpError("mesh axis '")
             << axis << "' is not declared with a positive size in " << mesh;
    return size.getInt();
  }
  return op->emitOpError("mesh axis '")
         << axis << "' needs an enclosing op with a tsr.mesh attribute";
}

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

static LogicalResult verifyReduction(Operation *op, StringRef reduction,
                                     Type elementType) {
  if (!llvm::is_contained({"sum", "mean", "max", "min"}, reduction))
    return op->emitOpError("unknown reduction '")
           << reduction << "' (expected sum, mean, max or min)";
  if (reduction == "mean" && !isa<FloatType>(elementType))
    return op->emitOpError("reduction mean needs a float element type");
  return success();
}

/// Checks that dim 0 of `big` is `size` times dim 0 of `small`, the other
/// dimensions and the element type agreeing.
static LogicalResult verifyBlocks(Operation *op, RankedTensorType big,
                                  RankedTensorType small, int64_t size,
                                  StringRef bigName, StringRef smallName) {
  if (big.getElementType() != small.getElementType())
    return op->emitOpError("operand and result element types differ");
  if (big.getRank() == 0 || big.getRank() != small.getRank())
    return op->emitOpError("operand and result must have one rank >= 1");
  if (big.getShape().drop_front() != small.getShape().drop_front())
    return op->emitOpError("operand and result differ beyond dimension 0");
  if (big.getDimSize(0) != size * small.getDimSize(0))
    return op->emitOpError("dimension 0 of the ")
           << bigName << " (" << big.getDimSize(0)
           << ") must be the axis size (" << size << ") times that of the "
           << smallName << " (" << small.getDimSize(0) << ")";
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (failed(verifyAsync(*this)))
    return failure();
  if (failed(getMeshAxisSize(*this, getMeshAxis())))
    return failure();
  if (getX().getType() != getType())
    return emitOpError("result type must equal the operand type");
  return verifyReduction(*this, getReduction(),
                         getTensor(getX()).getElementType());
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyAsync(*this)))
    return failure();
  FailureOr<int64_t> size = getMeshAxisSize(*this, getMeshAxis());
  if (failed(size) ||
      failed(verifyReduction(*this, getReduction(),
                             getTensor(getX()).getElementType())))
    return failure();
  return verifyBlocks(*this, getTensor(getX()), getType(), *size, "operand",
                      "result");
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyAsync(*this)))
    return failure();
  FailureOr<int64_t> size = getMeshAxisSize(*this, getMeshAxis());
  if (failed(size))
    return failure();
  return verifyBlocks(*this, getType(), getTensor(getX()), *size, "result",
                      "operand");
}

/// The axis size of a synchronous collective whose result has its operand's
/// type (all_to_all, broadcast_from).
template <typename OpT>
static FailureOr<int64_t> verifySynchronousSameType(OpT op) {
  if (op.getAsync())
    return op.emitOpError("cannot be async (only all_reduce, reduce_scatter "
                          "and all_gather can)");
  FailureOr<int64_t> size = getMeshAxisSize(op, op.getMeshAxis());
  if (succeeded(size) && op.getX().getType() != op.getType())
    return op.emitOpError("result type must equal the operand type");
  return size;
}

LogicalResult AllToAllOp::verify() {
  FailureOr<int64_t> size = verifySynchronousSameType(*this);
  if (failed(size))
    return failure();
  RankedTensorType type = getType();
  if (type.getRank() == 0 || type.getDimSize(0) % *size != 0)
    return emitOpError("dimension 0 must split into ")
           << *size << " equal blocks";
  return success();
}

LogicalResult BroadcastFromOp::verify() {
  FailureOr<int64_t> size = verifySynchronousSameType(*this);
  if (failed(size))
    return failure();
  int64_t root = getRootAttr().getInt();
  if (root < 0 || root >= *size)
    return emitOpError("root ") << root << " is not a rank of axis '"
                                << getMeshAxis() << "' (size " << *size << ")";
  return success();
}

LogicalResult LocalShardOp::verify() {
  FailureOr<int64_t> size = getMeshAxisSize(*this, getMeshAxis());
  if (failed(size))
    return failure();
  return verifyBlocks(*this, getTensor(getX()), getType(), *size, "operand",
                      "result");
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
