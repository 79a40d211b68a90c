//===- Autodiff.cpp - Reverse-mode differentiation of a tsr function ------===//
#include "tessera/Transforms/Autodiff/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrInterfaces.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/GradientRules.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/GlobPattern.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRAUTODIFF
#include "tessera/Transforms/Autodiff/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// Gives every op a gradient rule creates the location of its forward op.
/// Marks every op a gradient rule builds as backward (`tsr.backward`, the
/// semantics later passes read) and locates it at the forward op it
/// differentiates (`fused<"tsr.grad">[...]`, for diagnostics).
/// A pipeline stage (`tsr.stage`, tsr-pipeline-plan) of the forward op
/// carries over to its gradient's ops, so the backward pass of stage k runs
/// where stage k's forward pass did; so does its repeated layer
/// (`tsr.layer`, tsr-layer-plan).
struct BackwardListener : OpBuilder::Listener {
  Location loc;
  Attribute stage, layer;
  BackwardListener(Location loc, Operation *forward)
      : loc(loc), stage(forward->getAttr(tsr::attr::kStage)),
        layer(forward->getAttr(tsr::attr::kLayer)) {}
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    op->setLoc(loc);
    op->setAttr(tsr::attr::kBackward, UnitAttr::get(op->getContext()));
    if (stage)
      op->setAttr(tsr::attr::kStage, stage);
    if (layer)
      op->setAttr(tsr::attr::kLayer, layer);
  }
};

bool isFloatTensor(Type t) { return isa<FloatType>(getElementTypeOrSelf(t)); }

struct TsrAutodiffPass : tessera::impl::TsrAutodiffBase<TsrAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f) || failed(differentiate(*f)))
      signalPassFailure();
  }

  /// Compiles the glob patterns of option `what`.
  static FailureOr<SmallVector<llvm::GlobPattern>>
  compile(func::FuncOp f, ArrayRef<std::string> globs, StringRef what) {
    SmallVector<llvm::GlobPattern> patterns;
    for (const std::string &p : globs) {
      auto pattern = llvm::GlobPattern::create(p);
      if (!pattern) {
        llvm::consumeError(pattern.takeError());
        return f.emitError("malformed ") << what << " pattern '" << p << "'";
      }
      patterns.push_back(std::move(*pattern));
    }
    return patterns;
  }

  /// The arguments to differentiate with respect to, in order. Parameters
  /// left out are added to the function's `tsr.frozen` with the reason.
  FailureOr<SmallVector<unsigned>> selectArguments(func::FuncOp f) {
    auto frozenPatterns = compile(f, frozen, "frozen-parameter");
    auto trainablePatterns = compile(f, trainable, "trainable-parameter");
    if (failed(frozenPatterns) || failed(trainablePatterns))
      return failure();
    SmallVector<bool> used(frozen.size(), false);
    SmallVector<bool> usedTrainable(trainable.size(), false);
    NamedAttrList reasons(f->getAttrOfType<DictionaryAttr>(tsr::attr::kFrozen));
    Builder b(f.getContext());
    SmallVector<unsigned> wrt;
    for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i) {
      if (getArgRole(f, i) == tsr::Role::param) {
        // Running statistics are parameters of the model that training
        // updates from batches (tsr-batch-norm-statistics), never by
        // gradient.
        if (f.getArgAttr(i, tsr::attr::kStatistics))
          continue;
        StringRef name = getArgString(f, i, tsr::attr::kName);
        std::string reason;
        for (auto [j, p] : llvm::enumerate(*frozenPatterns))
          if (p.match(name)) {
            used[j] = true;
            if (reason.empty())
              reason = "--freeze=" + frozen[j];
          }
        bool selected = trainable.empty();
        for (auto [j, p] : llvm::enumerate(*trainablePatterns))
          if (p.match(name))
            selected = usedTrainable[j] = true;
        if (reason.empty() && !selected)
          reason = "matches no --trainable pattern";
        if (reason.empty())
          wrt.push_back(i);
        else
          reasons.set(name, b.getStringAttr(reason));
        continue;
      }
      if (wrtInputs && getArgRole(f, i) == tsr::Role::data &&
          isFloatTensor(f.getArgument(i).getType()))
        wrt.push_back(i);
    }
    for (auto [j, p] : llvm::enumerate(frozen))
      if (!used[j])
        return f.emitError("frozen-parameter pattern '")
               << p << "' matches no parameter";
    for (auto [j, p] : llvm::enumerate(trainable))
      if (!usedTrainable[j])
        return f.emitError("trainable-parameter pattern '")
               << p << "' matches no parameter";
    if (!reasons.empty())
      f->setAttr(tsr::attr::kFrozen, reasons.getDictionary(f.getContext()));
    return wrt;
  }

  LogicalResult differentiate(func::FuncOp f) {
    if (!f.getBody().hasOneBlock())
      return f.emitError("tsr-autodiff expects a single-block function");
    Block &body = f.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    // Results after the loss are state updates (tsr.updates) and metrics,
    // carried along.
    unsigned numResults = ret.getNumOperands();
    bool auxOnly = true;
    for (unsigned i = 1; i < numResults; ++i)
      auxOnly &=
          f.getResultAttr(i, tsr::attr::kUpdates) || isMetricResult(f, i);
    if (numResults == 0 || !auxOnly ||
        cast<RankedTensorType>(ret.getOperand(0).getType()).getRank() != 0 ||
        !isFloatTensor(ret.getOperand(0).getType()))
      return f.emitError("tsr-autodiff expects the function to return one "
                         "scalar floating-point loss, got ")
             << numResults << " result(s) (tsr-append-loss makes a loss)";
    FailureOr<SmallVector<unsigned>> wrt = selectArguments(f);
    if (failed(wrt))
      return failure();

    Value loss = ret.getOperand(0);
    llvm::DenseMap<Value, Value> adjoints;
    OpBuilder b(f.getContext());
    b.setInsertionPoint(ret);
    // A function partitioned over mesh axes (tsr-sharding-partition) has
    // the same loss on each of their N ranks. Its gradients are those of
    // the sum of every rank's loss (the collectives' rules), so the seed is
    // 1/N, and an argument that is not split over those axes gets the sum
    // of every rank's share of its gradient.
    SmallVector<StringRef> partitioned;
    if (auto axes = f->getAttrOfType<ArrayAttr>(tsr::attr::kPartitioned))
      for (Attribute a : axes)
        partitioned.push_back(cast<StringAttr>(a).getValue());
    int64_t replicas = 1;
    if (!partitioned.empty()) {
      FailureOr<int64_t> n = tsr::getMeshGroupSize(f, partitioned);
      if (failed(n))
        return failure();
      replicas = *n;
    }
    {
      GradientBuilder seed(b, loss.getLoc());
      adjoints[loss] = seed.scalarLike(loss, 1.0 / double(replicas));
    }

    SmallVector<Operation *> forward;
    for (Operation &op : body.without_terminator())
      forward.push_back(&op);
    for (Operation *op : llvm::reverse(forward)) {
      SmallVector<Value> resultGrads;
      bool reached = false;
      for (Value r : op->getResults()) {
        resultGrads.push_back(adjoints.lookup(r));
        reached |= resultGrads.back() != nullptr;
      }
      if (!reached)
        continue;
      auto rule = dyn_cast<tsr::DifferentiableOpInterface>(op);
      if (!rule) {
        if (llvm::none_of(op->getOperandTypes(), isFloatTensor))
          continue;
        return op->emitOpError("is on the path to the loss but has no "
                               "gradient rule");
      }
      Location gradLoc =
          FusedLoc::get(f.getContext(), {op->getLoc()},
                        StringAttr::get(f.getContext(), "tsr.grad"));
      BackwardListener listener(gradLoc, op);
      b.setListener(&listener);
      SmallVector<Value> operandGrads;
      LogicalResult built = rule.buildGradients(b, resultGrads, operandGrads);
      b.setListener(nullptr);
      if (failed(built))
        return failure();
      for (auto [operand, grad] :
           llvm::zip_first(op->getOperands(), operandGrads)) {
        if (!grad)
          continue;
        if (grad.getType() != operand.getType())
          return op->emitOpError("gradient rule produced ")
                 << grad.getType() << " for an operand of type "
                 << operand.getType();
        Value &acc = adjoints[operand];
        if (!acc) {
          acc = grad;
          continue;
        }
        b.setListener(&listener);
        acc = tsr::AddOp::create(b, gradLoc, acc, grad);
        b.setListener(nullptr);
      }
    }

    SmallVector<Value> results{loss};
    for (unsigned i : *wrt) {
      BlockArgument arg = f.getArgument(i);
      Value grad = adjoints.lookup(arg);
      if (!grad) {
        // The parameter does not reach the loss: its gradient is zero.
        GradientBuilder zeros(b, arg.getLoc());
        grad = zeros.splat(cast<RankedTensorType>(arg.getType()), 0.0);
      } else if (!partitioned.empty()) {
        SmallVector<StringRef> whole(partitioned);
        if (auto sharding =
                f.getArgAttrOfType<tsr::ShardingAttr>(i, tsr::attr::kSharding))
          for (Attribute dim : sharding.getDims())
            for (Attribute a : cast<ArrayAttr>(dim))
              llvm::erase(whole, cast<StringAttr>(a).getValue());
        if (!whole.empty()) {
          grad = tsr::AllReduceOp::create(
              b, arg.getLoc(), grad, tsr::CollectiveReduction::sum,
              b.getStrArrayAttr(whole),
              b.getStrArrayAttr({getArgString(f, i, tsr::attr::kName)}));
          grad.getDefiningOp()->setAttr(tsr::attr::kBackward, b.getUnitAttr());
          grad.getDefiningOp()->setAttr(
              tsr::attr::kReason,
              b.getStringAttr(("'" + getArgString(f, i, tsr::attr::kName) +
                               "' is whole on every rank of " +
                               llvm::join(whole, ", ") +
                               ": its gradient is the sum of their shares")
                                  .str()));
        }
      }
      results.push_back(grad);
    }
    SmallVector<DictionaryAttr> auxAttrs;
    for (unsigned i = 1; i < numResults; ++i) {
      results.push_back(ret.getOperand(i));
      auxAttrs.push_back(f.getResultAttrDict(i));
    }
    func::ReturnOp::create(b, ret.getLoc(), results);
    DictionaryAttr lossAttrs = f.getResultAttrDict(0);
    if (!lossAttrs)
      lossAttrs = b.getDictionaryAttr({});
    ret.erase();

    SmallVector<Type> resultTypes;
    for (Value v : results)
      resultTypes.push_back(v.getType());
    f.setType(b.getFunctionType(f.getArgumentTypes(), resultTypes));
    SmallVector<DictionaryAttr> resultAttrs{lossAttrs};
    for (unsigned i : *wrt) {
      std::string name = ("grad." + getArgString(f, i, tsr::attr::kName)).str();
      resultAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(tsr::attr::kName, b.getStringAttr(name)),
           b.getNamedAttr(tsr::attr::kRole,
                          tsr::RoleAttr::get(b.getContext(), tsr::Role::grad)),
           b.getNamedAttr(tsr::attr::kGradOf, b.getI64IntegerAttr(i))}));
    }
    resultAttrs.append(auxAttrs);
    f.setAllResultAttrs(resultAttrs);
    return success();
  }
};

} // namespace

FailureOr<func::FuncOp> mlir::tessera::getTrainingFunction(ModuleOp module,
                                                           StringRef pass,
                                                           StringRef function) {
  if (!function.empty()) {
    auto f = module.lookupSymbol<func::FuncOp>(function);
    if (!f || f.isExternal())
      return module.emitError()
             << pass << ": the module has no function @" << function
             << " with a body to rewrite (option function=" << function << ")";
    return f;
  }
  SmallVector<func::FuncOp> funcs;
  for (auto f : module.getOps<func::FuncOp>())
    if (f.isPublic() && !f.isExternal())
      funcs.push_back(f);
  if (funcs.size() != 1)
    return module.emitError()
           << pass << " expects exactly one public function, found "
           << funcs.size() << " (name one with the option function=NAME)";
  return funcs.front();
}

StringRef mlir::tessera::getArgString(func::FuncOp f, unsigned i,
                                      StringRef attr) {
  if (auto s = f.getArgAttrOfType<StringAttr>(i, attr))
    return s.getValue();
  return "";
}

tsr::Role mlir::tessera::getArgRole(func::FuncOp f, unsigned i) {
  if (auto role = f.getArgAttrOfType<tsr::RoleAttr>(i, tsr::attr::kRole))
    return role.getValue();
  return tsr::Role::data;
}

FailureOr<BlockArgument> mlir::tessera::getOrAddRngArgument(func::FuncOp f) {
  for (BlockArgument arg : f.getArguments())
    if (getArgRole(f, arg.getArgNumber()) == tsr::Role::rng)
      return arg;
  Builder b(f.getContext());
  unsigned index = f.getNumArguments();
  if (failed(f.insertArgument(
          index, RankedTensorType::get({}, b.getI64Type()),
          b.getDictionaryAttr(
              {b.getNamedAttr(tsr::attr::kName, b.getStringAttr("rng.step")),
               b.getNamedAttr(
                   tsr::attr::kRole,
                   tsr::RoleAttr::get(b.getContext(), tsr::Role::rng))}),
          f.getLoc())))
    return failure();
  return f.getArgument(index);
}

bool mlir::tessera::isMetricResult(func::FuncOp f, unsigned i) {
  auto role = f.getResultAttrOfType<tsr::RoleAttr>(i, tsr::attr::kRole);
  return role && role.getValue() == tsr::Role::metric;
}

StringRef mlir::tessera::getResultString(func::FuncOp f, unsigned i,
                                         StringRef attr) {
  if (auto s = f.getResultAttrOfType<StringAttr>(i, attr))
    return s.getValue();
  return "";
}
