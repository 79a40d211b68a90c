//===- ShardingRules.cpp - The sharding rules of tsr ops ------------------===//
//
// Each rule names the factors of an op's dimensions (ShardingRule in
// TsrInterfaces.h): the computation is the same op on blocks whenever the
// split factors are parallel or reduction ones, which is what
// tsr-sharding-partition relies on.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Parallel/ShardingRules.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include <numeric>

using namespace mlir;
using namespace mlir::tessera;
using tsr::ShardingRule;
using Kind = tsr::ShardingRule::Kind;
using Dims = SmallVector<SmallVector<unsigned>>;

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Dimensions of `shape` aligned to the right with `factors` (one per
/// dimension of the broadcast result): a dimension of size 1 facing a
/// larger result dimension is broadcast (no factor).
Dims alignRight(ArrayRef<int64_t> shape, ArrayRef<unsigned> factors,
                const ShardingRule &rule) {
  Dims dims;
  size_t offset = factors.size() - shape.size();
  for (auto [i, size] : llvm::enumerate(shape)) {
    unsigned f = factors[offset + i];
    if (size == rule.factors[f].size)
      dims.push_back({f});
    else
      dims.push_back({});
  }
  return dims;
}

/// One parallel factor per result dimension; operands broadcast into it.
ShardingRule elementwiseRule(Operation *op) {
  ShardingRule rule;
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  SmallVector<unsigned> factors;
  Dims result;
  for (int64_t size : shape) {
    factors.push_back(rule.addFactor(size, Kind::Parallel));
    result.push_back({factors.back()});
  }
  for (Value operand : op->getOperands())
    rule.operands.push_back(alignRight(shapeOf(operand), factors, rule));
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    rule.results.push_back(result);
  return rule;
}

bool isBroadcastingElementwise(Operation *op) {
  using namespace tsr;
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ModOp, AndOp,
             OrOp, XorOp, EqualOp, LessOp, LessEqualOp, GreaterOp,
             GreaterEqualOp, PReluOp, WhereOp>(op);
}

/// [..., m, k] x [..., k, n] -> [..., m, n] with numpy's rules for rank 1
/// and broadcast batch dimensions; k is summed over.
FailureOr<ShardingRule> matmulRule(tsr::MatMulOp op) {
  ShardingRule rule;
  ArrayRef<int64_t> a = shapeOf(op.getLhs()), b = shapeOf(op.getRhs()),
                    c = shapeOf(op.getResult());
  int64_t k = a.back();
  unsigned fk = rule.addFactor(k, Kind::Reduction);
  std::optional<unsigned> fm, fn;
  if (a.size() >= 2)
    fm = rule.addFactor(a[a.size() - 2], Kind::Parallel);
  if (b.size() >= 2)
    fn = rule.addFactor(b.back(), Kind::Parallel);
  size_t batchRank = c.size() - (fm ? 1 : 0) - (fn ? 1 : 0);
  SmallVector<unsigned> batch;
  for (int64_t size : c.take_front(batchRank))
    batch.push_back(rule.addFactor(size, Kind::Parallel));
  auto operandDims = [&](ArrayRef<int64_t> shape, bool lhs) {
    size_t matrixRank = std::min<size_t>(shape.size(), 2);
    Dims dims = alignRight(shape.drop_back(matrixRank), batch, rule);
    if (lhs) {
      if (fm)
        dims.push_back({*fm});
      dims.push_back({fk});
    } else {
      dims.push_back({fk});
      if (fn)
        dims.push_back({*fn});
    }
    return dims;
  };
  rule.operands.push_back(operandDims(a, /*lhs=*/true));
  rule.operands.push_back(operandDims(b, /*lhs=*/false));
  Dims result;
  for (unsigned f : batch)
    result.push_back({f});
  if (fm)
    result.push_back({*fm});
  if (fn)
    result.push_back({*fn});
  rule.results.push_back(result);
  return rule;
}

/// Both shapes as products of common factors, major first: [b, 768] ->
/// [b, 12, 64] is b, 12, 64 with operand dimension 1 the compound 12·64.
/// Shapes that share no such decomposition get replicated factors.
FailureOr<ShardingRule> reshapeRule(tsr::ReshapeOp op) {
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(op.getX()), out = shapeOf(op.getResult());
  Dims operand(in.size()), result(out.size());
  size_t i = 0, j = 0;
  int64_t a = 1, b = 1;
  auto skipOnes = [&] {
    while (i < in.size() && a == 1 && in[i] == 1)
      ++i;
    while (j < out.size() && b == 1 && out[j] == 1)
      ++j;
  };
  skipOnes();
  if (i < in.size())
    a = in[i];
  if (j < out.size())
    b = out[j];
  while (i < in.size() && j < out.size()) {
    int64_t g = std::gcd(a, b);
    if (g == 1)
      break;
    unsigned f = rule.addFactor(g, Kind::Parallel);
    operand[i].push_back(f);
    result[j].push_back(f);
    a /= g;
    b /= g;
    if (a == 1) {
      ++i;
      while (i < in.size() && in[i] == 1)
        ++i;
      a = i < in.size() ? in[i] : 1;
    }
    if (b == 1) {
      ++j;
      while (j < out.size() && out[j] == 1)
        ++j;
      b = j < out.size() ? out[j] : 1;
    }
  }
  if (i < in.size() || j < out.size()) {
    // No common decomposition: nothing can be split.
    rule = ShardingRule();
    operand.assign(in.size(), {});
    result.assign(out.size(), {});
    for (auto [d, size] : llvm::enumerate(in))
      operand[d] = {rule.addFactor(size, Kind::Replicated)};
    for (auto [d, size] : llvm::enumerate(out))
      result[d] = {rule.addFactor(size, Kind::Replicated)};
  }
  rule.operands.push_back(operand);
  rule.results.push_back(result);
  return rule;
}

FailureOr<ShardingRule> transposeRule(tsr::TransposeOp op) {
  ShardingRule rule;
  Dims operand;
  for (int64_t size : shapeOf(op.getX()))
    operand.push_back({rule.addFactor(size, Kind::Parallel)});
  Dims result;
  for (int64_t p : op.getPerm())
    result.push_back(operand[p]);
  rule.operands.push_back(operand);
  rule.results.push_back(result);
  return rule;
}

FailureOr<ShardingRule> broadcastRule(tsr::BroadcastOp op) {
  return elementwiseRule(op);
}

/// Elementwise, except that the dimensions in `whole` cannot be split.
ShardingRule elementwiseExcept(Operation *op, ArrayRef<int64_t> whole) {
  ShardingRule rule = elementwiseRule(op);
  for (int64_t d : whole)
    rule.factors[rule.results[0][d][0]].kind = Kind::Replicated;
  return rule;
}

FailureOr<ShardingRule> softmaxRule(tsr::SoftmaxOp op) {
  return elementwiseExcept(op, {int64_t(op.getAxis())});
}

FailureOr<ShardingRule> logSoftmaxRule(tsr::LogSoftmaxOp op) {
  return elementwiseExcept(op, {int64_t(op.getAxis())});
}

/// x's dimensions from `axis` on are normalized over (whole); scale and
/// bias span them.
FailureOr<ShardingRule> layerNormRule(tsr::LayerNormOp op) {
  int64_t rank = shapeOf(op.getX()).size();
  return elementwiseExcept(
      op, llvm::to_vector(llvm::seq<int64_t>(int64_t(op.getAxis()), rank)));
}

/// Reduced dimensions are summed over by reduce_sum (a split one leaves a
/// partial sum); the other reductions need them whole.
template <typename OpT> FailureOr<ShardingRule> reduceRule(OpT op) {
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(op.getX());
  Kind reduced = isa<tsr::ReduceSumOp>(op) ? Kind::Reduction : Kind::Replicated;
  llvm::SmallDenseSet<int64_t> axes(op.getAxes().begin(), op.getAxes().end());
  Dims operand, result;
  for (auto [d, size] : llvm::enumerate(in)) {
    bool isReduced = axes.contains(int64_t(d));
    unsigned f = rule.addFactor(size, isReduced ? reduced : Kind::Parallel);
    operand.push_back({f});
    if (!isReduced)
      result.push_back({f});
    else if (op.getKeepdims())
      result.push_back({});
  }
  rule.operands.push_back(operand);
  rule.results.push_back(result);
  return rule;
}

/// data[:axis] + indices + data[axis+1:]. The gathered dimension (an
/// embedding table's vocabulary) is summed over: split, each rank looks up
/// the rows it holds, zero elsewhere, and the ranks' results add up
/// (tsr-sharding-partition writes that masked lookup).
FailureOr<ShardingRule> gatherRule(tsr::GatherOp op) {
  ShardingRule rule;
  ArrayRef<int64_t> data = shapeOf(op.getData()),
                    indices = shapeOf(op.getIndices());
  int64_t axis = op.getAxis();
  Dims dataDims, indexDims, result;
  for (auto [d, size] : llvm::enumerate(data)) {
    if (int64_t(d) == axis) {
      dataDims.push_back({rule.addFactor(size, Kind::Reduction)});
      for (int64_t isize : indices) {
        indexDims.push_back({rule.addFactor(isize, Kind::Parallel)});
        result.push_back(indexDims.back());
      }
      continue;
    }
    dataDims.push_back({rule.addFactor(size, Kind::Parallel)});
    result.push_back(dataDims.back());
  }
  rule.operands.push_back(dataDims);
  rule.operands.push_back(indexDims);
  rule.results.push_back(result);
  return rule;
}

/// Dimensions the slice cuts are whole (on both sides).
FailureOr<ShardingRule> sliceRule(tsr::SliceOp op) {
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(op.getX()), out = shapeOf(op.getResult());
  Dims operand, result;
  for (auto [d, size] : llvm::enumerate(in)) {
    if (size == out[d] && op.getSteps()[d] == 1) {
      operand.push_back({rule.addFactor(size, Kind::Parallel)});
      result.push_back(operand.back());
      continue;
    }
    operand.push_back({rule.addFactor(size, Kind::Replicated)});
    result.push_back({rule.addFactor(out[d], Kind::Replicated)});
  }
  rule.operands.push_back(operand);
  rule.results.push_back(result);
  return rule;
}

/// The concatenated dimension is whole; the others are shared.
FailureOr<ShardingRule> concatRule(tsr::ConcatOp op) {
  ShardingRule rule;
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  int64_t axis = op.getAxis();
  Dims result;
  for (auto [d, size] : llvm::enumerate(out))
    result.push_back({rule.addFactor(
        size, int64_t(d) == axis ? Kind::Replicated : Kind::Parallel)});
  for (Value input : op.getInputs()) {
    Dims dims = result;
    dims[axis] = {rule.addFactor(shapeOf(input)[axis], Kind::Replicated)};
    rule.operands.push_back(dims);
  }
  rule.results.push_back(result);
  return rule;
}

/// Scores [N, C, d...], target [N, d...]: the classes are summed over (the
/// log-sum-exp): split, each rank holds its share of every sample's loss
/// (tsr-sharding-partition writes the vocabulary-parallel loss, which never
/// gathers the scores). Samples stay whole here, and so do the classes
/// when they carry weights.
FailureOr<ShardingRule> crossEntropyRule(tsr::SoftmaxCrossEntropyLossOp op) {
  ShardingRule rule;
  ArrayRef<int64_t> scores = shapeOf(op.getScores());
  Dims scoreDims, targetDims;
  for (auto [d, size] : llvm::enumerate(scores)) {
    Kind kind = d != 1            ? Kind::Replicated
                : op.getWeights() ? Kind::Replicated
                                  : Kind::Reduction;
    scoreDims.push_back({rule.addFactor(size, kind)});
    if (d != 1)
      targetDims.push_back(scoreDims.back());
  }
  rule.operands.push_back(scoreDims);
  rule.operands.push_back(targetDims);
  if (op.getWeights())
    rule.operands.push_back({scoreDims[1]});
  Dims result;
  if (op.getReduction() == tsr::LossReduction::none)
    result = targetDims;
  rule.results.push_back(result);
  return rule;
}

/// Values and indices along `axis` need the whole axis; the other
/// dimensions are independent.
FailureOr<ShardingRule> topkRule(tsr::TopKOp op) {
  ShardingRule rule;
  Dims in, out;
  for (auto [d, size] : llvm::enumerate(shapeOf(op.getX()))) {
    bool axis = int64_t(d) == int64_t(op.getAxis());
    unsigned f = rule.addFactor(size, axis ? Kind::Replicated : Kind::Parallel);
    in.push_back({f});
    out.push_back({axis ? rule.addFactor(op.getK(), Kind::Replicated) : f});
  }
  rule.operands.push_back(in);
  rule.results = {out, out};
  return rule;
}

/// The index dimensions are parallel; the inserted depth dimension is not
/// (a block of it would compare against shifted positions).
FailureOr<ShardingRule> oneHotRule(tsr::OneHotOp op) {
  ShardingRule rule;
  Dims in, out;
  for (int64_t size : shapeOf(op.getIndices())) {
    in.push_back({rule.addFactor(size, Kind::Parallel)});
    out.push_back(in.back());
  }
  int64_t axis = op.getAxis();
  if (axis < 0)
    axis += int64_t(out.size()) + 1;
  out.insert(out.begin() + axis, SmallVector<unsigned>{rule.addFactor(
                                     op.getDepth(), Kind::Replicated)});
  rule.operands.push_back(in);
  rule.results.push_back(out);
  return rule;
}

/// The factors of a mixture-of-experts op: groups g and the hidden size h
/// are independent (each group is routed on its own); tokens s, choices k,
/// experts e and capacity c are not (slots depend on every token of the
/// group and every expert's buffer). Expert parallelism splits the
/// experts' buffer by resharding it between the dispatch and the experts.
struct MoeFactors {
  unsigned g, s, k, e, c;
  std::optional<unsigned> h;
  Dims choices() const { return {{g}, {s}, {k}}; }
  Dims buffer() const { return {{e}, {g}, {c}, {*h}}; }
  Dims tokens() const { return {{g}, {s}, {*h}}; }
  Dims sources() const { return {{e}, {g}, {c}}; }
};

MoeFactors moeFactors(ShardingRule &rule, ArrayRef<int64_t> choices,
                      ArrayRef<int64_t> sources, int64_t hidden) {
  MoeFactors f;
  f.g = rule.addFactor(choices[0], Kind::Parallel);
  f.s = rule.addFactor(choices[1], Kind::Replicated);
  f.k = rule.addFactor(choices[2], Kind::Replicated);
  f.e = rule.addFactor(sources[0], Kind::Replicated);
  f.c = rule.addFactor(sources[2], Kind::Replicated);
  if (hidden >= 0)
    f.h = rule.addFactor(hidden, Kind::Parallel);
  return f;
}

FailureOr<ShardingRule> moeAssignRule(tsr::MoeAssignOp op) {
  ShardingRule rule;
  MoeFactors f =
      moeFactors(rule, shapeOf(op.getExperts()), shapeOf(op.getSources()), -1);
  rule.operands.push_back(f.choices());
  rule.results = {f.choices(), f.sources()};
  return rule;
}

template <typename OpT> ShardingRule moeMoveRule(OpT op, bool toBuffer) {
  ShardingRule rule;
  int64_t hidden = shapeOf(op.getX()).back();
  MoeFactors f = moeFactors(rule, shapeOf(op.getExperts()),
                            shapeOf(op.getSources()), hidden);
  rule.operands = {toBuffer ? f.tokens() : f.buffer(), f.choices(), f.choices(),
                   f.sources()};
  if (op.getWeights())
    rule.operands.push_back(f.choices());
  rule.results.push_back(toBuffer ? f.buffer() : f.tokens());
  return rule;
}

FailureOr<ShardingRule> moeDispatchRule(tsr::MoeDispatchOp op) {
  return moeMoveRule(op, /*toBuffer=*/true);
}

FailureOr<ShardingRule> moeCombineRule(tsr::MoeCombineOp op) {
  return moeMoveRule(op, /*toBuffer=*/false);
}

template <typename OpT, FailureOr<ShardingRule> (*Fn)(OpT)>
struct RuleModel
    : tsr::ShardingRuleOpInterface::ExternalModel<RuleModel<OpT, Fn>, OpT> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    return Fn(cast<OpT>(op));
  }
};

template <typename OpT, FailureOr<ShardingRule> (*Fn)(OpT)>
void attach(MLIRContext *ctx) {
  OpT::template attachInterface<RuleModel<OpT, Fn>>(*ctx);
}

} // namespace

void mlir::tessera::registerShardingRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tsr::TsrDialect *) {
    using namespace tsr;
    attach<MatMulOp, matmulRule>(ctx);
    attach<ReshapeOp, reshapeRule>(ctx);
    attach<TransposeOp, transposeRule>(ctx);
    attach<BroadcastOp, broadcastRule>(ctx);
    attach<SoftmaxOp, softmaxRule>(ctx);
    attach<LogSoftmaxOp, logSoftmaxRule>(ctx);
    attach<LayerNormOp, layerNormRule>(ctx);
    attach<ReduceSumOp, reduceRule<ReduceSumOp>>(ctx);
    attach<ReduceMeanOp, reduceRule<ReduceMeanOp>>(ctx);
    attach<ReduceMaxOp, reduceRule<ReduceMaxOp>>(ctx);
    attach<ReduceMinOp, reduceRule<ReduceMinOp>>(ctx);
    attach<ReduceProdOp, reduceRule<ReduceProdOp>>(ctx);
    attach<GatherOp, gatherRule>(ctx);
    attach<SliceOp, sliceRule>(ctx);
    attach<ConcatOp, concatRule>(ctx);
    attach<SoftmaxCrossEntropyLossOp, crossEntropyRule>(ctx);
    attach<TopKOp, topkRule>(ctx);
    attach<OneHotOp, oneHotRule>(ctx);
    attach<MoeAssignOp, moeAssignRule>(ctx);
    attach<MoeDispatchOp, moeDispatchRule>(ctx);
    attach<MoeCombineOp, moeCombineRule>(ctx);
  });
}

std::optional<ShardingRule> mlir::tessera::getShardingRule(Operation *op) {
  if (auto rule = dyn_cast<tsr::ShardingRuleOpInterface>(op)) {
    FailureOr<ShardingRule> r = rule.getShardingRule();
    if (failed(r))
      return std::nullopt;
    return *r;
  }
  if (op->getNumResults() == 1 &&
      isa<RankedTensorType>(op->getResult(0).getType()) &&
      (op->hasTrait<OpTrait::Elementwise>() || isBroadcastingElementwise(op)) &&
      llvm::all_of(op->getOperandTypes(), llvm::IsaPred<RankedTensorType>))
    return elementwiseRule(op);
  return std::nullopt;
}

bool mlir::tessera::acceptsPartial(Operation *op, ArrayRef<bool> partial) {
  unsigned count = llvm::count(partial, true);
  if (count == 0)
    return true;
  using namespace tsr;
  if (isa<ReshapeOp, TransposeOp, BroadcastOp, SliceOp, ReduceSumOp, NegOp,
          IdentityOp>(op))
    return true;
  if (auto cast = dyn_cast<CastOp>(op))
    return isa<FloatType>(getElementTypeOrSelf(cast.getType())) &&
           isa<FloatType>(getElementTypeOrSelf(cast.getX().getType()));
  if (isa<AddOp, SubOp, ConcatOp>(op))
    return count == partial.size();
  if (isa<MulOp, MatMulOp>(op))
    return count == 1;
  if (isa<DivOp>(op))
    return partial[0] && count == 1;
  return false;
}
