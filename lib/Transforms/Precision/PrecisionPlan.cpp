//===- PrecisionPlan.cpp - Decide each op's compute type ------------------===//
//
// The rules are in the pass's description (Passes.td). They are written over
// the op classes of the tsr dialect, not over names, so an op added to the
// dialect without a rule computes in f32 until someone decides otherwise.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Precision/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "llvm/Support/GlobPattern.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRPRECISIONPLAN
#include "tessera/Transforms/Precision/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

bool isFloatTensor(Type t) { return isa<FloatType>(getElementTypeOrSelf(t)); }

/// Ops that compute in the low type (their lowering accumulates in f32).
bool isContraction(Operation *op) {
  return isa<tsr::MatMulOp, tsr::ConvOp>(op);
}

/// Ops whose lowering computes in f32 inside and rounds its results once
/// to the type it stores them in, with the rule's words.
StringRef widenedRule(Operation *op) {
  if (isa<tsr::SoftmaxOp, tsr::LogSoftmaxOp>(op))
    return "softmax: f32 arithmetic inside, stored in its input's type";
  if (isa<tsr::LayerNormOp>(op))
    return "layer norm: f32 arithmetic inside, stored in its input's type";
  return "";
}

/// Ops that need f32's range or sum many terms, with the rule's words.
StringRef sensitiveRule(Operation *op) {
  if (isa<tsr::BatchNormOp>(op))
    return "normalization: f32 (mean and variance accumulate)";
  if (isa<tsr::ReduceSumOp, tsr::ReduceMeanOp, tsr::ReduceProdOp,
          tsr::CumSumOp>(op))
    return "reduction: f32 (accumulation)";
  if (isa<tsr::SoftmaxCrossEntropyLossOp, tsr::NegativeLogLikelihoodLossOp>(op))
    return "loss: f32";
  if (isa<tsr::ExpOp, tsr::LogOp, tsr::PowOp, tsr::SqrtOp, tsr::ReciprocalOp,
          tsr::SoftplusOp>(op))
    return "exp/log/pow/sqrt/reciprocal/softplus: f32 (range)";
  return "";
}

/// Elementwise and data-movement ops: they compute in their inputs' type.
bool follows(Operation *op) {
  if (op->hasTrait<OpTrait::Elementwise>() && !isa<tsr::CastOp>(op))
    return true;
  return isa<tsr::AddOp, tsr::SubOp, tsr::MulOp, tsr::DivOp, tsr::MaxOp,
             tsr::MinOp, tsr::ModOp, tsr::PReluOp, tsr::EqualOp, tsr::LessOp,
             tsr::LessEqualOp, tsr::GreaterOp, tsr::GreaterEqualOp,
             tsr::WhereOp, tsr::ReshapeOp, tsr::TransposeOp, tsr::BroadcastOp,
             tsr::ConcatOp, tsr::SliceOp, tsr::GatherOp, tsr::GatherElementsOp,
             tsr::PadOp, tsr::TileOp, tsr::TriluOp, tsr::DropoutOp,
             tsr::StopGradientOp, tsr::ReduceMaxOp, tsr::ReduceMinOp,
             tsr::ArgMaxOp, tsr::ArgMinOp, tsr::AllReduceOp,
             tsr::ReduceScatterOp, tsr::AllGatherOp, tsr::AllToAllOp,
             tsr::BroadcastFromOp, tsr::WaitOp, tsr::LocalShardOp>(op);
}

struct TsrPrecisionPlanPass
    : tessera::impl::TsrPrecisionPlanBase<TsrPrecisionPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (precision == "fp32")
      return;
    if (precision != "bf16" && precision != "fp16") {
      module.emitError("unknown precision '")
          << precision << "' (expected fp32, bf16 or fp16)";
      return signalPassFailure();
    }
    SmallVector<llvm::GlobPattern> globs;
    for (const std::string &text : keepFp32) {
      llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(text);
      if (!glob) {
        module.emitError("--keep-fp32 '")
            << text << "': " << llvm::toString(glob.takeError());
        return signalPassFailure();
      }
      globs.push_back(std::move(*glob));
    }
    FailureOr<func::FuncOp> f =
        getTrainingFunction(module, getArgument(), function);
    if (failed(f))
      return signalPassFailure();
    plan(*f, globs);
  }

  void plan(func::FuncOp f, ArrayRef<llvm::GlobPattern> globs) {
    Builder b(f.getContext());
    Type f32 = b.getF32Type();
    Type low = precision == "bf16" ? Type(b.getBF16Type()) : b.getF16Type();
    StringRef lowName = precision == "bf16" ? "bf16" : "f16";
    auto matches = [&](StringRef name) {
      return !name.empty() &&
             llvm::any_of(globs, [&](const auto &g) { return g.match(name); });
    };
    // Values computed from parameters and constants alone (a causal mask,
    // a transposed tied embedding): they adapt to their users as
    // parameters do.
    DenseSet<Value> derived;
    // The name of the parameter (or other non-data argument) `v` is, or
    // nullopt if `v` is an activation: an op's result or a data input.
    auto adaptable = [&](Value v) -> std::optional<StringRef> {
      if (derived.contains(v))
        return StringRef();
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        if (arg.getOwner() != &f.getBody().front())
          return std::nullopt;
        tsr::Role role = getArgRole(f, arg.getArgNumber());
        if (role == tsr::Role::data || role == tsr::Role::label)
          return std::nullopt;
        return getArgString(f, arg.getArgNumber(), tsr::attr::kName);
      }
      if (v.getDefiningOp() &&
          v.getDefiningOp()->hasTrait<OpTrait::ConstantLike>())
        return StringRef();
      return std::nullopt;
    };
    // The type each planned value will have.
    DenseMap<Value, Type> planned;
    auto typeOf = [&](Value v) {
      auto it = planned.find(v);
      return it != planned.end() ? it->second
                                 : getElementTypeOrSelf(v.getType());
    };
    f.walk([&](Operation *op) {
      if (!isa<tsr::TsrDialect>(op->getDialect()) ||
          isa<tsr::CastOp, tsr::ConstantOp>(op))
        return;
      if (op->getNumOperands() && op->getNumRegions() == 0 &&
          llvm::all_of(op->getOperands(),
                       [&](Value v) { return bool(adaptable(v)); }))
        derived.insert(op->result_begin(), op->result_end());
      if (!llvm::any_of(op->getOperandTypes(), isFloatTensor) &&
          !llvm::any_of(op->getResultTypes(), isFloatTensor))
        return;
      Type chosen = f32;
      std::string reason;
      std::string node = tsr::getNodeName(op->getLoc());
      std::optional<StringRef> keptParam;
      for (Value operand : op->getOperands())
        if (std::optional<StringRef> name = adaptable(operand);
            name && matches(*name))
          keptParam = *name;
      if (matches(node)) {
        reason = "--keep-fp32 matches node '" + node + "'";
      } else if (keptParam) {
        reason = ("--keep-fp32 matches parameter '" + *keptParam + "'").str();
      } else if (isContraction(op)) {
        chosen = low;
        reason = (op->getName().stripDialect() + ": " + lowName +
                  " operands, f32 accumulation")
                     .str();
      } else if (StringRef rule = sensitiveRule(op); !rule.empty()) {
        reason = rule.str();
      } else if (StringRef widened = widenedRule(op);
                 !widened.empty() || follows(op)) {
        // The widest type among the activation operands (f32 if none).
        bool any = false;
        for (Value operand : op->getOperands()) {
          if (!isFloatTensor(operand.getType()) || adaptable(operand))
            continue;
          Type t = typeOf(operand);
          if (!any ||
              t.getIntOrFloatBitWidth() > chosen.getIntOrFloatBitWidth())
            chosen = t;
          any = true;
        }
        // Only the types the policy uses: an f64 model keeps its ops.
        if (chosen != low && chosen != f32)
          return;
        auto gather = dyn_cast<tsr::GatherOp>(op);
        std::optional<StringRef> table =
            gather ? adaptable(gather.getData()) : std::nullopt;
        if (!widened.empty()) {
          reason = widened.str();
        } else if (!any && table && !table->empty()) {
          // An embedding lookup reads the table's working copy, so the
          // residual stream it starts is stored in the low type (as
          // Megatron's bf16 training does; PyTorch's autocast keeps it
          // f32, which --keep-fp32 on this node reproduces).
          chosen = low;
          reason = "embedding lookup: " + lowName.str() +
                   " rows of the table's working copy";
        } else {
          reason = any ? "follows its activation operands"
                       : "follows its operands: no activation operand, f32";
        }
      } else {
        reason = "no " + lowName.str() + " rule for this op: f32";
      }
      // A model that computes in f64 (or already in the low type) keeps
      // what it wrote.
      if (llvm::any_of(op->getResultTypes(), [&](Type t) {
            Type e = getElementTypeOrSelf(t);
            return isa<FloatType>(e) && e != f32;
          }))
        return;
      op->setAttr(tsr::attr::kPrecision,
                  b.getStringAttr(chosen == low ? lowName : "f32"));
      op->setAttr(tsr::attr::kReason, b.getStringAttr(reason));
      for (Value r : op->getResults())
        if (isFloatTensor(r.getType()))
          planned[r] = chosen;
    });
    f->setAttr(tsr::attr::kPrecision, b.getStringAttr(precision));
  }
};

} // namespace
