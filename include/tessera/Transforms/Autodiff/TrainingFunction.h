//===- TrainingFunction.h - The function the training passes rewrite -*- C++
//-*-===//
//
// Every training pass (tsr-append-loss, tsr-autodiff, tsr-accumulate-gradients,
// tsr-optimizer, ...) rewrites one function of the module, named by its
// option `function` or else the module's one public function; its arguments
// and results carry `tsr.name` and `tsr.role` attributes.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_TRANSFORMS_AUTODIFF_TRAININGFUNCTION_H
#define TESSERA_TRANSFORMS_AUTODIFF_TRAININGFUNCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

namespace mlir::tessera {

/// The function named `function` (which must have a body), or with an empty
/// name the module's one public function with a body; otherwise emits an
/// error naming `pass` and fails.
FailureOr<func::FuncOp> getTrainingFunction(ModuleOp module, StringRef pass,
                                            StringRef function);

/// The string attribute `attr` of argument `i` ("" if absent).
StringRef getArgString(func::FuncOp f, unsigned i, StringRef attr);

/// The string attribute `attr` of result `i` ("" if absent).
StringRef getResultString(func::FuncOp f, unsigned i, StringRef attr);

/// The `tsr.role` of argument `i`; an argument without one is data.
tsr::Role getArgRole(func::FuncOp f, unsigned i);

/// The step's random seed offset: the argument with `tsr.role = rng`
/// (which the runtime sets to step·N + rank), `rng.step`, added if `f` has
/// none.
FailureOr<BlockArgument> getOrAddRngArgument(func::FuncOp f);

/// Whether result `i` has role `metric`: a value the step reports, summed
/// over the samples of the step (micro-batches and data-parallel ranks
/// add), which nothing differentiates or updates.
bool isMetricResult(func::FuncOp f, unsigned i);

} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_AUTODIFF_TRAININGFUNCTION_H
