//===- ApproximateMath.cpp - Vectorizable f32 transcendentals -------------===//
//
// LLVM has no vector form of expf, logf, tanhf or erff on Linux without a
// vector math library: it calls libm once per lane, so a softmax over the
// vocabulary or a GELU spent most of its time in scalar calls. Upstream
// MLIR's polynomial approximations (the Cephes/Eigen ones that XLA's CPU
// backend also uses) rewrite these f32 ops into arithmetic that stays in
// vector registers. f64 ops keep libm's correctly rounded calls.
//
//===----------------------------------------------------------------------===//
#include "tessera/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRCPUAPPROXIMATEMATH
#include "tessera/Conversion/CPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

struct TsrCpuApproximateMathPass
    : tessera::impl::TsrCpuApproximateMathBase<TsrCpuApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // The functions of models' hot loops: softmax and losses (exp, log),
    // GELU (erf, tanh), and their relatives.
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return llvm::StringSwitch<bool>(name)
          .Cases({"math.exp", "math.expm1", "math.log", "math.log1p",
                  "math.log2", "math.tanh", "math.erf"},
                 true)
          .Default(false);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
