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

namespace {

ShapedType getShaped(Value v) { return cast<ShapedType>(v.getType()); }

/// What every collective checks: ins and outs of one kind and element type,
/// a dtype that describes it, a group, an id.
template <typename OpT> LogicalResult verifyCollective(OpT op) {
  ShapedType in = getShaped(op.getInput()), out = getShaped(op.getInit());
  if (isa<TensorType>(in) != isa<TensorType>(out))
    return op.emitOpError("ins and outs must both be tensors or both memrefs");
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
  if (!async || op->getNumResults() == 0)
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
  if (!isa<TensorType>(getPending().getType()))
    return success();
  Operation *def = getPending().getDefiningOp();
  auto async = def ? def->getAttrOfType<UnitAttr>("async") : UnitAttr();
  if (!async || def->getDialect() != getOperation()->getDialect())
    return emitOpError("outs must be the result of an async tsrt collective");
  return success();
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
  bool biased = epilogue == "bias" || epilogue == "relu_bias";
  if (!biased && epilogue != "none" && epilogue != "relu")
    return emitOpError("expects epilogue none, relu, bias or relu_bias, not '")
           << epilogue << "'";
  if (biased != bool(getBias()))
    return emitOpError(biased ? "expects a bias with epilogue '"
                              : "expects no bias with epilogue '")
           << epilogue << "'";
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
  if (getBias())
    add(MemoryEffects::Read::get(), getBiasMutable()[0]);
  if (getAccumulate())
    add(MemoryEffects::Read::get(), getCMutable());
  add(MemoryEffects::Write::get(), getCMutable());
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
