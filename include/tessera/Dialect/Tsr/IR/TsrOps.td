//===- TsrOps.td - Operations of the tsr dialect ------------*- tablegen -*-===//
//
// Op families: elementwise (unary, binary with broadcasting, select, cast),
// contractions (matmul, conv, einsum), normalization and pooling,
// reductions, data movement, training (dropout, losses) and constants.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_DIALECT_TSR_TSROPS_TD
#define TESSERA_DIALECT_TSR_TSROPS_TD

include "tessera/Dialect/Tsr/IR/TsrBase.td"
include "tessera/Dialect/Tsr/IR/TsrAttrs.td"
include "tessera/Dialect/Tsr/IR/TsrInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Tsr_Tensor : StaticShapeTensorOf<[AnyType]>;
def Tsr_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;
def Tsr_IntTensor : StaticShapeTensorOf<[AnyInteger]>;
def Tsr_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Tsr_BoolTensor : StaticShapeTensorOf<[I1]>;
def Tsr_NumericTensor : StaticShapeTensorOf<[AnyFloat, AnyInteger]>;

class Tsr_Doc<string semantics, string onnx, string example> {
  string text = !strconcat(semantics, "\n\nImplements ONNX `", onnx,
    "` (https://onnx.ai/onnx/operators/onnx__", onnx, ".html).\n\n",
    "Example:\n\n```mlir\n", example, "\n```\n");
}

class Tsr_BaseOp<string mnemonic, list<Trait> traits = []>
    : Tsr_Op<mnemonic, !listconcat(traits, [Pure, Tsr_CostOpInterface])>;

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

class Tsr_UnaryOp<string mnemonic, string onnx, string semantics,
                  Type tensor = Tsr_NumericTensor, list<Trait> traits = []>
    : Tsr_BaseOp<mnemonic, !listconcat(traits, [SameOperandsAndResultType,
                                                 Elementwise])> {
  let summary = !strconcat("elementwise ", onnx);
  let description = Tsr_Doc<semantics, onnx,
    "%y = tsr." # mnemonic # " %x : tensor<2x3xf32>">.text;
  let arguments = (ins tensor:$x);
  let results = (outs tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def Tsr_NegOp : Tsr_UnaryOp<"neg", "Neg", "Negates every element."> {
  let hasFolder = 1;
}
def Tsr_AbsOp : Tsr_UnaryOp<"abs", "Abs", "Absolute value of every element.">;
def Tsr_SignOp : Tsr_UnaryOp<"sign", "Sign", "-1, 0 or 1 by the sign of every element.">;
def Tsr_ReluOp : Tsr_UnaryOp<"relu", "Relu", "max(x, 0) of every element.">;
def Tsr_IdentityOp : Tsr_UnaryOp<"identity", "Identity",
  "Returns its operand; kept so that named graph values survive import. "
  "The identity of a constant folds to the constant (ONNX exporters give "
  "each layer that shares a buffer its own Identity of it).",
  Tsr_Tensor> {
  let hasFolder = 1;
}
def Tsr_NotOp : Tsr_UnaryOp<"not", "Not", "Logical negation.", Tsr_BoolTensor>;
def Tsr_ExpOp : Tsr_UnaryOp<"exp", "Exp", "e^x of every element.", Tsr_FloatTensor>;
def Tsr_LogOp : Tsr_UnaryOp<"log", "Log", "Natural logarithm of every element.", Tsr_FloatTensor>;
def Tsr_SqrtOp : Tsr_UnaryOp<"sqrt", "Sqrt", "Square root of every element.", Tsr_FloatTensor>;
def Tsr_ReciprocalOp : Tsr_UnaryOp<"reciprocal", "Reciprocal", "1/x of every element.", Tsr_FloatTensor>;
def Tsr_TanhOp : Tsr_UnaryOp<"tanh", "Tanh", "Hyperbolic tangent of every element.", Tsr_FloatTensor>;
def Tsr_SigmoidOp : Tsr_UnaryOp<"sigmoid", "Sigmoid", "1/(1+e^-x) of every element.", Tsr_FloatTensor>;
def Tsr_ErfOp : Tsr_UnaryOp<"erf", "Erf", "The Gauss error function of every element.", Tsr_FloatTensor>;
def Tsr_SinOp : Tsr_UnaryOp<"sin", "Sin", "Sine of every element.", Tsr_FloatTensor>;
def Tsr_CosOp : Tsr_UnaryOp<"cos", "Cos", "Cosine of every element.", Tsr_FloatTensor>;
def Tsr_TanOp : Tsr_UnaryOp<"tan", "Tan", "Tangent of every element.", Tsr_FloatTensor>;
def Tsr_AtanOp : Tsr_UnaryOp<"atan", "Atan", "Arctangent of every element.", Tsr_FloatTensor>;
def Tsr_FloorOp : Tsr_UnaryOp<"floor", "Floor", "Rounds every element down.", Tsr_FloatTensor>;
def Tsr_CeilOp : Tsr_UnaryOp<"ceil", "Ceil", "Rounds every element up.", Tsr_FloatTensor>;
def Tsr_RoundOp : Tsr_UnaryOp<"round", "Round",
  "Rounds every element to the nearest integer, halves to even.", Tsr_FloatTensor>;
def Tsr_SoftplusOp : Tsr_UnaryOp<"softplus", "Softplus", "log(1+e^x) of every element.", Tsr_FloatTensor>;
def Tsr_SoftsignOp : Tsr_UnaryOp<"softsign", "Softsign", "x/(1+|x|) of every element.", Tsr_FloatTensor>;
def Tsr_IsNaNOp : Tsr_BaseOp<"is_nan", [Elementwise, SameOperandsAndResultShape]> {
  let summary = "elementwise IsNaN";
  let description = Tsr_Doc<"True where an element is NaN.", "IsNaN",
    "%m = tsr.is_nan %x : tensor<4xf32> -> tensor<4xi1>">.text;
  let arguments = (ins Tsr_FloatTensor:$x);
  let results = (outs Tsr_BoolTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
}

class Tsr_UnaryFloatAttrOp<string mnemonic, string onnx, string semantics,
                           dag attrs, string attrExample>
    : Tsr_BaseOp<mnemonic, [SameOperandsAndResultType, Elementwise]> {
  let summary = !strconcat("elementwise ", onnx);
  let description = Tsr_Doc<semantics, onnx,
    "%y = tsr." # mnemonic # " %x {" # attrExample # "} : tensor<2x3xf32>">.text;
  let arguments = !con((ins Tsr_FloatTensor:$x), attrs);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def Tsr_GeluOp : Tsr_UnaryFloatAttrOp<"gelu", "Gelu",
  "x·Φ(x), with Φ the standard normal CDF; `approximate` tanh uses "
  "0.5·x·(1+tanh(√(2/π)(x+0.044715x³))).",
  (ins DefaultValuedAttr<Tsr_GeluApproximationAttr, "::mlir::tsr::GeluApproximation::none">:$approximate),
  "approximate = #tsr.gelu_approximation<tanh>">;
def Tsr_LeakyReluOp : Tsr_UnaryFloatAttrOp<"leaky_relu", "LeakyRelu",
  "x for x ≥ 0, alpha·x otherwise.", (ins F64Attr:$alpha), "alpha = 0.01">;
def Tsr_EluOp : Tsr_UnaryFloatAttrOp<"elu", "Elu",
  "x for x > 0, alpha·(e^x − 1) otherwise.", (ins F64Attr:$alpha), "alpha = 1.0">;
def Tsr_SeluOp : Tsr_UnaryFloatAttrOp<"selu", "Selu",
  "gamma·x for x > 0, gamma·alpha·(e^x − 1) otherwise.",
  (ins F64Attr:$alpha, F64Attr:$gamma), "alpha = 1.67, gamma = 1.05">;
def Tsr_HardSigmoidOp : Tsr_UnaryFloatAttrOp<"hard_sigmoid", "HardSigmoid",
  "max(0, min(1, alpha·x + beta)).", (ins F64Attr:$alpha, F64Attr:$beta),
  "alpha = 0.2, beta = 0.5">;

def Tsr_ClipOp : Tsr_BaseOp<"clip", [SameOperandsAndResultType, Elementwise]> {
  let summary = "elementwise Clip";
  let description = Tsr_Doc<"Clamps every element to [min, max]; an absent "
    "bound does not clamp. Bounds are attributes: the importer requires "
    "ONNX's min and max inputs to be constants.", "Clip",
    "%y = tsr.clip %x {min = 0.0, max = 6.0} : tensor<4xf32>">.text;
  let arguments = (ins Tsr_NumericTensor:$x, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
  let results = (outs Tsr_NumericTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

//===----------------------------------------------------------------------===//
// Elementwise binary with numpy broadcasting
//===----------------------------------------------------------------------===//

class Tsr_BinaryOp<string mnemonic, string onnx, string semantics,
                   Type tensor = Tsr_NumericTensor, Type result = tensor,
                   list<Trait> traits = []>
    : Tsr_BaseOp<mnemonic, !listconcat(traits, [
        InferTypeOpAdaptor])> {
  let summary = !strconcat("elementwise ", onnx, " with broadcasting");
  let description = Tsr_Doc<!strconcat(semantics, " Operands broadcast "
    "numpy-style; both have the same element type."), onnx,
    "%z = tsr." # mnemonic # " %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>">.text;
  let arguments = (ins tensor:$lhs, tensor:$rhs);
  let results = (outs result:$result);
  let assemblyFormat =
    "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
}

def Tsr_AddOp : Tsr_BinaryOp<"add", "Add", "Sum.", Tsr_NumericTensor, Tsr_NumericTensor, [Commutative]> {
  let hasFolder = 1;
}
def Tsr_SubOp : Tsr_BinaryOp<"sub", "Sub", "Difference."> {
  let hasFolder = 1;
}
def Tsr_MulOp : Tsr_BinaryOp<"mul", "Mul", "Product.", Tsr_NumericTensor, Tsr_NumericTensor, [Commutative]> {
  let hasFolder = 1;
}
def Tsr_DivOp : Tsr_BinaryOp<"div", "Div", "Quotient; integers truncate toward zero."> {
  let hasFolder = 1;
}
def Tsr_PowOp : Tsr_BinaryOp<"pow", "Pow", "lhs raised to rhs.">;
def Tsr_MaxOp : Tsr_BinaryOp<"max", "Max", "Larger of the two; NaN propagates."> {
  let hasFolder = 1;
}
def Tsr_MinOp : Tsr_BinaryOp<"min", "Min", "Smaller of the two; NaN propagates."> {
  let hasFolder = 1;
}
def Tsr_ModOp : Tsr_BinaryOp<"mod", "Mod", "Remainder: with `fmod` the sign "
    "follows the dividend (C fmod), otherwise the divisor (Python %)."> {
  let arguments = (ins Tsr_NumericTensor:$lhs, Tsr_NumericTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$fmod);
}
def Tsr_AndOp : Tsr_BinaryOp<"and", "And", "Logical and.", Tsr_BoolTensor> {
  let hasFolder = 1;
}
def Tsr_OrOp : Tsr_BinaryOp<"or", "Or", "Logical or.", Tsr_BoolTensor> {
  let hasFolder = 1;
}
def Tsr_XorOp : Tsr_BinaryOp<"xor", "Xor", "Logical exclusive or.", Tsr_BoolTensor>;
def Tsr_EqualOp : Tsr_BinaryOp<"equal", "Equal", "lhs == rhs.", Tsr_Tensor, Tsr_BoolTensor> {
  let hasFolder = 1;
}
def Tsr_LessOp : Tsr_BinaryOp<"less", "Less", "lhs < rhs.", Tsr_NumericTensor, Tsr_BoolTensor> {
  let hasFolder = 1;
}
def Tsr_LessEqualOp : Tsr_BinaryOp<"less_equal", "LessOrEqual", "lhs <= rhs.", Tsr_NumericTensor, Tsr_BoolTensor> {
  let hasFolder = 1;
}
def Tsr_GreaterOp : Tsr_BinaryOp<"greater", "Greater", "lhs > rhs.", Tsr_NumericTensor, Tsr_BoolTensor> {
  let hasFolder = 1;
}
def Tsr_GreaterEqualOp : Tsr_BinaryOp<"greater_equal", "GreaterOrEqual", "lhs >= rhs.", Tsr_NumericTensor, Tsr_BoolTensor> {
  let hasFolder = 1;
}
def Tsr_PReluOp : Tsr_BinaryOp<"prelu", "PRelu", "lhs for lhs ≥ 0, rhs·lhs otherwise.", Tsr_FloatTensor>;

def Tsr_WhereOp : Tsr_BaseOp<"where", [
    InferTypeOpAdaptor]> {
  let summary = "elementwise select with broadcasting";
  let description = Tsr_Doc<"Picks the element of `on_true` where `cond` "
    "holds, of `on_false` elsewhere; all three broadcast numpy-style.",
    "Where",
    "%r = tsr.where %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>">.text;
  let arguments = (ins Tsr_BoolTensor:$cond, Tsr_Tensor:$on_true,
                       Tsr_Tensor:$on_false);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "$cond `,` $on_true `,` $on_false attr-dict `:` "
    "type($cond) `,` type($on_true) `,` type($on_false) `->` type($result)";
  let hasFolder = 1;
}

def Tsr_CastOp : Tsr_BaseOp<"cast", [SameOperandsAndResultShape, Elementwise]> {
  let summary = "elementwise element-type conversion";
  let description = Tsr_Doc<"Converts every element to the result's element "
    "type: floats to integers truncate toward zero, to bool test ≠ 0; "
    "unsigned types convert as unsigned.", "Cast",
    "%y = tsr.cast %x : tensor<4xf32> to tensor<4xi64>">.text;
  let arguments = (ins Tsr_Tensor:$x);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `to` type($result)";
  let hasFolder = 1;
}

def Tsr_ConstantOp : Tsr_BaseOp<"constant", [ConstantLike,
    InferTypeOpAdaptor]> {
  let summary = "a constant tensor";
  let description = Tsr_Doc<"Materializes a constant: ONNX initializers of "
    "inference models and `Constant` nodes.", "Constant",
    "%c = tsr.constant dense<[1.0, 2.0]> : tensor<2xf32>">.text;
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Tsr_MatMulOp : Tsr_BaseOp<"matmul", [
    InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Tsr_CostOpInterface, ["getFlops"]>]> {
  let summary = "matrix product with batching and broadcasting";
  let description = Tsr_Doc<"numpy.matmul: the last two dimensions multiply "
    "as matrices, leading (batch) dimensions broadcast; a 1-D lhs gets a "
    "leading 1 and a 1-D rhs a trailing 1, both removed from the result.",
    "MatMul",
    "%c = tsr.matmul %a, %b : tensor<8x4x16xf32>, tensor<16x32xf32> -> tensor<8x4x32xf32>">.text;
  let arguments = (ins Tsr_NumericTensor:$lhs, Tsr_NumericTensor:$rhs);
  let results = (outs Tsr_NumericTensor:$result);
  let assemblyFormat =
    "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
}

def Tsr_ConvOp : Tsr_BaseOp<"conv", [
    InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Tsr_CostOpInterface, ["getFlops"]>]> {
  let summary = "N-d grouped, strided, dilated, padded convolution";
  let description = Tsr_Doc<"Cross-correlation of `x` [N, C, D1..Dk] with "
    "`w` [M, C/group, K1..Kk] for k = 1, 2 or 3, plus an optional `bias` "
    "[M]. `pads` holds the k begin pads then the k end pads.", "Conv",
    "%y = tsr.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>">.text;
  let arguments = (ins Tsr_FloatTensor:$x, Tsr_FloatTensor:$w,
                       Optional<Tsr_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, I64Attr:$group);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tsr_EinsumOp : Tsr_BaseOp<"einsum", [
    InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Tsr_CostOpInterface, ["getFlops"]>]> {
  let summary = "Einstein summation";
  let description = Tsr_Doc<"Sums products of operand elements over the "
    "labels absent from the output of `equation` (explicit `->` form, or "
    "implicit: output labels are those that appear once, sorted). Ellipsis "
    "is not supported.", "Einsum",
    "%c = tsr.einsum %a, %b {equation = \"bij,bjk->bik\"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>">.text;
  let arguments = (ins Variadic<Tsr_NumericTensor>:$inputs, StrAttr:$equation);
  let results = (outs Tsr_NumericTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Pooling and normalization
//===----------------------------------------------------------------------===//

class Tsr_PoolOp<string mnemonic, string onnx, string semantics, dag extra>
    : Tsr_BaseOp<mnemonic, [InferTypeOpAdaptor,
        DeclareOpInterfaceMethods<Tsr_CostOpInterface, ["getFlops"]>]> {
  let summary = !strconcat(onnx, " over the spatial dimensions");
  let description = Tsr_Doc<!strconcat(semantics, " `x` is [N, C, D1..Dk]; "
    "`pads` holds the k begin pads then the k end pads; `ceil_mode` rounds "
    "the output size up."), onnx,
    "%y = tsr." # mnemonic # " %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>">.text;
  let arguments = !con((ins Tsr_NumericTensor:$x,
      DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
      DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
      DefaultValuedAttr<BoolAttr, "false">:$ceil_mode), extra);
  let results = (outs Tsr_NumericTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tsr_MaxPoolOp : Tsr_PoolOp<"max_pool", "MaxPool",
  "Maximum over each window; padding never wins.", (ins)>;
def Tsr_AvgPoolOp : Tsr_PoolOp<"avg_pool", "AveragePool",
  "Mean over each window, dividing by the window size with "
  "`count_include_pad`, else by the number of unpadded elements.",
  (ins DefaultValuedAttr<BoolAttr, "false">:$count_include_pad)>;

def Tsr_BatchNormOp : Tsr_BaseOp<"batch_norm", [
    InferTypeOpAdaptor]> {
  let summary = "batch normalization with running statistics";
  let description = Tsr_Doc<"scale·(x − mean)/√(var + epsilon) + bias per "
    "channel (dimension 1) with the given running statistics (inference "
    "semantics; training statistics are built by the training passes).",
    "BatchNormalization",
    "%y = tsr.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>">.text;
  let arguments = (ins Tsr_FloatTensor:$x, Tsr_FloatTensor:$scale,
                       Tsr_FloatTensor:$bias, Tsr_FloatTensor:$mean,
                       Tsr_FloatTensor:$var, F64Attr:$epsilon);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tsr_LayerNormOp : Tsr_BaseOp<"layer_norm", [
    InferTypeOpAdaptor]> {
  let summary = "layer normalization over the trailing dimensions";
  let description = Tsr_Doc<"Normalizes over dimensions [axis, rank) to "
    "zero mean and unit variance (biased, plus epsilon), then multiplies by "
    "`scale` and adds `bias` (if present), both broadcast to those trailing "
    "dimensions.", "LayerNormalization",
    "%y = tsr.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>">.text;
  let arguments = (ins Tsr_FloatTensor:$x, Tsr_FloatTensor:$scale,
                       Optional<Tsr_FloatTensor>:$bias, I64Attr:$axis,
                       F64Attr:$epsilon);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

class Tsr_SoftmaxLikeOp<string mnemonic, string onnx, string semantics>
    : Tsr_BaseOp<mnemonic, [SameOperandsAndResultType]> {
  let summary = onnx # " along one axis";
  let description = Tsr_Doc<semantics, onnx,
    "%y = tsr." # mnemonic # " %x {axis = 1 : i64} : tensor<2x10xf32>">.text;
  let arguments = (ins Tsr_FloatTensor:$x, I64Attr:$axis);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}
def Tsr_SoftmaxOp : Tsr_SoftmaxLikeOp<"softmax", "Softmax",
  "e^x / Σ e^x along `axis`, computed with the maximum subtracted first.">;
def Tsr_LogSoftmaxOp : Tsr_SoftmaxLikeOp<"log_softmax", "LogSoftmax",
  "x − log Σ e^x along `axis`, computed with the maximum subtracted first.">;

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Tsr_ReduceOp<string mnemonic, string onnx, string semantics>
    : Tsr_BaseOp<mnemonic, [InferTypeOpAdaptor]> {
  let summary = onnx # " over a set of axes";
  let description = Tsr_Doc<!strconcat(semantics, " `axes` are sorted, "
    "distinct and non-negative; with `keepdims` reduced axes stay as size 1."),
    onnx,
    "%s = tsr." # mnemonic # " %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>">.text;
  let arguments = (ins Tsr_NumericTensor:$x, DenseI64ArrayAttr:$axes,
                       BoolAttr:$keepdims);
  let results = (outs Tsr_NumericTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}
def Tsr_ReduceSumOp : Tsr_ReduceOp<"reduce_sum", "ReduceSum", "Sum."> {
  let hasFolder = 1;
}
def Tsr_ReduceMeanOp : Tsr_ReduceOp<"reduce_mean", "ReduceMean", "Arithmetic mean.">;
def Tsr_ReduceMaxOp : Tsr_ReduceOp<"reduce_max", "ReduceMax", "Maximum.">;
def Tsr_ReduceMinOp : Tsr_ReduceOp<"reduce_min", "ReduceMin", "Minimum.">;
def Tsr_ReduceProdOp : Tsr_ReduceOp<"reduce_prod", "ReduceProd", "Product."> {
  let hasFolder = 1;
}

class Tsr_ArgReduceOp<string mnemonic, string onnx, string semantics>
    : Tsr_BaseOp<mnemonic, [InferTypeOpAdaptor]> {
  let summary = onnx # " along one axis";
  let description = Tsr_Doc<!strconcat(semantics, " Ties go to the first "
    "index, or the last with `select_last_index`; indices are i64."), onnx,
    "%i = tsr." # mnemonic # " %x {axis = 1 : i64, keepdims = true, select_last_index = false} : (tensor<2x3xf32>) -> tensor<2x1xi64>">.text;
  let arguments = (ins Tsr_NumericTensor:$x, I64Attr:$axis, BoolAttr:$keepdims,
                       BoolAttr:$select_last_index);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}
def Tsr_ArgMaxOp : Tsr_ArgReduceOp<"argmax", "ArgMax", "Index of the maximum.">;
def Tsr_ArgMinOp : Tsr_ArgReduceOp<"argmin", "ArgMin", "Index of the minimum.">;

def Tsr_CumSumOp : Tsr_BaseOp<"cumsum", [SameOperandsAndResultType]> {
  let summary = "cumulative sum along one axis";
  let description = Tsr_Doc<"Running sum along `axis`; `exclusive` leaves "
    "out the element itself, `reverse` runs from the end.", "CumSum",
    "%y = tsr.cumsum %x {axis = 0 : i64, exclusive = false, reverse = false} : tensor<5xf32>">.text;
  let arguments = (ins Tsr_NumericTensor:$x, I64Attr:$axis,
                       BoolAttr:$exclusive, BoolAttr:$reverse);
  let results = (outs Tsr_NumericTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def Tsr_TopKOp : Tsr_BaseOp<"topk", [
    InferTypeOpAdaptor]> {
  let summary = "the k largest or smallest elements along one axis";
  let description = Tsr_Doc<"Values and i64 indices of the `k` largest "
    "(`largest`) or smallest elements along `axis`; ties keep the lower "
    "index. `sorted` (the default) returns them best first; with `sorted = "
    "false` their order is unspecified, and a 1-D input's come in index "
    "order, selected in O(bits * n) (a radix select of the threshold, then "
    "one pass) rather than O(k * n): what gradient compression needs.",
    "TopK",
    "%v, %i = tsr.topk %x {k = 2 : i64, axis = 1 : i64, largest = true} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)">.text;
  let arguments = (ins Tsr_NumericTensor:$x, I64Attr:$k, I64Attr:$axis,
                       BoolAttr:$largest,
                       DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let results = (outs Tsr_NumericTensor:$values,
                      StaticShapeTensorOf<[I64]>:$indices);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Tsr_ReshapeOp : Tsr_BaseOp<"reshape"> {
  let summary = "reinterprets the shape, keeping row-major element order";
  let description = Tsr_Doc<"Same elements in row-major order under the "
    "result's static shape (also what ONNX Flatten, Squeeze and Unsqueeze "
    "import to).", "Reshape",
    "%y = tsr.reshape %x : tensor<2x3x4xf32> to tensor<6x4xf32>">.text;
  let arguments = (ins Tsr_Tensor:$x);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tsr_TransposeOp : Tsr_BaseOp<"transpose", [
    InferTypeOpAdaptor]> {
  let summary = "permutes dimensions";
  let description = Tsr_Doc<"Result dimension i is operand dimension "
    "perm[i].", "Transpose",
    "%y = tsr.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>">.text;
  let arguments = (ins Tsr_Tensor:$x, DenseI64ArrayAttr:$perm);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Tsr_BroadcastOp : Tsr_BaseOp<"broadcast"> {
  let summary = "broadcasts numpy-style to the result shape";
  let description = Tsr_Doc<"Repeats the operand along dimensions of size 1 "
    "and new leading dimensions to reach the result's shape.", "Expand",
    "%y = tsr.broadcast %x : tensor<3x1xf32> to tensor<2x3x4xf32>">.text;
  let arguments = (ins Tsr_Tensor:$x);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tsr_ConcatOp : Tsr_BaseOp<"concat", [
    InferTypeOpAdaptor]> {
  let summary = "joins tensors along one axis";
  let description = Tsr_Doc<"Operands agree on every dimension but `axis`.",
    "Concat",
    "%y = tsr.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>">.text;
  let arguments = (ins Variadic<Tsr_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Tsr_SliceOp : Tsr_BaseOp<"slice", [
    InferTypeOpAdaptor]> {
  let summary = "strided slice with static bounds";
  let description = Tsr_Doc<"Takes indices start, start+step, ... before "
    "`limits` in every dimension (one entry per dimension, already clamped "
    "by the importer; a negative step walks backwards and then stops after "
    "`limits`).", "Slice",
    "%y = tsr.slice %x {starts = array<i64: 0, 1>, limits = array<i64: 2, 3>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x2xf32>">.text;
  let arguments = (ins Tsr_Tensor:$x, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$steps);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Tsr_GatherOp : Tsr_BaseOp<"gather", [
    InferTypeOpAdaptor]> {
  let summary = "gathers slices along one axis by an index tensor";
  let description = Tsr_Doc<"Result shape is data.shape[:axis] + "
    "indices.shape + data.shape[axis+1:]; negative indices count from the "
    "end; out-of-range indices are clamped (ONNX leaves them undefined).",
    "Gather",
    "%y = tsr.gather %emb, %ids {axis = 0 : i64} : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>">.text;
  let arguments = (ins Tsr_Tensor:$data, Tsr_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Tsr_GatherElementsOp : Tsr_BaseOp<"gather_elements"> {
  let summary = "gathers single elements along one axis";
  let description = Tsr_Doc<"result[i..] = data[i.. with index `axis` "
    "replaced by indices[i..]]; the result has the indices' shape.",
    "GatherElements",
    "%y = tsr.gather_elements %x, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>">.text;
  let arguments = (ins Tsr_Tensor:$data, Tsr_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tsr_ScatterElementsOp : Tsr_BaseOp<"scatter_elements"> {
  let summary = "scatters single elements along one axis";
  let description = Tsr_Doc<"A copy of `data` where, for every index of "
    "`updates`, the element at that index with index `axis` replaced by "
    "indices[...] is set to (or, with `reduction` add/mul/max/min, combined "
    "with) the update.", "ScatterElements",
    "%y = tsr.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = #tsr.scatter_reduction<none>} : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>">.text;
  let arguments = (ins Tsr_Tensor:$data, Tsr_IndexTensor:$indices,
                       Tsr_Tensor:$updates, I64Attr:$axis,
                       DefaultValuedAttr<Tsr_ScatterReductionAttr, "::mlir::tsr::ScatterReduction::none">:$reduction);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tsr_TileOp : Tsr_BaseOp<"tile", [
    InferTypeOpAdaptor]> {
  let summary = "repeats the whole tensor along every dimension";
  let description = Tsr_Doc<"Dimension i is repeated repeats[i] times.",
    "Tile",
    "%y = tsr.tile %x {repeats = array<i64: 2, 1>} : (tensor<2x3xf32>) -> tensor<4x3xf32>">.text;
  let arguments = (ins Tsr_Tensor:$x, DenseI64ArrayAttr:$repeats);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tsr_PadOp : Tsr_BaseOp<"pad", [
    InferTypeOpAdaptor]> {
  let summary = "pads (or crops, with negative pads) every dimension";
  let description = Tsr_Doc<"`pads` holds the begin pads of every dimension "
    "then the end pads; `mode` is constant (fill with `value`), reflect or "
    "edge.", "Pad",
    "%y = tsr.pad %x {pads = array<i64: 0, 1, 0, 1>, mode = #tsr.pad_mode<constant>, value = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<2x5xf32>">.text;
  let arguments = (ins Tsr_NumericTensor:$x, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<Tsr_PadModeAttr, "::mlir::tsr::PadMode::constant">:$mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Tsr_NumericTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tsr_TriluOp : Tsr_BaseOp<"trilu", [SameOperandsAndResultType]> {
  let summary = "keeps the upper or lower triangle of the last two dims";
  let description = Tsr_Doc<"Zeroes the elements below (`upper`) or above "
    "the k-th diagonal of every matrix in the last two dimensions.", "Trilu",
    "%y = tsr.trilu %x {upper = true, k = 0 : i64} : tensor<4x4xf32>">.text;
  let arguments = (ins Tsr_NumericTensor:$x, BoolAttr:$upper, I64Attr:$k);
  let results = (outs Tsr_NumericTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def Tsr_OneHotOp : Tsr_BaseOp<"one_hot"> {
  let summary = "one-hot encoding of integer indices";
  let description = Tsr_Doc<"Inserts a dimension of size `depth` at `axis`: "
    "`on_value` where it equals the index (negative indices count from "
    "depth), `off_value` elsewhere.", "OneHot",
    "%y = tsr.one_hot %i {depth = 4 : i64, axis = -1 : i64, on_value = 1.0 : f64, off_value = 0.0 : f64} : (tensor<3xi64>) -> tensor<3x4xf32>">.text;
  let arguments = (ins Tsr_NumericTensor:$indices, I64Attr:$depth,
                       I64Attr:$axis, F64Attr:$on_value, F64Attr:$off_value);
  let results = (outs Tsr_NumericTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//
// A sparse MoE layer is a family of ops, one per place where its data changes
// layout (GShard's dispatch and combine): tsr.topk picks each token's
// experts, `moe_assign` gives every (token, choice) a slot in its expert's
// buffer, `moe_dispatch` moves tokens into an [experts, groups, capacity,
// hidden] buffer that batched matmuls run the experts on, and `moe_combine`
// brings the results back weighted by the gates. Tokens are routed within
// groups (one sequence, or all tokens): capacity and drop decisions are per
// group, so they do not depend on how many ranks share the batch.
//===----------------------------------------------------------------------===//

def Tsr_MoeAssignOp : Tsr_BaseOp<"moe_assign", [InferTypeOpAdaptor]> {
  let summary = "slots in the experts' buffers for routed tokens";
  let description = [{
    `experts[g, s, j]` is the expert chosen as choice `j` of token `s` of
    group `g`. Within each group, choices take slots of their expert's buffer
    of `capacity` rows in priority order: every token's first choice (in
    token order) before any second choice, as GShard and Switch do. `slots`
    is the slot taken, or -1 when the expert was full and the choice is
    dropped; `sources[e, g, c]` is `s * k + j` of the choice in slot `c` of
    expert `e`'s buffer for group `g`, or -1 when the slot is empty. With
    `capacity` = tokens per group nothing is dropped (top-k experts are
    distinct). Expert numbers outside [0, num_experts) are clamped.

    Reference: GShard (Lepikhin et al., 2020, Algorithm 2) and Switch
    Transformer (Fedus et al., 2021) position-in-expert by cumulative sum.

    Example:

    ```mlir
    %slots, %sources = tsr.moe_assign %experts {num_experts = 4 : i64, capacity = 3 : i64} : (tensor<2x6x2xi64>) -> (tensor<2x6x2xi64>, tensor<4x2x3xi64>)
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[I64]>:$experts,
                       I64Attr:$num_experts, I64Attr:$capacity);
  let results = (outs StaticShapeTensorOf<[I64]>:$slots,
                      StaticShapeTensorOf<[I64]>:$sources);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

class Tsr_MoeMoveOp<string mnemonic, string summaryText, string semantics,
                    string example, string outShape>
    : Tsr_BaseOp<mnemonic> {
  let summary = summaryText;
  let description = !strconcat(semantics, [{

    The routing operands are `tsr.topk`'s expert numbers and `moe_assign`'s
    slots and sources; `weights` (the gates, [groups, tokens, k]) scales
    every moved row when present. Result: }], outShape, [{.

    Reference: GShard's dispatch and combine einsums (Lepikhin et al., 2020),
    without materializing their one-hot [tokens, experts, capacity] masks.

    Example:

    ```mlir
    }], example, [{

    ```
  }]);
  let arguments = (ins Tsr_FloatTensor:$x,
                       StaticShapeTensorOf<[I64]>:$experts,
                       StaticShapeTensorOf<[I64]>:$slots,
                       StaticShapeTensorOf<[I64]>:$sources,
                       Optional<Tsr_FloatTensor>:$weights);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = "$x `,` $experts `,` $slots `,` $sources (`weights` $weights^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tsr_MoeDispatchOp : Tsr_MoeMoveOp<"moe_dispatch",
    "moves tokens into the experts' buffers",
    "result[e, g, c, :] = x[g, s, :] (times weights[g, s, j]) where "
    "sources[e, g, c] = s * k + j, and zero where the slot is empty.",
    "%buf = tsr.moe_dispatch %x, %experts, %slots, %sources : (tensor<2x6x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<4x2x3xi64>) -> tensor<4x2x3x8xf32>",
    "[experts, groups, capacity, hidden]">;

def Tsr_MoeCombineOp : Tsr_MoeMoveOp<"moe_combine",
    "brings the experts' outputs back to their tokens",
    "result[g, s, :] = sum over choices j not dropped of (weights[g, s, j] "
    "times) x[experts[g, s, j], g, slots[g, s, j], :]; a token whose every "
    "choice was dropped gets zeros.",
    "%y = tsr.moe_combine %buf, %experts, %slots, %sources weights %gates : (tensor<4x2x3x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<4x2x3xi64>, tensor<2x6x2xf32>) -> tensor<2x6x8xf32>",
    "[groups, tokens, hidden]">;

//===----------------------------------------------------------------------===//
// Training ops
//===----------------------------------------------------------------------===//

def Tsr_DropoutOp : Tsr_BaseOp<"dropout", [
    InferTypeOpAdaptor]> {
  let summary = "dropout with an explicit seed";
  let description = Tsr_Doc<"Zeroes each element with probability `ratio` "
    "and scales the rest by 1/(1−ratio); the keep mask is a pure function of "
    "(`seed`, element index), so forward and recompute agree. Import turns "
    "inference-mode Dropout into its operand. The optional scalar "
    "`seed_offset` (the training step, fed by `tsr-seed-dropout`) is mixed "
    "into the seed, so every step draws a fresh mask.", "Dropout",
    "%y, %m = tsr.dropout %x {ratio = 0.1 : f64, seed = 7 : i64} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>)">.text;
  let arguments = (ins Tsr_FloatTensor:$x,
                       Optional<StaticShapeTensorOf<[I64]>>:$seed_offset,
                       F64Attr:$ratio, I64Attr:$seed);
  let results = (outs Tsr_FloatTensor:$result, Tsr_BoolTensor:$mask);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tsr_RandomUniformOp : Tsr_BaseOp<"random_uniform"> {
  let summary = "uniform draws in [0, 1) with an explicit seed";
  let description = [{
    Each element is a pure function of (`seed`, the optional scalar
    `seed_offset`, its row-major index), from the generator `tsr.dropout`
    uses: splitmix64 of seed + (index + 1)·0x9E3779B97F4A7C15, the seed
    xor-ed with a splitmix64 mix of offset + 1. The top m bits of the hash
    times 2^-m, m the significand bits of the result type (24 for f32, 53
    for f64), so every draw is exact in that type and below 1. Stochastic
    rounding (QSGD's gradient quantization) reads it with the training
    step's `rng` as the offset, so every step and rank draws afresh.

    ```mlir
    %u = tsr.random_uniform %step {seed = 7 : i64} : (tensor<i64>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Optional<StaticShapeTensorOf<[I64]>>:$seed_offset,
                       I64Attr:$seed);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

class Tsr_LossOp<string mnemonic, string onnx, string semantics, string example>
    : Tsr_BaseOp<mnemonic> {
  let summary = onnx;
  let description = Tsr_Doc<!strconcat(semantics, " Input is [N, C] or "
    "[N, C, D1..Dk] with classes on dimension 1, target [N] or [N, D1..Dk]; "
    "targets equal to `ignore_index` add nothing and (for mean) do not "
    "count; `reduction` is none, sum or mean (weighted by `weights`)."),
    onnx, example>.text;
  let results = (outs Tsr_FloatTensor:$loss);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}
def Tsr_SoftmaxCrossEntropyLossOp : Tsr_LossOp<"softmax_cross_entropy_loss",
  "SoftmaxCrossEntropyLoss", "−log softmax(scores)[target] per sample.",
  "%l = tsr.softmax_cross_entropy_loss %s, %t {reduction = #tsr.loss_reduction<mean>} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>"> {
  let arguments = (ins Tsr_FloatTensor:$scores, Tsr_IndexTensor:$target,
                       Optional<Tsr_FloatTensor>:$weights,
                       DefaultValuedAttr<Tsr_LossReductionAttr, "::mlir::tsr::LossReduction::mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
}
def Tsr_NegativeLogLikelihoodLossOp : Tsr_LossOp<"nll_loss",
  "NegativeLogLikelihoodLoss", "−input[target] per sample.",
  "%l = tsr.nll_loss %x, %t {reduction = #tsr.loss_reduction<mean>} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>"> {
  let arguments = (ins Tsr_FloatTensor:$input, Tsr_IndexTensor:$target,
                       Optional<Tsr_FloatTensor>:$weights,
                       DefaultValuedAttr<Tsr_LossReductionAttr, "::mlir::tsr::LossReduction::mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
}

def Tsr_StopGradientOp : Tsr_BaseOp<"stop_gradient", [SameOperandsAndResultType]> {
  let summary = "identity whose gradient is zero";
  let description = [{
    Returns its operand unchanged; `tsr-autodiff` propagates no gradient
    through it (JAX's `stop_gradient`, PyTorch's `detach`). ONNX has no
    counterpart; lowering drops the op.

    Example:

    ```mlir
    %y = tsr.stop_gradient %x : tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Tsr_Tensor:$x);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def Tsr_RematBarrierOp : Tsr_Op<"remat_barrier", [Pure,
    SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Tsr_CostOpInterface,
                              ["getFlops", "getBytesAccessed"]>]> {
  let summary = "identity that starts a recomputation";
  let description = [{
    Returns its operand. `tsr-remat` passes every value that a recomputed
    forward op reads through one, so that common-subexpression elimination
    cannot merge the recomputation with the forward op it repeats (which
    would keep the forward value alive until the backward pass and undo the
    saving: JAX's `optimization_barrier` does the same for `jax.remat`). It
    has no folder; `tsr-to-linalg` keeps it, and one-shot bufferization
    makes its result its operand's buffer (no copy, no cost).

    Example:

    ```mlir
    %k = tsr.remat_barrier %x : tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Tsr_Tensor:$x);
  let results = (outs Tsr_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

include "tessera/Dialect/Tsr/IR/TsrGradOps.td"
include "tessera/Dialect/Tsr/IR/TsrCommOps.td"
include "tessera/Dialect/Tsr/IR/TsrTransferOps.td"
#endif // TESSERA_DIALECT_TSR_TSROPS_TD
