//===- ResultsToOutParams.cpp - Results as out-parameters -----------------===//
#include "tessera/Conversion/TsrToLinalg/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRRESULTSTOOUTPARAMS
#include "tessera/Conversion/TsrToLinalg/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// The allocation that `value` is, or is a chain of expand_shape and
/// collapse_shape views of; `reshapes` gets the chain from `value` back.
memref::AllocOp allocBehindReshapes(Value value,
                                    SmallVectorImpl<Operation *> &reshapes) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(def))
      return dyn_cast<memref::AllocOp>(def);
    reshapes.push_back(def);
    value = def->getOperand(0);
  }
  return {};
}

/// How many of `terminator`'s operands are `alloc` or views of it.
unsigned countReturned(Operation *terminator, memref::AllocOp alloc) {
  return llvm::count_if(terminator->getOperands(), [&](Value v) {
    while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
      v = view.getViewSource();
    return v == alloc.getResult();
  });
}

/// `buffer`, of `reshape`'s result type, viewed as its source type.
Value inverseReshape(OpBuilder &b, Operation *reshape, Value buffer) {
  Location loc = reshape->getLoc();
  if (auto expand = dyn_cast<memref::ExpandShapeOp>(reshape))
    return memref::CollapseShapeOp::create(b, loc, expand.getSrcType(), buffer,
                                           expand.getReassociationIndices());
  auto collapse = cast<memref::CollapseShapeOp>(reshape);
  return memref::ExpandShapeOp::create(b, loc, collapse.getSrcType(), buffer,
                                       collapse.getReassociationIndices());
}

struct TsrResultsToOutParamsPass
    : tessera::impl::TsrResultsToOutParamsBase<TsrResultsToOutParamsPass> {
  void runOnOperation() override {
    // The out-parameter each in-place result becomes (upstream appends one
    // per memref result, in order) and the argument whose buffer it is.
    DenseMap<std::pair<Operation *, unsigned>, unsigned> inPlace;
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      auto args = f->getAttrOfType<DenseI64ArrayAttr>(tsr::attr::kInPlace);
      if (!args)
        continue;
      unsigned outParam = f.getNumArguments();
      for (auto [k, type] : llvm::enumerate(f.getResultTypes())) {
        if (!isa<MemRefType>(type))
          continue;
        if (k < size_t(args.size()) && args[k] >= 0)
          inPlace[{f, outParam}] = args[k];
        ++outParam;
      }
    }
    bufferization::BufferResultsToOutParamsOpts options;
    options.modifyPublicFunctions = true;
    options.memCpyFn = [&](OpBuilder &b, Location loc, Value from, Value to) {
      auto out = cast<BlockArgument>(to);
      Operation *f = out.getOwner()->getParentOp();
      auto it = inPlace.find({f, out.getArgNumber()});
      // A static allocation of the function's own that it returns once is
      // the out-parameter from the start: nothing to copy (as upstream's
      // hoist-static-allocs, but never for an in-place result, whose
      // out-parameter is the buffer of an argument still read).
      // The same holds for a result that is a reshaped view of such an
      // allocation (a 3-D product computed as 2-D): the allocation becomes
      // the inverse view of the out-parameter.
      SmallVector<Operation *> reshapes;
      auto alloc = allocBehindReshapes(from, reshapes);
      if (alloc && it == inPlace.end() && from.getType() == to.getType() &&
          alloc.getType().hasStaticShape() &&
          countReturned(b.getInsertionBlock()->getTerminator(), alloc) == 1) {
        OpBuilder atAlloc(alloc);
        Value buffer = to;
        for (Operation *reshape : reshapes)
          buffer = inverseReshape(atAlloc, reshape, buffer);
        alloc.replaceAllUsesWith(buffer);
        alloc.erase();
        return success();
      }
      while (auto cast = from.getDefiningOp<memref::CastOp>())
        from = cast.getSource();
      // The caller passes one buffer as both: the result is there already.
      if (it != inPlace.end() &&
          from == cast<func::FuncOp>(f).getArgument(it->second))
        return success();
      memref::CopyOp::create(b, loc, from, to);
      return success();
    };
    if (failed(bufferization::promoteBufferResultsToOutParams(getOperation(),
                                                              options)))
      signalPassFailure();
  }
};

} // namespace
