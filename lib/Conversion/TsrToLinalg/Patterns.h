//===- Patterns.h - Shared pieces of the tsr to linalg lowering -*- C++ -*-===//
//
// Private to lib/Conversion/TsrToLinalg: the per-family populate functions
// and the IR-building helpers that several families share.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_LIB_CONVERSION_TSRTOLINALG_PATTERNS_H
#define TESSERA_LIB_CONVERSION_TSRTOLINALG_PATTERNS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

namespace mlir::tessera::tsr_to_linalg {

void populateElementwisePatterns(TypeConverter &converter,
                                 RewritePatternSet &patterns);
void populateContractionPatterns(TypeConverter &converter,
                                 RewritePatternSet &patterns);
void populateNormPoolPatterns(TypeConverter &converter,
                              RewritePatternSet &patterns);
void populateReductionPatterns(TypeConverter &converter,
                               RewritePatternSet &patterns);
void populateDataMovementPatterns(TypeConverter &converter,
                                  RewritePatternSet &patterns);
void populateTrainingPatterns(TypeConverter &converter,
                              RewritePatternSet &patterns);
void populateGradientPatterns(TypeConverter &converter,
                              RewritePatternSet &patterns);
void populateCollectivePatterns(TypeConverter &converter,
                                RewritePatternSet &patterns);

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// The tsr-level element type of `v` (possibly unsigned).
Type getElementType(Value v);
/// Whether a tsr element type needs unsigned arithmetic.
bool isUnsigned(Type tsrElementType);
/// The signless counterpart of a tsr element type.
Type toSignless(Type tsrElementType);
/// `type` converted by `converter` as a ranked tensor type.
RankedTensorType convertTensorType(const TypeConverter &converter, Type type);

/// A scalar constant of `type` (float or integer) holding `value`.
Value scalarConstant(OpBuilder &b, Location loc, Type type, double value);
/// The smallest (`lowest`) or largest value of a tsr element type: -inf/+inf
/// for floats, the integer limits otherwise.
Value extremeConstant(OpBuilder &b, Location loc, Type tsrElementType,
                      bool lowest);
Value indexConstant(OpBuilder &b, Location loc, int64_t value);

/// `tensor.empty` of `type`, and one filled with `value`.
Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type);
Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   Value value);
/// `v` transposed by `perm` (a linalg.transpose into a fresh tensor).
Value transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm);

/// The indexing map reading an operand of shape `operand` inside a loop nest
/// over `result` under numpy broadcasting (size-1 dimensions read index 0).
AffineMap broadcastMap(ArrayRef<int64_t> operand, ArrayRef<int64_t> result,
                       MLIRContext *ctx);

/// A parallel linalg.generic producing `resultType` from `inputs` broadcast
/// numpy-style; `body` maps the input elements to the result element.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange inputs, BodyFn body);

/// The type arithmetic on `elem` accumulates in: f32 for the 16-bit floats
/// (Micikevicius et al. 2018; what cuBLAS and oneDNN do), else `elem`.
Type accumulatorType(Type elem);

/// `v` (a tensor of floats) with every element extended to f32.
Value widenToF32(OpBuilder &b, Location loc, Value v);

/// `v` (a tensor of floats) with every element rounded to `elem`, or `v`
/// itself if it already has that element type.
Value narrowTo(OpBuilder &b, Location loc, Value v, Type elem);

/// Reduces `input` over `axes` (sorted) starting from `init`; the result drops
/// the reduced dimensions. `combine(b, loc, {element, accumulator})`. For
/// 16-bit floats the accumulator is f32, rounded once at the end.
Value buildReduction(OpBuilder &b, Location loc, Value input,
                     ArrayRef<int64_t> axes, Value init, BodyFn combine);

/// Pads the spatial dimensions (2..) of `x` [N, C, D1..Dk] by `pads` (the k
/// begin pads, then the k end pads) and, at the end, by what windows of
/// `kernel`, `strides` and `dilations` producing `out` reach past it
/// (ceil_mode), with `value`. Returns `x` when nothing is padded.
Value padForPool(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> pads,
                 ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                 ArrayRef<int64_t> dilations, ArrayRef<int64_t> out,
                 Value value);

/// Whether windows of `kernel`, `strides` and `dilations` producing `out`
/// from spatial sizes `in`, with begin pads `pads` (the first k of them),
/// reach outside the input: into its padding, or past its end (ceil_mode).
bool windowsLeaveInput(ArrayRef<int64_t> in, ArrayRef<int64_t> pads,
                       ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                       ArrayRef<int64_t> dilations, ArrayRef<int64_t> out);

/// Inside the body of a linalg op: the element of `x` [N, C, D1..Dk] at
/// `position` applied to the op's loop indices (one result per dimension of
/// `x`, in the coordinates of `x`), or `outside` where a spatial coordinate
/// (dimensions 2..) lies outside `x`. The gradients of windowed ops read
/// their padding this way: a padded copy of x (padForPool) would be the
/// same op as the forward one's, which CSE merges, keeping that copy alive
/// from the forward pass to the backward one.
Value extractOrPad(OpBuilder &b, Location loc, Value x, AffineMap position,
                   Value outside);

/// The i1 tensor of shape `kernel` a windowed generic takes as an input only
/// for the sizes of its window loops: a constant, so that it is a global
/// and never a buffer.
Value windowShape(OpBuilder &b, Location loc, ArrayRef<int64_t> kernel);

/// Reshapes `v` to `type` (same element count, row-major order) with
/// collapse/expand_shape, through a flat tensor if one step does not do.
Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type);

/// Converts a scalar between tsr element types (the value itself is
/// signless): ints extend by the signedness of `from`, floats to ints
/// truncate toward zero, anything to i1 tests for non-zero.
Value convertScalar(OpBuilder &b, Location loc, Value v, Type from, Type to);

/// Applies a math-dialect op, computing in f32 for f16/bf16.
template <typename MathOp>
Value applyMath(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  if (t.getIntOrFloatBitWidth() >= 32)
    return MathOp::create(b, loc, x);
  Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  Value r = MathOp::create(b, loc, wide);
  return arith::TruncFOp::create(b, loc, t, r);
}

/// Softmax or log-softmax of a float tensor along `axis`, numerically stable.
Value buildSoftmax(OpBuilder &b, Location loc, Value x, int64_t axis, bool log);

/// What a softmax of f32 or f64 `x` along `axis` is made of: the maxima
/// along it and the sums of exp(x − max) along it (both shaped like `x`
/// without `axis`). The sums read x and the maxima, never a tensor of
/// exponentials: so the sums of a loss and of its gradient's softmax of
/// the same scores are one op for CSE, and nothing is left for a softmax
/// to store but its result.
struct SoftmaxParts {
  Value max, sums;
};
SoftmaxParts buildSoftmaxParts(OpBuilder &b, Location loc, Value x,
                               int64_t axis);

} // namespace mlir::tessera::tsr_to_linalg

#endif // TESSERA_LIB_CONVERSION_TSRTOLINALG_PATTERNS_H
