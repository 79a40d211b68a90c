//===- Lowering.h - From tsr to a target's code -----------------*- C++ -*-===//
//
// The lowering of a per-rank tsr program, in the stages every target shares:
// tsr → linalg on tensors (collectives as `tsrt` ops), bufferization with
// explicit deallocation, collectives to runtime calls, and then the target's
// code generation (TargetBackend, Target.h). Each stage is
// a function that adds passes, and a named pipeline of tessera-opt.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_PIPELINES_LOWERING_H
#define TESSERA_PIPELINES_LOWERING_H

#include "mlir/Pass/PassManager.h"
#include "tessera/Pipelines/Target.h"

namespace mlir::tessera {

/// tsr-to-linalg, then on every function canonicalize, the target's tensor
/// passes (none without a target) and cse (`tsr-lower-to-linalg`).
void buildTsrToLinalgPipeline(OpPassManager &pm,
                              const TargetBackend *target = nullptr);

/// One-shot bufferization of the whole module with identity layouts at
/// function boundaries, results as caller-owned out-parameters, ownership-
/// based deallocation, and the remaining bufferization ops lowered to memref
/// (`tsr-bufferize`).
void buildBufferizationPipeline(OpPassManager &pm);

/// The whole lowering for `target`: the two stages above, the collectives
/// on buffers to runtime calls with the target's stream
/// (`tsr-collectives-to-runtime`), then the target's code generation.
/// `tessera-compile` runs it; `tsr-cpu-codegen` is it for the CPU target
/// with default options.
void buildLoweringPipeline(OpPassManager &pm, const TargetBackend &target);

/// Fails with an error naming the tensor (its `tsr.name` at the boundary,
/// the op that produces it inside) when `model` uses an element type that
/// `target` does not support.
LogicalResult verifyElementTypes(func::FuncOp model,
                                 const TargetBackend &target);

/// Registers the named pipelines of tessera-opt: `tsr-lower-to-linalg`,
/// `tsr-bufferize` and `tsr-cpu-codegen`.
void registerTesseraPipelines();

} // namespace mlir::tessera

#endif // TESSERA_PIPELINES_LOWERING_H
