//===- PeakMemory.cpp - Liveness and peak memory of a tsr function --------===//
#include "tessera/Analysis/PeakMemory.h"

#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Interfaces/CallInterfaces.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// Ops that lower to one all-parallel loop nest reading their operands
/// elementwise (with broadcasting): fusible into their consumer.
bool isElementwise(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>() ||
         isa<tsr::AddOp, tsr::SubOp, tsr::MulOp, tsr::DivOp, tsr::PowOp,
             tsr::MaxOp, tsr::MinOp, tsr::ModOp, tsr::AndOp, tsr::OrOp,
             tsr::XorOp, tsr::EqualOp, tsr::LessOp, tsr::LessEqualOp,
             tsr::GreaterOp, tsr::GreaterEqualOp, tsr::PReluOp, tsr::WhereOp,
             tsr::BroadcastOp>(op);
}

/// Ops that lower to a loop nest a fused producer can be folded into:
/// elementwise ops and reductions (not the GEMMs, which stay library
/// calls, nor ops with their own access patterns).
bool acceptsFusion(Operation *op) {
  return isElementwise(op) ||
         isa<tsr::ReduceSumOp, tsr::ReduceMeanOp, tsr::ReduceMaxOp,
             tsr::ReduceMinOp, tsr::ReduceProdOp>(op);
}

/// Whether a call lies between `producer` and its user `consumer` of the
/// same block: tsr-cpu-fuse-elementwise does not fuse across one, which
/// would keep the producer's operands alive through the callee (a sum of
/// per-micro-batch gradients, each after its own backward call).
bool callBetween(Operation *producer, Operation *consumer) {
  for (Operation *op = producer->getNextNode(); op && op != consumer;
       op = op->getNextNode())
    if (isa<CallOpInterface>(op))
      return true;
  return false;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

/// Where each op's loop nest ends up after tsr-cpu-fuse-elementwise's two
/// rounds.
class Fusion {
public:
  /// The op whose loop nest `op` joins: `op` itself, or the op that runs
  /// it.
  Operation *target(Operation *op) {
    if (auto it = final.find(op); it != final.end())
      return it->second;
    Operation *t = firstRound(op);
    if (t == op)
      if (Operation *reader = returnedAndReadBy(op))
        t = reader;
    return final[op] = t == op ? op : target(t);
  }

  /// Whether `op` joins another op's loop nest that also yields `op`'s
  /// result (the second round's returned producers).
  bool keepsResult(Operation *op) {
    return target(op) != op && firstRound(op) == op;
  }

private:
  /// The first round (upstream's patterns): an elementwise op every user of
  /// which ends up in one op (in the same block, no call between them) that
  /// accepts fusion joins that op. Fusion takes a producer with one user;
  /// once the users that are themselves fused have joined their consumer,
  /// the producer's uses are that consumer's, deduplicated into one.
  Operation *firstRound(Operation *op) {
    if (auto it = first.find(op); it != first.end())
      return it->second;
    Operation *target = nullptr;
    if (isElementwise(op) && op->getNumResults() == 1) {
      for (Operation *user : op->getResult(0).getUsers()) {
        Operation *t =
            user->getBlock() == op->getBlock() && !callBetween(op, user)
                ? firstRound(user)
                : nullptr;
        if (!t || !acceptsFusion(t) || (target && t != target)) {
          target = nullptr;
          break;
        }
        target = t;
      }
    }
    return first[op] = target ? target : op;
  }

  /// The second round: the elementwise op whose loop nest reads the result
  /// of elementwise op `op` (a first-round root), element for element (of
  /// the same shape), where every other use of it is a return.
  Operation *returnedAndReadBy(Operation *op) {
    if (!isElementwise(op) || op->getNumResults() != 1)
      return nullptr;
    Value v = op->getResult(0);
    Operation *reader = nullptr;
    bool returned = false;
    for (Operation *user : v.getUsers()) {
      if (isa<func::ReturnOp>(user)) {
        returned = true;
        continue;
      }
      Operation *t =
          user->getBlock() == op->getBlock() ? firstRound(user) : nullptr;
      if (!t || (reader && t != reader))
        return nullptr;
      reader = t;
    }
    if (!returned || !reader || !isElementwise(reader) ||
        reader->getNumResults() != 1 || callBetween(op, reader) ||
        shapeOf(reader->getResult(0)) != shapeOf(v))
      return nullptr;
    return reader;
  }

  DenseMap<Operation *, Operation *> first, final;
};

int64_t product(ArrayRef<int64_t> v) {
  int64_t p = 1;
  for (int64_t d : v)
    p *= d;
  return p;
}

/// Bytes of `count` elements of the element type of `v` (a tensor), as
/// lowered (i1 takes one byte).
int64_t bytesOf(Value v, int64_t count) {
  unsigned bits = cast<ShapedType>(v.getType()).getElementTypeBitWidth();
  return count * int64_t((bits + 7) / 8);
}

/// Row-major strides (in elements) of `shape`.
SmallVector<int64_t> rowMajor(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = shape.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Whether the dimensions `dims` of a view (of sizes `shape`, `strides`)
/// are contiguous, the last innermost: one run of elements.
bool contiguous(ArrayRef<int64_t> shape, ArrayRef<int64_t> strides,
                ArrayRef<int64_t> dims) {
  int64_t expected = -1;
  for (int64_t d : llvm::reverse(dims)) {
    if (shape[d] == 1)
      continue;
    if (expected >= 0 && strides[d] != expected)
      return false;
    expected = strides[d] * shape[d];
  }
  return true;
}

/// The ops of one function body as the steps of their lowering, and the
/// buffers those steps write and read.
class Program {
public:
  struct Buffer {
    int64_t bytes, def, last;
    Value value;
    Operation *op;
    StringRef scratch;
    /// Whether the allocator pads it (an aligned allocation).
    bool padded;
    /// Whether it is a result's out-parameter, which the caller allocates
    /// (tsr-results-to-out-params writes a returned allocation there).
    bool inCaller = false;
  };

  /// Starts the next step of `op`. Its first step reads what the producers
  /// fused into it read.
  void step(Operation *op) {
    bool first = steps.empty() || steps.back() != op;
    steps.push_back(op);
    if (!first)
      return;
    for (Value v : deferred.lookup(op))
      read(v);
    for (Value v : keptResults.lookup(op))
      define(v);
  }

  /// The buffer of `v`, if it has one, is read at the current step.
  void read(Value v) {
    auto it = bufferOf.find(v);
    if (it != bufferOf.end())
      read(it->second);
  }
  void read(unsigned buffer) {
    Buffer &b = buffers[buffer];
    b.last = std::max(b.last, now());
  }

  /// `v` (a result of the current step's op) gets a buffer of its own,
  /// aligned (`padded`) unless the caller allocates it (a call's results),
  /// or none where it is written into a caller's buffer.
  void define(Value v, bool padded = true) {
    if (inCallerBuffer.contains(v))
      return;
    auto type = dyn_cast<ShapedType>(v.getType());
    if (type && type.hasStaticShape()) {
      bufferOf[v] = allocate({tsr::getStaticTensorBytes(type), 0, 0, v,
                              v.getDefiningOp(), StringRef(), padded});
      isItsBuffer.insert(v);
    }
  }

  /// `v` is written into a buffer the caller passes (an argument's, by
  /// tsr-donate-updates): the function allocates nothing for it.
  void writeInCallerBuffer(Value v) { inCallerBuffer.insert(v); }

  /// A scratch buffer of the current step's op, holding `what`.
  unsigned scratch(StringRef what, int64_t bytes, bool padded = true) {
    return allocate({bytes, 0, 0, Value(), steps.back(), what, padded});
  }

  /// The scratch an earlier op computed from `from` the same way (`how`),
  /// which CSE shares with the current step's op (which reads it now).
  std::optional<unsigned> findShared(Value from, StringRef how) {
    for (auto &[v, key, buffer] : shared)
      if (v == from && key == how) {
        read(buffer);
        return buffer;
      }
    return std::nullopt;
  }

  /// Scratch that ops computing it the same way (`how`) from `from` share
  /// after CSE: allocated by the first, read by every later one.
  unsigned sharedScratch(Value from, StringRef how, StringRef what,
                         int64_t bytes) {
    if (std::optional<unsigned> buffer = findShared(from, how))
      return *buffer;
    unsigned buffer = scratch(what, bytes);
    shared.push_back({from, how.str(), buffer});
    return buffer;
  }

  /// Whether `v` is a view of a buffer in another layout than row-major.
  bool isStridedView(Value v) const { return viewStrides.count(v); }

  /// Whether `v`'s buffer is row-major from its first element: a function
  /// boundary or a collective's operand takes it as it is (else a copy).
  bool hasIdentityLayout(Value v) const {
    return !isStridedView(v) && offsetOf(v) == 0;
  }

  /// The strides (in elements) of `v` in its buffer: row-major unless it
  /// is a strided view.
  SmallVector<int64_t> stridesOf(Value v) const {
    auto it = viewStrides.find(v);
    return it != viewStrides.end() ? it->second : rowMajor(shapeOf(v));
  }

  /// The offset (in elements) of `v` in its buffer; nothing where it is
  /// known only at run time.
  std::optional<int64_t> offsetOf(Value v) const {
    auto it = viewOffsets.find(v);
    return it != viewOffsets.end() ? it->second : 0;
  }

  /// Whether `v`'s buffer is its own (allocated for it, not a view of
  /// another value's).
  bool ownsBuffer(Value v) const {
    auto it = bufferOf.find(v);
    return it != bufferOf.end() && buffers[it->second].value == v;
  }

  /// `result` is written into `of`'s buffer (in place), which it takes
  /// over.
  void alias(Value result, Value of) {
    auto it = bufferOf.find(of);
    if (it != bufferOf.end())
      bufferOf[result] = it->second;
    if (isItsBuffer.contains(of))
      isItsBuffer.insert(result);
  }

  /// `result` forwards `of` (bufferization gives it `of`'s buffer itself,
  /// not a view of it).
  void forward(Value result, Value of) {
    view(result, of, stridesOf(of), offsetOf(of));
    if (isItsBuffer.contains(of))
      isItsBuffer.insert(result);
  }

  /// `result` reshapes `of`: in the bufferized program a chain of
  /// expand_shape and collapse_shape views of the buffer `of` reshapes.
  void reshapeView(Value result, Value of) {
    Value root = reshapeRoots.lookup(of);
    reshapeRoots[result] = root ? root : of;
  }

  /// Writes the results of `ret` that are an allocation of the function
  /// itself, or a reshaped view of one, into the caller's out-parameter
  /// instead, as tsr-results-to-out-params does: a value that is its buffer
  /// (not a strided or offset view, a call's result or a region's), of a
  /// buffer no other result returns, and not written into an argument's
  /// buffer already (`skip`).
  void returnInCallerBuffers(func::ReturnOp ret, ArrayRef<unsigned> skip) {
    DenseMap<unsigned, unsigned> returned;
    for (Value v : ret.getOperands())
      if (auto it = bufferOf.find(v); it != bufferOf.end())
        ++returned[it->second];
    for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
      Value root = reshapeRoots.lookup(v);
      if (!root)
        root = v;
      Operation *def = root.getDefiningOp();
      auto it = bufferOf.find(v);
      if (llvm::is_contained(skip, k) || !isItsBuffer.contains(root) ||
          it == bufferOf.end() || returned[it->second] != 1 || !def ||
          isa<func::CallOp>(def) || def->getNumRegions() != 0 ||
          viewStrides.count(v) || viewOffsets.count(v))
        continue;
      buffers[it->second].inCaller = true;
    }
  }

  /// `result` is a view of `of`'s buffer, with `strides` and `offset`.
  void view(Value result, Value of, ArrayRef<int64_t> strides,
            std::optional<int64_t> offset) {
    auto it = bufferOf.find(of);
    if (it != bufferOf.end())
      bufferOf[result] = it->second;
    ArrayRef<int64_t> shape = shapeOf(result);
    if (!contiguous(shape, strides,
                    llvm::to_vector(llvm::seq<int64_t>(0, shape.size()))))
      viewStrides[result] = llvm::to_vector(strides);
    if (offset != 0)
      viewOffsets[result] = offset;
  }

  /// The strides of `v` reshaped to `to` as tsr-to-linalg's reshapeTo does
  /// it (one collapse_shape or expand_shape where one does, else a collapse
  /// to 1-D then an expansion), or nothing where a collapse joins
  /// dimensions that are not contiguous in `v`'s view, which bufferization
  /// copies.
  std::optional<SmallVector<int64_t>> reshaped(Value v,
                                               ArrayRef<int64_t> to) const {
    if (!isStridedView(v))
      return rowMajor(to);
    ArrayRef<int64_t> from = shapeOf(v);
    SmallVector<int64_t> strides = stridesOf(v);
    auto collapse = [&](ArrayRef<ReassociationIndices> groups)
        -> std::optional<SmallVector<int64_t>> {
      SmallVector<int64_t> result;
      for (const ReassociationIndices &g : groups) {
        if (!contiguous(from, strides, g))
          return std::nullopt;
        result.push_back(strides[g.back()]);
      }
      return result;
    };
    if (from.size() > to.size())
      if (auto groups = getReassociationIndicesForCollapse(from, to))
        return collapse(*groups);
    if (from.size() < to.size())
      if (auto groups = getReassociationIndicesForCollapse(to, from)) {
        SmallVector<int64_t> result(to.size());
        for (auto [d, g] : llvm::enumerate(*groups)) {
          int64_t stride = strides[d];
          for (int64_t r : llvm::reverse(g)) {
            result[r] = stride;
            stride *= to[r];
          }
        }
        return result;
      }
    // Through the flat tensor.
    SmallVector<ReassociationIndices> all(1);
    for (int64_t d = 0, e = from.size(); d < e; ++d)
      all[0].push_back(d);
    if (!collapse(all))
      return std::nullopt;
    return rowMajor(to);
  }

  /// `target` reads the operands of `producer`, fused into it, where it
  /// runs (and what producers fused into `producer` read).
  void defer(Operation *target, Operation *producer) {
    SmallVector<Value> reads(producer->getOperands());
    llvm::append_range(reads, deferred.lookup(producer));
    llvm::append_range(deferred[target], reads);
  }

  /// `target` also writes `result`, of a producer fused into it that keeps
  /// its result.
  void keepResult(Operation *target, Value result) {
    keptResults[target].push_back(result);
  }

  /// The current step also holds `bytes` in a callee.
  void holdInCallee(int64_t bytes) { callee[now()] += bytes; }

  PeakMemory peak(int64_t padding) const {
    PeakMemory result;
    // Bytes allocated and freed at each step; live bytes are their sum.
    SmallVector<int64_t> change(steps.size() + 1, 0);
    for (const Buffer &b : buffers) {
      if (b.inCaller)
        continue;
      change[b.def] += b.bytes + (b.padded ? padding : 0);
      change[b.last + 1] -= b.bytes + (b.padded ? padding : 0);
    }
    result.steps.assign(steps.begin(), steps.end());
    for (const Buffer &b : buffers)
      if (!b.inCaller)
        result.ranges.push_back(
            {{b.value, b.op, b.scratch, b.bytes, b.padded ? padding : 0},
             b.def,
             b.last});
    for (int64_t s = 0, e = steps.size(); s < e; ++s)
      result.calleeBytesAt.push_back(callee.lookup(s));
    int64_t at = -1, live = 0;
    for (int64_t s = 0, e = steps.size(); s < e; ++s) {
      live += change[s];
      int64_t bytes = live + callee.lookup(s);
      if (bytes > result.peakBytes) {
        result.peakBytes = bytes;
        at = s;
      }
    }
    if (at < 0)
      return result;
    result.peakOp = steps[at];
    result.calleeBytes = callee.lookup(at);
    for (const Buffer &b : buffers)
      if (!b.inCaller && b.def <= at && at <= b.last)
        result.liveAtPeak.push_back(
            {b.value, b.op, b.scratch, b.bytes, b.padded ? padding : 0});
    llvm::stable_sort(result.liveAtPeak,
                      [](auto &a, auto &b) { return a.bytes > b.bytes; });
    return result;
  }

private:
  int64_t now() const { return steps.size() - 1; }

  unsigned allocate(Buffer b) {
    b.def = b.last = now();
    buffers.push_back(b);
    return buffers.size() - 1;
  }

  SmallVector<Operation *> steps;
  SmallVector<Buffer> buffers;
  DenseMap<Value, unsigned> bufferOf;
  DenseSet<Value> inCallerBuffer;
  /// The values that are their buffer in the bufferized program: a new
  /// buffer's, or one that an in-place op or a forwarding op passed on.
  DenseSet<Value> isItsBuffer;
  /// The value each reshaped view reshapes, through chains of reshapes.
  DenseMap<Value, Value> reshapeRoots;
  DenseMap<Operation *, SmallVector<Value>> deferred, keptResults;
  SmallVector<std::tuple<Value, std::string, unsigned>> shared;
  DenseMap<int64_t, int64_t> callee;
  /// The strides of the values that are views of a buffer in another layout
  /// than row-major (strided slices and what views them), and the offsets
  /// of views that do not start at their buffer's first element.
  DenseMap<Value, SmallVector<int64_t>> viewStrides;
  DenseMap<Value, std::optional<int64_t>> viewOffsets;
};

/// One step reading every operand and writing every result.
void lowerDefault(Program &p, Operation *op) {
  p.step(op);
  for (Value v : op->getOperands())
    p.read(v);
  for (Value r : op->getResults())
    p.define(r);
}

/// The tensor tsr-to-linalg's scatter reads its indices from: a broadcast's
/// operand, which it indexes in place of the broadcast.
Value scatterIndices(tsr::ScatterElementsOp op) {
  if (auto broadcast = op.getIndices().getDefiningOp<tsr::BroadcastOp>())
    return broadcast.getX();
  return op.getIndices();
}

/// A broadcast that only scatters read, as indices: never built.
bool onlyScatterIndices(tsr::BroadcastOp op) {
  return !op->use_empty() && llvm::all_of(op->getUses(), [](OpOperand &use) {
    auto scatter = dyn_cast<tsr::ScatterElementsOp>(use.getOwner());
    return scatter && use.getOperandNumber() ==
                          scatter.getIndicesMutable().getOperandNumber();
  });
}

/// tsr-to-linalg's scatter: one loop updating a copy of the data. A 16-bit
/// sum or product runs on an f32 copy (filled, for splat data), rounded
/// into the result after the loop.
void lowerScatterElements(Program &p, tsr::ScatterElementsOp op) {
  auto type = cast<RankedTensorType>(op.getData().getType());
  tsr::ScatterReduction reduction = op.getReduction();
  Type elem = type.getElementType();
  bool sums = reduction == tsr::ScatterReduction::add ||
              reduction == tsr::ScatterReduction::mul;
  if (!sums || !(elem.isBF16() || elem.isF16())) {
    lowerDefault(p, op);
    p.read(scatterIndices(op));
    return;
  }
  p.step(op);
  p.read(op.getData());
  unsigned accumulator =
      p.scratch("f32 accumulator", 4 * type.getNumElements());
  p.step(op);
  p.read(scatterIndices(op));
  p.read(op.getUpdates());
  p.read(accumulator);
  p.step(op);
  p.read(accumulator);
  p.define(op);
}

/// The key under which CSE merges a tensor.pad of one input: its pads and
/// whether it pads with zeros or the lowest value.
std::string padKey(StringRef value, ArrayRef<int64_t> low,
                   ArrayRef<int64_t> high) {
  std::string key = "pad " + value.str();
  for (int64_t p : llvm::concat<const int64_t>(low, high))
    key += " " + std::to_string(p);
  return key;
}

/// A padded copy of `x` [N, C, D..] (spatial pads `low` and `high`), shared
/// by the ops that pad `x` alike, written by the current step.
unsigned padInput(Program &p, Value x, StringRef value, ArrayRef<int64_t> low,
                  ArrayRef<int64_t> high) {
  p.read(x);
  SmallVector<int64_t> shape(shapeOf(x));
  for (size_t i = 0; i < low.size(); ++i)
    shape[2 + i] += low[i] + high[i];
  return p.sharedScratch(x, padKey(value, low, high), "padded input",
                         bytesOf(x, product(shape)));
}

/// What makes two im2col gathers of one input the same op for CSE: their
/// layout (`kind`), groups, kernel, strides, pads and dilations.
template <typename ConvLikeOp>
std::string columnsKey(StringRef kind, ConvLikeOp op,
                       ArrayRef<int64_t> kernel) {
  std::string key = kind.str() + " " + std::to_string(op.getGroup());
  for (ArrayRef<int64_t> list :
       {kernel, op.getStrides(), op.getPads(), op.getDilations()}) {
    key += " |";
    for (int64_t v : list)
      key += " " + std::to_string(v);
  }
  return key;
}

/// tsr-to-linalg's im2col convolution: pad x (if padded), gather the
/// patches into columns [G, Cg·ΠK, N·ΠO], multiply by the weights into
/// [G, Mg, N·ΠO], then transpose to [N, M, O..] adding the bias. A second
/// convolution of the same x and geometry shares the columns (CSE).
void lowerConv(Program &p, tsr::ConvOp op) {
  Value x = op.getX();
  ArrayRef<int64_t> pads = op.getPads();
  int64_t k = pads.size() / 2;
  ArrayRef<int64_t> kernel = shapeOf(op.getW()).drop_front(2);
  std::string key = columnsKey("conv", op, kernel);
  p.step(op);
  std::optional<unsigned> columns = p.findShared(x, key);
  if (!columns) {
    std::optional<unsigned> padded;
    if (llvm::any_of(pads, [](int64_t v) { return v != 0; })) {
      padded = padInput(p, x, "zero", pads.take_front(k), pads.drop_front(k));
      p.step(op);
      p.read(*padded);
    } else {
      p.read(x);
    }
    int64_t patches = shapeOf(x)[1] * product(kernel);
    int64_t positions = shapeOf(x)[0] * product(shapeOf(op).drop_front(2));
    columns = p.sharedScratch(x, key, "im2col columns",
                              bytesOf(x, patches * positions));
  }
  p.step(op);
  p.read(*columns);
  p.read(op.getW());
  unsigned product =
      p.scratch("GEMM result", tsr::getStaticTensorBytes(op.getType()));
  p.step(op);
  p.read(product);
  if (Value bias = op.getBias())
    p.read(bias);
  p.define(op);
}

/// dy [N, G·Mg, O..] transposed to [G, Mg, N·ΠO]: both convolution
/// gradients of one dy compute it alike, and CSE keeps the first.
unsigned groupedRows(Program &p, Operation *op, Value dy, int64_t groups) {
  p.step(op);
  p.read(dy);
  return p.sharedScratch(dy, "rows of " + std::to_string(groups) + " groups",
                         "dy by group",
                         tsr::getStaticTensorBytes(dy.getType()));
}

/// dcol = wᵀ · dy, then col2im gathers dx from dcol. A constant w is
/// transposed at compile time (a global).
void lowerConvBackwardData(Program &p, tsr::ConvBackwardDataOp op) {
  Value w = op.getW(), dy = op.getDy();
  p.step(op);
  p.read(w);
  std::optional<unsigned> transposed;
  if (!w.getDefiningOp<tsr::ConstantOp>())
    transposed =
        p.scratch("transposed weights", tsr::getStaticTensorBytes(w.getType()));
  unsigned rows = groupedRows(p, op, dy, op.getGroup());
  p.step(op);
  if (transposed)
    p.read(*transposed);
  p.read(rows);
  int64_t patches = shapeOf(op)[1] * product(shapeOf(w).drop_front(2));
  int64_t positions = shapeOf(dy)[0] * product(shapeOf(dy).drop_front(2));
  unsigned columns =
      p.scratch("column gradients", bytesOf(dy, patches * positions));
  p.step(op);
  p.read(columns);
  p.define(op);
}

/// dw = dy · colᵀ: the transposed columns gathered from x (shared by the
/// weight gradients of one x and geometry), then dy by group.
void lowerConvBackwardFilter(Program &p, tsr::ConvBackwardFilterOp op) {
  Value x = op.getX(), dy = op.getDy();
  ArrayRef<int64_t> kernel = shapeOf(op).drop_front(2);
  p.step(op);
  p.read(x);
  int64_t patches = shapeOf(x)[1] * product(kernel);
  int64_t positions = shapeOf(x)[0] * product(shapeOf(dy).drop_front(2));
  unsigned columns =
      p.sharedScratch(x, columnsKey("weight gradient", op, kernel),
                      "im2col columns", bytesOf(x, patches * positions));
  unsigned rows = groupedRows(p, op, dy, op.getGroup());
  p.step(op);
  p.read(columns);
  p.read(rows);
  p.define(op);
}

/// Each window's maximum and argmax (a two-result reduction whose maxima
/// nothing reads afterwards), then dx gathers dy by argmax.
void lowerMaxPoolGrad(Program &p, tsr::MaxPoolGradOp op) {
  Value dy = op.getDy();
  int64_t windows = product(shapeOf(dy));
  p.step(op);
  p.read(op.getX());
  p.scratch("window maxima", bytesOf(dy, windows));
  unsigned argmax = p.scratch("window argmax", 8 * windows);
  p.step(op);
  p.read(argmax);
  p.read(dy);
  p.define(op);
}

/// Pooling reads a padded copy of x where its windows reach outside x
/// (padForPool: the pads, and at the end what ceil_mode windows need); an
/// average sums each window, then divides.
template <typename PoolOp>
void lowerPool(Program &p, PoolOp op, StringRef padValue, bool average) {
  Value x = op.getX();
  ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                    dilations = op.getDilations(), pads = op.getPads();
  int64_t k = kernel.size();
  ArrayRef<int64_t> in = shapeOf(x).drop_front(2),
                    out = shapeOf(op).drop_front(2);
  SmallVector<int64_t> high;
  bool any = false;
  for (int64_t i = 0; i < k; ++i) {
    int64_t needed =
        (out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1;
    high.push_back(std::max(pads[k + i], needed - in[i] - pads[i]));
    any |= pads[i] != 0 || high.back() != 0;
  }
  p.step(op);
  if (any) {
    unsigned padded = padInput(p, x, padValue, pads.take_front(k), high);
    p.step(op);
    p.read(padded);
  } else {
    p.read(x);
  }
  if (!average) {
    p.define(op);
    return;
  }
  unsigned sums =
      p.scratch("window sums", tsr::getStaticTensorBytes(op.getType()));
  p.step(op);
  p.read(sums);
  p.define(op);
}

/// The number of rows a reduction of `x` over `axes` leaves.
int64_t rowsOf(Value x, ArrayRef<int64_t> axes) {
  int64_t rows = product(shapeOf(x));
  for (int64_t a : axes)
    rows /= shapeOf(x)[a];
  return rows;
}

/// The scratch of buildSoftmaxParts.
struct SoftmaxScratch {
  unsigned max, sums;
};

/// buildSoftmaxParts's steps: the row maxima, then the row sums of
/// exp(x − max), each reading x. CSE merges both of softmaxes of one input
/// (a loss's and its gradient's).
SoftmaxScratch softmaxPartsSteps(Program &p, Operation *op, Value x,
                                 int64_t axis) {
  int64_t rows = bytesOf(x, rowsOf(x, {axis}));
  std::string key = std::to_string(axis);
  p.step(op);
  p.read(x);
  SoftmaxScratch scratch;
  scratch.max = p.sharedScratch(x, "row maxima " + key, "row maxima", rows);
  p.step(op);
  p.read(x);
  p.read(scratch.max);
  scratch.sums = p.sharedScratch(x, "row sums " + key, "row sums", rows);
  return scratch;
}

/// buildSoftmax's steps, the last one writing the result (which the
/// caller defines there): its parts, then the result, which reads x, the
/// maxima and the sums.
void softmaxSteps(Program &p, Operation *op, Value x, int64_t axis) {
  SoftmaxScratch scratch = softmaxPartsSteps(p, op, x, axis);
  p.step(op);
  p.read(x);
  p.read(scratch.max);
  p.read(scratch.sums);
}

/// The parts of the scores' log-softmax, then the reduction of the loss
/// (with reduction none, per sample), which reads the scores, maxima and
/// sums at each sample's label, then for a mean the sum of the weights of
/// the samples that count (a second reduction with class weights or an
/// ignored label, otherwise the number of samples) and the division.
void lowerSoftmaxCrossEntropy(Program &p, tsr::SoftmaxCrossEntropyLossOp op) {
  Value scores = op.getScores();
  SoftmaxScratch scratch = softmaxPartsSteps(p, op, scores, /*axis=*/1);
  p.step(op);
  p.read(scores);
  p.read(scratch.max);
  p.read(scratch.sums);
  p.read(op.getTarget());
  Value weights = op.getWeights();
  if (weights)
    p.read(weights);
  if (op.getReduction() != tsr::LossReduction::mean) {
    p.define(op);
    return;
  }
  int64_t bytes = tsr::getStaticTensorBytes(op.getType());
  unsigned loss = p.scratch("loss sum", bytes);
  // A constant count folds into the division.
  std::optional<unsigned> weight;
  if (weights || op.getIgnoreIndexAttr()) {
    p.step(op);
    p.read(op.getTarget());
    if (weights)
      p.read(weights);
    weight = p.scratch("weight sum", bytes);
  }
  p.step(op);
  p.read(loss);
  if (weight)
    p.read(*weight);
  p.define(op);
}

/// The row sums of x, x minus their mean (the division fused in), the row
/// sums of its squares, then the normalized, scaled result.
void lowerLayerNorm(Program &p, tsr::LayerNormOp op) {
  Value x = op.getX();
  SmallVector<int64_t> axes;
  for (int64_t d = op.getAxis(), r = shapeOf(x).size(); d < r; ++d)
    axes.push_back(d);
  int64_t rows = bytesOf(x, rowsOf(x, axes));
  p.step(op);
  p.read(x);
  unsigned sums = p.scratch("row sums", rows);
  p.step(op);
  p.read(x);
  p.read(sums);
  unsigned centred =
      p.scratch("centred input", tsr::getStaticTensorBytes(x.getType()));
  p.step(op);
  p.read(centred);
  unsigned squares = p.scratch("row sums of squares", rows);
  p.step(op);
  p.read(centred);
  p.read(squares);
  p.read(op.getScale());
  if (Value bias = op.getBias())
    p.read(bias);
  p.define(op);
}

/// The sum over the axes, then its division by their size.
void lowerReduceMean(Program &p, tsr::ReduceMeanOp op) {
  p.step(op);
  p.read(op.getX());
  unsigned sums = p.scratch("sums", tsr::getStaticTensorBytes(op.getType()));
  p.step(op);
  p.read(sums);
  p.define(op);
}

/// numpy.matmul as MatMulPattern lowers it: a 1-D lhs is a row; unless the
/// rhs is 2-D (or 1-D) or the batch is one matrix, both operands are
/// brought to the broadcast batch, an operand whose own batch dimensions
/// differ from it by a copy.
void lowerMatMul(Program &p, tsr::MatMulOp op) {
  Value lhs = op.getLhs(), rhs = op.getRhs();
  SmallVector<int64_t> lhsShape(shapeOf(lhs));
  if (lhsShape.size() == 1)
    lhsShape.insert(lhsShape.begin(), 1);
  ArrayRef<int64_t> rhsShape = shapeOf(rhs);
  p.step(op);
  p.read(lhs);
  p.read(rhs);
  SmallVector<unsigned> copies;
  FailureOr<SmallVector<int64_t>> batch = failure();
  if (rhsShape.size() > 2)
    batch = tsr::broadcastShapes(ArrayRef(lhsShape).drop_back(2),
                                 rhsShape.drop_back(2));
  if (succeeded(batch) && product(*batch) != 1) {
    for (auto [value, shape] : {std::pair(lhs, ArrayRef<int64_t>(lhsShape)),
                                std::pair(rhs, rhsShape)})
      if (shape.drop_back(2) != ArrayRef<int64_t>(*batch))
        copies.push_back(p.scratch(
            "broadcast operand",
            bytesOf(value, product(*batch) * product(shape.take_back(2)))));
  }
  if (!copies.empty()) {
    p.step(op);
    for (unsigned copy : copies)
      p.read(copy);
  }
  p.define(op);
}

/// A collective, as tsr-to-linalg writes it (a `tsrt` op in destination
/// style) and bufferization places it. all_reduce and broadcast_from write
/// into their operand's buffer when nothing reads the operand afterwards
/// and it is not the caller's (arguments are not writable), else into an
/// aligned copy of it; the other collectives write a fresh aligned buffer.
/// A block dimension other than 0 is transposed to the front first and
/// the result transposed back. An operand that is not row-major from its
/// first element reaches the runtime through an aligned contiguous copy.
void lowerCollective(Program &p, Operation *op, Value x, int64_t dim) {
  Value result = op->getResult(0);
  bool inPlaceKind = isa<tsr::AllReduceOp, tsr::BroadcastFromOp>(op);
  p.step(op);
  p.read(x);
  std::optional<unsigned> in;
  if (dim != 0)
    in = p.scratch("operand with the block dimension first",
                   tsr::getStaticTensorBytes(x.getType()));
  else if (!p.hasIdentityLayout(x) && !inPlaceKind)
    in = p.scratch("row-major operand", tsr::getStaticTensorBytes(x.getType()));
  p.step(op);
  // The runtime reads the operand (or its copy) while it writes the result.
  if (in)
    p.read(*in);
  else
    p.read(x);
  if (dim == 0) {
    bool lastUse = !isa<BlockArgument>(x) && x.hasOneUse() && p.ownsBuffer(x) &&
                   p.hasIdentityLayout(x);
    if (inPlaceKind && lastUse)
      p.alias(result, x);
    else
      p.define(result);
    return;
  }
  unsigned out = p.scratch("result with the block dimension first",
                           tsr::getStaticTensorBytes(result.getType()));
  p.step(op);
  p.read(out);
  p.define(result);
}

/// The operand a transpose reads once linalg's canonicalization folds a
/// transpose of a transpose into one (of the inner operand, by the composed
/// permutation), and whether that permutation is the identity (no copy).
std::pair<Value, bool> composedTranspose(tsr::TransposeOp op) {
  auto inner = op.getX().getDefiningOp<tsr::TransposeOp>();
  if (!inner)
    return {op.getX(), false};
  ArrayRef<int64_t> outer = op.getPerm(), first = inner.getPerm();
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(outer))
    identity &= first[p] == int64_t(i);
  return {inner.getX(), identity};
}

SmallVector<unsigned> donatedResults(func::FuncOp f, Fusion &fusion);

/// Per result of `call`, the argument into whose buffer its callee writes
/// it in place (a repeated layer's update cell: see donatedResults), or -1.
SmallVector<int64_t> writtenInPlace(func::CallOp call) {
  SmallVector<int64_t> args(call.getNumResults(), -1);
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  if (!callee || callee.isPublic())
    return args;
  Fusion fusion;
  for (unsigned i : donatedResults(callee, fusion))
    args[i] = callee.getResultAttrOfType<IntegerAttr>(i, tsr::attr::kUpdates)
                  .getInt();
  return args;
}

/// A call of a function bufferized with identity layouts at its boundary
/// and its results as out-parameters: an argument that is not row-major
/// from its first element is copied first, and the caller allocates the
/// results (unaligned) before the call.
void lowerCall(Program &p, func::CallOp call) {
  p.step(call);
  for (Value v : call.getOperands()) {
    p.read(v);
    if (isa<ShapedType>(v.getType()) && !p.hasIdentityLayout(v))
      p.scratch("row-major argument", tsr::getStaticTensorBytes(v.getType()));
  }
  // A result its callee writes over an argument (an update cell's) is
  // that argument's buffer where the caller donates it; elsewhere
  // bufferization copies the argument into an aligned buffer of the
  // caller's first.
  SmallVector<int64_t> inPlace = writtenInPlace(call);
  for (OpResult r : call->getResults())
    p.define(r, /*padded=*/inPlace[r.getResultNumber()] >= 0);
}

void lower(Program &p, Operation *op) {
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](tsr::ConvOp conv) { lowerConv(p, conv); })
      .Case([&](tsr::ConvBackwardDataOp g) { lowerConvBackwardData(p, g); })
      .Case([&](tsr::ConvBackwardFilterOp g) { lowerConvBackwardFilter(p, g); })
      .Case([&](tsr::MaxPoolGradOp g) { lowerMaxPoolGrad(p, g); })
      .Case([&](tsr::MaxPoolOp pool) {
        lowerPool(p, pool, "lowest", /*average=*/false);
      })
      .Case([&](tsr::AvgPoolOp pool) {
        lowerPool(p, pool, "zero", /*average=*/true);
      })
      .Case<tsr::SoftmaxOp, tsr::LogSoftmaxOp>([&](auto s) {
        softmaxSteps(p, s, s.getX(), s.getAxis());
        p.define(s);
      })
      .Case([&](tsr::SoftmaxCrossEntropyLossOp l) {
        lowerSoftmaxCrossEntropy(p, l);
      })
      .Case([&](tsr::LayerNormOp n) { lowerLayerNorm(p, n); })
      .Case([&](tsr::ReduceMeanOp r) { lowerReduceMean(p, r); })
      .Case([&](tsr::MatMulOp m) { lowerMatMul(p, m); })
      .Case([&](tsr::AllReduceOp c) { lowerCollective(p, c, c.getX(), 0); })
      .Case([&](tsr::BroadcastFromOp c) { lowerCollective(p, c, c.getX(), 0); })
      .Case([&](tsr::ReduceScatterOp c) {
        lowerCollective(p, c, c.getX(), c.getDim());
      })
      .Case([&](tsr::AllGatherOp c) {
        lowerCollective(p, c, c.getX(), c.getDim());
      })
      .Case([&](tsr::AllToAllOp c) {
        lowerCollective(p, c, c.getX(), c.getDim());
      })
      .Case([&](func::CallOp call) { lowerCall(p, call); })
      .Case([&](tsr::TransposeOp t) {
        p.step(t);
        p.read(composedTranspose(t).first);
        p.define(t);
      })
      .Case([&](tsr::ScatterElementsOp s) { lowerScatterElements(p, s); })
      .Default([&](Operation *other) { lowerDefault(p, other); });
}

/// Ops whose result is a view of their operand's buffer, or may be one
/// (reshapes and slices), as far as in-place writes are concerned.
bool mayBeView(Operation *op) {
  return isa<tsr::StopGradientOp, tsr::IdentityOp, tsr::WaitOp,
             tsr::PrefetchWaitOp, tsr::RematBarrierOp, tsr::LocalShardOp,
             tsr::ReshapeOp, tsr::SliceOp>(op);
}

/// The argument whose buffer `v` may share: `v` itself or the source of the
/// views that produce it.
BlockArgument viewedArgument(Value v) {
  while (Operation *op = v.getDefiningOp()) {
    if (!mayBeView(op))
      return nullptr;
    v = op->getOperand(0);
  }
  return dyn_cast<BlockArgument>(v);
}

/// The results of function `f` that tsr-donate-updates writes into the
/// buffer of the argument they update (`tsr.updates`: every result of a
/// public function that updates an argument, those of a repeated layer's
/// update cell that tsr-outline-layers marks): the argument itself, or a
/// result of an elementwise op (one linalg op writing a fresh tensor) or
/// of a call whose callee writes it into that argument's buffer, when no
/// other result is (a view of) that argument and every other op that
/// reads the argument, or a view of it, runs before (where producers fused
/// into it run), the op itself reading it only directly.
SmallVector<unsigned> donatedResults(func::FuncOp f, Fusion &fusion) {
  SmallVector<unsigned> donated;
  if (!f.getBody().hasOneBlock())
    return donated;
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  DenseSet<unsigned> args;
  for (unsigned k = 0; k < f.getNumResults(); ++k) {
    auto updates = f.getResultAttrOfType<IntegerAttr>(k, tsr::attr::kUpdates);
    if (!updates)
      continue;
    BlockArgument arg = f.getArgument(updates.getInt());
    Value v = ret.getOperand(k);
    bool shared = false;
    for (auto [i, other] : llvm::enumerate(ret.getOperands()))
      shared |= i != k && viewedArgument(other) == arg;
    if (arg.getType() != v.getType() || args.contains(arg.getArgNumber()) ||
        shared)
      continue;
    Operation *writer = v.getDefiningOp();
    if (v != arg) {
      auto call = dyn_cast_or_null<func::CallOp>(writer);
      bool byCall = call && call->getBlock() == ret->getBlock() &&
                    llvm::count(call.getOperands(), Value(arg)) == 1 &&
                    writtenInPlace(call)[cast<OpResult>(v).getResultNumber()] ==
                        llvm::find(call.getOperands(), Value(arg)) -
                            call.getOperands().begin();
      if (!byCall && (!writer || writer->getBlock() != ret->getBlock() ||
                      !isElementwise(writer) || writer->getNumResults() != 1))
        continue;
      bool overwritable = true;
      SmallVector<Value> worklist = {arg};
      while (!worklist.empty() && overwritable) {
        Value x = worklist.pop_back_val();
        for (Operation *user : x.getUsers()) {
          if (user == ret)
            continue;
          if (mayBeView(user)) {
            worklist.push_back(user->getResult(0));
            continue;
          }
          Operation *runs = fusion.target(user);
          Operation *writes = fusion.target(writer);
          if (runs->getBlock() != writes->getBlock() || runs == writes
                  ? x != arg
                  : !runs->isBeforeInBlock(writes))
            overwritable = false;
        }
      }
      if (!overwritable)
        continue;
    }
    donated.push_back(k);
    args.insert(arg.getArgNumber());
  }
  return donated;
}

} // namespace

PeakMemory mlir::tessera::predictPeakMemory(func::FuncOp f,
                                            const PeakMemoryOptions &options) {
  if (f.getBody().empty())
    return {};
  Program p;
  Fusion fusion;
  SmallVector<unsigned> inPlace = donatedResults(f, fusion);
  for (unsigned k : inPlace)
    p.writeInCallerBuffer(f.getBody().front().getTerminator()->getOperand(k));
  for (Operation &op : f.getBody().front()) {
    if (isa<tsr::ConstantOp>(op))
      continue;
    // Views: reshapes (where bufferization can express them as one),
    // slices with positive steps (and a rank's block of a tensor), and ops
    // that forward their operand.
    if (isa<tsr::StopGradientOp, tsr::IdentityOp, tsr::WaitOp,
            tsr::PrefetchWaitOp, tsr::RematBarrierOp>(op)) {
      p.forward(op.getResult(0), op.getOperand(0));
      continue;
    }
    // This rank's block: an offset known only at run time.
    if (auto shard = dyn_cast<tsr::LocalShardOp>(op)) {
      p.view(shard, shard.getX(), p.stridesOf(shard.getX()), std::nullopt);
      continue;
    }
    if (auto reshape = dyn_cast<tsr::ReshapeOp>(op)) {
      if (auto strides = p.reshaped(reshape.getX(), shapeOf(reshape))) {
        p.view(reshape, reshape.getX(), *strides, p.offsetOf(reshape.getX()));
        p.reshapeView(reshape, reshape.getX());
        continue;
      }
    }
    if (auto slice = dyn_cast<tsr::SliceOp>(op);
        slice &&
        llvm::all_of(slice.getSteps(), [](int64_t s) { return s > 0; })) {
      SmallVector<int64_t> strides = p.stridesOf(slice.getX());
      std::optional<int64_t> offset = p.offsetOf(slice.getX());
      for (auto [stride, start, step] :
           llvm::zip(strides, slice.getStarts(), slice.getSteps())) {
        if (offset)
          *offset += start * stride;
        stride *= step;
      }
      p.view(slice, slice.getX(), strides, offset);
      continue;
    }
    if (auto t = dyn_cast<tsr::TransposeOp>(op)) {
      auto [from, identity] = composedTranspose(t);
      if (identity) {
        p.view(t, from, p.stridesOf(from), p.offsetOf(from));
        continue;
      }
    }
    // Broadcast scatter indices are read from the broadcast's operand
    // (unless a producer fused into the broadcast, counted as it).
    if (auto broadcast = dyn_cast<tsr::BroadcastOp>(op);
        broadcast && onlyScatterIndices(broadcast)) {
      Operation *source = broadcast.getX().getDefiningOp();
      if (!source || fusion.target(source) != &op)
        continue;
    }
    if (Operation *target = fusion.target(&op); target != &op) {
      p.defer(target, &op);
      if (fusion.keepsResult(&op))
        p.keepResult(target, op.getResult(0));
      continue;
    }
    lower(p, &op);
    if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
              call, call.getCalleeAttr()))
        p.holdInCallee(predictPeakMemory(callee, options).peakBytes);
  }
  p.returnInCallerBuffers(
      cast<func::ReturnOp>(f.getBody().front().getTerminator()), inPlace);
  PeakMemory result = p.peak(options.bufferPadding);
  result.inPlaceResults = std::move(inPlace);
  return result;
}
