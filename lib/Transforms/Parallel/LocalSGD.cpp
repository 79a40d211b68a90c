//===- LocalSGD.cpp - Average the ranks' parameters every H steps ---------===//
//
// Local SGD (periodic averaging): the data-parallel ranks reduce no
// gradient; each applies its own update, and every H steps (or on a step
// the runtime marks `sync`) the parameters and the optimizer state are
// averaged over the ranks. The average is an `scf.if` around asynchronous
// all-reduces, so the steps in between send nothing.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Parallel/Passes.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/GradientRules.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "tessera/Transforms/Parallel/Sharding.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRLOCALSGD
#include "tessera/Transforms/Parallel/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// The name of the step input the runtime sets to 1 where the ranks'
/// parameters must agree after the step.
constexpr llvm::StringLiteral kSyncInput = "local_sgd.sync";

struct TsrLocalSGDPass : tessera::impl::TsrLocalSGDBase<TsrLocalSGDPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f) || failed(run(*f)))
      signalPassFailure();
  }

  LogicalResult run(func::FuncOp f) {
    auto period = f->getAttrOfType<IntegerAttr>(tsr::attr::kLocalSteps);
    if (!period)
      return f.emitError("tsr-local-sgd needs the function's "
                         "tsr.local_steps (tsr-data-parallel-plan "
                         "local-steps=H)");
    if (bucketBytes < 1)
      return f.emitError("bucket-bytes must be positive");
    DataParallelLayout layout = getDataParallelLayout(f);
    if (!layout.axes)
      return f.emitError("tsr-local-sgd needs the data-parallel layout "
                         "(tsr.zero) that tsr-data-parallel-plan writes");
    for (BlockArgument arg : f.getArguments())
      if (getArgRole(f, arg.getArgNumber()) == tsr::Role::sync)
        return f.emitError("the step already has a sync input ('")
               << getArgString(f, arg.getArgNumber(), tsr::attr::kName)
               << "'): tsr-local-sgd ran twice";

    // What the ranks average: every float parameter and state the step
    // updates. The step counter (an integer) is the same on every rank.
    auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
    SmallVector<unsigned> averaged;
    Value counter;
    for (unsigned i = 0, e = f.getNumResults(); i < e; ++i) {
      auto updates = f.getResultAttrOfType<IntegerAttr>(i, tsr::attr::kUpdates);
      if (!updates)
        continue;
      Type elem = getElementTypeOrSelf(ret.getOperand(i).getType());
      if (isa<FloatType>(elem)) {
        averaged.push_back(i);
        continue;
      }
      if (getArgString(f, updates.getInt(), tsr::attr::kName) == "step" &&
          getArgRole(f, updates.getInt()) == tsr::Role::state)
        counter = ret.getOperand(i);
    }
    if (!counter)
      return f.emitError("tsr-local-sgd needs the optimizer's step counter "
                         "(the state 'step' that tsr-optimizer adds)");
    if (averaged.empty())
      return f.emitError("tsr-local-sgd: the step updates no float "
                         "parameter or state");

    Builder attrs(f.getContext());
    unsigned syncIndex = f.getNumArguments();
    if (failed(f.insertArgument(
            syncIndex, RankedTensorType::get({}, attrs.getI64Type()),
            attrs.getDictionaryAttr(
                {attrs.getNamedAttr(tsr::attr::kName,
                                    attrs.getStringAttr(kSyncInput)),
                 attrs.getNamedAttr(
                     tsr::attr::kRole,
                     tsr::RoleAttr::get(f.getContext(), tsr::Role::sync))}),
            f.getLoc())))
      return failure();
    Value sync = f.getArgument(syncIndex);

    int64_t h = period.getInt();
    OpBuilder b(ret);
    Location loc = NameLoc::get(b.getStringAttr("local_sgd"), ret.getLoc());
    GradientBuilder g(b, loc);
    // Due after step t (1-based, the counter's new value) when H divides t
    // or the runtime asks.
    auto i64 = cast<RankedTensorType>(counter.getType());
    Value remainder = tsr::ModOp::create(b, loc, counter, g.splat(i64, h),
                                         b.getBoolAttr(false));
    Value due = tsr::OrOp::create(b, loc, g.equal(remainder, g.splat(i64, 0)),
                                  g.equal(sync, g.splat(i64, 1)));
    Value cond = tensor::ExtractOp::create(b, loc, due, ValueRange{});

    SmallVector<Type> types;
    SmallVector<Value> local;
    for (unsigned i : averaged) {
      local.push_back(ret.getOperand(i));
      types.push_back(local.back().getType());
    }
    // Both branches yield buffers of their own (the other steps' a copy).
    auto own = [&](OpBuilder &builder, Value v) {
      return ownedCopy(builder, loc, v);
    };
    auto ifOp = scf::IfOp::create(b, loc, types, cond, /*withElse=*/true);
    OpBuilder otherwise = OpBuilder::atBlockBegin(ifOp.elseBlock());
    SmallVector<Value> copies;
    for (Value v : local)
      copies.push_back(own(otherwise, v));
    scf::YieldOp::create(otherwise, loc, copies);

    // The average: buckets of at most bucket-bytes (a larger tensor alone),
    // one element type each, started together and waited for together.
    b.setInsertionPointToStart(ifOp.thenBlock());
    GradientBuilder t(b, loc);
    SmallVector<SmallVector<unsigned>> buckets;
    int64_t bytes = 0;
    Type elem;
    for (auto [k, v] : llvm::enumerate(local)) {
      auto type = cast<RankedTensorType>(v.getType());
      int64_t size = type.getNumElements() * type.getElementTypeBitWidth() / 8;
      if (buckets.empty() || elem != type.getElementType() ||
          bytes + size > bucketBytes) {
        buckets.emplace_back();
        bytes = 0;
        elem = type.getElementType();
      }
      bytes += size;
      buckets.back().push_back(k);
    }
    auto mean = tsr::CollectiveReductionAttr::get(
        f.getContext(), tsr::CollectiveReduction::mean);
    std::string reason = "local SGD: the ranks' average every " +
                         std::to_string(h) +
                         " steps (and on a step the runtime marks sync)";
    SmallVector<Operation *> started;
    for (ArrayRef<unsigned> bucket : buckets) {
      SmallVector<Value> pieces;
      SmallVector<StringRef> serves;
      for (unsigned k : bucket) {
        auto type = cast<RankedTensorType>(local[k].getType());
        pieces.push_back(t.reshape(local[k], {type.getNumElements()}));
        serves.push_back(getResultString(f, averaged[k], tsr::attr::kName));
      }
      Value flat = pieces.front();
      if (pieces.size() > 1)
        flat = tsr::ConcatOp::create(b, loc, pieces, b.getI64IntegerAttr(0));
      auto start = tsr::AllReduceOp::create(
          b, loc, flat.getType(), flat, mean, layout.axes,
          b.getStrArrayAttr(serves), IntegerAttr(), IntegerAttr(),
          b.getUnitAttr());
      start->setAttr(tsr::attr::kReason, b.getStringAttr(reason));
      start->setAttr(tsr::attr::kLocalSteps, period);
      started.push_back(start);
    }
    SmallVector<Value> results(local.size());
    for (auto [bucket, start] : llvm::zip(buckets, started)) {
      Value reduced = tsr::WaitOp::create(b, loc, start->getResult(0).getType(),
                                          start->getResult(0));
      int64_t offset = 0;
      for (unsigned k : bucket) {
        auto type = cast<RankedTensorType>(local[k].getType());
        int64_t n = type.getNumElements();
        Value piece = reduced;
        if (bucket.size() > 1)
          piece = t.slice(reduced, {offset}, {offset + n}, {1});
        offset += n;
        results[k] = own(b, t.reshape(piece, type.getShape()));
      }
    }
    scf::YieldOp::create(b, loc, results);

    for (auto [k, i] : llvm::enumerate(averaged))
      ret.setOperand(i, ifOp.getResult(k));
    return success();
  }
};

} // namespace
