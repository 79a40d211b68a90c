//===- Attention.cpp - Scaled-dot-product attention as one cuDNN call -----===//
//
// tsr-gpu-attention: on the CUDA target, the tsr ops of attention,
// softmax(Q·Kᵀ · scale + bias) · V in bf16 or f16, become one
// tsrt.gpu_attention, which the runtime runs with cuDNN's fused
// (FlashAttention-2) kernel: the [Sq, Skv] scores and probabilities are
// never written to memory. The transposes that split the heads off the
// projections and merge them back are absorbed as layouts (cuDNN reads and
// writes through strides). See docs/gpu.md.
//
//===----------------------------------------------------------------------===//
#include "tessera/Conversion/GPU/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPUATTENTION
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// cuDNN's fused attention wants the head dimension a multiple of 8 (16-byte
/// rows of bf16) and at most 256 on Hopper.
constexpr int64_t kMaxHeadDim = 256;

/// A bias element at or below this masks its score: exp of it underflows to
/// 0 in f32 for any score range under 1e9, as -inf does.
constexpr double kMaskValue = -1e9;

/// The ops of one attention, O = softmax(Q·Kᵀ · scale + bias) · V.
struct Match {
  tsr::MatMulOp scores;         // Q·Kᵀ
  Operation *scaling = nullptr; // tsr.mul or tsr.div by the scale, if any
  Value scale;                  // the scale (or divisor) tensor
  tsr::AddOp biasAdd;           // + bias, if any
  Value bias;
  tsr::SoftmaxOp softmax;
  tsr::MatMulOp output; // P·V
};

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Whether `v` holds one element (rank 0, or all dimensions 1).
bool isScalar(Value v) { return typeOf(v).getNumElements() == 1; }

/// The operand of `op` other than `v` (a binary op using `v` once).
Value otherOperand(Operation *op, Value v) {
  return op->getOperand(0) == v ? op->getOperand(1) : op->getOperand(0);
}

/// Whether `bias` (of the scores' element type) broadcasts onto scores
/// [B, H, Sq, Skv] along batch and heads only.
bool isBias(Value bias, ArrayRef<int64_t> scores) {
  ArrayRef<int64_t> shape = typeOf(bias).getShape();
  if (shape.size() < 2 || shape.size() > 4 ||
      shape.take_back(2) != scores.take_back(2))
    return false;
  for (auto [dim, size] : llvm::enumerate(shape.drop_back(2)))
    if (size != 1 && size != scores[4 - shape.size() + dim])
      return false;
  return true;
}

/// Matches the attention whose softmax is `softmax`; every intermediate
/// before the probabilities (scores, scaled scores, biased scores) has one
/// use, so nothing else needs them in memory.
std::optional<Match> matchAttention(tsr::SoftmaxOp softmax) {
  Match m;
  m.softmax = softmax;
  RankedTensorType type = typeOf(softmax.getResult());
  Type element = type.getElementType();
  if (type.getRank() != 4 || softmax.getAxis() != 3 ||
      !(element.isBF16() || element.isF16()))
    return std::nullopt;
  // The product with V; the backward pass may read the probabilities too
  // (matchBackward decides).
  for (Operation *user : softmax->getUsers())
    if (auto product = dyn_cast<tsr::MatMulOp>(user);
        product && product.getLhs() == softmax.getResult() && !m.output)
      m.output = product;
  if (!m.output)
    return std::nullopt;
  // Walk back from the softmax's input: an optional bias, an optional
  // scale, the scores.
  Value x = softmax.getX();
  if (auto add = x.getDefiningOp<tsr::AddOp>(); add && x.hasOneUse()) {
    // The scores are the operand computed by the scaling or the product.
    auto isScores = [](Value v) {
      Operation *def = v.getDefiningOp();
      return def && isa<tsr::MulOp, tsr::DivOp, tsr::MatMulOp>(def);
    };
    Value scores = isScores(add.getLhs()) ? add.getLhs() : add.getRhs();
    Value other = otherOperand(add, scores);
    if (typeOf(scores) == type && typeOf(other).getElementType() == element &&
        isBias(other, type.getShape())) {
      m.biasAdd = add;
      m.bias = other;
      x = scores;
    }
  }
  if (Operation *def = x.getDefiningOp();
      def && isa<tsr::MulOp, tsr::DivOp>(def) && x.hasOneUse()) {
    Value other = def->getOperand(1);
    Value scores = def->getOperand(0);
    if (isa<tsr::MulOp>(def) && isScalar(scores) && !isScalar(other))
      std::swap(scores, other);
    if (typeOf(scores) == type && isScalar(other) &&
        typeOf(other).getElementType() == element) {
      m.scaling = def;
      m.scale = other;
      x = scores;
    }
  }
  m.scores = x.getDefiningOp<tsr::MatMulOp>();
  if (!m.scores || !x.hasOneUse())
    return std::nullopt;
  // Q [B, H, Sq, D], Kᵀ [B, H, D, Skv], V [B, H, Skv, D]: no broadcasting.
  RankedTensorType q = typeOf(m.scores.getLhs()),
                   kt = typeOf(m.scores.getRhs()),
                   v = typeOf(m.output.getRhs()),
                   o = typeOf(m.output.getResult());
  if (q.getRank() != 4 || kt.getRank() != 4 || v.getRank() != 4 ||
      q.getElementType() != element || kt.getElementType() != element ||
      v.getElementType() != element || o.getElementType() != element)
    return std::nullopt;
  ArrayRef<int64_t> sq = q.getShape(), sk = kt.getShape(), sv = v.getShape();
  int64_t d = sq[3];
  if (sk[0] != sq[0] || sk[1] != sq[1] || sk[2] != d || sv[0] != sq[0] ||
      sv[1] != sq[1] || sv[2] != sk[3] || sv[3] != d || d % 8 != 0 ||
      d > kMaxHeadDim ||
      o.getShape() != ArrayRef<int64_t>{sq[0], sq[1], sq[2], d})
    return std::nullopt;
  return m;
}

/// The backward pass of one attention as autodiff derives it, dO being the
/// gradient of its output:
///   dP = dO · transpose(V)          dV = transpose(P) · dO
///   dU = P ⊙ (dP − rowsum(dP ⊙ P))  (the softmax's)
///   dS = dU · scale (or / scale)
///   dQ = dS · transpose(Kᵀ)         dKᵀ = transpose(Q) · dS
/// where nothing else reads P, dP, dU or dS: a trainable bias or scale,
/// whose gradients would, keeps the ops.
struct Backward {
  Value dOut;
  tsr::MatMulOp dQ, dKt, dV;
  /// Every op above but the three products, users before what they use.
  SmallVector<Operation *> ops;
};

/// `v` with casts and rematerialization barriers looked through: the
/// forward and backward passes each cast the scale from its parameter.
Value getRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<tsr::CastOp, tsr::RematBarrierOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// Whether `v` is `tsr.transpose(of)` swapping the last two dimensions.
bool isSwap(Value v, Value of) {
  auto t = v.getDefiningOp<tsr::TransposeOp>();
  return t && t.getX() == of && t.getPerm() == ArrayRef<int64_t>{0, 1, 3, 2};
}

/// The one user of `v` if it has one use and is an `OpT`.
template <typename OpT> OpT getOnlyUser(Value v) {
  return v.hasOneUse() ? dyn_cast<OpT>(*v.getUsers().begin()) : OpT();
}

/// Matches the backward pass of the attention `m`, if it is there.
std::optional<Backward> matchBackward(Match &m) {
  Value p = m.softmax.getResult();
  Backward b;
  tsr::TransposeOp pt;
  tsr::MulOp withDP, withSub;
  for (Operation *user : p.getUsers()) {
    if (user == m.output.getOperation())
      continue;
    auto mul = dyn_cast<tsr::MulOp>(user);
    if (auto t = dyn_cast<tsr::TransposeOp>(user); t && !pt)
      pt = t;
    else if (mul && otherOperand(mul, p).getDefiningOp<tsr::SubOp>() &&
             !withSub)
      withSub = mul;
    else if (mul && otherOperand(mul, p).getDefiningOp<tsr::MatMulOp>() &&
             !withDP)
      withDP = mul;
    else
      return std::nullopt;
  }
  if (!pt || !withDP || !withSub || llvm::range_size(p.getUsers()) != 4 ||
      !isSwap(pt.getResult(), p))
    return std::nullopt;
  // dV = Pᵀ · dO and dP = dO · Vᵀ.
  b.dV = getOnlyUser<tsr::MatMulOp>(pt.getResult());
  if (!b.dV || b.dV.getLhs() != pt.getResult())
    return std::nullopt;
  b.dOut = b.dV.getRhs();
  Value dP = otherOperand(withDP, p);
  auto dPProduct = dP.getDefiningOp<tsr::MatMulOp>();
  if (dPProduct.getLhs() != b.dOut ||
      !isSwap(dPProduct.getRhs(), m.output.getRhs()) ||
      llvm::range_size(dP.getUsers()) != 2 ||
      typeOf(b.dOut) != typeOf(m.output.getResult()))
    return std::nullopt;
  // dU = P ⊙ (dP − rowsum(dP ⊙ P)).
  auto rowsum = getOnlyUser<tsr::ReduceSumOp>(withDP.getResult());
  if (!rowsum || rowsum.getAxes() != ArrayRef<int64_t>{3} ||
      !rowsum.getKeepdims())
    return std::nullopt;
  auto sub = getOnlyUser<tsr::SubOp>(rowsum.getResult());
  if (!sub || sub.getLhs() != dP || sub.getRhs() != rowsum.getResult() ||
      getOnlyUser<tsr::MulOp>(sub.getResult()) != withSub)
    return std::nullopt;
  // dS = dU · scale, or dU / scale, as the forward pass scaled.
  Value dS = withSub.getResult();
  Operation *scaling = nullptr;
  if (m.scaling) {
    scaling = dS.hasOneUse() ? *dS.getUsers().begin() : nullptr;
    if (!scaling || scaling->getName() != m.scaling->getName() ||
        (isa<tsr::DivOp>(scaling) && scaling->getOperand(0) != dS) ||
        getRoot(otherOperand(scaling, dS)) != getRoot(m.scale))
      return std::nullopt;
    dS = scaling->getResult(0);
  }
  // dQ = dS · K and dKᵀ = Qᵀ · dS.
  for (Operation *user : dS.getUsers()) {
    auto product = dyn_cast<tsr::MatMulOp>(user);
    if (product && product.getLhs() == dS &&
        isSwap(product.getRhs(), m.scores.getRhs()) && !b.dQ)
      b.dQ = product;
    else if (product && product.getRhs() == dS &&
             isSwap(product.getLhs(), m.scores.getLhs()) && !b.dKt)
      b.dKt = product;
    else
      return std::nullopt;
  }
  if (!b.dQ || !b.dKt)
    return std::nullopt;
  for (Operation *op : {scaling, withSub.getOperation(), sub.getOperation(),
                        rowsum.getOperation(), withDP.getOperation(),
                        dPProduct.getOperation(), pt.getOperation()})
    if (op)
      b.ops.push_back(op);
  return b;
}

/// The f32 value of the constant `v` is (through casts), if it is one.
DenseElementsAttr getConstant(Value v) {
  while (auto cast = v.getDefiningOp<tsr::CastOp>())
    v = cast.getX();
  auto constant = v.getDefiningOp<tsr::ConstantOp>();
  return constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                  : DenseElementsAttr();
}

/// Whether `bias` is a constant causal mask: 0 where the key is at or
/// before the query, masking (-inf, or at most kMaskValue) after it.
bool isCausalMask(Value bias) {
  DenseElementsAttr value = getConstant(bias);
  ArrayRef<int64_t> shape = typeOf(bias).getShape();
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  if (!value || rows != cols || !isa<FloatType>(value.getElementType()))
    return false;
  int64_t i = 0;
  for (APFloat x : value.getValues<APFloat>()) {
    int64_t row = (i / cols) % rows, col = i % cols;
    ++i;
    double f = x.convertToDouble();
    if (col <= row ? f != 0.0 : !(f <= kMaskValue))
      return false;
  }
  return true;
}

/// The stored order of `value`'s logical dimensions where `value` is the
/// operand itself (`layout`), or, where `value` is a transpose, of its
/// source, which cuDNN then reads in place; returns the tensor to pass.
Value absorbTranspose(Value value, SmallVectorImpl<int64_t> &layout) {
  auto transpose = value.getDefiningOp<tsr::TransposeOp>();
  if (!transpose)
    return value;
  // value.dim[i] = source.dim[perm[i]], which holds logical layout[i].
  ArrayRef<int64_t> perm = transpose.getPerm();
  SmallVector<int64_t> source(4);
  for (int64_t i = 0; i < 4; ++i)
    source[perm[i]] = layout[i];
  layout = source;
  return transpose.getX();
}

/// Gives each op the rewriter inserts the layer and backward marks of
/// `like` (what tsr-outline-layers cuts the layer cells by).
struct MarkInserted : OpBuilder::Listener {
  Operation *like = nullptr;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    for (StringRef name : {tsr::attr::kLayer, tsr::attr::kBackward})
      if (Attribute attr = like ? like->getAttr(name) : Attribute())
        op->setAttr(name, attr);
  }
};

/// Where an attention op writes a result whose tensor `result` holds the
/// logical dimensions in `layout`'s order: in the layout of the transpose
/// that is its one use (the heads merged back), which then goes, or as
/// `result` is.
struct Destination {
  SmallVector<int64_t> layout;
  RankedTensorType type;
  tsr::TransposeOp transpose;
  Value result;
};

Destination getDestination(Value result, ArrayRef<int64_t> layout) {
  Destination d{SmallVector<int64_t>(layout), typeOf(result), {}, result};
  if (auto t = getOnlyUser<tsr::TransposeOp>(result)) {
    // t.dim[i] = result.dim[perm[i]], which holds logical layout[perm[i]].
    d.transpose = t;
    d.type = typeOf(t.getResult());
    for (auto [i, from] : llvm::enumerate(t.getPerm()))
      d.layout[i] = layout[from];
  }
  return d;
}

/// Makes `value` (written in `d`'s layout) replace what `d` stands for.
void replaceDestination(IRRewriter &rewriter, const Destination &d,
                        Value value) {
  if (d.transpose)
    rewriter.replaceOp(d.transpose, value);
  else
    rewriter.replaceAllUsesWith(d.result, value);
}

Value makeInit(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

/// Erases the transposes among `values` that nothing reads any more.
void eraseUnusedTransposes(IRRewriter &rewriter, ArrayRef<Value> values) {
  for (Value v : values)
    if (auto t = v.getDefiningOp<tsr::TransposeOp>(); t && t->use_empty())
      rewriter.eraseOp(t);
}

/// Replaces the attention `m` by one tsrt.gpu_attention, and its backward
/// pass `bwd`, if any, by one tsrt.gpu_attention_backward that reads the
/// forward op's output and statistics.
void rewrite(IRRewriter &rewriter, MarkInserted &marks, Match &m,
             std::optional<Backward> &bwd) {
  Location loc = m.output.getLoc();
  rewriter.setInsertionPoint(m.output);
  marks.like = m.output;
  RankedTensorType scores = typeOf(m.softmax.getResult());
  Type element = scores.getElementType(), f32 = rewriter.getF32Type();
  auto scalarType = RankedTensorType::get({}, f32);
  auto attr = [&](ArrayRef<int64_t> layout) {
    return rewriter.getDenseI64ArrayAttr(layout);
  };

  // Operands, each with the stored order of its logical [B, H, S, D].
  SmallVector<int64_t> qLayout{0, 1, 2, 3}, kLayout{0, 1, 3, 2},
      vLayout{0, 1, 2, 3};
  SmallVector<Value> absorbed{m.scores.getLhs(), m.scores.getRhs(),
                              m.output.getRhs()};
  Value q = absorbTranspose(m.scores.getLhs(), qLayout);
  Value k = absorbTranspose(m.scores.getRhs(), kLayout);
  Value v = absorbTranspose(m.output.getRhs(), vLayout);

  // The scale as one f32 (a divisor inverted).
  Value scale;
  if (m.scale) {
    scale = m.scale;
    if (typeOf(scale).getRank() != 0)
      scale = tsr::ReshapeOp::create(rewriter, loc,
                                     RankedTensorType::get({}, element), scale);
    if (element != f32)
      scale = tsr::CastOp::create(rewriter, loc, scalarType, scale);
    if (isa<tsr::DivOp>(m.scaling))
      scale = tsr::ReciprocalOp::create(rewriter, loc, scalarType, scale);
  } else {
    scale = tsr::ConstantOp::create(rewriter, loc,
                                    DenseElementsAttr::get(scalarType, 1.0f));
  }

  // A causal mask becomes cuDNN's; another bias is passed as [B|1, H|1, Sq,
  // Skv].
  bool causal = m.bias && isCausalMask(m.bias);
  UnitAttr causalAttr = causal ? rewriter.getUnitAttr() : UnitAttr();
  Value bias;
  if (m.bias && !causal) {
    ArrayRef<int64_t> shape = typeOf(m.bias).getShape();
    SmallVector<int64_t> full(4 - shape.size(), 1);
    full.append(shape.begin(), shape.end());
    bias = m.bias;
    if (shape.size() != 4)
      bias = tsr::ReshapeOp::create(rewriter, loc,
                                    RankedTensorType::get(full, element), bias);
  }

  // The forward op, with the rows' statistics when the backward op reads
  // them.
  Destination out = getDestination(m.output.getResult(), {0, 1, 2, 3});
  SmallVector<Value> inits{makeInit(rewriter, loc, out.type)};
  SmallVector<Type> types{out.type};
  if (bwd) {
    ArrayRef<int64_t> shape = scores.getShape();
    types.push_back(RankedTensorType::get(shape.drop_back(), f32));
    inits.push_back(makeInit(rewriter, loc, cast<RankedTensorType>(types[1])));
  }
  auto attention = tsrt::GpuAttentionOp::create(
      rewriter, loc, types, ValueRange(), q, k, v, scale, bias, inits,
      attr(qLayout), attr(kLayout), attr(vLayout), attr(out.layout),
      causalAttr);

  if (bwd) {
    // Before the first backward op that reads dO (the others follow from
    // them).
    Operation *first = bwd->dV;
    Operation *dP = bwd->ops[bwd->ops.size() - 2];
    if (dP->isBeforeInBlock(first))
      first = dP;
    rewriter.setInsertionPoint(first);
    marks.like = first;
    Location bloc = first->getLoc();
    SmallVector<int64_t> dOutLayout{0, 1, 2, 3};
    Value dOut = absorbTranspose(bwd->dOut, dOutLayout);
    Destination dq = getDestination(bwd->dQ.getResult(), {0, 1, 2, 3});
    Destination dk = getDestination(bwd->dKt.getResult(), {0, 1, 3, 2});
    Destination dv = getDestination(bwd->dV.getResult(), {0, 1, 2, 3});
    auto grad = tsrt::GpuAttentionBackwardOp::create(
        rewriter, bloc, TypeRange{dq.type, dk.type, dv.type}, ValueRange(), q,
        k, v, attention.getResults()[0], dOut, attention.getResults()[1], scale,
        bias,
        ValueRange{makeInit(rewriter, bloc, dq.type),
                   makeInit(rewriter, bloc, dk.type),
                   makeInit(rewriter, bloc, dv.type)},
        attr(qLayout), attr(kLayout), attr(vLayout), attr(out.layout),
        attr(dOutLayout), attr(dq.layout), attr(dk.layout), attr(dv.layout),
        causalAttr);
    SmallVector<Value> swapped{bwd->dQ.getRhs(), bwd->dKt.getLhs(),
                               dP->getOperand(1), bwd->dOut};
    replaceDestination(rewriter, dq, grad.getResults()[0]);
    replaceDestination(rewriter, dk, grad.getResults()[1]);
    replaceDestination(rewriter, dv, grad.getResults()[2]);
    for (tsr::MatMulOp product : {bwd->dQ, bwd->dKt, bwd->dV})
      if (product->use_empty())
        rewriter.eraseOp(product);
    for (Operation *op : bwd->ops)
      rewriter.eraseOp(op);
    eraseUnusedTransposes(rewriter, swapped);
  }

  replaceDestination(rewriter, out, attention.getResults()[0]);
  for (Operation *op :
       {static_cast<Operation *>(m.output), m.softmax.getOperation(),
        m.biasAdd ? m.biasAdd.getOperation() : nullptr, m.scaling,
        m.scores.getOperation()})
    if (op)
      rewriter.eraseOp(op);
  // The transposes whose sources cuDNN reads, if nothing else reads them.
  eraseUnusedTransposes(rewriter, absorbed);
}

struct TsrGpuAttentionPass
    : tessera::impl::TsrGpuAttentionBase<TsrGpuAttentionPass> {
  void runOnOperation() override {
    SmallVector<std::pair<Match, std::optional<Backward>>> matches;
    getOperation().walk([&](tsr::SoftmaxOp softmax) {
      std::optional<Match> m = matchAttention(softmax);
      if (!m)
        return;
      // Probabilities read elsewhere than by the product with V: only the
      // backward pass as autodiff derives it may.
      std::optional<Backward> backward;
      if (!m->softmax.getResult().hasOneUse()) {
        backward = matchBackward(*m);
        if (!backward || backward->dV->getBlock() != m->output->getBlock())
          return;
      }
      matches.emplace_back(*m, backward);
    });
    MarkInserted marks;
    IRRewriter rewriter(&getContext(), &marks);
    for (auto &[m, backward] : matches)
      rewrite(rewriter, marks, m, backward);
  }
};

} // namespace
