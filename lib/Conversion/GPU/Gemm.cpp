//===- Gemm.cpp - Matrix products as cuBLASLt calls on the GPU ------------===//
#include "tessera/Conversion/GPU/Passes.h"
#include "tessera/Conversion/ZeroFill.h"
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <functional>

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPUGEMM
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// Whether cuBLASLt can run `op`: static, non-empty, contiguous row-major
/// buffers of f32 x f32 or bf16 x bf16 or f16 x f16 into f32.
bool isLibraryGemm(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureBufferSemantics())
    return false;
  SmallVector<MemRefType> types;
  for (Value v :
       {op.getDpsInputOperand(0)->get(), op.getDpsInputOperand(1)->get(),
        op.getDpsInitOperand(0)->get()}) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
        type.getNumElements() == 0)
      return false;
    types.push_back(type);
  }
  Type in = types[0].getElementType();
  // K = 0 leaves nothing to multiply: the generated kernel handles it.
  return types[1].getElementType() == in && types[2].getElementType().isF32() &&
         (in.isF32() || in.isBF16() || in.isF16()) &&
         types[0].getShape().back() != 0;
}

/// The buffer `v` is a view of (or `v` itself when it is none).
Value getRootBuffer(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// Whether some op strictly between `from` and `to` (one block) may write
/// or free any view of `root` (early deallocation frees a buffer right
/// after its last use, which a folded transpose's source may have been).
bool mayWriteOrFreeBetween(Operation *from, Operation *to, Value root) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode()) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects) {
      if (op->getNumRegions() == 0 && isMemoryEffectFree(op))
        continue;
      // Loops and kernels: whatever they hold may write or free.
      bool writes = false;
      op->walk([&](Operation *nested) {
        auto inner = dyn_cast<MemoryEffectOpInterface>(nested);
        if (inner ? inner.hasEffect<MemoryEffects::Write>() ||
                        inner.hasEffect<MemoryEffects::Free>()
                  : !isMemoryEffectFree(nested) && nested->getNumRegions() == 0)
          writes = true;
      });
      if (writes)
        return true;
      continue;
    }
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &e : list)
      if (isa<MemoryEffects::Write, MemoryEffects::Free>(e.getEffect()) &&
          (!e.getValue() || getRootBuffer(e.getValue()) == root))
        return true;
  }
  return false;
}

/// The `linalg.transpose` of the last two dimensions that writes `operand`,
/// a fresh buffer that only it writes and only `gemm` reads, if the
/// transpose's source is not written or freed between the two: cuBLASLt can
/// then read the source with its operand transposed, and the copy goes.
linalg::TransposeOp getFoldableTranspose(Operation *gemm, Value operand) {
  if (!operand.getDefiningOp<memref::AllocOp>())
    return {};
  linalg::TransposeOp transpose;
  for (Operation *user : operand.getUsers()) {
    if (user == gemm || isa<memref::DeallocOp>(user))
      continue;
    auto t = dyn_cast<linalg::TransposeOp>(user);
    if (!t || transpose || t.getInit() != operand)
      return {};
    transpose = t;
  }
  if (!transpose || transpose->getBlock() != gemm->getBlock() ||
      !transpose->isBeforeInBlock(gemm))
    return {};
  ArrayRef<int64_t> perm = transpose.getPermutation();
  bool lastTwo = perm.size() == 2 ? perm[0] == 1 && perm[1] == 0
                                  : perm.size() == 3 && perm[0] == 0 &&
                                        perm[1] == 2 && perm[2] == 1;
  auto source = dyn_cast<MemRefType>(transpose.getInput().getType());
  if (!lastTwo || !source || !source.hasStaticShape() ||
      !source.getLayout().isIdentity() ||
      mayWriteOrFreeBetween(transpose, gemm,
                            getRootBuffer(transpose.getInput())))
    return {};
  return transpose;
}

/// Replaces `operand`'s foldable transpose by its source; erases the
/// transposed buffer where nothing else uses it. Returns the source, or
/// null where there is no such transpose.
Value foldTranspose(IRRewriter &rewriter, Operation *gemm, Value operand) {
  linalg::TransposeOp transpose = getFoldableTranspose(gemm, operand);
  if (!transpose)
    return {};
  Value source = transpose.getInput();
  rewriter.eraseOp(transpose);
  return source;
}

/// Erases `buffer`'s allocation and deallocation if nothing else uses it.
void eraseIfUnused(IRRewriter &rewriter, Value buffer) {
  auto alloc = buffer.getDefiningOp<memref::AllocOp>();
  if (!alloc || !llvm::all_of(buffer.getUsers(), [](Operation *user) {
        return isa<memref::DeallocOp>(user);
      }))
    return;
  for (Operation *user : llvm::to_vector(buffer.getUsers()))
    rewriter.eraseOp(user);
  rewriter.eraseOp(alloc);
}

/// What cuBLASLt's epilogue can do of a product's elementwise consumer.
struct Epilogue {
  StringRef name;
  Value bias;
};

/// Whether `v` is the f32 constant `expected` (to f32's precision).
bool isConstant(Value v, double expected) {
  APFloat value(0.0f);
  if (!matchPattern(v, m_ConstantFloat(&value)))
    return false;
  double d = value.convertToDouble();
  return std::abs(d - expected) <= 1e-7 * std::abs(expected);
}

/// The operands of `v` if it is a `OpT` (either order for a commutative
/// one): the one that satisfies `first` first.
template <typename OpT>
std::optional<std::pair<Value, Value>>
matchBinary(Value v, function_ref<bool(Value)> first,
            SmallPtrSetImpl<Operation *> &seen) {
  auto op = v.getDefiningOp<OpT>();
  if (!op)
    return std::nullopt;
  Value lhs = op.getLhs(), rhs = op.getRhs();
  if (!first(lhs))
    std::swap(lhs, rhs);
  if (!first(lhs))
    return std::nullopt;
  seen.insert(op);
  return std::make_pair(lhs, rhs);
}

/// The `x` of `y = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`, GELU's tanh
/// approximation as tsr.gelu lowers it (and cuBLASLt's GELU epilogue
/// computes it), or null; the ops matched go to `seen`.
Value matchTanhGelu(Value y, SmallPtrSetImpl<Operation *> &seen) {
  // (0.5·x)·(1 + t)
  auto outer = matchBinary<arith::MulFOp>(
      y,
      [](Value v) {
        auto mul = v.getDefiningOp<arith::MulFOp>();
        return mul &&
               (isConstant(mul.getLhs(), 0.5) || isConstant(mul.getRhs(), 0.5));
      },
      seen);
  if (!outer)
    return {};
  auto halfX = matchBinary<arith::MulFOp>(
      outer->first, [](Value v) { return isConstant(v, 0.5); }, seen);
  auto onePlus = matchBinary<arith::AddFOp>(
      outer->second, [](Value v) { return isConstant(v, 1.0); }, seen);
  if (!halfX || !onePlus)
    return {};
  Value x = halfX->second;
  auto tanh = onePlus->second.getDefiningOp<math::TanhOp>();
  if (!tanh)
    return {};
  seen.insert(tanh);
  // √(2/π)·(x + 0.044715·x³)
  auto scaled = matchBinary<arith::MulFOp>(
      tanh.getOperand(),
      [](Value v) { return isConstant(v, 0.7978845608028654); }, seen);
  if (!scaled)
    return {};
  auto sum = matchBinary<arith::AddFOp>(
      scaled->second, [&](Value v) { return v == x; }, seen);
  if (!sum)
    return {};
  auto cubic = matchBinary<arith::MulFOp>(
      sum->second, [](Value v) { return isConstant(v, 0.044715); }, seen);
  if (!cubic)
    return {};
  // x·(x·x)
  auto cube = matchBinary<arith::MulFOp>(
      cubic->second, [&](Value v) { return v == x; }, seen);
  if (!cube)
    return {};
  auto square = matchBinary<arith::MulFOp>(
      cube->second, [&](Value v) { return v == x; }, seen);
  if (!square || square->second != x)
    return {};
  return x;
}

/// The epilogue that `generic` applies to the product `c` if it is one
/// cuBLASLt's epilogue computes: `c + bias[j]`, `max(c + bias[j], 0)`,
/// `max(c, 0)`, or GELU's tanh approximation of `c` or `c + bias[j]`,
/// elementwise into a buffer of c's type (a bias only for a rank-2 product:
/// an f32 [N] buffer broadcast over the rows). GELU of erf (ONNX's default)
/// is another function: it keeps its kernel.
std::optional<Epilogue> matchEpilogue(linalg::GenericOp generic, Value c) {
  auto type = cast<MemRefType>(c.getType());
  if (!generic.hasPureBufferSemantics() || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0 ||
      generic.getNumLoops() != type.getRank())
    return std::nullopt;
  OpOperand *out = generic.getDpsInitOperand(0);
  if (out->get().getType() != type ||
      !generic.getMatchingIndexingMap(out).isIdentity())
    return std::nullopt;
  OpOperand *product = nullptr, *bias = nullptr;
  MLIRContext *ctx = generic.getContext();
  for (OpOperand *in : generic.getDpsInputOperands()) {
    AffineMap map = generic.getMatchingIndexingMap(in);
    auto biasType = dyn_cast<MemRefType>(in->get().getType());
    if (in->get() == c && map.isIdentity() && !product) {
      product = in;
    } else if (!bias && type.getRank() == 2 && biasType &&
               biasType.getRank() == 1 && biasType.getElementType().isF32() &&
               biasType.getLayout().isIdentity() &&
               map == AffineMap::get(2, 0, getAffineDimExpr(1, ctx))) {
      bias = in;
    } else {
      return std::nullopt;
    }
  }
  if (!product)
    return std::nullopt;
  Block *body = generic.getBlock();
  Value x = generic.getMatchingBlockArgument(product);
  Value y = cast<linalg::YieldOp>(body->getTerminator()).getValues()[0];
  SmallPtrSet<Operation *, 16> gelu;
  if (Value in = matchTanhGelu(y, gelu)) {
    auto add = in.getDefiningOp<arith::AddFOp>();
    Value b = bias ? generic.getMatchingBlockArgument(bias) : Value();
    bool biased = b && add &&
                  ((add.getLhs() == x && add.getRhs() == b) ||
                   (add.getLhs() == b && add.getRhs() == x));
    if (biased)
      gelu.insert(add);
    // Nothing else in the body but constants.
    bool only = llvm::all_of(body->without_terminator(), [&](Operation &op) {
      return gelu.contains(&op) || isa<arith::ConstantOp>(op);
    });
    if (only && (biased || (!bias && in == x)))
      return Epilogue{biased ? "gelu_bias" : "gelu",
                      biased ? bias->get() : Value()};
    return std::nullopt;
  }
  size_t ops = 0;
  bool relu = false;
  if (Operation *max = y.getDefiningOp();
      max && isa<arith::MaximumFOp, arith::MaxNumFOp>(max)) {
    Value lhs = max->getOperand(0), rhs = max->getOperand(1);
    if (matchPattern(rhs, m_PosZeroFloat()))
      y = lhs;
    else if (matchPattern(lhs, m_PosZeroFloat()))
      y = rhs;
    else
      return std::nullopt;
    relu = true;
    ++ops;
  }
  if (bias) {
    auto add = y.getDefiningOp<arith::AddFOp>();
    Value b = generic.getMatchingBlockArgument(bias);
    if (!add || !((add.getLhs() == x && add.getRhs() == b) ||
                  (add.getLhs() == b && add.getRhs() == x)))
      return std::nullopt;
    ++ops;
  } else if (y != x || !relu) {
    return std::nullopt;
  }
  // Nothing else in the body (the zero constant lives outside it).
  if (body->getOperations().size() != ops + 1)
    return std::nullopt;
  return Epilogue{bias ? (relu ? "relu_bias" : "bias") : "relu",
                  bias ? bias->get() : Value()};
}

/// Moves the elementwise consumer of `gemm`'s fresh product into cuBLASLt's
/// epilogue, where one applies (matchEpilogue): the product is then written
/// to the consumer's output, and the consumer and the product's buffer go.
/// The consumer must be the product's only other reader, in the same block,
/// with nothing between the two that touches memory (but the allocation of
/// its output, which moves before the product).
void fuseEpilogue(IRRewriter &rewriter, tsrt::GpuGemmOp gemm) {
  Value c = gemm.getC();
  if (gemm.getAccumulate() || !c.getDefiningOp<memref::AllocOp>())
    return;
  linalg::GenericOp consumer;
  for (Operation *user : c.getUsers()) {
    if (user == gemm.getOperation() || isa<memref::DeallocOp>(user))
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || consumer)
      return;
    consumer = generic;
  }
  if (!consumer || consumer->getBlock() != gemm->getBlock() ||
      !gemm->isBeforeInBlock(consumer))
    return;
  std::optional<Epilogue> epilogue = matchEpilogue(consumer, c);
  if (!epilogue)
    return;
  Value d = consumer.getDpsInitOperand(0)->get();
  Value root = getRootBuffer(d);
  for (Value operand : {Value(gemm.getA()), Value(gemm.getB()), epilogue->bias})
    if (operand && getRootBuffer(operand) == root)
      return;
  auto alloc = d.getDefiningOp<memref::AllocOp>();
  for (Operation *op = gemm->getNextNode(); op != consumer;
       op = op->getNextNode())
    if (op != alloc.getOperation() &&
        !(op->getNumRegions() == 0 && isMemoryEffectFree(op)))
      return;
  if (alloc && alloc->getBlock() == gemm->getBlock() &&
      gemm->isBeforeInBlock(alloc))
    rewriter.moveOpBefore(alloc, gemm);
  rewriter.setInsertionPoint(gemm);
  tsrt::GpuGemmOp::create(rewriter, gemm.getLoc(), Type(), ValueRange{},
                          gemm.getA(), gemm.getB(), d, epilogue->bias,
                          /*aux=*/Value(), gemm.getTransposeA(),
                          gemm.getTransposeB(),
                          /*accumulate=*/false, epilogue->name);
  rewriter.eraseOp(consumer);
  rewriter.eraseOp(gemm);
  eraseIfUnused(rewriter, c);
}

/// Whether `generic` sums the stored dimension `reduced` of the rank-2
/// buffer `operand` into a fresh f32 vector over the other dimension:
/// `out[j] += x[k, j]` (or `x[j, k]`), the operand's elements widened to f32
/// first if they are bf16 or f16. With `reduced` 0, `operand` may also be of
/// higher rank, summed over every dimension but the last (the buffer whose
/// rows a collapse_shape flattens into the product's operand). Returns the
/// vector.
Value matchOperandSum(linalg::GenericOp generic, Value operand,
                      unsigned reduced) {
  auto type = dyn_cast<MemRefType>(operand.getType());
  if (!type || (type.getRank() != 2 && reduced != 0) || type.getRank() < 2 ||
      !generic.hasPureBufferSemantics() || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != type.getRank() ||
      generic.getDpsInputOperand(0)->get() != operand)
    return {};
  OpOperand *in = generic.getDpsInputOperand(0);
  OpOperand *out = generic.getDpsInitOperand(0);
  MLIRContext *ctx = generic.getContext();
  unsigned rank = type.getRank();
  // The kept dimension: the last, or with a 2-D row sum the first.
  unsigned kept = rank == 2 ? 1 - reduced : rank - 1;
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  for (unsigned d = 0; d < rank; ++d)
    if (iterators[d] != (d == kept ? utils::IteratorType::parallel
                                   : utils::IteratorType::reduction))
      return {};
  auto vector = dyn_cast<MemRefType>(out->get().getType());
  if (!generic.getMatchingIndexingMap(in).isIdentity() ||
      generic.getMatchingIndexingMap(out) !=
          AffineMap::get(rank, 0, getAffineDimExpr(kept, ctx)) ||
      !vector || !vector.getElementType().isF32() ||
      !vector.getLayout().isIdentity() ||
      !out->get().getDefiningOp<memref::AllocOp>())
    return {};
  Block *body = generic.getBlock();
  Value x = generic.getMatchingBlockArgument(in);
  Value acc = generic.getMatchingBlockArgument(out);
  auto add = cast<linalg::YieldOp>(body->getTerminator())
                 .getValues()[0]
                 .getDefiningOp<arith::AddFOp>();
  if (!add)
    return {};
  Value element = add.getLhs() == acc ? add.getRhs() : add.getLhs();
  if ((add.getLhs() != acc && add.getRhs() != acc) || element == acc)
    return {};
  size_t ops = 2;
  if (auto ext = element.getDefiningOp<arith::ExtFOp>()) {
    element = ext.getIn();
    ++ops;
  }
  if (element != x || body->getOperations().size() != ops)
    return {};
  return out->get();
}

/// The buffers a sum of `operand`'s stored dimension `reduced` may read:
/// the operand, and where it is a collapse_shape of identity layout that
/// flattens the leading dimensions of a buffer into its rows, that buffer
/// (summed over all its dimensions but the last).
SmallVector<Value> getSummedViews(Value operand, unsigned reduced) {
  SmallVector<Value> views{operand};
  auto collapse = operand.getDefiningOp<memref::CollapseShapeOp>();
  if (!collapse || reduced != 0)
    return views;
  auto source = cast<MemRefType>(collapse.getSrc().getType());
  SmallVector<ReassociationIndices> groups = collapse.getReassociationIndices();
  if (source.getLayout().isIdentity() && groups.size() == 2 &&
      groups[1].size() == 1)
    views.push_back(collapse.getSrc());
  return views;
}

/// Folds the bias gradient that comes with a weight gradient into
/// cuBLASLt's BGRAD epilogue: a sum of one operand of `gemm` over the
/// product's k dimension (`sum_k op(a)[i, k]` or `sum_k op(b)[k, j]`, the
/// bias gradient of `y = x·W + b` beside `dW = xᵀ·dy`), computed into a
/// zero-filled fresh f32 vector in the same block, becomes the epilogue's
/// output, and the reduction and its fill go. Nothing between the two may
/// write the operand or touch the vector; a product that already has an
/// epilogue keeps the reduction.
void fuseBiasGradient(IRRewriter &rewriter, tsrt::GpuGemmOp gemm) {
  auto c = cast<MemRefType>(gemm.getC().getType());
  if (c.getRank() != 2 || gemm.getEpilogue() != "none")
    return;
  struct Candidate {
    Value operand;
    unsigned reduced;
    StringRef name;
  };
  // The stored dimension of each operand that is the product's k.
  Candidate candidates[] = {
      {gemm.getA(), gemm.getTransposeA() ? 0u : 1u, "bias_grad_a"},
      {gemm.getB(), gemm.getTransposeB() ? 1u : 0u, "bias_grad_b"}};
  for (const Candidate &candidate : candidates) {
    SmallVector<Operation *> users;
    for (Value view : getSummedViews(candidate.operand, candidate.reduced))
      users.append(view.user_begin(), view.user_end());
    for (Operation *user : users) {
      auto sum = dyn_cast<linalg::GenericOp>(user);
      if (!sum || sum->getBlock() != gemm->getBlock() ||
          sum.getNumDpsInputs() != 1)
        continue;
      Value bias = matchOperandSum(sum, sum.getDpsInputOperand(0)->get(),
                                   candidate.reduced);
      if (!bias)
        continue;
      Operation *first =
          sum->isBeforeInBlock(gemm) ? sum.getOperation() : gemm.getOperation();
      Operation *last = first == sum ? gemm.getOperation() : sum;
      if (mayWriteOrFreeBetween(first, last, getRootBuffer(candidate.operand)))
        continue;
      // The vector's fill, the sum and readers after both; nothing else.
      linalg::FillOp fill = tessera::getZeroFill(sum, bias);
      auto alloc = bias.getDefiningOp<memref::AllocOp>();
      auto afterBoth = [&](Operation *u) {
        Operation *at = gemm->getBlock()->findAncestorOpInBlock(*u);
        return at && last->isBeforeInBlock(at);
      };
      if (!fill || alloc->getBlock() != gemm->getBlock() ||
          (gemm->isBeforeInBlock(alloc) && alloc->getNumOperands() != 0) ||
          llvm::any_of(bias.getUsers(), [&](Operation *u) {
            return u != sum && u != fill && !afterBoth(u);
          }))
        continue;
      // A vector allocated after the product is allocated before it.
      if (gemm->isBeforeInBlock(alloc))
        rewriter.moveOpBefore(alloc, gemm);
      rewriter.setInsertionPoint(gemm);
      tsrt::GpuGemmOp::create(rewriter, gemm.getLoc(), Type(), ValueRange{},
                              gemm.getA(), gemm.getB(), gemm.getC(), bias,
                              /*aux=*/Value(), gemm.getTransposeA(),
                              gemm.getTransposeB(), gemm.getAccumulate(),
                              candidate.name);
      rewriter.eraseOp(sum);
      rewriter.eraseOp(fill);
      rewriter.eraseOp(gemm);
      return;
    }
  }
}

/// The block arguments of `pre` and of the other operand of `generic` if
/// it is an elementwise kernel of identity maps from `pre` and another
/// buffer of its type into one more: the shape of an activation's input
/// gradient, `dpre = f(pre, dh)`.
std::optional<std::pair<OpOperand *, OpOperand *>>
matchGradientOperands(linalg::GenericOp generic, Value pre) {
  if (!generic.hasPureBufferSemantics() || generic.getNumDpsInputs() != 2 ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 0 ||
      generic.getDpsInitOperand(0)->get().getType() != pre.getType() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return std::nullopt;
  OpOperand *first = generic.getDpsInputOperand(0),
            *second = generic.getDpsInputOperand(1);
  if (second->get() == pre)
    std::swap(first, second);
  if (first->get() != pre || second->get() == pre ||
      second->get().getType() != pre.getType())
    return std::nullopt;
  return std::make_pair(first, second);
}

/// Whether `generic` is the input gradient of a ReLU: elementwise, of
/// identity maps, `select(pre > 0, grad, 0)` into a buffer of pre's type
/// (what autodiff writes for tsr.relu, with `pre` its input). Returns the
/// gradient operand, or null.
Value matchReluGradient(linalg::GenericOp generic, Value pre) {
  auto operands = matchGradientOperands(generic, pre);
  if (!operands)
    return {};
  auto [first, second] = *operands;
  Block *body = generic.getBlock();
  auto select = cast<linalg::YieldOp>(body->getTerminator())
                    .getValues()[0]
                    .getDefiningOp<arith::SelectOp>();
  if (!select || body->getOperations().size() != 3 ||
      select.getTrueValue() != generic.getMatchingBlockArgument(second) ||
      !matchPattern(select.getFalseValue(), m_AnyZeroFloat()))
    return {};
  auto compare = select.getCondition().getDefiningOp<arith::CmpFOp>();
  if (!compare || compare.getPredicate() != arith::CmpFPredicate::OGT ||
      compare.getLhs() != generic.getMatchingBlockArgument(first) ||
      !matchPattern(compare.getRhs(), m_AnyZeroFloat()))
    return {};
  return second->get();
}

/// A predicate on a value of a linalg body, for matching expressions.
using Match = std::function<bool(Value)>;

/// `lhs op rhs` of a commutative binary `OpT` whose operands match `p` and
/// `q` in either order.
template <typename OpT> Match commutative(Match p, Match q) {
  return [=](Value v) {
    auto op = v.getDefiningOp<OpT>();
    return op && ((p(op.getLhs()) && q(op.getRhs())) ||
                  (q(op.getLhs()) && p(op.getRhs())));
  };
}
Match constant(double value) {
  return [=](Value v) { return isConstant(v, value); };
}

/// Whether the body of the elementwise `generic` yields
/// `dy · gelu'(x)` for GELU's tanh approximation, as autodiff's rule for
/// tsr.gelu {approximate = tanh} writes it (ElementwiseRules.cpp):
/// `dy · ((1 + t)/2 + (x/2)·((1 − t²)·(c·(1 + 3k·x²))))` with
/// `t = tanh(c·(x + k·x³))`, `c = √(2/π)`, `k = 0.044715`, each product and
/// sum in either order. `x` and `dy` are block arguments.
bool isTanhGeluDerivative(linalg::GenericOp generic, Value x, Value dy) {
  const double c = 0.7978845608028654, k = 0.044715;
  auto mul = commutative<arith::MulFOp>;
  auto add = commutative<arith::AddFOp>;
  Match isX = [=](Value v) { return v == x; };
  Match isDy = [=](Value v) { return v == dy; };
  Match square = mul(isX, isX);
  Match inner = mul(constant(c), add(isX, mul(constant(k), mul(square, isX))));
  Match isT = [=](Value v) {
    auto tanh = v.getDefiningOp<math::TanhOp>();
    return tanh && inner(tanh.getOperand());
  };
  Match oneMinusT2 = [=](Value v) {
    auto sub = v.getDefiningOp<arith::SubFOp>();
    return sub && isConstant(sub.getLhs(), 1.0) && mul(isT, isT)(sub.getRhs());
  };
  Match du = mul(constant(c), add(constant(1.0), mul(constant(3 * k), square)));
  Match derivative = add(mul(constant(0.5), add(constant(1.0), isT)),
                         mul(mul(constant(0.5), isX), mul(oneMinusT2, du)));
  Block *body = generic.getBlock();
  Value y = cast<linalg::YieldOp>(body->getTerminator()).getValues()[0];
  // Pure scalar ops only: what the yield computes is all the body does.
  return llvm::all_of(body->without_terminator(),
                      [](Operation &op) {
                        return op.getNumRegions() == 0 &&
                               isMemoryEffectFree(&op);
                      }) &&
         mul(isDy, derivative)(y);
}

/// Whether `generic` is the input gradient of GELU's tanh approximation:
/// elementwise, of identity maps, `dy · gelu'(pre)` into a buffer of pre's
/// type. Returns the gradient operand `dy`, or null.
Value matchGeluGradient(linalg::GenericOp generic, Value pre) {
  auto operands = matchGradientOperands(generic, pre);
  if (!operands ||
      !isTanhGeluDerivative(generic,
                            generic.getMatchingBlockArgument(operands->first),
                            generic.getMatchingBlockArgument(operands->second)))
    return {};
  return operands->second->get();
}

/// Whether every user of the fresh buffer `buffer` but `writer` (and its
/// allocation) is after `writer` in its block: the value may then be
/// written earlier, at a point before `writer`, as long as that point is
/// after the allocation (moved up where needed).
bool onlyReadAfter(Value buffer, Operation *writer) {
  return llvm::all_of(buffer.getUsers(), [&](Operation *user) {
    if (user == writer)
      return true;
    Operation *at = writer->getBlock()->findAncestorOpInBlock(*user);
    return at && writer->isBeforeInBlock(at);
  });
}

/// Moves `buffer`'s allocation (without operands) before `op` if it is
/// after it; fails for any other definition.
bool allocateBefore(IRRewriter &rewriter, Value buffer, Operation *op) {
  auto alloc = buffer.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != op->getBlock() ||
      alloc->getNumOperands() != 0)
    return false;
  if (op->isBeforeInBlock(alloc))
    rewriter.moveOpBefore(alloc, op);
  return true;
}

/// A hidden activation whose backward form cuBLASLt's epilogues compute
/// from what the forward product's epilogue saved (tsrt.gpu_gemm's `aux`):
/// ReLU's bit mask, or GELU's input.
struct Activation {
  /// The forward epilogue (matchEpilogue's name for it alone).
  StringRef forward;
  StringRef saving, savingBiased, backward;
  /// Its input gradient's kernel: the gradient operand, or null.
  Value (*matchGradient)(linalg::GenericOp, Value pre);
};

const Activation kActivations[] = {
    {"relu", "relu_aux", "relu_aux_bias", "drelu", matchReluGradient},
    {"gelu", "gelu_aux", "gelu_aux_bias", "dgelu", matchGeluGradient},
};

/// Folds a hidden ReLU or GELU (tanh) and its backward form into
/// cuBLASLt's epilogues. In a training step the activation's input `pre`
/// (the product `forward` wrote, its bias added) is read twice: by the
/// activation, `h = max(pre, 0)` or `h = gelu(pre)`, and by its gradient,
/// `dpre = select(pre > 0, dh, 0)` or `dpre = dh · gelu'(pre)`, where `dh`
/// is a later product's fresh result. The forward product then writes `h`
/// itself with RELU_AUX(_BIAS), which also records the mask `pre > 0` in a
/// new i8 buffer, or GELU_AUX(_BIAS), which records `pre` in a new f32
/// buffer with padded rows; the backward product writes `dpre` with DRELU
/// or DGELU reading it. The two kernels and `pre`'s buffer go, and the
/// saved buffer lives from one product to the other instead. `pre` must
/// have no other reader, the two kernels and both products must share a
/// block, and what they wrote must be read only after them.
bool fuseActivationBackward(IRRewriter &rewriter, tsrt::GpuGemmOp forward) {
  Value pre = forward.getC();
  auto type = cast<MemRefType>(pre.getType());
  StringRef epilogue = forward.getEpilogue();
  if (type.getRank() != 2 || forward.getAccumulate() ||
      (epilogue != "none" && epilogue != "bias") ||
      !pre.getDefiningOp<memref::AllocOp>())
    return false;
  Block *block = forward->getBlock();
  const Activation *activation = nullptr;
  linalg::GenericOp kernel, gradient;
  SmallVector<Operation *> deallocs, readers;
  for (Operation *user : pre.getUsers()) {
    if (user == forward.getOperation())
      continue;
    if (isa<memref::DeallocOp>(user)) {
      deallocs.push_back(user);
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || generic->getBlock() != block)
      return false;
    std::optional<Epilogue> e = matchEpilogue(generic, pre);
    if (e && !kernel) {
      for (const Activation &a : kActivations)
        if (e->name == a.forward)
          activation = &a;
      if (!activation)
        return false;
      kernel = generic;
    } else {
      readers.push_back(generic);
    }
  }
  if (!kernel || readers.size() != 1 || !forward->isBeforeInBlock(kernel))
    return false;
  gradient = cast<linalg::GenericOp>(readers.front());
  Value dh = activation->matchGradient(gradient, pre);
  if (!dh)
    return false;
  tsrt::GpuGemmOp backward;
  for (Operation *user : dh.getUsers())
    if (auto gemm = dyn_cast<tsrt::GpuGemmOp>(user); gemm && gemm.getC() == dh)
      backward = gemm;
  if (!backward || backward->getBlock() != block ||
      backward.getEpilogue() != "none" || backward.getAccumulate() ||
      !forward->isBeforeInBlock(backward) ||
      !backward->isBeforeInBlock(gradient) ||
      !dh.getDefiningOp<memref::AllocOp>() ||
      !llvm::all_of(dh.getUsers(), [&](Operation *user) {
        return user == backward.getOperation() || user == gradient ||
               isa<memref::DeallocOp>(user);
      }))
    return false;
  Value h = kernel.getDpsInitOperand(0)->get();
  Value dpre = gradient.getDpsInitOperand(0)->get();
  if (!onlyReadAfter(h, kernel) || !onlyReadAfter(dpre, gradient) ||
      !allocateBefore(rewriter, h, forward) ||
      !allocateBefore(rewriter, dpre, backward))
    return false;
  rewriter.setInsertionPoint(forward);
  Value saved = memref::AllocOp::create(
      rewriter, forward.getLoc(),
      tsrt::GpuGemmOp::getAuxType(activation->backward, type),
      rewriter.getI64IntegerAttr(64));
  tsrt::GpuGemmOp::create(
      rewriter, forward.getLoc(), Type(), ValueRange{}, forward.getA(),
      forward.getB(), h, forward.getBias(), saved, forward.getTransposeA(),
      forward.getTransposeB(), /*accumulate=*/false,
      forward.getBias() ? activation->savingBiased : activation->saving);
  rewriter.setInsertionPoint(backward);
  auto derivative = tsrt::GpuGemmOp::create(
      rewriter, backward.getLoc(), Type(), ValueRange{}, backward.getA(),
      backward.getB(), dpre, /*bias=*/Value(), saved, backward.getTransposeA(),
      backward.getTransposeB(),
      /*accumulate=*/false, activation->backward);
  rewriter.setInsertionPointAfter(derivative);
  memref::DeallocOp::create(rewriter, derivative.getLoc(), saved);
  for (Operation *op : {kernel.getOperation(), gradient.getOperation(),
                        forward.getOperation(), backward.getOperation()})
    rewriter.eraseOp(op);
  for (Operation *op : deallocs)
    rewriter.eraseOp(op);
  eraseIfUnused(rewriter, pre);
  eraseIfUnused(rewriter, dh);
  return true;
}

struct TsrGpuGemmPass : tessera::impl::TsrGpuGemmBase<TsrGpuGemmPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> gemms;
    getOperation().walk([&](linalg::LinalgOp op) {
      bool plain = (isa<linalg::MatmulOp>(op) &&
                    !cast<linalg::MatmulOp>(op).hasUserDefinedMaps()) ||
                   (isa<linalg::BatchMatmulOp>(op) &&
                    !cast<linalg::BatchMatmulOp>(op).hasUserDefinedMaps());
      if (plain && isLibraryGemm(op))
        gemms.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : gemms) {
      Value a = op.getDpsInputOperand(0)->get(),
            b = op.getDpsInputOperand(1)->get(),
            c = op.getDpsInitOperand(0)->get();
      linalg::FillOp fill = tessera::getZeroFill(op, c);
      Value sourceA = foldTranspose(rewriter, op, a);
      Value sourceB = b == a ? Value() : foldTranspose(rewriter, op, b);
      rewriter.setInsertionPoint(op);
      auto gemm = tsrt::GpuGemmOp::create(
          rewriter, op.getLoc(), Type(), ValueRange{}, sourceA ? sourceA : a,
          sourceB ? sourceB : b, c, /*bias=*/Value(), /*aux=*/Value(),
          /*transpose_a=*/bool(sourceA),
          /*transpose_b=*/bool(sourceB),
          /*accumulate=*/!fill, /*epilogue=*/"none");
      rewriter.eraseOp(op);
      if (fill)
        rewriter.eraseOp(fill);
      eraseIfUnused(rewriter, a);
      if (b != a)
        eraseIfUnused(rewriter, b);
      fuseEpilogue(rewriter, gemm);
    }
    // ReLU's and GELU's backward forms and the bias gradients, once every
    // product is a library call.
    SmallVector<tsrt::GpuGemmOp> calls;
    // A fusion erases a later product too: look again after each.
    for (bool fused = true; fused;) {
      fused = false;
      calls.clear();
      getOperation().walk([&](tsrt::GpuGemmOp gemm) { calls.push_back(gemm); });
      for (tsrt::GpuGemmOp gemm : calls)
        if ((fused = fuseActivationBackward(rewriter, gemm)))
          break;
    }
    calls.clear();
    getOperation().walk([&](tsrt::GpuGemmOp gemm) { calls.push_back(gemm); });
    for (tsrt::GpuGemmOp gemm : calls)
      fuseBiasGradient(rewriter, gemm);
  }
};

} // namespace
