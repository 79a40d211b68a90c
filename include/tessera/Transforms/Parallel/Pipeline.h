//===- Pipeline.h - Shared pieces of the pipeline passes --------*- C++ -*-===//
#ifndef TESSERA_TRANSFORMS_PARALLEL_PIPELINE_H
#define TESSERA_TRANSFORMS_PARALLEL_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::tessera {

/// Whether `op` is copied into every pipeline cell that uses it rather than
/// placed in one: an op without operands, regions or side effects (a
/// constant).
bool isCopiedIntoStages(Operation *op);

/// Runs the public functions with `tsr.ranks` of `module` symbolically
/// (tsr-verify-pipeline) and emits an error if their messages do not match
/// or they deadlock.
LogicalResult verifyPipelinePrograms(ModuleOp module);

} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_PARALLEL_PIPELINE_H
