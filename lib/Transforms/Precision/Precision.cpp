//===- Precision.cpp - Apply the precision plan ---------------------------===//
#include "tessera/Transforms/Precision/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRPRECISION
#include "tessera/Transforms/Precision/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

Type typeNamed(Builder &b, StringRef name) {
  if (name == "bf16")
    return b.getBF16Type();
  if (name == "f16")
    return b.getF16Type();
  return b.getF32Type();
}

struct TsrPrecisionPass : tessera::impl::TsrPrecisionBase<TsrPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> f =
        getTrainingFunction(module, getArgument(), function);
    if (failed(f))
      return signalPassFailure();
    if (failed(apply(*f)))
      signalPassFailure();
  }

  LogicalResult apply(func::FuncOp f) {
    OpBuilder b(f.getContext());
    Block &entry = f.getBody().front();
    // The casts made so far, per value and element type.
    DenseMap<std::pair<Value, Type>, Value> casts;
    // The type each retyped value had.
    DenseMap<Value, Type> original;
    auto castOf = [&](Value v, Type element) -> Value {
      auto type = cast<RankedTensorType>(v.getType());
      if (type.getElementType() == element)
        return v;
      Value &slot = casts[{v, element}];
      if (slot)
        return slot;
      OpBuilder::InsertionGuard guard(b);
      if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&entry);
      Location loc =
          v.getDefiningOp() ? v.getDefiningOp()->getLoc() : f.getLoc();
      slot = tsr::CastOp::create(b, loc, type.clone(element), v);
      return slot;
    };
    // Ops are visited in order, so every operand already has its final type.
    for (Operation &op : llvm::make_early_inc_range(entry)) {
      auto choice = op.getAttrOfType<StringAttr>(tsr::attr::kPrecision);
      if (!choice) {
        // An op outside the plan sees its operands as they were.
        for (OpOperand &operand : op.getOpOperands())
          if (auto it = original.find(operand.get()); it != original.end())
            operand.set(castOf(operand.get(), it->second));
        continue;
      }
      Type element = typeNamed(b, choice.getValue());
      for (OpOperand &operand : op.getOpOperands())
        if (isa<FloatType>(getElementTypeOrSelf(operand.get().getType())))
          operand.set(castOf(operand.get(), element));
      for (Value result : op.getResults()) {
        auto type = dyn_cast<RankedTensorType>(result.getType());
        if (!type || !isa<FloatType>(type.getElementType()) ||
            type.getElementType() == element)
          continue;
        original[result] = type.getElementType();
        result.setType(type.clone(element));
      }
      if (failed(mlir::verify(&op)))
        return op.emitError("cannot compute this op in ") << choice;
    }
    return success();
  }
};

} // namespace
