//===- ResultsToOutParams.cpp - Results as out-parameters -----------------===//
#include "tessera/Conversion/TsrToLinalg/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRRESULTSTOOUTPARAMS
#include "tessera/Conversion/TsrToLinalg/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

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
      auto alloc = from.getDefiningOp<memref::AllocOp>();
      if (alloc && it == inPlace.end() && from.getType() == to.getType() &&
          alloc.getType().hasStaticShape() &&
          llvm::count(b.getInsertionBlock()->getTerminator()->getOperands(),
                      from) == 1) {
        from.replaceAllUsesWith(to);
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
