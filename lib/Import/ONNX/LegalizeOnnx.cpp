//===- LegalizeOnnx.cpp - onnx.node to tsr, the driver --------------------===//
//
// Walks the `onnx.node` ops of each function in order and replaces each by
// what its handler builds. The pass `tsr-legalize-onnx` is a thin wrapper.
//
//===----------------------------------------------------------------------===//
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "tessera/Dialect/Onnx/IR/OnnxDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Import/ONNX/Import.h"
#include "tessera/Import/ONNX/Legalize.h"
#include "tessera/Import/ONNX/Passes.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRLEGALIZEONNX
#include "tessera/Import/ONNX/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::onnx_import;

/// A result a node adds to its function besides the model's outputs.
struct ExtraResult {
  Value value;
  DictionaryAttr attrs;
};

static LogicalResult legalizeNode(onnx_generic::NodeOp node, OpBuilder &b,
                                  const HandlerRegistry &registry,
                                  const OnnxImportOptions &opts,
                                  SmallVectorImpl<ExtraResult> &extras) {
  NodeContext ctx(node, b);
  ctx.moeCapacityFactor = opts.moeCapacityFactor;
  ctx.moeAuxLoss = opts.moeAuxLoss;
  ctx.moeStatistics = opts.moeStatistics;
  ctx.updateStatistics = opts.updateStatistics;
  ctx.runningBatchNorm = opts.runningBatchNorm;
  // Contrib ops register under "domain.OpType".
  std::string key = node.getOpType().str();
  if (!node.getDomain().empty() && node.getDomain() != "ai.onnx")
    key = (node.getDomain() + "." + node.getOpType()).str();
  Handler handler = registry.lookup(key, node.getSinceVersion());
  if (!handler && key != node.getOpType())
    return ctx.unsupported("only the default domain and 'com.microsoft' MoE "
                           "are supported");
  if (!handler)
    return ctx.unsupported();
  b.setInsertionPoint(node);
  SmallVector<Value> results;
  if (failed(handler(ctx, results)))
    return failure();
  assert(results.size() <= node.getNumResults() &&
         "a handler produced more results than the node has");
  for (auto [i, old] : llvm::enumerate(node.getResults())) {
    if (i >= results.size()) {
      if (!old.use_empty())
        return ctx.unsupported("output " + Twine(i) + " is not supported");
      continue;
    }
    // Where ONNX shape inference knew the type, the legalized value must
    // agree with it.
    auto expected = dyn_cast<RankedTensorType>(old.getType());
    if (expected && expected.hasStaticShape() &&
        expected != results[i].getType())
      return ctx.error("legalized output " + Twine(i) + " has type " +
                       llvm::formatv("{0}", results[i].getType()).str() +
                       " but ONNX shape inference gave " +
                       llvm::formatv("{0}", expected).str());
    old.replaceAllUsesWith(results[i]);
  }
  auto named = [&](const Twine &name) {
    return b.getNamedAttr(tsr::attr::kName, b.getStringAttr(name));
  };
  for (Value aux : ctx.auxLosses)
    extras.push_back(
        {aux, b.getDictionaryAttr(
                  {named("aux_loss." + node.getName()),
                   b.getNamedAttr(tsr::attr::kAuxLoss, b.getUnitAttr())})});
  for (auto &[value, name] : ctx.metrics)
    extras.push_back(
        {value, b.getDictionaryAttr(
                    {named(node.getName() + "." + name),
                     b.getNamedAttr(tsr::attr::kRole,
                                    tsr::RoleAttr::get(b.getContext(),
                                                       tsr::Role::metric))})});
  for (auto [value, arg] : ctx.statisticsUpdates) {
    auto f = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    auto name =
        f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), tsr::attr::kName);
    if (llvm::any_of(extras, [&](const ExtraResult &extra) {
          auto updates = extra.attrs.getAs<IntegerAttr>(tsr::attr::kUpdates);
          return updates && updates.getInt() == arg.getArgNumber();
        }))
      return ctx.error("shares running statistics '" +
                       (name ? name.getValue() : StringRef("?")) +
                       "' with another BatchNormalization; each needs its own");
    extras.push_back(
        {value,
         b.getDictionaryAttr(
             {b.getNamedAttr(tsr::attr::kName,
                             name ? name : b.getStringAttr("")),
              b.getNamedAttr(
                  tsr::attr::kRole,
                  tsr::RoleAttr::get(b.getContext(), tsr::Role::param)),
              b.getNamedAttr(tsr::attr::kUpdates,
                             b.getI64IntegerAttr(arg.getArgNumber()))})});
  }
  node.erase();
  return success();
}

static LogicalResult legalizeFunction(func::FuncOp func,
                                      const OnnxImportOptions &opts) {
  const HandlerRegistry &registry = HandlerRegistry::get();
  SmallVector<onnx_generic::NodeOp> nodes;
  func.walk([&](onnx_generic::NodeOp node) { nodes.push_back(node); });
  OpBuilder b(func.getContext());
  SmallVector<ExtraResult> extras;
  for (onnx_generic::NodeOp node : nodes)
    if (failed(legalizeNode(node, b, registry, opts, extras)))
      return failure();
  // Auxiliary losses, metrics and running-statistics updates become results
  // after the model's outputs.
  if (!extras.empty()) {
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    for (const ExtraResult &extra : extras) {
      ret->insertOperands(ret->getNumOperands(), extra.value);
      if (failed(func.insertResult(func.getNumResults(), extra.value.getType(),
                                   extra.attrs)))
        return func.emitError("cannot add result '")
               << extra.attrs.get(tsr::attr::kName) << "'";
    }
  }

  // Shape subgraphs folded away leave dead constants and `onnx.none`s.
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : llvm::reverse(ops))
    if (op != func && isOpTriviallyDead(op))
      op->erase();

  for (Block &block : func.getBody())
    if (auto ret = dyn_cast<func::ReturnOp>(block.getTerminator())) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands()))
        if (isa<NoneType>(v.getType()))
          return emitError(ret.getLoc())
                 << "graph output " << i << " is an absent optional value";
      func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                     ret.getOperandTypes()));
    }
  return success();
}

LogicalResult mlir::tessera::legalizeOnnxModule(ModuleOp module,
                                                const OnnxImportOptions &opts) {
  for (auto func : module.getOps<func::FuncOp>())
    if (failed(legalizeFunction(func, opts)))
      return failure();
  return success();
}

namespace {
struct TsrLegalizeOnnxPass
    : public tessera::impl::TsrLegalizeOnnxBase<TsrLegalizeOnnxPass> {
  void runOnOperation() override {
    if (failed(legalizeOnnxModule(getOperation())))
      signalPassFailure();
  }
};
} // namespace
