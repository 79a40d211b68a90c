//===- TsrtOps.cpp - Verifiers and effects of the tsrt ops ----------------===//
//
// A collective's `ins` and `outs` are both tensors or both memrefs of one
// element type that its `dtype` describes, shaped as its runtime entry point
// expects (blocks along dimension 0). Every collective and wait writes the
// communicator resource, and on memrefs reads `ins` and writes `outs`.
//
//===----------------------------------------------------------------------===//
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::tsrt;

bool mlir::tsrt::isCompatibleDType(DType dtype, Type elementType) {
  auto integer = [&](unsigned width, bool isUnsigned) {
    auto i = dyn_cast<IntegerType>(elementType);
    return i && i.getWidth() == width &&
           (i.isSignless() || i.isUnsigned() == isUnsigned);
  };
  switch (dtype) {
  case DType::float32:
    return elementType.isF32();
  case DType::float64:
    return elementType.isF64();
  case DType::float16:
    return elementType.isF16();
  case DType::bfloat16:
    return elementType.isBF16();
  case DType::boolean:
    return integer(1, false);
  case DType::int8:
    return integer(8, false);
  case DType::uint8:
    return integer(8, true);
  case DType::int16:
    return integer(16, false);
  case DType::uint16:
    return integer(16, true);
  case DType::int32:
    return integer(32, false);
  case DType::uint32:
    return integer(32, true);
  case DType::int64:
    return integer(64, false);
  case DType::uint64:
    return integer(64, true);
  }
  llvm_unreachable("unknown tsrt dtype");
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

/// What every destination-style tsrt op checks of its form: all operands
/// (but the tokens) tensors or all memrefs, and one result per destination
/// (`inits` of them) on tensors, none or an async token on memrefs.
static LogicalResult verifyDpsForm(Operation *op, ValueRange deps, size_t inits,
                                   ValueRange results, bool hasToken) {
  bool tensors = isa<TensorType>(op->getOperand(deps.size()).getType());
  for (Value v : op->getOperands())
    if (!isa<gpu::AsyncTokenType>(v.getType()) &&
        isa<TensorType>(v.getType()) != tensors)
      return op->emitOpError("expects all operands tensors or all memrefs");
  if (tensors ? results.size() != inits || !deps.empty()
              : results.size() > 1 || (results.size() == 1 && !hasToken))
    return op->emitOpError("expects one result per destination on tensors, "
                           "none or an async token on memrefs");
  return success();
}

namespace {

ShapedType getShaped(Value v) { return cast<ShapedType>(v.getType()); }

/// What every collective checks: ins and outs of one kind and element type,
/// a dtype that describes it, a group, an id.
template <typename OpT> LogicalResult verifyCollective(OpT op) {
  ShapedType in = getShaped(op.getInput()), out = getShaped(op.getInit());
  if (isa<TensorType>(in) != isa<TensorType>(out))
    return op.emitOpError("ins and outs must both be tensors or both memrefs");
  if (failed(verifyDpsForm(op, op.getAsyncDependencies(), 1, op.getResult(),
                           bool(op.getAsyncToken()))))
    return failure();
  if (in.getElementType() != out.getElementType())
    return op.emitOpError("ins and outs have different element types (")
           << in.getElementType() << ", " << out.getElementType() << ")";
  if (!isCompatibleDType(op.getDtype(), in.getElementType()))
    return op.emitOpError("dtype ")
           << stringifyDType(op.getDtype())
           << " does not describe the element type " << in.getElementType();
  auto group = static_cast<int64_t>(op.getGroup());
  if (group <= 0)
    return op.emitOpError("group must be a non-empty mask of mesh axes, not ")
           << group;
  auto id = static_cast<int64_t>(op.getId());
  if (id < -1)
    return op.emitOpError("id must be a collective's number or -1, not ") << id;
  return success();
}

/// An async collective on tensors is completed by its result's one use, a
/// tsrt.wait.
LogicalResult verifyAsync(Operation *op, bool async) {
  if (!async || op->getNumResults() == 0 ||
      !isa<TensorType>(op->getResult(0).getType()))
    return success();
  Value result = op->getResult(0);
  if (!result.hasOneUse() || !isa<WaitOp>(*result.getUsers().begin()))
    return op->emitOpError("is async: its result must have exactly one use, "
                           "a tsrt.wait");
  return success();
}

LogicalResult verifyReduction(Operation *op, Reduction reduction,
                              Type elementType) {
  if (reduction == Reduction::mean && !isa<FloatType>(elementType))
    return op->emitOpError("reduction mean needs a float element type, not ")
           << elementType;
  return success();
}

LogicalResult verifySameShape(Operation *op, ShapedType in, ShapedType out) {
  if (in.getShape() != out.getShape())
    return op->emitOpError("ins and outs must have the same shape");
  return success();
}

/// `big` is N blocks of `small` along dimension 0, for some N >= 1.
LogicalResult verifyBlocks(Operation *op, ShapedType big, ShapedType small,
                           StringRef bigName, StringRef smallName) {
  if (big.getRank() == 0 || big.getRank() != small.getRank())
    return op->emitOpError("ins and outs must have one rank >= 1");
  if (big.getShape().drop_front() != small.getShape().drop_front())
    return op->emitOpError("ins and outs differ beyond dimension 0");
  int64_t b = big.getDimSize(0), s = small.getDimSize(0);
  if (s <= 0 || b % s != 0)
    return op->emitOpError("dimension 0 of ")
           << bigName << " (" << b << ") must be a multiple of that of "
           << smallName << " (" << s << ")";
  return success();
}

} // namespace

LogicalResult AllReduceOp::verify() {
  if (failed(verifyCollective(*this)) ||
      failed(verifyAsync(*this, getAsync())) ||
      failed(verifyReduction(*this, getReduction(),
                             getShaped(getInput()).getElementType())))
    return failure();
  return verifySameShape(*this, getShaped(getInput()), getShaped(getInit()));
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyCollective(*this)) ||
      failed(verifyAsync(*this, getAsync())) ||
      failed(verifyReduction(*this, getReduction(),
                             getShaped(getInput()).getElementType())))
    return failure();
  return verifyBlocks(*this, getShaped(getInput()), getShaped(getInit()), "ins",
                      "outs");
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyCollective(*this)) || failed(verifyAsync(*this, getAsync())))
    return failure();
  return verifyBlocks(*this, getShaped(getInit()), getShaped(getInput()),
                      "outs", "ins");
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyCollective(*this)))
    return failure();
  if (getShaped(getInput()).getRank() == 0)
    return emitOpError("needs a dimension 0 to split into blocks");
  return verifySameShape(*this, getShaped(getInput()), getShaped(getInit()));
}

LogicalResult BroadcastOp::verify() {
  if (failed(verifyCollective(*this)))
    return failure();
  return verifySameShape(*this, getShaped(getInput()), getShaped(getInit()));
}

LogicalResult PermuteOp::verify() {
  if (failed(verifyCollective(*this)))
    return failure();
  auto to = static_cast<int64_t>(getSendTo()),
       from = static_cast<int64_t>(getRecvFrom());
  if (to < -1 || from < -1 || (to < 0 && from < 0))
    return emitOpError("send_to and recv_from must be ranks or -1, and one a "
                       "rank; got ")
           << to << " and " << from;
  ShapedType in = getShaped(getInput()), out = getShaped(getInit());
  if (to >= 0 && from >= 0)
    return verifySameShape(*this, in, out);
  if ((to < 0 && in.getNumElements() != 0) ||
      (from < 0 && out.getNumElements() != 0))
    return emitOpError("the side without a message must have no elements");
  return success();
}

LogicalResult WaitOp::verify() {
  if (failed(verifyDpsForm(*this, getAsyncDependencies(), 1, getResult(),
                           bool(getAsyncToken()))))
    return failure();
  if (!isa<TensorType>(getPending().getType()))
    return success();
  Operation *def = getPending().getDefiningOp();
  auto async = def ? def->getAttrOfType<UnitAttr>("async") : UnitAttr();
  if (!async || def->getDialect() != getOperation()->getDialect())
    return emitOpError("outs must be the result of an async tsrt collective");
  return success();
}

MemRefType GpuGemmOp::getAuxType(StringRef epilogue, MemRefType c) {
  bool mask = epilogue == "relu_aux" || epilogue == "relu_aux_bias" ||
              epilogue == "drelu";
  bool input = epilogue == "gelu_aux" || epilogue == "gelu_aux_bias" ||
               epilogue == "dgelu";
  if ((!mask && !input) || c.getRank() < 2)
    return {};
  int64_t rows = c.getDimSize(c.getRank() - 2),
          cols = c.getDimSize(c.getRank() - 1);
  if (mask)
    return MemRefType::get({rows, (cols + 127) / 128 * 16},
                           IntegerType::get(c.getContext(), 8));
  return MemRefType::get({rows, (cols + 7) / 8 * 8},
                         Float32Type::get(c.getContext()));
}

LogicalResult GpuGemmOp::verify() {
  auto a = cast<MemRefType>(getA().getType()),
       b = cast<MemRefType>(getB().getType()),
       c = cast<MemRefType>(getC().getType());
  for (MemRefType t : {a, b, c})
    if (!t.getLayout().isIdentity())
      return emitOpError("expects contiguous row-major buffers, got ") << t;
  if (a.getRank() != c.getRank() || b.getRank() != c.getRank() ||
      (c.getRank() != 2 && c.getRank() != 3))
    return emitOpError("expects a, b and c of rank 2, or 3 with a batch");
  Type in = a.getElementType();
  if (b.getElementType() != in || !c.getElementType().isF32() ||
      !(in.isF32() || in.isBF16() || in.isF16()))
    return emitOpError("expects f32, bf16 or f16 operands (both alike) and "
                       "an f32 result");
  size_t r = c.getRank();
  // The shapes of op(a) and op(b).
  SmallVector<int64_t> sa(a.getShape()), sb(b.getShape());
  if (getTransposeA())
    std::swap(sa[r - 2], sa[r - 1]);
  if (getTransposeB())
    std::swap(sb[r - 2], sb[r - 1]);
  ArrayRef<int64_t> sc = c.getShape();
  if (sa[r - 2] != sc[r - 2] || sb[r - 1] != sc[r - 1] ||
      sa[r - 1] != sb[r - 2] || (r == 3 && (sa[0] != sc[0] || sb[0] != sc[0])))
    return emitOpError("expects shapes [B,] M x K, K x N and M x N (of a "
                       "and b as transposed)");
  StringRef epilogue = getEpilogue();
  bool gradient = epilogue == "bias_grad_a" || epilogue == "bias_grad_b";
  bool biased = epilogue == "bias" || epilogue == "relu_bias" ||
                epilogue == "relu_aux_bias" || epilogue == "gelu_bias" ||
                epilogue == "gelu_aux_bias";
  MemRefType auxType = getAuxType(epilogue, c);
  if (!biased && !gradient && !auxType && epilogue != "none" &&
      epilogue != "relu" && epilogue != "gelu")
    return emitOpError("expects epilogue none, relu, bias, relu_bias, gelu, "
                       "gelu_bias, bias_grad_a, bias_grad_b, relu_aux, "
                       "relu_aux_bias, drelu, gelu_aux, gelu_aux_bias or "
                       "dgelu, not '")
           << epilogue << "'";
  if (bool(auxType) != bool(getAux()))
    return emitOpError(auxType ? "expects aux with epilogue '"
                               : "expects no aux with epilogue '")
           << epilogue << "'";
  if (auxType) {
    if (r != 2 || getAccumulate())
      return emitOpError("expects aux on a rank-2 product without "
                         "accumulate");
    if (getAux().getType() != auxType)
      return emitOpError("expects aux of type ")
             << auxType << " with epilogue '" << epilogue << "', got "
             << getAux().getType();
  }
  if ((biased || gradient) != bool(getBias()))
    return emitOpError(biased || gradient ? "expects a bias with epilogue '"
                                          : "expects no bias with epilogue '")
           << epilogue << "'";
  if (gradient) {
    // The sum of op(a) over k has one element per row of c, that of op(b)
    // one per column.
    int64_t length = epilogue == "bias_grad_a" ? sc[0] : sc[1];
    auto bias = cast<MemRefType>(getBias().getType());
    if (r != 2)
      return emitOpError("expects a bias gradient of a rank-2 product");
    if (bias.getRank() != 1 || bias.getDimSize(0) != length ||
        !bias.getElementType().isF32() || !bias.getLayout().isIdentity())
      return emitOpError("expects an f32 bias gradient of ")
             << length << " elements with epilogue '" << epilogue << "', got "
             << bias;
  }
  if (biased) {
    auto bias = cast<MemRefType>(getBias().getType());
    if (r != 2 || getAccumulate())
      return emitOpError("expects a bias on a rank-2 product without "
                         "accumulate");
    if (bias.getRank() != 1 || bias.getDimSize(0) != sc[1] ||
        !bias.getElementType().isF32() || !bias.getLayout().isIdentity())
      return emitOpError("expects an f32 bias of the ")
             << sc[1] << " columns of c, got " << bias;
  }
  return success();
}

/// Whether `layout` orders the four logical dimensions of an attention
/// operand: a permutation of 0..3.
static bool isAttentionLayout(ArrayRef<int64_t> layout) {
  if (layout.size() != 4)
    return false;
  unsigned seen = 0;
  for (int64_t d : layout) {
    if (d < 0 || d > 3 || (seen & (1u << d)))
      return false;
    seen |= 1u << d;
  }
  return true;
}

static ShapedType shapedType(Value v) { return cast<ShapedType>(v.getType()); }

/// Whether `t` is a tensor or a memref of the identity layout.
static bool isDense(ShapedType t) {
  auto memref = dyn_cast<MemRefType>(t);
  return !memref || memref.getLayout().isIdentity();
}

/// The logical [B, H, S, D] of the attention operand `v`, stored in
/// `layout`'s order, or an error naming it.
static FailureOr<SmallVector<int64_t>>
getAttentionDims(Operation *op, Value v, ArrayRef<int64_t> layout,
                 StringRef name) {
  ShapedType t = shapedType(v);
  if (!isAttentionLayout(layout))
    return op->emitOpError() << "expects " << name
                             << "_layout to be a permutation of [0, 1, 2, 3]";
  if (t.getRank() != 4 || !isDense(t))
    return op->emitOpError()
           << "expects " << name << " to be a dense rank-4 buffer, got " << t;
  SmallVector<int64_t> dims(4);
  for (auto [stored, dim] : llvm::enumerate(layout))
    dims[dim] = t.getDimSize(stored);
  return dims;
}

/// What both attention ops check of q, k, v (logical shapes `q`, `k`, `v`),
/// the scale, the bias and the stats (null in the forward op without).
static LogicalResult verifyAttentionOperands(Operation *op, Value qValue,
                                             ArrayRef<int64_t> q,
                                             ArrayRef<int64_t> k,
                                             ArrayRef<int64_t> v, Value scale,
                                             Value bias, Value stats) {
  Type element = shapedType(qValue).getElementType();
  if (!element.isBF16() && !element.isF16())
    return op->emitOpError("expects bf16 or f16 operands (cuDNN's fused "
                           "attention has no f32 kernels), got ")
           << element;
  if (k != v || q[0] != k[0] || q[1] != k[1] || q[3] != k[3])
    return op->emitOpError("expects logical shapes q, out [B, H, Sq, D] and "
                           "k, v [B, H, Skv, D]");
  ShapedType scaleType = shapedType(scale);
  if (scaleType.getRank() != 0 || !scaleType.getElementType().isF32())
    return op->emitOpError("expects a rank-0 f32 scale, got ") << scaleType;
  if (bias) {
    ShapedType t = shapedType(bias);
    if (t.getRank() != 4 || !isDense(t) || t.getElementType() != element ||
        (t.getDimSize(0) != 1 && t.getDimSize(0) != q[0]) ||
        (t.getDimSize(1) != 1 && t.getDimSize(1) != q[1]) ||
        t.getDimSize(2) != q[2] || t.getDimSize(3) != k[2])
      return op->emitOpError("expects a dense bias [B or 1, H or 1, Sq, Skv] "
                             "of the operands' type, got ")
             << t;
  }
  if (stats) {
    ShapedType t = shapedType(stats);
    if (t.getRank() != 3 || !isDense(t) || !t.getElementType().isF32() ||
        t.getShape() != ArrayRef<int64_t>{q[0], q[1], q[2]})
      return op->emitOpError("expects dense f32 stats [B, H, Sq], got ") << t;
  }
  return success();
}

LogicalResult GpuAttentionOp::verify() {
  if (getInits().empty() || getInits().size() > 2)
    return emitOpError("expects outs (out) or (out, stats)");
  if (failed(verifyDpsForm(*this, getAsyncDependencies(), getInits().size(),
                           getResults(), bool(getAsyncToken()))))
    return failure();
  Operation *op = *this;
  auto q = getAttentionDims(op, getQ(), getQLayout(), "q");
  if (failed(q))
    return failure();
  auto k = getAttentionDims(op, getK(), getKLayout(), "k");
  if (failed(k))
    return failure();
  auto v = getAttentionDims(op, getV(), getVLayout(), "v");
  if (failed(v))
    return failure();
  auto o = getAttentionDims(op, getOut(), getOutLayout(), "out");
  if (failed(o))
    return failure();
  Type element = shapedType(getQ()).getElementType();
  for (Value x : {getK(), getV(), getOut()})
    if (shapedType(x).getElementType() != element)
      return emitOpError("expects q, k, v and out of one element type");
  if (*o != *q)
    return emitOpError("expects logical shapes q, out [B, H, Sq, D] and k, "
                       "v [B, H, Skv, D]");
  return verifyAttentionOperands(op, getQ(), *q, *k, *v, getScale(), getBias(),
                                 getStats());
}

LogicalResult GpuAttentionBackwardOp::verify() {
  if (getInits().size() != 3)
    return emitOpError("expects outs (dq, dk, dv)");
  if (failed(verifyDpsForm(*this, getAsyncDependencies(), 3, getResults(),
                           bool(getAsyncToken()))))
    return failure();
  Operation *op = *this;
  ValueRange inits = getInits();
  // Each operand or gradient, its layout and name, and which of q, k, v
  // (0, 1, 2) its logical shape is.
  std::tuple<Value, ArrayRef<int64_t>, StringRef, int> all[] = {
      {getQ(), getQLayout(), "q", 0},
      {getK(), getKLayout(), "k", 1},
      {getV(), getVLayout(), "v", 2},
      {getOut(), getOutLayout(), "out", 0},
      {getDOut(), getDOutLayout(), "d_out", 0},
      {inits[0], getDqLayout(), "dq", 0},
      {inits[1], getDkLayout(), "dk", 1},
      {inits[2], getDvLayout(), "dv", 2}};
  SmallVector<SmallVector<int64_t>> dims;
  Type element = shapedType(getQ()).getElementType();
  for (auto [value, layout, name, like] : all) {
    auto d = getAttentionDims(op, value, layout, name);
    if (failed(d))
      return failure();
    if (shapedType(value).getElementType() != element)
      return emitOpError("expects q, k, v, out, d_out and the gradients of "
                         "one element type");
    if (like != static_cast<int>(dims.size()) && *d != dims[like])
      return emitOpError() << "expects " << name << " of "
                           << std::get<2>(all[like]) << "'s logical shape";
    dims.push_back(*d);
  }
  return verifyAttentionOperands(op, getQ(), dims[0], dims[1], dims[2],
                                 getScale(), getBias(), getStats());
}

//===----------------------------------------------------------------------===//
// Memory effects
//===----------------------------------------------------------------------===//

namespace {

using Effects =
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>;

/// The communicator always; the buffers on memrefs (`input` may be null).
void addEffects(Effects &effects, OpOperand *input, OpOperand &init,
                bool readsInit) {
  effects.emplace_back(MemoryEffects::Write::get(),
                       CommunicatorResource::get());
  if (!isa<MemRefType>(init.get().getType()))
    return;
  if (input)
    effects.emplace_back(MemoryEffects::Read::get(), input,
                         SideEffects::DefaultResource::get());
  if (readsInit)
    effects.emplace_back(MemoryEffects::Read::get(), &init,
                         SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(), &init,
                       SideEffects::DefaultResource::get());
}

} // namespace

void AllReduceOp::getEffects(Effects &effects) {
  addEffects(effects, &getInputMutable(), getInitMutable(),
             /*readsInit=*/false);
}
void ReduceScatterOp::getEffects(Effects &effects) {
  addEffects(effects, &getInputMutable(), getInitMutable(),
             /*readsInit=*/false);
}
void AllGatherOp::getEffects(Effects &effects) {
  addEffects(effects, &getInputMutable(), getInitMutable(),
             /*readsInit=*/false);
}
void AllToAllOp::getEffects(Effects &effects) {
  addEffects(effects, &getInputMutable(), getInitMutable(),
             /*readsInit=*/false);
}
void PermuteOp::getEffects(Effects &effects) {
  addEffects(effects, &getInputMutable(), getInitMutable(),
             /*readsInit=*/false);
}
void BroadcastOp::getEffects(Effects &effects) {
  addEffects(effects, &getInputMutable(), getInitMutable(),
             /*readsInit=*/false);
}

/// The wait reads and writes the destination: the data arrives there.
void WaitOp::getEffects(Effects &effects) {
  addEffects(effects, nullptr, getPendingMutable(), /*readsInit=*/true);
}

/// The product reads the operands and writes the result, which it also
/// reads when it accumulates.
void GpuGemmOp::getEffects(Effects &effects) {
  auto add = [&](MemoryEffects::Effect *effect, OpOperand &operand) {
    effects.emplace_back(effect, &operand, SideEffects::DefaultResource::get());
  };
  add(MemoryEffects::Read::get(), getAMutable());
  add(MemoryEffects::Read::get(), getBMutable());
  // The BGRAD epilogues write the bias gradient; the others read a bias.
  bool gradient = getEpilogue().starts_with("bias_grad");
  if (getBias())
    add(gradient
            ? static_cast<MemoryEffects::Effect *>(MemoryEffects::Write::get())
            : MemoryEffects::Read::get(),
        getBiasMutable()[0]);
  // The forward ReLU (GELU) writes its mask (input), the backward one reads
  // it.
  if (getAux())
    add(getEpilogue() == "drelu" || getEpilogue() == "dgelu"
            ? static_cast<MemoryEffects::Effect *>(MemoryEffects::Read::get())
            : MemoryEffects::Write::get(),
        getAuxMutable()[0]);
  if (getAccumulate())
    add(MemoryEffects::Read::get(), getCMutable());
  add(MemoryEffects::Write::get(), getCMutable());
}

/// Attention (forward or backward) reads its operands and overwrites its
/// destinations.
static void addAttentionEffects(DestinationStyleOpInterface op,
                                Effects &effects) {
  if (!op.hasPureBufferSemantics())
    return;
  for (OpOperand &operand : op->getOpOperands()) {
    if (isa<gpu::AsyncTokenType>(operand.get().getType()))
      continue;
    MemoryEffects::Effect *effect = MemoryEffects::Read::get();
    if (op.isDpsInit(&operand))
      effect = MemoryEffects::Write::get();
    effects.emplace_back(effect, &operand, SideEffects::DefaultResource::get());
  }
}

void GpuAttentionOp::getEffects(Effects &effects) {
  addAttentionEffects(*this, effects);
}

void GpuAttentionBackwardOp::getEffects(Effects &effects) {
  addAttentionEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// `async [deps]`, as the gpu dialect prints it
//===----------------------------------------------------------------------===//

static ParseResult
parseAsyncDependencies(OpAsmParser &parser, Type &tokenType,
                       SmallVectorImpl<OpAsmParser::UnresolvedOperand> &deps) {
  if (succeeded(parser.parseOptionalKeyword("async")))
    tokenType = gpu::AsyncTokenType::get(parser.getContext());
  return parser.parseCommaSeparatedList(
      OpAsmParser::Delimiter::OptionalSquare,
      [&] { return parser.parseOperand(deps.emplace_back()); });
}

static void printAsyncDependencies(OpAsmPrinter &printer, Operation *,
                                   Type tokenType, OperandRange deps) {
  if (tokenType)
    printer << "async ";
  if (deps.empty())
    return;
  printer << "[";
  llvm::interleaveComma(deps, printer);
  printer << "] ";
}

#define GET_OP_CLASSES
#include "tessera/Dialect/Tsrt/IR/TsrtOps.cpp.inc"
