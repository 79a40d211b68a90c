//===- DataParallel.cpp - Apply a data-parallel step's layout -------------===//
//
// The rewrite half of data parallelism: reads the layout that
// tsr-data-parallel-plan wrote (`tsr.zero`, and `tsr.bucket` on every
// gradient) and makes the function one rank's part of the step, with
// collectives that name what they serve.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Parallel/Passes.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "tessera/Transforms/Parallel/Compression.h"
#include "tessera/Transforms/Parallel/Sharding.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRDATAPARALLEL
#include "tessera/Transforms/Parallel/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

using Gradient = GradientResult;

bool isBackward(Operation *op) { return op->hasAttr(tsr::attr::kBackward); }

struct TsrDataParallelPass
    : tessera::impl::TsrDataParallelBase<TsrDataParallelPass> {
  using Base::Base;

  func::FuncOp func;
  /// N, the ranks of the data-parallel group, the group's axes and the
  /// ZeRO stage, from the function's `tsr.zero`.
  int64_t dp = 1, zero = 0;
  ArrayAttr axes;
  tsr::CollectiveReductionAttr mean, sum;
  /// A loss that ignores some labels: its mean has a different count on
  /// every rank (null if the loss has none).
  Operation *countedLoss = nullptr;
  /// The type gradient buckets are reduced in (`reduce-type`), or null.
  FloatType reduced16;
  /// For a counted loss, this rank's weight in the global mean:
  /// N * count / total count (a scalar of the loss's type).
  Value rankWeight;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f))
      return signalPassFailure();
    func = *f;
    if (reduceType == "bf16")
      reduced16 = BFloat16Type::get(&getContext());
    else if (reduceType == "f16")
      reduced16 = Float16Type::get(&getContext());
    else if (!reduceType.empty()) {
      func.emitError("reduce-type '")
          << reduceType << "' is not bf16 or f16 (or empty: the gradients' "
          << "own type)";
      return signalPassFailure();
    }
    if (failed(run()))
      signalPassFailure();
  }

  StringRef nameOf(BlockArgument arg) {
    return getArgString(func, arg.getArgNumber(), tsr::attr::kName);
  }

  /// The weight of this rank in the global mean of a counted loss:
  /// N * count / (sum of the counts of all ranks), where count is the
  /// number of labels not ignored. Placed right after the loss.
  Value buildRankWeight(OpBuilder &b) {
    b.setInsertionPointAfter(countedLoss);
    GradientBuilder g(
        b, NameLoc::get(b.getStringAttr("loss.count"), countedLoss->getLoc()));
    Value target = countedLoss->getOperand(1);
    auto targetType = cast<RankedTensorType>(target.getType());
    Type elem = getElementTypeOrSelf(countedLoss->getResult(0).getType());
    int64_t ignore =
        countedLoss->getAttrOfType<IntegerAttr>("ignore_index").getInt();
    Value ignored = g.equal(
        target, g.splat(RankedTensorType::get({}, targetType.getElementType()),
                        double(ignore)));
    Value counted = g.select(ignored, g.scalar(elem, 0.0), g.scalar(elem, 1.0));
    Value count = g.reduceSum(
        counted, llvm::to_vector(llvm::seq<int64_t>(0, targetType.getRank())),
        /*keepdims=*/false);
    Value total = tsr::AllReduceOp::create(
        b, g.getLoc(), count.getType(), count, sum, axes,
        b.getStrArrayAttr({"loss"}), IntegerAttr(), IntegerAttr(), UnitAttr());
    return g.div(g.mul(g.scalar(elem, double(dp)), count), total);
  }

  /// `v` times this rank's weight; zero on a rank that counts no label
  /// (whose own mean is 0/0).
  Value weigh(GradientBuilder &g, Value v) {
    if (!rankWeight)
      return v;
    Type elem = getElementTypeOrSelf(v.getType());
    Value w = g.castTo(rankWeight, elem);
    return g.select(g.greater(w, g.scalar(elem, 0.0)), g.mul(v, w),
                    g.scalar(elem, 0.0));
  }

  LogicalResult run() {
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    if (func.getNumResults() == 0)
      return func.emitError("tsr-data-parallel expects the loss as result 0");
    if (!func->getAttrOfType<tsr::ZeroAttr>(tsr::attr::kZero))
      return func.emitError("tsr-data-parallel needs the layout that "
                            "tsr-data-parallel-plan writes (tsr.zero)");
    DataParallelLayout layout = getDataParallelLayout(func);
    dp = layout.size;
    zero = layout.zero;
    axes = layout.axes;
    MLIRContext *ctx = func.getContext();
    mean =
        tsr::CollectiveReductionAttr::get(ctx, tsr::CollectiveReduction::mean);
    sum = tsr::CollectiveReductionAttr::get(ctx, tsr::CollectiveReduction::sum);
    SmallVector<unsigned> carried;
    SmallVector<Gradient> grads = getGradientResults(func, carried);
    if (dp > 1) {
      FailureOr<Operation *> counted = getCountedLoss(func);
      if (failed(counted))
        return failure();
      countedLoss = *counted;
    }

    // The loss of the global batch: the mean of the ranks' means, each
    // weighted by its share of the counted labels if the loss ignores some.
    OpBuilder b(ctx);
    if (countedLoss)
      rankWeight = buildRankWeight(b);
    b.setInsertionPoint(ret);
    GradientBuilder lossBuilder(b, ret.getLoc());
    Value loss = weigh(lossBuilder, ret.getOperand(0));
    Value globalLoss = tsr::AllReduceOp::create(
        b, ret.getLoc(), loss.getType(), loss, mean, axes,
        b.getStrArrayAttr({"loss"}), IntegerAttr(), IntegerAttr(), UnitAttr());
    ret.setOperand(0, globalLoss);
    // A metric counts the rank's samples: the step's is the sum.
    for (unsigned i = 1, e = func.getNumResults(); i < e; ++i) {
      if (!isMetricResult(func, i))
        continue;
      Value local = ret.getOperand(i);
      ret.setOperand(i, tsr::AllReduceOp::create(
                            b, ret.getLoc(), local.getType(), local, sum, axes,
                            b.getStrArrayAttr(
                                {getResultString(func, i, tsr::attr::kName)}),
                            IntegerAttr(), IntegerAttr(), UnitAttr()));
    }

    // Local SGD: every rank keeps its own gradients; tsr-local-sgd
    // averages what they update instead.
    if (func->hasAttr(tsr::attr::kLocalSteps))
      return success();
    if (failed(reduceGradients(grads, ret)))
      return failure();
    if (zero == 3)
      shardParameters(grads);
    return success();
  }

  /// The planned buckets, each reduced right after its last gradient.
  LogicalResult reduceGradients(MutableArrayRef<Gradient> grads,
                                func::ReturnOp ret) {
    llvm::stable_sort(grads, [](const Gradient &a, const Gradient &b) {
      return a.position < b.position;
    });
    bool scatter = zero >= 2;
    SmallVector<SmallVector<Gradient *>> buckets;
    for (Gradient &g : grads) {
      auto index =
          func.getResultAttrOfType<IntegerAttr>(g.result, tsr::attr::kBucket);
      if (!index || index.getInt() < 0)
        return func.emitError("gradient result ")
               << g.result << " has no tsr.bucket (run tsr-data-parallel-plan)";
      if (buckets.size() <= size_t(index.getInt()))
        buckets.resize(index.getInt() + 1);
      buckets[index.getInt()].push_back(&g);
      func.removeResultAttr(
          g.result, StringAttr::get(func.getContext(), tsr::attr::kBucket));
    }
    for (auto [index, bucket] : llvm::enumerate(buckets)) {
      if (bucket.empty())
        return func.emitError("tsr.bucket ") << index << " holds no gradient";
      Type elem = getElementTypeOrSelf(bucket.front()->value.getType());
      auto spec = func.getResultAttrOfType<StringAttr>(bucket.front()->result,
                                                       tsr::attr::kCompression);
      for (Gradient *grad : bucket) {
        if (getElementTypeOrSelf(grad->value.getType()) != elem)
          return func.emitError("tsr.bucket ")
                 << index << " mixes element types " << elem << " and "
                 << getElementTypeOrSelf(grad->value.getType());
        if (func.getResultAttrOfType<StringAttr>(
                grad->result, tsr::attr::kCompression) != spec)
          return func.emitError("tsr.bucket ")
                 << index << " mixes compressed and other gradients";
      }
      if (spec) {
        if (failed(reduceCompressed(bucket, index, spec, ret)))
          return failure();
        continue;
      }
      Operation *last = nullptr;
      for (Gradient *g : bucket)
        if (Operation *def = g->value.getDefiningOp())
          if (!last || last->isBeforeInBlock(def))
            last = def;
      // A counted loss's weights come after the loss.
      if (rankWeight &&
          (!last || last->isBeforeInBlock(rankWeight.getDefiningOp())))
        last = rankWeight.getDefiningOp();
      OpBuilder b(ret);
      if (last && last->getBlock() == ret->getBlock())
        b.setInsertionPointAfter(last);
      Location loc = NameLoc::get(
          b.getStringAttr("bucket" + std::to_string(index)), ret.getLoc());
      GradientBuilder g(b, loc);
      SmallVector<StringRef> serves;
      for (Gradient *grad : bucket)
        serves.push_back(nameOf(grad->param));
      ArrayAttr servesAttr = b.getStrArrayAttr(serves);
      IntegerAttr bucketAttr = b.getI64IntegerAttr(index);

      // Flat pieces: [n] for all-reduce; [N, c] blocks for reduce-scatter.
      SmallVector<Value> pieces;
      SmallVector<int64_t> widths;
      for (Gradient *grad : bucket) {
        auto type = cast<RankedTensorType>(grad->value.getType());
        Value value = weigh(g, grad->value);
        if (scatter) {
          int64_t c = getShardSize(type.getNumElements(), dp);
          pieces.push_back(g.reshape(flattenPadded(g, value, dp), {dp, c}));
          widths.push_back(c);
        } else {
          pieces.push_back(g.reshape(value, {type.getNumElements()}));
          widths.push_back(type.getNumElements());
        }
      }
      int64_t total = 0;
      for (int64_t w : widths)
        total += w;
      Value flat = pieces.front();
      if (pieces.size() > 1)
        flat = tsr::ConcatOp::create(b, loc, pieces,
                                     b.getI64IntegerAttr(scatter ? 1 : 0));
      // Reduced in the narrower type, if one is asked for: divided by N
      // before the cast and summed, so that the partial sums stay within
      // the range of the mean (fp16 overflows where the f32 sum would
      // not; DeepSpeed's gradient pre-division).
      Type wire = elem;
      tsr::CollectiveReductionAttr reduction = mean;
      if (reduced16 && isa<FloatType>(elem) &&
          cast<FloatType>(elem).getWidth() > reduced16.getWidth()) {
        wire = reduced16;
        flat = g.castTo(g.mul(flat, g.scalar(elem, 1.0 / double(dp))), wire);
        reduction = sum;
      }
      // The bucket starts here, asynchronously; it is waited for (and
      // unpacked) only before the return, where the optimizer update goes,
      // so the rest of the backward pass runs while it is in flight.
      Operation *start;
      if (scatter) {
        flat = g.reshape(flat, {dp * total});
        start = tsr::ReduceScatterOp::create(
            b, loc, RankedTensorType::get({total}, wire), flat, reduction,
            b.getI64IntegerAttr(0), axes, servesAttr, bucketAttr, IntegerAttr(),
            b.getUnitAttr());
      } else {
        start = tsr::AllReduceOp::create(
            b, loc, flat.getType(), flat, reduction, axes, servesAttr,
            bucketAttr, IntegerAttr(), b.getUnitAttr());
      }
      b.setInsertionPoint(ret);
      Value reduced = tsr::WaitOp::create(b, loc, start->getResult(0).getType(),
                                          start->getResult(0));
      if (wire != elem)
        reduced = g.castTo(reduced, elem);
      int64_t offset = 0;
      for (auto [grad, width] : llvm::zip(bucket, widths)) {
        Value piece = reduced;
        if (bucket.size() > 1)
          piece = g.slice(reduced, {offset}, {offset + width}, {1});
        offset += width;
        if (!scatter)
          piece = g.reshape(
              piece, cast<RankedTensorType>(grad->value.getType()).getShape());
        ret.setOperand(grad->result, piece);
        if (scatter)
          func.setResultAttr(grad->result, tsr::attr::kShards,
                             b.getI64IntegerAttr(dp));
      }
    }
    SmallVector<Type> types;
    for (Value v : ret.getOperands())
      types.push_back(v.getType());
    func.setType(
        FunctionType::get(func.getContext(), func.getArgumentTypes(), types));
    return success();
  }

  /// Right after `grad` is computed (and after a counted loss's weights),
  /// where a gradient is compressed.
  void setInsertionAfterGradient(OpBuilder &b, Value grad, func::ReturnOp ret) {
    Operation *def = grad.getDefiningOp();
    if (rankWeight &&
        (!def || def->isBeforeInBlock(rankWeight.getDefiningOp())))
      def = rankWeight.getDefiningOp();
    if (def && def->getBlock() == ret->getBlock())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(ret->getBlock());
  }

  /// A bucket of gradients the plan marked `tsr.compression`: each is
  /// compressed where it is computed, the bucket's pieces are exchanged
  /// together (two async all-gathers after its last gradient) and every
  /// gradient becomes its compressed mean before the return. Top-k's
  /// error-feedback residual is a new state per gradient (a flat row of a
  /// [N, n] tensor sharded over the ranks, so that checkpoints keep every
  /// rank's own); QSGD draws from the step's rng.
  LogicalResult reduceCompressed(ArrayRef<Gradient *> bucket, int64_t index,
                                 StringAttr spec, func::ReturnOp ret) {
    std::optional<GradientCompression> method =
        GradientCompression::parse(spec.getValue());
    if (!method || method->isNone())
      return func.emitError("tsr.bucket ")
             << index << ": tsr.compression " << spec
             << " is not a compressor (topk:R, qsgd:BITS[:BUCKET] or "
                "powersgd:RANK)";
    if (method->kind == GradientCompression::Kind::PowerSGD)
      return reducePowerSGD(bucket, index, *method, ret);
    if (method->kind == GradientCompression::Kind::OneBit)
      return reduceOneBit(bucket, index, *method, ret);
    MLIRContext *ctx = func.getContext();
    OpBuilder b(ctx);
    Value rng;
    if (method->isStochastic()) {
      FailureOr<BlockArgument> arg = getOrAddRngArgument(func);
      if (failed(arg))
        return failure();
      rng = *arg;
    }
    Location loc = NameLoc::get(
        b.getStringAttr("bucket" + std::to_string(index)), ret.getLoc());
    SmallVector<CompressedPiece> pieces;
    SmallVector<StringRef> serves;
    SmallVector<BlockArgument> residuals;
    Operation *last = nullptr;
    for (Gradient *grad : bucket) {
      StringRef name = nameOf(grad->param);
      serves.push_back(name);
      auto type = cast<RankedTensorType>(grad->value.getType());
      int64_t n = type.getNumElements();
      Value residual;
      if (method->hasResidual()) {
        unsigned arg = func.getNumArguments();
        if (failed(func.insertArgument(
                arg, RankedTensorType::get({n}, type.getElementType()),
                b.getDictionaryAttr(
                    residualAttrs(b, "topk.residual.", name, n, std::nullopt)),
                ret.getLoc())))
          return failure();
        residuals.push_back(func.getArgument(arg));
        residual = residuals.back();
      }
      setInsertionAfterGradient(b, grad->value, ret);
      GradientBuilder g(b, loc);
      pieces.push_back(compressGradient(g, weigh(g, grad->value), residual, rng,
                                        *method, name));
      Operation *done = pieces.back().first.getDefiningOp();
      for (Value v : {pieces.back().second, pieces.back().residual})
        if (Operation *op = v ? v.getDefiningOp() : nullptr)
          if (done->isBeforeInBlock(op))
            done = op;
      if (!last || last->isBeforeInBlock(done))
        last = done;
    }
    b.setInsertionPointAfter(last);
    GradientBuilder g(b, loc);
    CompressedExchange exchange = startCompressedExchange(
        g, pieces, *method, dp, axes, serves, b.getI64IntegerAttr(index));
    b.setInsertionPoint(ret);
    SmallVector<Value> means = finishCompressedExchange(g, exchange, dp);
    for (auto [grad, mean] : llvm::zip(bucket, means)) {
      Value result = mean;
      if (zero >= 2) {
        result = localShard(g, mean, dp, axes);
        func.setResultAttr(grad->result, tsr::attr::kShards,
                           b.getI64IntegerAttr(dp));
      }
      ret.setOperand(grad->result, result);
      func.removeResultAttr(grad->result,
                            StringAttr::get(ctx, tsr::attr::kCompression));
    }
    for (auto [arg, piece, grad] : llvm::zip(residuals, pieces, bucket)) {
      unsigned result = func.getNumResults();
      int64_t n = piece.type.getNumElements();
      if (failed(func.insertResult(result, arg.getType(),
                                   b.getDictionaryAttr(residualAttrs(
                                       b, "topk.residual.", nameOf(grad->param),
                                       n, arg.getArgNumber())))))
        return failure();
      ret->insertOperands(result, piece.residual);
    }
    func.setType(
        FunctionType::get(ctx, func.getArgumentTypes(), ret.getOperandTypes()));
    return success();
  }

  /// A bucket of gradients marked `powersgd:RANK` (Vogels et al. 2019):
  /// each rank forms M = gradient + its residual as a matrix [n, m] and
  /// P = M·Q with the warm-started Q [m, r] (a replicated state); the P of
  /// the bucket are averaged in one all-reduce (started after the last
  /// gradient) and orthonormalized, Q = Mᵀ·P̂ averaged in a second one, and
  /// every rank's gradient becomes P̂·Qᵀ, its residual M − P̂·Qᵀ, and Q the
  /// next step's start.
  LogicalResult reducePowerSGD(ArrayRef<Gradient *> bucket, int64_t index,
                               const GradientCompression &method,
                               func::ReturnOp ret) {
    MLIRContext *ctx = func.getContext();
    OpBuilder b(ctx);
    Location loc = NameLoc::get(
        b.getStringAttr("bucket" + std::to_string(index)), ret.getLoc());
    StringAttr spec = b.getStringAttr(method.str());
    SmallVector<PowerSGDProjection> projections;
    SmallVector<BlockArgument> residuals, qStates;
    SmallVector<StringRef> serves;
    Operation *last = nullptr;
    int64_t pWidth = 0, qWidth = 0, elements = 0, denseBytes = 0;
    for (Gradient *grad : bucket) {
      StringRef name = nameOf(grad->param);
      serves.push_back(name);
      auto type = cast<RankedTensorType>(grad->value.getType());
      auto [n, m] = powerSGDMatrixShape(type);
      Type elem = type.getElementType();
      unsigned arg = func.getNumArguments();
      if (failed(func.insertArgument(
              arg, RankedTensorType::get({n * m}, elem),
              b.getDictionaryAttr(
                  residualAttrs(b, "powersgd.residual.", name, n * m, {})),
              ret.getLoc())))
        return failure();
      residuals.push_back(func.getArgument(arg));
      SmallVector<NamedAttribute> qAttrs{
          b.getNamedAttr(tsr::attr::kName,
                         b.getStringAttr("powersgd.q." + name)),
          b.getNamedAttr(tsr::attr::kRole,
                         tsr::RoleAttr::get(ctx, tsr::Role::state)),
          b.getNamedAttr(tsr::attr::kInit, b.getF64FloatAttr(0.0))};
      if (failed(func.insertArgument(
              arg + 1, RankedTensorType::get({m, method.rank}, elem),
              b.getDictionaryAttr(qAttrs), ret.getLoc())))
        return failure();
      qStates.push_back(func.getArgument(arg + 1));
      setInsertionAfterGradient(b, grad->value, ret);
      GradientBuilder g(b, loc);
      projections.push_back(powerSGDProject(
          g, weigh(g, grad->value), residuals.back(), qStates.back(), name));
      Operation *done = projections.back().p.getDefiningOp();
      if (!last || last->isBeforeInBlock(done))
        last = done;
      pWidth += n * method.rank;
      qWidth += m * method.rank;
      elements += type.getNumElements();
      denseBytes +=
          type.getNumElements() * int64_t(type.getElementTypeBitWidth() / 8);
    }
    ArrayAttr servesAttr = b.getStrArrayAttr(serves);
    auto reduce = [&](SmallVector<Value> parts, bool async,
                      const Twine &reason) {
      Value flat =
          parts.size() == 1
              ? parts.front()
              : tsr::ConcatOp::create(b, loc, parts, b.getI64IntegerAttr(0))
                    .getResult();
      auto op = tsr::AllReduceOp::create(
          b, loc, flat.getType(), flat,
          tsr::CollectiveReductionAttr::get(ctx,
                                            tsr::CollectiveReduction::mean),
          axes, servesAttr, b.getI64IntegerAttr(index), IntegerAttr(),
          async ? b.getUnitAttr() : UnitAttr());
      op->setAttr(tsr::attr::kCompression, spec);
      op->setAttr(tsr::attr::kReason,
                  b.getStringAttr(spec.getValue() + ": " + reason));
      return op;
    };
    // P of the whole bucket, in flight during the rest of the backward.
    b.setInsertionPointAfter(last);
    GradientBuilder g(b, loc);
    SmallVector<Value> ps;
    for (PowerSGDProjection &proj : projections)
      ps.push_back(g.reshape(
          proj.p, {cast<RankedTensorType>(proj.p.getType()).getNumElements()}));
    auto pReduce =
        reduce(ps, /*async=*/true,
               llvm::formatv("the {0} elements of P = M Q of {1} "
                             "parameter{2} ({3} gradient elements)",
                             pWidth, bucket.size(),
                             bucket.size() == 1 ? "" : "s", elements));
    pReduce->setAttr(tsr::attr::kDenseBytes, b.getI64IntegerAttr(denseBytes));
    b.setInsertionPoint(ret);
    Value pAll = tsr::WaitOp::create(b, loc, pReduce.getType(), pReduce);
    SmallVector<Value> pHats, qs;
    int64_t offset = 0;
    for (PowerSGDProjection &proj : projections) {
      auto pType = cast<RankedTensorType>(proj.p.getType());
      int64_t width = pType.getNumElements();
      Value p = bucket.size() == 1
                    ? pAll
                    : g.slice(pAll, {offset}, {offset + width}, {1});
      offset += width;
      pHats.push_back(orthonormalColumns(g, g.reshape(p, pType.getShape())));
      Value q = g.matmul(g.transpose(proj.matrix, {1, 0}), pHats.back());
      qs.push_back(
          g.reshape(q, {cast<RankedTensorType>(q.getType()).getNumElements()}));
    }
    Value qAll = reduce(qs, /*async=*/false,
                        llvm::formatv("the {0} elements of Q = M^T P", qWidth))
                     .getResult();
    offset = 0;
    for (auto [grad, proj, pHat, residual, qState] :
         llvm::zip(bucket, projections, pHats, residuals, qStates)) {
      auto qType = cast<RankedTensorType>(qState.getType());
      int64_t width = qType.getNumElements();
      Value q = bucket.size() == 1
                    ? qAll
                    : g.slice(qAll, {offset}, {offset + width}, {1});
      offset += width;
      q = g.reshape(q, qType.getShape());
      Value approx = g.matmul(pHat, g.transpose(q, {1, 0}));
      int64_t n = proj.type.getNumElements();
      Value nextResidual =
          g.sub(g.reshape(proj.matrix, {n}), g.reshape(approx, {n}));
      Value mean = g.reshape(approx, proj.type.getShape());
      if (zero >= 2) {
        mean = localShard(g, mean, dp, axes);
        func.setResultAttr(grad->result, tsr::attr::kShards,
                           b.getI64IntegerAttr(dp));
      }
      ret.setOperand(grad->result, mean);
      func.removeResultAttr(grad->result,
                            StringAttr::get(ctx, tsr::attr::kCompression));
      if (failed(addStateResult(residual, nextResidual, ret)) ||
          failed(addStateResult(qState, q, ret)))
        return failure();
    }
    func.setType(
        FunctionType::get(ctx, func.getArgumentTypes(), ret.getOperandTypes()));
    return success();
  }

  /// 1-bit Adam's step counter (`onebit.step`, shared by the buckets), and
  /// its next value.
  BlockArgument oneBitStep;
  Value oneBitNextStep;

  /// Adds a state argument `name` of `type` with the attributes `attrs`
  /// (zero at first) and returns it.
  FailureOr<BlockArgument> addState(Type type, ArrayRef<NamedAttribute> attrs,
                                    Location loc) {
    unsigned arg = func.getNumArguments();
    OpBuilder b(func.getContext());
    if (failed(func.insertArgument(arg, type, b.getDictionaryAttr(attrs), loc)))
      return failure();
    return func.getArgument(arg);
  }

  /// Returns `next` as the new value of state `arg` (a result with
  /// `tsr.updates`, the argument's attributes but its init).
  LogicalResult addStateResult(BlockArgument arg, Value next,
                               func::ReturnOp ret) {
    MLIRContext *ctx = func.getContext();
    unsigned result = func.getNumResults();
    NamedAttrList attrs(func.getArgAttrDict(arg.getArgNumber()));
    attrs.erase(tsr::attr::kInit);
    attrs.set(tsr::attr::kUpdates,
              IntegerAttr::get(IntegerType::get(ctx, 64), arg.getArgNumber()));
    if (failed(
            func.insertResult(result, arg.getType(), attrs.getDictionary(ctx))))
      return failure();
    ret->insertOperands(result, next);
    return success();
  }

  /// A bucket of gradients marked `onebit:W:B1` (1-bit Adam, Tang et al.
  /// 2021). The bucket keeps a replicated copy M of Adam's momentum
  /// (`onebit.momentum.NAME`) and hands the optimizer, as the gradient, the
  /// ĝ whose Adam momentum β1·M + (1 − β1)·ĝ is the exchanged one. For
  /// steps t <= W (`onebit.step`) ĝ is the all-reduced gradient. After,
  /// each rank forms its momentum m = β1·M + (1 − β1)·g and sends it as
  /// signs: x = m + its worker error (flat, zero-padded to a multiple of
  /// 8N), scale s = ‖x‖/√n, bits x >= 0 packed eight to a byte; an
  /// all-to-all gives rank k chunk k of every rank's bits and an all-gather
  /// the scales; rank k averages its chunk, adds its server error, and
  /// sends that again as bits and a scale (two all-gathers); every rank
  /// decodes the same momentum. The errors (what the signs missed) are
  /// states sharded over the ranks. `tsr-optimizer` runs Adam with
  /// `freeze-variance-after=W`.
  LogicalResult reduceOneBit(ArrayRef<Gradient *> bucket, int64_t index,
                             const GradientCompression &method,
                             func::ReturnOp ret) {
    MLIRContext *ctx = func.getContext();
    OpBuilder b(ret);
    Location loc = NameLoc::get(
        b.getStringAttr("bucket" + std::to_string(index)), ret.getLoc());
    GradientBuilder g(b, loc);
    StringAttr spec = b.getStringAttr(method.str());
    auto i64 = RankedTensorType::get({}, b.getI64Type());
    auto stateAttrs = [&](StringRef name) {
      return SmallVector<NamedAttribute>{
          b.getNamedAttr(tsr::attr::kName, b.getStringAttr(name)),
          b.getNamedAttr(tsr::attr::kRole,
                         tsr::RoleAttr::get(ctx, tsr::Role::state)),
          b.getNamedAttr(tsr::attr::kInit, b.getF64FloatAttr(0.0))};
    };
    if (!oneBitStep) {
      FailureOr<BlockArgument> step =
          addState(i64, stateAttrs("onebit.step"), loc);
      if (failed(step))
        return failure();
      oneBitStep = *step;
      OpBuilder top(ctx);
      top.setInsertionPointToStart(&func.getBody().front());
      GradientBuilder tg(top, loc);
      oneBitNextStep = tg.add(oneBitStep, tg.splat(i64, 1.0));
      if (failed(addStateResult(oneBitStep, oneBitNextStep, ret)))
        return failure();
    }

    // The bucket's gradients, flat: n elements, padded to L = 8N·c.
    Type elem = getElementTypeOrSelf(bucket.front()->value.getType());
    SmallVector<RankedTensorType> types;
    SmallVector<StringRef> serves;
    SmallVector<BlockArgument> momenta, workerErrors;
    int64_t n = 0;
    for (Gradient *grad : bucket) {
      StringRef name = nameOf(grad->param);
      serves.push_back(name);
      auto type = cast<RankedTensorType>(grad->value.getType());
      types.push_back(type);
      FailureOr<BlockArgument> m =
          addState(type, stateAttrs(("onebit.momentum." + name).str()), loc);
      FailureOr<BlockArgument> e =
          addState(RankedTensorType::get({type.getNumElements()}, elem),
                   residualAttrs(b, "onebit.worker_error.", name,
                                 type.getNumElements(), std::nullopt),
                   loc);
      if (failed(m) || failed(e))
        return failure();
      momenta.push_back(*m);
      workerErrors.push_back(*e);
      n += type.getNumElements();
    }
    int64_t chunk = llvm::divideCeil(n, 8 * dp) * 8, padded = chunk * dp;
    std::string serverName =
        "onebit.server_error.bucket" + std::to_string(index);
    FailureOr<BlockArgument> serverError =
        addState(RankedTensorType::get({chunk}, elem),
                 residualAttrs(b, "", serverName, chunk, std::nullopt), loc);
    if (failed(serverError))
      return failure();
    ArrayAttr servesAttr = b.getStrArrayAttr(serves);
    IntegerAttr bucketAttr = b.getI64IntegerAttr(index);
    auto flatten = [&](GradientBuilder &gb, ArrayRef<Value> parts) {
      SmallVector<Value> flat;
      for (Value v : parts)
        flat.push_back(gb.reshape(
            v, {cast<RankedTensorType>(v.getType()).getNumElements()}));
      return flat.size() == 1 ? flat.front()
                              : tsr::ConcatOp::create(gb.builder(), loc, flat,
                                                      b.getI64IntegerAttr(0))
                                    .getResult();
    };
    auto split = [&](GradientBuilder &gb, Value flat) {
      SmallVector<Value> parts;
      int64_t offset = 0;
      for (RankedTensorType type : types) {
        int64_t width = type.getNumElements();
        parts.push_back(gb.reshape(
            gb.slice(flat, {offset}, {offset + width}, {1}), type.getShape()));
        offset += width;
      }
      return parts;
    };
    // Both branches yield buffers of their own (ownedCopy says why).
    auto own = [&](OpBuilder &builder, Value v) {
      return ownedCopy(builder, loc, v);
    };
    auto note = [&](Operation *op, const Twine &reason, bool compressed) {
      op->setAttr(tsr::attr::kReason,
                  b.getStringAttr(spec.getValue() + ": " + reason));
      if (compressed)
        op->setAttr(tsr::attr::kCompression, spec);
      return op->getResult(0);
    };
    SmallVector<Value> grads;
    for (Gradient *grad : bucket)
      grads.push_back(weigh(g, grad->value));
    double beta1 = method.beta1;
    Value warm =
        g.less(oneBitNextStep, g.splat(i64, double(method.warmup) + 1));
    Value cond = tensor::ExtractOp::create(b, loc, warm, ValueRange{});
    // Yields ĝ per gradient, M', the worker errors and the server error.
    SmallVector<Type> resultTypes;
    for (RankedTensorType type : types)
      resultTypes.push_back(type);
    for (RankedTensorType type : types)
      resultTypes.push_back(type);
    for (BlockArgument e : workerErrors)
      resultTypes.push_back(e.getType());
    resultTypes.push_back(serverError->getType());
    auto ifOp = scf::IfOp::create(b, loc, resultTypes, cond, /*withElse=*/true);

    // Warm-up: all-reduced gradients.
    {
      OpBuilder wb = OpBuilder::atBlockBegin(ifOp.thenBlock());
      GradientBuilder w(wb, loc);
      Value flat = flatten(w, grads);
      Value mean = note(
          tsr::AllReduceOp::create(wb, loc, flat.getType(), flat,
                                   tsr::CollectiveReductionAttr::get(
                                       ctx, tsr::CollectiveReduction::mean),
                                   axes, servesAttr, bucketAttr, IntegerAttr(),
                                   UnitAttr()),
          llvm::formatv("warm-up (steps 1-{0}): the {1} gradient elements, "
                        "all-reduced",
                        method.warmup, n),
          /*compressed=*/false);
      SmallVector<Value> yields, next;
      for (auto [avg, m] : llvm::zip(split(w, mean), momenta)) {
        yields.push_back(own(wb, avg));
        next.push_back(
            own(wb, w.add(w.mul(m, w.scalarLike(m, beta1)),
                          w.mul(avg, w.scalarLike(avg, 1 - beta1)))));
      }
      llvm::append_range(yields, next);
      for (BlockArgument e : workerErrors)
        yields.push_back(own(wb, e));
      yields.push_back(own(wb, *serverError));
      scf::YieldOp::create(wb, loc, yields);
    }

    // After: the momentum in signs.
    {
      OpBuilder cb = OpBuilder::atBlockBegin(ifOp.elseBlock());
      GradientBuilder c(cb, loc);
      auto i32Type = [&](ArrayRef<int64_t> shape) {
        return RankedTensorType::get(shape, cb.getI32Type());
      };
      auto powers = tsr::ConstantOp::create(
          cb, loc,
          DenseElementsAttr::get(
              i32Type({1, 8}), ArrayRef<int32_t>{1, 2, 4, 8, 16, 32, 64, 128}));
      // Signs (x >= 0) of `x` [len] packed to [len / 8] i8, and back to
      // ±1 [len].
      auto pack = [&](Value x, int64_t len) {
        Value bits = c.castTo(c.select(c.less(x, c.scalarLike(x, 0.0)),
                                       c.splat(i32Type({len}), 0.0),
                                       c.splat(i32Type({len}), 1.0)),
                              cb.getI32Type());
        Value bytes = c.reduceSum(c.mul(c.reshape(bits, {len / 8, 8}), powers),
                                  {1}, false);
        return c.castTo(c.sub(bytes, c.splat(i32Type({len / 8}), 128.0)),
                        cb.getI8Type());
      };
      auto unpack = [&](Value bytes, int64_t len) {
        Value v = c.add(c.castTo(bytes, cb.getI32Type()),
                        c.splat(i32Type({len / 8}), 128.0));
        Value bits = tsr::ModOp::create(
            cb, loc, c.div(c.reshape(v, {len / 8, 1}), powers),
            c.splat(i32Type({1, 8}), 2.0), cb.getBoolAttr(false));
        Value sign = c.castTo(c.reshape(bits, {len}), elem);
        return c.sub(c.mul(sign, c.scalarLike(sign, 2.0)),
                     c.scalarLike(sign, 1.0));
      };
      auto gather = [&](Value v, int64_t width, const Twine &reason) {
        auto type = cast<RankedTensorType>(v.getType());
        return note(tsr::AllGatherOp::create(cb, loc, type.clone({dp * width}),
                                             v, cb.getI64IntegerAttr(0), axes,
                                             servesAttr, bucketAttr,
                                             IntegerAttr(), UnitAttr()),
                    reason, /*compressed=*/true);
      };
      // Worker: this rank's momentum plus its error, in signs and a scale.
      SmallVector<Value> local;
      for (auto [grad, m] : llvm::zip(grads, momenta))
        local.push_back(c.add(c.mul(m, c.scalarLike(m, beta1)),
                              c.mul(grad, c.scalarLike(grad, 1 - beta1))));
      Value x = c.add(flatten(c, local),
                      flatten(c, SmallVector<Value>(workerErrors.begin(),
                                                    workerErrors.end())));
      Value scale = c.sqrt(c.div(c.reduceSum(c.mul(x, x), {0}, false),
                                 c.scalar(elem, double(n))));
      Value signed_ =
          c.select(c.less(x, c.scalarLike(x, 0.0)),
                   c.neg(c.broadcastTo(scale, {n})), c.broadcastTo(scale, {n}));
      SmallVector<Value> nextWorker;
      {
        Value err = c.sub(x, signed_);
        int64_t offset = 0;
        for (RankedTensorType type : types) {
          int64_t width = type.getNumElements();
          nextWorker.push_back(c.slice(err, {offset}, {offset + width}, {1}));
          offset += width;
        }
      }
      Value xPadded = x;
      if (padded != n)
        xPadded = tsr::PadOp::create(
            cb, loc, x, cb.getDenseI64ArrayAttr({0, padded - n}),
            tsr::PadModeAttr::get(ctx, tsr::PadMode::constant),
            cb.getF64FloatAttr(0));
      Value packed = c.reshape(pack(xPadded, padded), {dp, chunk / 8});
      Operation *toServers = tsr::AllToAllOp::create(
          cb, loc, packed.getType(), packed, cb.getI64IntegerAttr(0), axes,
          servesAttr, bucketAttr, IntegerAttr(), UnitAttr());
      toServers->setAttr(
          tsr::attr::kDenseBytes,
          cb.getI64IntegerAttr(n * int64_t(elem.getIntOrFloatBitWidth() / 8)));
      Value received =
          note(toServers,
               llvm::formatv("the signs of the {0} momentum elements (one bit "
                             "each, chunk k to rank k)",
                             n),
               /*compressed=*/true);
      Value scales =
          gather(c.reshape(scale, {1}), 1, "the ranks' scales of their signs");
      // Server: chunk k of every rank's signs, averaged, plus this rank's
      // server error, in signs and a scale again. Padding stays zero.
      Value decoded = c.reshape(
          unpack(c.reshape(received, {padded / 8}), padded), {dp, chunk});
      Value average = c.div(
          c.reduceSum(c.mul(decoded, c.reshape(scales, {dp, 1})), {0}, false),
          c.scalar(elem, double(dp)));
      SmallVector<float> maskValues(padded, 0.0f);
      std::fill(maskValues.begin(), maskValues.begin() + n, 1.0f);
      Value mask = tsr::ConstantOp::create(
          cb, loc,
          DenseElementsAttr::get(RankedTensorType::get({padded}, elem),
                                 ArrayRef<float>(maskValues)));
      Value myMask = localShard(c, mask, dp, axes);
      Value z = c.add(c.mul(average, myMask), *serverError);
      Value count = tsr::MaxOp::create(cb, loc, c.reduceSum(myMask, {0}, false),
                                       c.scalar(elem, 1.0));
      Value serverScale =
          c.sqrt(c.div(c.reduceSum(c.mul(z, z), {0}, false), count));
      Value serverSigned = c.select(c.less(z, c.scalarLike(z, 0.0)),
                                    c.neg(c.broadcastTo(serverScale, {chunk})),
                                    c.broadcastTo(serverScale, {chunk}));
      Value nextServer = c.mul(c.sub(z, serverSigned), myMask);
      Value allBits = gather(pack(z, chunk), chunk / 8,
                             "every rank's chunk of the averaged signs");
      Value serverScales =
          gather(c.reshape(serverScale, {1}), 1, "their scales");
      Value momentum =
          c.mul(c.mul(c.reshape(unpack(allBits, padded), {dp, chunk}),
                      c.reshape(serverScales, {dp, 1})),
                c.reshape(mask, {dp, chunk}));
      momentum = c.reshape(momentum, {padded});
      if (padded != n)
        momentum = c.slice(momentum, {0}, {n}, {1});
      SmallVector<Value> yields, next;
      for (auto [mt, m] : llvm::zip(split(c, momentum), momenta)) {
        // ĝ = (m_t − β1·M) / (1 − β1): Adam's momentum of ĝ is m_t.
        yields.push_back(
            own(cb, c.div(c.sub(mt, c.mul(m, c.scalarLike(m, beta1))),
                          c.scalarLike(mt, 1 - beta1))));
        next.push_back(own(cb, mt));
      }
      llvm::append_range(yields, next);
      for (Value e : nextWorker)
        yields.push_back(own(cb, e));
      yields.push_back(own(cb, nextServer));
      scf::YieldOp::create(cb, loc, yields);
    }

    size_t k = bucket.size();
    for (auto [i, grad] : llvm::enumerate(bucket)) {
      ret.setOperand(grad->result, ifOp.getResult(i));
      func.removeResultAttr(grad->result,
                            StringAttr::get(ctx, tsr::attr::kCompression));
    }
    for (size_t i = 0; i < k; ++i)
      if (failed(addStateResult(momenta[i], ifOp.getResult(k + i), ret)))
        return failure();
    for (size_t i = 0; i < k; ++i)
      if (failed(
              addStateResult(workerErrors[i], ifOp.getResult(2 * k + i), ret)))
        return failure();
    if (failed(addStateResult(*serverError, ifOp.getResult(3 * k), ret)))
      return failure();
    func.setType(
        FunctionType::get(ctx, func.getArgumentTypes(), ret.getOperandTypes()));
    return success();
  }

  /// The attributes of an error-feedback residual (`prefix` + `name`, n
  /// elements, one row per rank): a zero-initialized state argument, or
  /// with `updates` its next value.
  SmallVector<NamedAttribute> residualAttrs(Builder &b, StringRef prefix,
                                            StringRef name, int64_t n,
                                            std::optional<unsigned> updates) {
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr(tsr::attr::kName, b.getStringAttr(prefix + name)),
        b.getNamedAttr(tsr::attr::kRole,
                       tsr::RoleAttr::get(b.getContext(), tsr::Role::state)),
        b.getNamedAttr(tsr::attr::kShards, b.getI64IntegerAttr(dp)),
        b.getNamedAttr(tsr::attr::kGlobalShape,
                       b.getDenseI64ArrayAttr({dp, n}))};
    if (updates)
      attrs.push_back(
          b.getNamedAttr(tsr::attr::kUpdates, b.getI64IntegerAttr(*updates)));
    else
      attrs.push_back(b.getNamedAttr(tsr::attr::kInit, b.getF64FloatAttr(0.0)));
    return attrs;
  }

  /// ZeRO-3: trained parameters live as shards and are gathered before
  /// their forward and their backward uses.
  void shardParameters(ArrayRef<Gradient> grads) {
    Block &body = func.getBody().front();
    for (const Gradient &grad : grads) {
      BlockArgument p = grad.param;
      auto full = cast<RankedTensorType>(p.getType());
      int64_t c = getShardSize(full.getNumElements(), dp);
      SmallVector<OpOperand *> forward, backward;
      for (OpOperand &use : p.getUses()) {
        Operation *user = body.findAncestorOpInBlock(*use.getOwner());
        (user && isBackward(user) ? backward : forward).push_back(&use);
      }
      p.setType(RankedTensorType::get({c}, full.getElementType()));
      OpBuilder b(func.getContext());
      func.setArgAttr(p.getArgNumber(), tsr::attr::kShards,
                      b.getI64IntegerAttr(dp));
      func.setArgAttr(p.getArgNumber(), tsr::attr::kGlobalShape,
                      b.getDenseI64ArrayAttr(full.getShape()));
      for (ArrayRef<OpOperand *> group :
           {ArrayRef(forward), ArrayRef(backward)}) {
        if (group.empty())
          continue;
        Operation *first = nullptr;
        for (OpOperand *use : group) {
          Operation *user = body.findAncestorOpInBlock(*use->getOwner());
          if (!first || user->isBeforeInBlock(first))
            first = user;
        }
        b.setInsertionPoint(first);
        GradientBuilder g(
            b, NameLoc::get(b.getStringAttr("zero3.gather"), first->getLoc()));
        Value whole = gatherShards(g, p, full, dp, axes, {nameOf(p)});
        for (OpOperand *use : group)
          use->set(whole);
      }
    }
    func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                   func.getResultTypes()));
  }
};

} // namespace
