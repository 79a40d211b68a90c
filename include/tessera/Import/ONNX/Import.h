//===- Import.h - ONNX model import -----------------------------*- C++ -*-===//
//
// Two stages: a mechanical protobuf -> generic `onnx.node` import (libonnx
// parses, checks, upgrades old opsets and infers shapes), then legalization
// of every node to `tsr` by handlers keyed on (op type, since_version).
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_IMPORT_ONNX_IMPORT_H
#define TESSERA_IMPORT_ONNX_IMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::tessera {

struct OnnxImportOptions {
  /// Static shapes of graph inputs by ONNX name; required for inputs with
  /// symbolic or unknown dimensions, and they replace the declared shape.
  llvm::StringMap<llvm::SmallVector<int64_t>> inputShapes;
  /// Run stage 2 (legalization to tsr); false stops at generic `onnx.node`.
  bool legalize = true;
  /// Import trainable initializers as function arguments (after the graph
  /// inputs) with arg attrs `tsr.name` and `tsr.role = "param"`. An
  /// initializer is trainable when its element type is floating point and
  /// every node input it feeds is marked differentiable by the ONNX schema
  /// (so Reshape shapes and Clip bounds stay constants). Initializers that
  /// feed only BatchNormalization's running mean and variance become such
  /// arguments too, marked `tsr.statistics`: they get no gradient, and
  /// tsr-batch-norm-statistics updates them from each batch.
  bool initializersAsParams = false;
  /// When positive, replaces dimension 0 of every graph input not named by
  /// `inputShapes` (the batch dimension of training data).
  int64_t batchSize = 0;
  /// com.microsoft MoE: when positive, each expert's buffer holds
  /// ceil(factor · tokens per group · k / experts) tokens (at most the
  /// group's tokens) and choices past it are dropped (GShard, Switch);
  /// otherwise every token fits (dropless, as onnxruntime computes it).
  double moeCapacityFactor = 0;
  /// com.microsoft MoE: when positive, each layer's Switch load-balancing
  /// loss times this coefficient becomes a function result marked
  /// `tsr.aux_loss`, which tsr-append-loss adds to the training loss.
  double moeAuxLoss = 0;
  /// com.microsoft MoE: report each layer's routing as function results
  /// with role `metric` (sums over the batch of a step):
  /// NODE.tokens_per_expert, the choices routed to each expert
  /// (int64 [experts]), and NODE.dropped, those that found no slot under
  /// the capacity (int64 scalar).
  bool moeStatistics = false;
  /// BatchNormalization with training_mode = 1 whose running-statistics
  /// outputs no node reads (PyTorch's TrainingMode.TRAINING export): return
  /// each running statistic that is an argument marked `tsr.statistics`
  /// updated by the node's momentum, momentum·running + (1 − momentum)·batch,
  /// as a result with `tsr.updates`, so training keeps it current as it does
  /// for tsr-batch-norm-statistics.
  bool updateStatistics = false;
  /// BatchNormalization with training_mode = 1 whose running-statistics
  /// outputs no node reads normalizes with its running statistics, as in
  /// inference: for evaluation (PyTorch's model.eval()) and for
  /// --batch-norm=running (statistics frozen).
  bool runningBatchNorm = false;
};

/// Adds one `--input-shape` spec, NAME=DxDx... (NAME= for a scalar), to
/// `opts`; fails on a malformed spec.
LogicalResult addInputShapeSpec(llvm::StringRef spec, OnnxImportOptions &opts);

/// Parses the model file, returns a module with one func.func @main whose
/// arguments are the non-initializer graph inputs in order (arg attr
/// `tsr.name` = the ONNX name) and whose results are the graph outputs
/// (result attr `tsr.name`). Initializers become tsr.constant, or arguments
/// with `opts.initializersAsParams`. On any error
/// emits exactly one diagnostic (on a location naming the file or the node)
/// and returns null.
OwningOpRef<ModuleOp> importOnnxModel(MLIRContext &ctx, llvm::StringRef path,
                                      const OnnxImportOptions &opts);

/// Stage 1 only: the module holds `onnx.node` / `onnx.none` ops and
/// `tsr.constant` initializers. Same error contract as importOnnxModel.
OwningOpRef<ModuleOp> importOnnxModelGeneric(MLIRContext &ctx,
                                             llvm::StringRef path,
                                             const OnnxImportOptions &opts);

/// Stage 2 on a module produced by stage 1: replaces every `onnx.node` by
/// tsr ops and sets each function's type from its returned values. Emits
/// one diagnostic at the first node that fails.
LogicalResult legalizeOnnxModule(ModuleOp module,
                                 const OnnxImportOptions &opts = {});

} // namespace mlir::tessera

#endif // TESSERA_IMPORT_ONNX_IMPORT_H
