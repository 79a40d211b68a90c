//===- TsrGradOps.td - Ops of backward passes ---------------*- tablegen -*-===//
//
// Ops that only gradient rules create: the adjoints of convolution and max
// pooling, which the forward ops cannot express without materializing
// interior padding (strided convolutions) or routing by argmax (max pooling).
// Included by TsrOps.td; the verifiers live in TsrGradOps.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_DIALECT_TSR_TSRGRADOPS_TD
#define TESSERA_DIALECT_TSR_TSRGRADOPS_TD

/// The description template of ops without an ONNX counterpart: semantics,
/// the reference they follow, an example.
class Tsr_GradDoc<string semantics, string reference, string example> {
  string text = !strconcat(semantics, "\n\nReference: ", reference, "\n\n",
    "Example:\n\n```mlir\n", example, "\n```\n");
}

class Tsr_ConvGradOp<string mnemonic, string summaryText, string semantics,
                     string example, dag operands>
    : Tsr_BaseOp<mnemonic, [
        DeclareOpInterfaceMethods<Tsr_CostOpInterface, ["getFlops"]>]> {
  let summary = summaryText;
  let description = Tsr_GradDoc<!strconcat(semantics, " `strides`, `pads` "
    "(the k begin pads then the k end pads), `dilations` and `group` are "
    "those of the forward `tsr.conv`, for k = 1, 2 or 3 spatial dimensions; "
    "the result type is explicit because strides make the forward input and "
    "kernel sizes ambiguous, and the verifier checks that the forward "
    "convolution of those sizes has the shape of `dy`."),
    "the adjoint of ONNX `Conv` (https://onnx.ai/onnx/operators/onnx__Conv.html); "
    "V. Dumoulin and F. Visin, \"A guide to convolution arithmetic for deep "
    "learning\", arXiv:1603.07285, section 4 (transposed convolution).",
    example>.text;
  let arguments = !con(operands, (ins DenseI64ArrayAttr:$strides,
      DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations, I64Attr:$group));
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tsr_ConvBackwardDataOp : Tsr_ConvGradOp<"conv_backward_data",
  "gradient of a convolution with respect to its input",
  "The adjoint of `tsr.conv` in its input: with y = conv(x, w), returns "
  "dx[n, c, h..] = Σ dy[n, m, o..]·w[m, c mod C/group, k..] over the output "
  "positions o and kernel offsets k with o·stride + k·dilation − pad_begin = "
  "h and m in the group of c (the transposed convolution). Input positions "
  "that no window reads get zero.",
  "%dx = tsr.conv_backward_data %dy, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>",
  (ins Tsr_FloatTensor:$dy, Tsr_FloatTensor:$w)>;

def Tsr_ConvBackwardFilterOp : Tsr_ConvGradOp<"conv_backward_filter",
  "gradient of a convolution with respect to its kernel",
  "The adjoint of `tsr.conv` in its kernel: with y = conv(x, w), returns "
  "dw[m, c, k..] = Σ dy[n, m, o..]·xp[n, g·C/group + c, o·stride + "
  "k·dilation] over the batch n and the output positions o, where xp is x "
  "zero-padded by `pads` and g the group of m.",
  "%dw = tsr.conv_backward_filter %x, %dy {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<1x4x4x4xf32>) -> tensor<4x3x3x3xf32>",
  (ins Tsr_FloatTensor:$x, Tsr_FloatTensor:$dy)>;

def Tsr_MaxPoolGradOp : Tsr_BaseOp<"max_pool_grad"> {
  let summary = "gradient of max pooling with respect to its input";
  let description = Tsr_GradDoc<"The adjoint of `tsr.max_pool` at `x`: "
    "every element of `dy` is added to the position of `x` that its window's "
    "maximum came from, the first one in row-major window order on ties; "
    "padding (and the extra end padding of `ceil_mode`) never wins, and a "
    "window holding no element larger than −∞ passes nothing. The attributes "
    "are those of the forward op; `dy` has its result's shape.",
    "the adjoint of ONNX `MaxPool` "
    "(https://onnx.ai/onnx/operators/onnx__MaxPool.html), routed like the "
    "op's `Indices` output (PyTorch's max_pool2d_with_indices_backward).",
    "%dx = tsr.max_pool_grad %x, %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>">.text;
  let arguments = (ins Tsr_FloatTensor:$x, Tsr_FloatTensor:$dy,
      DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
      DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
      DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tsr_MoeGatherDotOp : Tsr_BaseOp<"moe_gather_dot"> {
  let summary = "dot products of tokens with their experts' buffer rows";
  let description = Tsr_GradDoc<"result[g, s, j] = dot(buf[experts[g, s, j], "
    "g, slots[g, s, j], :], u[g, s, :]), zero for a dropped choice: the "
    "adjoint of `tsr.moe_combine`'s weights (u = dy) and of "
    "`tsr.moe_dispatch`'s weights (buf = dy, u = x).",
    "the gate gradient of GShard's combine einsum (Lepikhin et al., 2020).",
    "%dw = tsr.moe_gather_dot %buf, %experts, %slots, %dy : (tensor<4x2x3x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xi64>, tensor<2x6x8xf32>) -> tensor<2x6x2xf32>">.text;
  let arguments = (ins Tsr_FloatTensor:$buffer,
                       StaticShapeTensorOf<[I64]>:$experts,
                       StaticShapeTensorOf<[I64]>:$slots,
                       Tsr_FloatTensor:$u);
  let results = (outs Tsr_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // TESSERA_DIALECT_TSR_TSRGRADOPS_TD
