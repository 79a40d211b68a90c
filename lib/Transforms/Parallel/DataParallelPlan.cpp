//===- DataParallelPlan.cpp - Decide a data-parallel step's layout --------===//
//
// The decision half of data parallelism: which mesh axis carries it, the
// ZeRO stage, and which bucket every gradient is reduced in (backward
// order, size-capped). Written as attributes only; tsr-data-parallel
// applies them.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Parallel/Passes.h"

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "tessera/Transforms/Parallel/Compression.h"
#include "tessera/Transforms/Parallel/Sharding.h"
#include "tessera/Transforms/Precision/LossScale.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRDATAPARALLELPLAN
#include "tessera/Transforms/Parallel/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

struct TsrDataParallelPlanPass
    : tessera::impl::TsrDataParallelPlanBase<TsrDataParallelPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> f =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(f) || failed(plan(*f)))
      signalPassFailure();
  }

  /// Declares the mesh (one axis `axis` of size `dp`) or checks the
  /// declared one against the options; returns the axis size.
  FailureOr<int64_t> resolveMesh(func::FuncOp f) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    auto mesh = module->getAttrOfType<tsr::MeshAttr>(tsr::attr::kMesh);
    if (!mesh) {
      if (dp < 1)
        return f.emitError("the data-parallel size must be at least 1, got ")
               << dp.getValue();
      module->setAttr(tsr::attr::kMesh,
                      tsr::MeshAttr::get(ctx, {StringAttr::get(ctx, axis)},
                                         {dp.getValue()}));
      return dp.getValue();
    }
    std::optional<int64_t> size = mesh.getAxisSize(axis);
    if (!size)
      return f.emitError("the data-parallel axis '")
             << axis << "' is not an axis of the module's mesh " << mesh;
    if (dp != 0 && dp != *size)
      return f.emitError("dp=")
             << dp.getValue() << " disagrees with the mesh " << mesh;
    return *size;
  }

  /// Compression sends each rank's own gradient: it needs the
  /// data-parallel axis alone; error feedback also needs every step to
  /// count (a step that dynamic loss scaling skips would still move the
  /// residuals).
  LogicalResult checkCompressible(func::FuncOp f,
                                  const GradientCompression &method) {
    auto mesh = getOperation()->getAttrOfType<tsr::MeshAttr>(tsr::attr::kMesh);
    for (auto [name, size] : llvm::zip(mesh.getNames(), mesh.getSizes()))
      if (name.getValue() != axis && size > 1)
        return f.emitError("gradient compression goes with data parallelism "
                           "alone so far; the mesh ")
               << mesh << " also has axis '" << name.getValue() << "'";
    for (unsigned i = 0, e = f.getNumArguments(); i < e && method.hasResidual();
         ++i)
      if (getArgString(f, i, tsr::attr::kName) == kLossScaleState)
        return f.emitError("gradient compression does not go with dynamic "
                           "loss scaling: a skipped step would still move "
                           "the error-feedback residuals");
    return success();
  }

  /// Local SGD averages whole replicated tensors on one axis, and every
  /// rank must count the same steps.
  LogicalResult checkLocalSteps(func::FuncOp f,
                                const GradientCompression &method) {
    auto mesh = getOperation()->getAttrOfType<tsr::MeshAttr>(tsr::attr::kMesh);
    for (auto [name, size] : llvm::zip(mesh.getNames(), mesh.getSizes()))
      if (name.getValue() != axis && size > 1)
        return f.emitError("local SGD goes with data parallelism alone so "
                           "far; the mesh ")
               << mesh << " also has axis '" << name.getValue() << "'";
    if (zero != 0)
      return f.emitError("local SGD needs ZeRO-0: ZeRO ")
             << zero.getValue()
             << " shards the optimizer state of an update that every rank "
                "applies alike, and local SGD's ranks update apart";
    if (!method.isNone())
      return f.emitError("local SGD reduces no gradient, so there is none "
                         "to compress (compression '")
             << compression << "')";
    for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i)
      if (getArgString(f, i, tsr::attr::kName) == kLossScaleState)
        return f.emitError("local SGD does not go with dynamic loss "
                           "scaling: ranks that skip steps on their own "
                           "would disagree on when to average");
    return success();
  }

  /// A parameter server takes whole parameters from workers that reduce
  /// nothing among themselves.
  LogicalResult checkParameterServer(func::FuncOp f,
                                     const GradientCompression &method) {
    auto mesh = getOperation()->getAttrOfType<tsr::MeshAttr>(tsr::attr::kMesh);
    for (auto [name, size] : llvm::zip(mesh.getNames(), mesh.getSizes()))
      if (name.getValue() != axis && size > 1)
        return f.emitError("parameter servers go with data parallelism alone "
                           "so far; the mesh ")
               << mesh << " also has axis '" << name.getValue() << "'";
    if (staleness < -1)
      return f.emitError("staleness must be at least 0 (or -1: "
                         "bulk-synchronous), got ")
             << staleness.getValue();
    if (zero != 0)
      return f.emitError("parameter servers hold the parameters and the "
                         "optimizer state themselves: they need ZeRO-0, not "
                         "ZeRO ")
             << zero.getValue();
    if (!method.isNone())
      return f.emitError("gradient compression does not go with parameter "
                         "servers yet (compression '")
             << compression << "')";
    if (localSteps > 0)
      return f.emitError("local SGD and parameter servers are two ways to "
                         "train apart: choose one");
    for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i)
      if (getArgString(f, i, tsr::attr::kName) == kLossScaleState)
        return f.emitError("parameter servers do not go with dynamic loss "
                           "scaling: a server cannot skip a step that "
                           "another server applies");
    FailureOr<Operation *> counted = getCountedLoss(f);
    if (failed(counted))
      return failure();
    if (*counted)
      return (*counted)->emitError(
          "the servers average the workers' mean losses, but this loss "
          "ignores a label and counts a different number of labels on every "
          "worker: not supported with parameter servers");
    return success();
  }

  /// Puts every parameter on a server: largest first, each to the server
  /// holding the fewest bytes so far.
  LogicalResult placeOnServers(func::FuncOp f, ArrayRef<GradientResult> grads) {
    if (int64_t(grads.size()) < servers)
      return f.emitError("servers=")
             << servers.getValue() << " but the step trains " << grads.size()
             << " parameter" << (grads.size() == 1 ? "" : "s")
             << ": a server would hold none";
    SmallVector<GradientResult> order(grads);
    auto bytes = [](const GradientResult &g) {
      return tsr::getStaticTensorBytes(g.value.getType());
    };
    llvm::stable_sort(order,
                      [&](const GradientResult &a, const GradientResult &b) {
                        return bytes(a) > bytes(b);
                      });
    SmallVector<int64_t> held(servers, 0);
    Builder b(f.getContext());
    for (const GradientResult &g : order) {
      int64_t s = llvm::min_element(held) - held.begin();
      held[s] += bytes(g);
      f.setResultAttr(g.result, tsr::attr::kServer, b.getI64IntegerAttr(s));
    }
    f->setAttr(
        tsr::attr::kParameterServer,
        b.getDictionaryAttr(
            {b.getNamedAttr("servers", b.getI64IntegerAttr(servers)),
             b.getNamedAttr("staleness", b.getI64IntegerAttr(staleness))}));
    return success();
  }

  LogicalResult plan(func::FuncOp f) {
    if (f.getNumResults() == 0)
      return f.emitError("tsr-data-parallel-plan expects the loss as result 0");
    if (zero < 0 || zero > 3)
      return f.emitError("ZeRO stage must be 0, 1, 2 or 3, got ")
             << zero.getValue();
    if (bucketBytes < 1)
      return f.emitError("bucket-bytes must be positive");
    std::optional<GradientCompression> compress =
        GradientCompression::parse(compression);
    if (!compress)
      return f.emitError("compression '")
             << compression
             << "' is not none, topk:R (0 < R <= 1), qsgd:BITS[:BUCKET] "
                "(2 <= BITS <= 8), powersgd:RANK (RANK >= 1) or "
                "onebit[:WARMUP[:BETA1]] (WARMUP >= 1, 0 <= BETA1 < 1)";
    FailureOr<int64_t> size = resolveMesh(f);
    if (failed(size))
      return failure();
    int64_t n = *size;
    if (localSteps < 0)
      return f.emitError("local-steps must be at least 1 (or 0: all-reduce "
                         "the gradients), got ")
             << localSteps.getValue();
    if (localSteps > 0 && failed(checkLocalSteps(f, *compress)))
      return failure();
    if (servers < 0)
      return f.emitError("servers must be at least 1 (or 0: no parameter "
                         "server), got ")
             << servers.getValue();
    if (servers == 0 && staleness != -1)
      return f.emitError("staleness bounds how far workers run ahead of "
                         "each other around parameter servers: it needs "
                         "servers=S");
    if (servers > 0 && failed(checkParameterServer(f, *compress)))
      return failure();
    if (!compress->isNone() && failed(checkCompressible(f, *compress)))
      return failure();
    if (compress->kind == GradientCompression::Kind::OneBit && zero != 0)
      return f.emitError("1-bit Adam exchanges the whole momentum: it needs "
                         "ZeRO-0, not ZeRO ")
             << zero.getValue();
    SmallVector<unsigned> carried;
    SmallVector<GradientResult> grads = getGradientResults(f, carried);
    if (n > 1) {
      if (!carried.empty())
        return f.emitError("result ")
               << carried.front() << " ('"
               << getResultString(f, carried.front(), tsr::attr::kName)
               << "') updates running statistics from the batch, which "
                  "differ between data-parallel ranks (synchronized batch "
                  "norm is not supported): compile with --batch-norm=running";
      if (failed(getCountedLoss(f)))
        return failure();
    }

    Builder b(f.getContext());
    f->setAttr(tsr::attr::kZero,
               tsr::ZeroAttr::get(b.getContext(), zero,
                                  b.getStrArrayAttr({axis.getValue()})));
    if (localSteps > 0) {
      f->setAttr(tsr::attr::kLocalSteps, b.getI64IntegerAttr(localSteps));
      return success();
    }
    if (servers > 0)
      return placeOnServers(f, grads);
    // Buckets fill in backward order, the order the gradients are computed
    // in, each holding at most bucket-bytes (a larger gradient alone). The
    // compressed gradients fill their own buckets, numbered after the
    // plain ones (their dense bytes count).
    llvm::stable_sort(grads,
                      [](const GradientResult &a, const GradientResult &b) {
                        return a.position < b.position;
                      });
    bool scatter = zero >= 2;
    int64_t bucket = -1, bytes = 0;
    Type elem;
    for (bool compressed : {false, true}) {
      elem = Type();
      for (const GradientResult &g : grads) {
        auto type = cast<RankedTensorType>(g.value.getType());
        if (compress->appliesTo(type) != compressed)
          continue;
        int64_t elements = type.getNumElements();
        int64_t size = (scatter && !compressed ? n * getShardSize(elements, n)
                                               : elements) *
                       type.getElementTypeBitWidth() / 8;
        if (!elem || elem != type.getElementType() ||
            bytes + size > bucketBytes) {
          ++bucket;
          bytes = 0;
          elem = type.getElementType();
        }
        bytes += size;
        f.setResultAttr(g.result, tsr::attr::kBucket,
                        b.getI64IntegerAttr(bucket));
        if (compressed)
          f.setResultAttr(g.result, tsr::attr::kCompression,
                          b.getStringAttr(compress->str()));
      }
    }
    return success();
  }
};

} // namespace
