//===- Legalize.h - ONNX legalization handlers ------------------*- C++ -*-===//
//
// Stage 2 of ONNX import: one handler per (op type, since_version range),
// grouped in one .cpp per op family. A handler reads its `onnx.node` through
// NodeContext, builds tsr ops with NodeContext::create (type inference,
// verification and folding in one step) and returns one value per node
// output it produces.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_IMPORT_ONNX_LEGALIZE_H
#define TESSERA_IMPORT_ONNX_LEGALIZE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "tessera/Dialect/Onnx/IR/OnnxDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrs.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

namespace mlir::tessera::onnx_import {

/// One node being legalized, with helpers to read it and to build tsr ops.
class NodeContext {
public:
  NodeContext(onnx_generic::NodeOp node, OpBuilder &builder)
      : node(node), b(builder), loc(node.getLoc()) {}

  onnx_generic::NodeOp node;
  OpBuilder &b;
  Location loc;
  /// Import options the mixture-of-experts handler reads
  /// (OnnxImportOptions::moeCapacityFactor, moeAuxLoss, moeStatistics).
  double moeCapacityFactor = 0, moeAuxLoss = 0;
  bool moeStatistics = false;
  /// Auxiliary losses the node adds to the training loss (a float scalar
  /// each): they become function results marked `tsr.aux_loss`.
  SmallVector<Value> auxLosses;
  /// Values the node reports each step, with a name the node's name
  /// prefixes: they become function results with role `metric`.
  SmallVector<std::pair<Value, std::string>> metrics;
  /// OnnxImportOptions::updateStatistics and runningBatchNorm, which
  /// BatchNormalization reads.
  bool updateStatistics = false, runningBatchNorm = false;
  /// New values of function arguments marked `tsr.statistics` (running
  /// statistics): they become results naming the argument in `tsr.updates`.
  SmallVector<std::pair<Value, BlockArgument>> statisticsUpdates;

  StringRef opType() { return node.getOpType(); }
  int64_t sinceVersion() { return node.getSinceVersion(); }

  //===--- Inputs and outputs ---------------------------------------------===//
  unsigned numInputs() { return node.getInputs().size(); }
  /// The i-th input, or null when absent (past the end or `onnx.none`).
  Value input(unsigned i);
  /// The i-th input's ranked type, or null when absent.
  RankedTensorType inputType(unsigned i);
  /// The i-th input, or an error naming it when it is absent.
  FailureOr<Value> requireInput(unsigned i);
  unsigned numOutputs() { return node.getOutputs().size(); }
  bool outputUsed(unsigned i) {
    return i < numOutputs() && !node.getOutputs()[i].use_empty();
  }
  /// The element type ONNX shape inference gave output i, or null.
  Type outputElementType(unsigned i);
  /// The static type ONNX gave output i (declared or inferred), or null.
  /// Handlers fall back on it when a shape-like input is not a constant:
  /// the model's own static type says what the result shape is.
  RankedTensorType staticOutputType(unsigned i);

  /// The constant value of input i if it folded to a constant, else null.
  DenseElementsAttr constantInput(unsigned i);
  /// Input i as constant elements; emits an error naming the node and the
  /// input (`what`) when it is not a constant.
  FailureOr<DenseElementsAttr> requireConstant(unsigned i, StringRef what);
  /// Input i as a constant list of integers (any integer element type).
  FailureOr<SmallVector<int64_t>> requireInts(unsigned i, StringRef what);
  /// Input i as a constant scalar (one element) converted to double.
  FailureOr<double> requireScalar(unsigned i, StringRef what);

  //===--- Attributes -----------------------------------------------------===//
  Attribute attr(StringRef name) { return node.getAttrs().get(name); }
  bool hasAttr(StringRef name) { return static_cast<bool>(attr(name)); }
  int64_t getInt(StringRef name, int64_t dflt);
  double getFloat(StringRef name, double dflt);
  StringRef getString(StringRef name, StringRef dflt);
  std::optional<SmallVector<int64_t>> getInts(StringRef name);
  std::optional<SmallVector<double>> getFloats(StringRef name);

  //===--- Diagnostics ----------------------------------------------------===//
  /// `unsupported ONNX op 'X' (domain '', opset N, since_version V) at node
  /// 'name'` followed by `: why` when given.
  LogicalResult unsupported(const Twine &why = {});
  /// An error about this node (bad input to a supported op).
  LogicalResult error(const Twine &message);

  //===--- Building -------------------------------------------------------===//
  /// Creates `opName` with the given operands and attributes. Without
  /// explicit `types`, the op must infer its result types; invalid operands
  /// produce a diagnostic instead of an op. The new op is verified, then
  /// folded where possible (constant operands fold to tsr.constant).
  FailureOr<SmallVector<Value>> build(StringRef opName, ValueRange operands,
                                      ArrayRef<NamedAttribute> attrs = {},
                                      unsigned numResults = 1,
                                      TypeRange types = {});
  template <typename OpT>
  FailureOr<Value> create(ValueRange operands,
                          ArrayRef<NamedAttribute> attrs = {}, Type type = {}) {
    auto results = build(OpT::getOperationName(), operands, attrs, 1,
                         type ? TypeRange(type) : TypeRange());
    if (failed(results))
      return failure();
    return (*results)[0];
  }

  NamedAttribute named(StringRef name, Attribute value) {
    return b.getNamedAttr(name, value);
  }
  NamedAttribute i64(StringRef name, int64_t v) {
    return named(name, b.getI64IntegerAttr(v));
  }
  NamedAttribute f64(StringRef name, double v) {
    return named(name, b.getF64FloatAttr(v));
  }
  NamedAttribute boolean(StringRef name, bool v) {
    return named(name, b.getBoolAttr(v));
  }
  NamedAttribute str(StringRef name, StringRef v) {
    return named(name, b.getStringAttr(v));
  }
  /// An enum attribute `AttrT` of the ONNX attribute value `v`, or none if
  /// `v` is not one of the enum's spellings.
  template <typename AttrT, typename EnumT>
  std::optional<NamedAttribute> enumAttr(StringRef name, StringRef v) {
    if (std::optional<EnumT> e = ::mlir::tsr::symbolizeEnum<EnumT>(v))
      return named(name, AttrT::get(b.getContext(), *e));
    return std::nullopt;
  }
  NamedAttribute i64s(StringRef name, ArrayRef<int64_t> v) {
    return named(name, b.getDenseI64ArrayAttr(v));
  }

  /// A tsr.constant.
  Value constant(DenseElementsAttr value);
  /// A constant of `shape` filled with `v`, of element type `elem`.
  Value splat(Type elem, ArrayRef<int64_t> shape, double v);
  /// A rank-0 constant `v` of element type `elem`.
  Value scalar(Type elem, double v) { return splat(elem, {}, v); }
  /// A 1-D i64 constant.
  Value i64Constant(ArrayRef<int64_t> values);

  FailureOr<Value> reshape(Value x, ArrayRef<int64_t> shape);
  FailureOr<Value> castTo(Value x, Type elem);
  FailureOr<Value> broadcastTo(Value x, ArrayRef<int64_t> shape);
  FailureOr<Value> transpose(Value x, ArrayRef<int64_t> perm);
};

/// A handler legalizes one node, pushing one value per output it produces
/// (trailing outputs the graph does not use may be left out).
using Handler = LogicalResult (*)(NodeContext &node,
                                  SmallVectorImpl<Value> &results);

/// Handlers by op type and since_version range.
class HandlerRegistry {
public:
  /// Registers `fn` for `opType` nodes with since_version in
  /// [minSince, maxSince].
  void add(StringRef opType, Handler fn, int64_t minSince = 1,
           int64_t maxSince = INT64_MAX);
  /// The handler for the node, or null when none is registered.
  Handler lookup(StringRef opType, int64_t sinceVersion) const;

  /// All handlers of all families, built once.
  static const HandlerRegistry &get();

private:
  struct Entry {
    int64_t minSince, maxSince;
    Handler fn;
  };
  llvm::StringMap<SmallVector<Entry, 2>> handlers;
};

void populateElementwiseHandlers(HandlerRegistry &registry);
void populateMathNNHandlers(HandlerRegistry &registry);
void populateReductionHandlers(HandlerRegistry &registry);
void populateDataMovementHandlers(HandlerRegistry &registry);
void populateTrainingHandlers(HandlerRegistry &registry);
void populateShapeHandlers(HandlerRegistry &registry);
/// Contrib ops of other domains, keyed "domain.OpType".
void populateContribHandlers(HandlerRegistry &registry);

/// The MLIR element type of an ONNX TensorProto::DataType number, or null
/// for the unsupported ones.
Type getOnnxElementType(MLIRContext *ctx, int64_t dataType);

/// Normalizes a possibly negative axis against `rank`; failure when out of
/// range.
FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank);

} // namespace mlir::tessera::onnx_import

#endif // TESSERA_IMPORT_ONNX_LEGALIZE_H
