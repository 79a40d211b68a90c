//===- CostModel.cpp - Estimated time of tsr ops and functions ------------===//
#include "tessera/Analysis/CostModel.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tessera;

bool CostModel::isCollective(Operation *op) {
  return isa<tsr::AllReduceOp, tsr::ReduceScatterOp, tsr::AllGatherOp,
             tsr::AllToAllOp, tsr::BroadcastFromOp>(op);
}

OpCost CostModel::getComputeCost(Operation *op) const {
  OpCost cost;
  auto costOp = dyn_cast<tsr::CostOpInterface>(op);
  if (!costOp)
    return cost;
  cost.flops = costOp.getFlops();
  cost.bytes = costOp.getBytesAccessed();
  cost.seconds = std::max(cost.flops / parameters.peakFlops,
                          cost.bytes / parameters.memoryBandwidth);
  return cost;
}

FailureOr<OpCost> CostModel::getCollectiveCost(Operation *op) const {
  assert(isCollective(op) && "not a collective");
  SmallVector<StringRef> axes;
  for (Attribute axis : op->getAttrOfType<ArrayAttr>("mesh_axes"))
    axes.push_back(cast<StringAttr>(axis).getValue());
  FailureOr<int64_t> groupSize = tsr::getMeshGroupSize(op, axes);
  if (failed(groupSize))
    return failure();
  OpCost cost;
  int64_t n = *groupSize;
  if (n == 1)
    return cost;

  double b =
      std::max(double(tsr::getStaticTensorBytes(op->getOperand(0).getType())),
               double(tsr::getStaticTensorBytes(op->getResult(0).getType())));
  // Messages on the critical path (alpha's coefficient) and bytes one rank
  // sends (beta's).
  double messages, bytes;
  if (isa<tsr::AllReduceOp>(op)) {
    messages = 2 * (n - 1);
    bytes = 2.0 * (n - 1) / n * b;
  } else if (isa<tsr::BroadcastFromOp>(op)) {
    messages = llvm::Log2_64_Ceil(n);
    bytes = messages * b;
  } else {
    messages = n - 1;
    bytes = double(n - 1) / n * b;
  }

  std::optional<LinkCost> slowest;
  for (StringRef axis : axes) {
    auto it = links.find(axis);
    if (it == links.end())
      return op->emitOpError("has no link cost for mesh axis '") << axis << "'";
    const LinkCost &link = it->second;
    if (!slowest ||
        link.alpha + b * link.beta > slowest->alpha + b * slowest->beta)
      slowest = link;
  }
  cost.bytes = bytes;
  cost.seconds = messages * slowest->alpha + bytes * slowest->beta;
  return cost;
}

FailureOr<FunctionCost> CostModel::getFunctionCost(func::FuncOp f) const {
  FunctionCost total;
  WalkResult walk = f.walk([&](Operation *op) {
    if (isCollective(op)) {
      FailureOr<OpCost> cost = getCollectiveCost(op);
      if (failed(cost))
        return WalkResult::interrupt();
      total.communication += *cost;
      total.collectives.push_back({op, *cost});
      return WalkResult::advance();
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          op, call.getCalleeAttr());
      if (!callee || callee.isExternal())
        return WalkResult::advance();
      FailureOr<FunctionCost> cost = getFunctionCost(callee);
      if (failed(cost))
        return WalkResult::interrupt();
      total.compute += cost->compute;
      total.communication += cost->communication;
      return WalkResult::advance();
    }
    total.compute += getComputeCost(op);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return total;
}
