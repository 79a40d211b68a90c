//===- Pipeline.cpp - Per-stage programs of a pipelined training step -----===//
#include "tessera/Transforms/Parallel/Passes.h"

#include "tessera/Analysis/CostModel.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Autodiff/GradientRules.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "tessera/Transforms/Parallel/Pipeline.h"
#include "tessera/Transforms/Parallel/PipelineSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

#include <map>

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRPIPELINE
#include "tessera/Transforms/Parallel/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;
using pipeline::Phase;

namespace {

/// The batch's arguments: split into micro-batches, present on every stage.
bool isBatchArgument(func::FuncOp f, unsigned i) {
  tsr::Role role = getArgRole(f, i);
  return role == tsr::Role::data || role == tsr::Role::label ||
         role == tsr::Role::rng;
}

/// Values that travel together: those one cell computes (or the parameters
/// it is the first to read) that another rank reads, per micro-batch.
struct MessageGroup {
  int64_t fromCell, toStage;
  SmallVector<Value> values;
};

struct TsrPipelinePass : tessera::impl::TsrPipelineBase<TsrPipelinePass> {
  using Base::Base;

  int64_t p = 0;
  /// The model chunks and how they sit on the ranks.
  pipeline::Shape shape;
  int64_t chunks = 0;
  StringRef axis;
  func::FuncOp f;
  /// Cell of each op that is not copied (-1 while unknown).
  llvm::DenseMap<Operation *, int64_t> cellOf;
  /// Per cell: its ops in order, the values it reads from elsewhere (in
  /// first-use order), the values it computes that others read.
  SmallVector<SmallVector<Operation *>> cellOps;
  SmallVector<llvm::SetVector<Value>> cellInputs, cellOutputs;
  SmallVector<func::FuncOp> cellFuncs;
  /// The stage that holds each parameter (the first to read it).
  llvm::DenseMap<Value, int64_t> homeCell;
  SmallVector<MessageGroup> groups;
  /// Per channel (from rank, to rank): the messages in the order the
  /// sender sends them (group, micro-batch); each receiver takes them in
  /// that order.
  std::map<std::pair<int64_t, int64_t>, SmallVector<std::pair<size_t, int64_t>>>
      channels;
  /// Each chunk's estimated seconds per micro-batch.
  pipeline::ChunkSeconds chunkSeconds;

  void runOnOperation() override {
    FailureOr<func::FuncOp> found =
        getTrainingFunction(getOperation(), getArgument(), function);
    if (failed(found))
      return signalPassFailure();
    f = *found;
    if (failed(run()) || failed(verifyPipelinePrograms(getOperation())))
      signalPassFailure();
  }

  /// Cells in an order that dataflow follows: F of chunks 0..C-1, then B
  /// of chunks C-1..0, then W of chunks C-1..0.
  int64_t cellIndex(int64_t chunk, Phase phase) const {
    switch (phase) {
    case Phase::Forward:
      return chunk;
    case Phase::Backward:
      return 2 * chunks - 1 - chunk;
    case Phase::Weight:
      return 3 * chunks - 1 - chunk;
    }
    return -1;
  }
  int64_t chunkOf(int64_t cell) const {
    return cell < chunks       ? cell
           : cell < 2 * chunks ? 2 * chunks - 1 - cell
                               : 3 * chunks - 1 - cell;
  }
  Phase phaseOf(int64_t cell) const {
    return cell < chunks       ? Phase::Forward
           : cell < 2 * chunks ? Phase::Backward
                               : Phase::Weight;
  }
  /// The rank that runs `cell`.
  int64_t stageOf(int64_t cell) const { return shape.getRank(chunkOf(cell)); }
  std::string cellName(int64_t cell) const {
    int64_t chunk = chunkOf(cell);
    std::string name = "stage" + std::to_string(shape.getRank(chunk));
    if (shape.virtualStages > 1)
      name += ".chunk" + std::to_string(shape.getLocalChunk(chunk));
    Phase phase = phaseOf(cell);
    return name + (phase == Phase::Forward    ? ".forward"
                   : phase == Phase::Backward ? ".backward"
                                              : ".weight_gradient");
  }

  /// What a message carries, for the runtime's messages: "micro-batch 3
  /// of stage1.forward".
  ArrayAttr describe(int64_t cell, int64_t microBatch) {
    Builder b(f.getContext());
    return b.getStrArrayAttr({"micro-batch " + std::to_string(microBatch) +
                              " of " + cellName(cell)});
  }

  /// Whether `v` is an argument of the batch (on every stage).
  bool isBatch(Value v) const {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && isBatchArgument(f, arg.getArgNumber());
  }
  bool isCopied(Value v) const {
    Operation *def = v.getDefiningOp();
    return def && isCopiedIntoStages(def);
  }
  /// The cell that computes `v` (or holds the parameter), -1 for the batch
  /// and constants.
  int64_t sourceCell(Value v) const {
    if (isBatch(v) || isCopied(v))
      return -1;
    if (auto arg = dyn_cast<BlockArgument>(v))
      return homeCell.lookup(v);
    return cellOf.lookup(v.getDefiningOp());
  }

  LogicalResult run();
  /// PipeDream: whether `group` is what `stage`'s last backward pass of a
  /// step computes for the previous stage, which consumes it in the next
  /// step (sent then, from the step's state).
  bool isDeferred(int64_t stage, const MessageGroup &group) const {
    return shape.asynchronous && stage > 0 && group.toStage == stage - 1 &&
           group.fromCell == cellIndex(stage, Phase::Backward);
  }
  bool isSentNextStep(int64_t stage, const MessageGroup &group,
                      const pipeline::Action &action) const {
    return isDeferred(stage, group) && action.phase == Phase::Backward &&
           action.microBatch == microBatches - 1 - (p - stage);
  }

  LogicalResult assignCells(Block &body);
  void splitBackward(Block &body);
  void outlineCells(Block &body);
  LogicalResult planMessages();
  func::FuncOp buildStage(int64_t stage, const pipeline::Schedule &schedule,
                          const pipeline::Timeline &timeline, int64_t lossCell);
};

LogicalResult TsrPipelinePass::assignCells(Block &body) {
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (Operation &op : body.without_terminator()) {
    if (isCopiedIntoStages(&op))
      continue;
    int64_t cell = -1;
    if (auto stage = op.getAttrOfType<IntegerAttr>(tsr::attr::kStage)) {
      if (stage.getInt() >= chunks)
        return op.emitOpError("is in pipeline chunk ")
               << stage.getInt() << ", but the pipeline has " << chunks
               << " (the plan's stages times virtual stages)";
      cell = cellIndex(stage.getInt(), op.hasAttr(tsr::attr::kBackward)
                                           ? Phase::Backward
                                           : Phase::Forward);
    }
    int64_t latest = -1;
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (auto it = cellOf.find(def); it != cellOf.end())
          latest = std::max(latest, it->second);
    if (cell < 0)
      cell = latest;
    else if (latest > cell)
      return op.emitOpError("runs in pipeline cell ")
             << cellName(cell) << " but reads a value of the later cell "
             << cellName(latest);
    cellOf[&op] = cell;
  }
  // Ops that read only arguments and constants run where they are first
  // needed.
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    auto it = cellOf.find(&op);
    if (it == cellOf.end() || it->second >= 0)
      continue;
    int64_t earliest = -1;
    for (Operation *user : op.getUsers())
      if (auto u = cellOf.find(user); u != cellOf.end() && u->second >= 0)
        earliest = earliest < 0 ? u->second : std::min(earliest, u->second);
    it->second = earliest;
  }
  // The parameters: held by the stage of the first cell that reads them.
  for (BlockArgument arg : f.getArguments()) {
    if (isBatch(arg))
      continue;
    int64_t first = -1;
    for (Operation *user : arg.getUsers())
      if (auto u = cellOf.find(user); u != cellOf.end() && u->second >= 0)
        first = first < 0 ? u->second : std::min(first, u->second);
    homeCell[arg] = first < 0 ? cellIndex(0, Phase::Forward) : first;
  }
  // What only the return reads: a gradient runs on its parameter's stage,
  // the loss on the last.
  for (OpOperand &use : ret->getOpOperands()) {
    Operation *def = use.get().getDefiningOp();
    auto it = def ? cellOf.find(def) : cellOf.end();
    if (it == cellOf.end() || it->second >= 0)
      continue;
    unsigned i = use.getOperandNumber();
    if (auto of = f.getResultAttrOfType<IntegerAttr>(i, tsr::attr::kGradOf))
      it->second =
          cellIndex(chunkOf(homeCell.lookup(f.getArgument(of.getInt()))),
                    Phase::Backward);
    else
      it->second = cellIndex(chunks - 1, Phase::Forward);
  }
  for (auto &[op, cell] : cellOf)
    if (cell < 0)
      cell = cellIndex(0, Phase::Backward); // Unused: run it anywhere.
  return success();
}

void TsrPipelinePass::splitBackward(Block &body) {
  // A backward op stays in B if the gradient another cell reads needs it;
  // the rest (the weights' gradients) goes to W.
  llvm::DenseSet<Operation *> needed;
  SmallVector<Operation *> work;
  for (auto &[op, cell] : cellOf) {
    if (phaseOf(cell) != Phase::Backward)
      continue;
    for (Operation *user : op->getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      auto it = top ? cellOf.find(top) : cellOf.end();
      if (it != cellOf.end() && it->second != cell && needed.insert(op).second)
        work.push_back(op);
    }
  }
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    int64_t cell = cellOf.lookup(op);
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        Operation *def = operand.getDefiningOp();
        auto it = def ? cellOf.find(def) : cellOf.end();
        if (it != cellOf.end() && it->second == cell &&
            needed.insert(def).second)
          work.push_back(def);
      }
    });
  }
  for (auto &[op, cell] : cellOf)
    if (phaseOf(cell) == Phase::Backward && !needed.contains(op))
      cell = cellIndex(chunkOf(cell), Phase::Weight);
}

void TsrPipelinePass::outlineCells(Block &body) {
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  cellOps.assign(3 * chunks, {});
  cellInputs.assign(3 * chunks, {});
  cellOutputs.assign(3 * chunks, {});
  for (Operation &op : body.without_terminator()) {
    auto it = cellOf.find(&op);
    if (it == cellOf.end())
      continue;
    int64_t cell = it->second;
    cellOps[cell].push_back(&op);
    for (Value operand : op.getOperands()) {
      if (isCopied(operand))
        continue;
      int64_t source = sourceCell(operand);
      if (source != cell || isa<BlockArgument>(operand)) {
        cellInputs[cell].insert(operand);
        if (source >= 0 && !isa<BlockArgument>(operand))
          cellOutputs[source].insert(operand);
      }
    }
  }
  for (Value v : ret.getOperands())
    if (!isCopied(v) && !isa<BlockArgument>(v))
      cellOutputs[sourceCell(v)].insert(v);
  // Outputs in program order, so every stage sends them in one order.
  for (auto &outputs : cellOutputs) {
    SmallVector<Value> sorted(outputs.begin(), outputs.end());
    llvm::sort(sorted, [](Value a, Value b) {
      Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
      if (x != y)
        return x->isBeforeInBlock(y);
      return cast<OpResult>(a).getResultNumber() <
             cast<OpResult>(b).getResultNumber();
    });
    outputs = llvm::SetVector<Value>(sorted.begin(), sorted.end());
  }

  OpBuilder b(f);
  cellFuncs.assign(3 * chunks, nullptr);
  for (int64_t cell = 0; cell < 3 * chunks; ++cell) {
    if (cellOps[cell].empty())
      continue;
    SmallVector<Type> inputs, outputs;
    for (Value v : cellInputs[cell])
      inputs.push_back(v.getType());
    for (Value v : cellOutputs[cell])
      outputs.push_back(v.getType());
    auto callee = func::FuncOp::create(b, f.getLoc(), cellName(cell),
                                       b.getFunctionType(inputs, outputs));
    callee.setPrivate();
    callee->setAttr(tsr::attr::kPipelineCell, b.getUnitAttr());
    Block *entry = callee.addEntryBlock();
    OpBuilder inner = OpBuilder::atBlockEnd(entry);
    IRMapping map;
    for (auto [v, arg] : llvm::zip(cellInputs[cell], entry->getArguments()))
      map.map(v, arg);
    for (Operation *op : cellOps[cell]) {
      for (Value operand : op->getOperands())
        if (isCopied(operand) && !map.contains(operand))
          inner.clone(*operand.getDefiningOp(), map);
      inner.clone(*op, map);
    }
    SmallVector<Value> results;
    for (Value v : cellOutputs[cell])
      results.push_back(map.lookup(v));
    func::ReturnOp::create(inner, f.getLoc(), results);
    cellFuncs[cell] = callee;
  }
}

LogicalResult TsrPipelinePass::planMessages() {
  // (source cell, destination rank) -> group.
  llvm::MapVector<std::pair<int64_t, int64_t>, MessageGroup> byRoute;
  for (int64_t cell = 0; cell < 3 * chunks; ++cell)
    for (Value v : cellInputs[cell]) {
      int64_t source = sourceCell(v);
      if (source < 0 || stageOf(source) == stageOf(cell))
        continue;
      int64_t to = stageOf(cell);
      MessageGroup &group = byRoute[{source, to}];
      group.fromCell = source;
      group.toStage = to;
      if (!llvm::is_contained(group.values, v))
        group.values.push_back(v);
    }
  for (auto &[route, group] : byRoute) {
    // Arguments first, by number; then in program order.
    llvm::sort(group.values, [](Value a, Value b) {
      auto x = dyn_cast<BlockArgument>(a), y = dyn_cast<BlockArgument>(b);
      if (x || y)
        return x && (!y || x.getArgNumber() < y.getArgNumber());
      Operation *da = a.getDefiningOp(), *db = b.getDefiningOp();
      if (da != db)
        return da->isBeforeInBlock(db);
      return cast<OpResult>(a).getResultNumber() <
             cast<OpResult>(b).getResultNumber();
    });
    groups.push_back(group);
  }
  return success();
}

func::FuncOp TsrPipelinePass::buildStage(int64_t stage,
                                         const pipeline::Schedule &schedule,
                                         const pipeline::Timeline &timeline,
                                         int64_t lossCell) {
  MLIRContext *ctx = f.getContext();
  Block &body = f.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpBuilder b(f);
  Location loc = NameLoc::get(
      StringAttr::get(ctx, "pipeline stage " + std::to_string(stage)),
      f.getLoc());
  int64_t m = microBatches;

  // Arguments: this stage's parameters, then the whole batch.
  SmallVector<unsigned> argsOf;
  SmallVector<Type> argTypes;
  for (BlockArgument arg : f.getArguments())
    if (!isBatch(arg) && stageOf(homeCell.lookup(arg)) == stage) {
      argsOf.push_back(arg.getArgNumber());
      argTypes.push_back(arg.getType());
    }
  for (BlockArgument arg : f.getArguments())
    if (isBatch(arg)) {
      argsOf.push_back(arg.getArgNumber());
      auto type = cast<RankedTensorType>(arg.getType());
      if (type.getRank() > 0 &&
          getArgRole(f, arg.getArgNumber()) != tsr::Role::rng) {
        SmallVector<int64_t> shape(type.getShape());
        shape[0] *= m;
        argTypes.push_back(type.clone(shape));
      } else {
        argTypes.push_back(type);
      }
    }
  llvm::DenseMap<unsigned, unsigned> newIndex;
  for (auto [i, old] : llvm::enumerate(argsOf))
    newIndex[old] = static_cast<unsigned>(i);
  // Results: the loss, then the gradients of this stage's parameters.
  SmallVector<unsigned> resultsOf{0};
  for (unsigned i = 1, e = ret.getNumOperands(); i < e; ++i) {
    auto of = f.getResultAttrOfType<IntegerAttr>(i, tsr::attr::kGradOf);
    if (newIndex.count(of.getInt()) && !isBatch(f.getArgument(of.getInt())))
      resultsOf.push_back(i);
  }
  SmallVector<Type> resultTypes;
  for (unsigned i : resultsOf)
    resultTypes.push_back(ret.getOperand(i).getType());

  auto fn = func::FuncOp::create(b, f.getLoc(), "stage" + std::to_string(stage),
                                 b.getFunctionType(argTypes, resultTypes));
  for (NamedAttribute attr : f->getDiscardableAttrs())
    if (attr.getName() != tsr::attr::kPipeline)
      fn->setAttr(attr.getName(), attr.getValue());
  for (auto [i, old] : llvm::enumerate(argsOf))
    fn.setArgAttrs(i, f.getArgAttrDict(old));
  for (auto [i, old] : llvm::enumerate(resultsOf)) {
    NamedAttrList attrs(f.getResultAttrDict(old));
    if (auto of = f.getResultAttrOfType<IntegerAttr>(old, tsr::attr::kGradOf))
      attrs.set(tsr::attr::kGradOf, b.getI64IntegerAttr(newIndex[of.getInt()]));
    fn.setResultAttrs(i, attrs.getDictionary(ctx));
  }

  Block *entry = fn.addEntryBlock();
  OpBuilder at = OpBuilder::atBlockEnd(entry);
  GradientBuilder g(at, loc);
  ArrayAttr axes = at.getStrArrayAttr({axis});
  // Value of the step function for micro-batch k -> value here.
  llvm::DenseMap<std::pair<Value, int64_t>, Value> env;
  // PipeDream: the values of the previous step's micro-batches (k < 0)
  // that this step still reads, passed on as state from one step to the
  // next; a parameter's is its previous value (weight stashing: a
  // micro-batch's backward pass uses the weights its forward pass used).
  struct Carried {
    Value value;
    int64_t microBatch;
    unsigned arg;
    /// A stashed parameter, whose next value is the parameter itself.
    bool stash;
  };
  SmallVector<Carried> carried;
  Value started;
  auto addState = [&](Type type, const Twine &name) {
    unsigned index = fn.getNumArguments();
    NamedAttrList attrs;
    attrs.set(tsr::attr::kName, at.getStringAttr(name));
    attrs.set(tsr::attr::kRole, tsr::RoleAttr::get(ctx, tsr::Role::state));
    attrs.set(tsr::attr::kInit, at.getF64FloatAttr(0.0));
    (void)fn.insertArgument(index, type, attrs.getDictionary(ctx), loc);
    return index;
  };
  if (shape.asynchronous)
    started = fn.getArgument(addState(
        RankedTensorType::get({}, at.getF32Type()), "pipedream.started"));
  auto carry = [&](Value v, int64_t k) -> Value {
    auto arg = dyn_cast<BlockArgument>(v);
    // A parameter of this stage (another stage's arrives in a message,
    // which is carried as any other value).
    bool param = arg && !isBatch(v) && newIndex.count(arg.getArgNumber());
    if (param)
      k = -1; // One stash: the weights of the previous step.
    Value &slot = env[{v, k}];
    if (slot)
      return slot;
    std::string name =
        param ? "pipedream.stash." +
                    getArgString(f, arg.getArgNumber(), tsr::attr::kName).str()
        : arg && isBatch(v)
            ? "pipedream." +
                  getArgString(f, arg.getArgNumber(), tsr::attr::kName).str() +
                  "." + std::to_string(k)
            : "pipedream.carry." + std::to_string(carried.size());
    unsigned index = addState(v.getType(), name);
    carried.push_back({v, k, index, param});
    slot = fn.getArgument(index);
    return slot;
  };
  auto lookup = [&](Value v, int64_t k) -> Value {
    if (k < 0 && !isCopied(v))
      return carry(v, k);
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (auto it = newIndex.find(arg.getArgNumber());
          it != newIndex.end() && !isBatch(v))
        return entry->getArgument(it->second);
      if (isBatch(v)) {
        Value &slot = env[{v, k}];
        if (slot)
          return slot;
        Value whole = entry->getArgument(newIndex[arg.getArgNumber()]);
        auto micro = cast<RankedTensorType>(v.getType());
        if (getArgRole(f, arg.getArgNumber()) == tsr::Role::rng) {
          // Micro-batch k of step s draws the masks of stream s·M + k.
          Value stream = g.mul(whole, g.splat(micro, double(m)));
          slot = g.add(stream, g.splat(micro, double(k)));
        } else if (micro.getRank() == 0 || m == 1) {
          slot = whole;
        } else {
          int64_t rows = micro.getDimSize(0);
          SmallVector<int64_t> starts(micro.getRank(), 0),
              limits(micro.getShape()), steps(micro.getRank(), 1);
          starts[0] = k * rows;
          limits[0] = (k + 1) * rows;
          slot = g.slice(whole, starts, limits, steps);
        }
        return slot;
      }
    }
    return env.lookup({v, k});
  };
  auto sum = [&](Value &acc, Value v) { acc = acc ? g.add(acc, v) : v; };
  SmallVector<Value> accumulated(resultsOf.size());

  // Receives the messages from rank `from`, in the order it sends them,
  // until value `v` of micro-batch `k` is here.
  std::map<int64_t, size_t> received;
  auto receive = [&](int64_t from, Value v, int64_t k) -> LogicalResult {
    auto &queue = channels[{from, stage}];
    size_t &next = received[from];
    // PipeDream: what the previous step received is carried.
    if (k < 0 && !llvm::any_of(
                     queue,
                     [&](const auto &message) {
                       return message.second == k &&
                              llvm::is_contained(groups[message.first].values,
                                                 v);
                     }))
      return success();
    while (!env.count({v, k})) {
      if (next == queue.size())
        return f.emitError("internal error: pipeline stage ")
               << stage << " needs a value that stage " << from
               << " never sends";
      auto [index, micro] = queue[next++];
      const MessageGroup &group = groups[index];
      for (Value sent : group.values)
        env[{sent, micro}] =
            tsr::RecvOp::create(at, loc, sent.getType(), axes,
                                at.getI64IntegerAttr(stageOf(group.fromCell)),
                                describe(group.fromCell, micro), IntegerAttr());
    }
    return success();
  };

  // PipeDream: first what the previous step's last backward pass computed
  // for the previous stage.
  if (shape.asynchronous)
    for (const MessageGroup &group : groups)
      if (isDeferred(stage, group))
        for (Value v : group.values)
          tsr::SendOp::create(at, loc, lookup(v, -(p - stage) - 1), axes,
                              at.getI64IntegerAttr(group.toStage),
                              describe(group.fromCell, -(p - stage) - 1),
                              IntegerAttr());
  SmallVector<Value> carriedGrads(resultsOf.size());
  for (const pipeline::Action &action : schedule[stage]) {
    int64_t cell = cellIndex(shape.getChunk(stage, action.chunk), action.phase);
    int64_t k = action.microBatch;
    if (func::FuncOp callee = cellFuncs[cell]) {
      SmallVector<Value> operands;
      for (Value v : cellInputs[cell]) {
        int64_t source = sourceCell(v);
        if (source >= 0 && stageOf(source) != stage &&
            failed(receive(stageOf(source), v, k)))
          return nullptr;
        operands.push_back(lookup(v, k));
      }
      // Named by its action, for the measured timeline (--trace).
      Location actionLoc =
          NameLoc::get(at.getStringAttr(pipeline::getActionName(
                           action, shape.virtualStages)),
                       loc);
      auto call = func::CallOp::create(at, actionLoc, callee, operands);
      for (auto [v, r] : llvm::zip(cellOutputs[cell], call.getResults()))
        env[{v, k}] = r;
    }
    for (const MessageGroup &group : groups)
      if (group.fromCell == cell && !isSentNextStep(stage, group, action))
        for (Value v : group.values)
          tsr::SendOp::create(at, loc, lookup(v, k), axes,
                              at.getI64IntegerAttr(group.toStage),
                              describe(cell, k), IntegerAttr());
    for (auto [i, old] : llvm::enumerate(resultsOf)) {
      Value v = ret.getOperand(old);
      if (!isCopied(v) && sourceCell(v) == cell)
        sum(k < 0 ? carriedGrads[i] : accumulated[i], lookup(v, k));
    }
  }
  // PipeDream's first step has no previous one: the backward passes of
  // its carried micro-batches ran on zeros, and their gradients count
  // from the second step on.
  Value on;
  for (auto [acc, extra] : llvm::zip(accumulated, carriedGrads)) {
    if (!extra)
      continue;
    if (!on)
      on = g.greater(started, g.scalar(at.getF32Type(), 0.5));
    auto type = cast<RankedTensorType>(extra.getType());
    sum(acc, g.select(on, extra, g.splat(type, 0.0)));
  }

  SmallVector<Value> results;
  for (auto [i, old] : llvm::enumerate(resultsOf)) {
    Value v = ret.getOperand(old);
    Value result;
    if (i == 0) {
      auto type = cast<RankedTensorType>(v.getType());
      Value loss = stageOf(lossCell) == stage
                       ? g.div(accumulated[0], g.splat(type, double(m)))
                       : g.splat(type, 0.0);
      result = tsr::BroadcastFromOp::create(
          at, loc, type, loss, at.getI64IntegerAttr(stageOf(lossCell)), axes,
          at.getStrArrayAttr({"loss"}), IntegerAttr(), IntegerAttr(),
          UnitAttr());
    } else if (isCopied(v)) {
      IRMapping map;
      result = at.clone(*v.getDefiningOp(), map)->getResult(0);
    } else {
      result =
          m == 1
              ? accumulated[i]
              : g.div(accumulated[i],
                      g.splat(cast<RankedTensorType>(v.getType()), double(m)));
    }
    results.push_back(result);
  }
  // PipeDream's state for the next step: what this step computed for the
  // micro-batches that will then be the previous step's.
  SmallVector<std::pair<unsigned, Value>> nextState;
  if (started)
    nextState.push_back(
        {cast<BlockArgument>(started).getArgNumber(),
         g.splat(cast<RankedTensorType>(started.getType()), 1.0)});
  for (const Carried &c : carried) {
    Value next =
        c.stash ? entry->getArgument(
                      newIndex[cast<BlockArgument>(c.value).getArgNumber()])
                : lookup(c.value, c.microBatch + m);
    if (!next) {
      f.emitError("internal error: pipedream stage ")
          << stage << " carries a value that the step does not compute";
      return nullptr;
    }
    nextState.push_back({c.arg, next});
  }
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0; i < results.size(); ++i)
    resultAttrs.push_back(fn.getResultAttrDict(i));
  for (auto [index, value] : nextState) {
    results.push_back(value);
    NamedAttrList attrs;
    attrs.set(tsr::attr::kName, fn.getArgAttr(index, tsr::attr::kName));
    attrs.set(tsr::attr::kRole, tsr::RoleAttr::get(ctx, tsr::Role::state));
    attrs.set(tsr::attr::kUpdates, at.getI64IntegerAttr(index));
    resultAttrs.push_back(attrs.getDictionary(ctx));
  }
  func::ReturnOp::create(at, loc, results);
  if (!nextState.empty()) {
    SmallVector<Type> types;
    for (Value v : results)
      types.push_back(v.getType());
    fn.setType(at.getFunctionType(fn.getArgumentTypes(), types));
    fn.setAllResultAttrs(resultAttrs);
  }

  // The schedule and its simulation, for --explain and the tests.
  SmallVector<Attribute> actions;
  for (const pipeline::Action &a : schedule[stage])
    actions.push_back(
        at.getStringAttr(pipeline::getActionName(a, shape.virtualStages)));
  // Per micro-batch, the seconds of this rank's chunks.
  double forwardSeconds = 0, backwardSeconds = 0;
  for (int64_t v = 0; v < shape.virtualStages; ++v) {
    int64_t chunk = shape.getChunk(stage, v);
    forwardSeconds += chunkSeconds.forward[chunk];
    backwardSeconds +=
        chunkSeconds.backward[chunk] + chunkSeconds.weight[chunk];
  }
  fn->setAttr(tsr::attr::kRanks, at.getDictionaryAttr({at.getNamedAttr(
                                     axis, at.getI64IntegerAttr(stage))}));
  SmallVector<double> starts, ends;
  for (const pipeline::Timeline::Block &block : timeline.blocks[stage]) {
    starts.push_back(block.start);
    ends.push_back(block.end);
  }
  fn->setAttr(
      tsr::attr::kPipelineSchedule,
      at.getDictionaryAttr(
          {at.getNamedAttr("schedule", at.getStringAttr(this->schedule)),
           at.getNamedAttr("micro_batches", at.getI64IntegerAttr(m)),
           at.getNamedAttr("virtual_stages",
                           at.getI64IntegerAttr(shape.virtualStages)),
           at.getNamedAttr("actions", at.getArrayAttr(actions)),
           at.getNamedAttr("starts", at.getDenseF64ArrayAttr(starts)),
           at.getNamedAttr("ends", at.getDenseF64ArrayAttr(ends)),
           at.getNamedAttr("forward_seconds",
                           at.getF64FloatAttr(forwardSeconds)),
           at.getNamedAttr("backward_seconds",
                           at.getF64FloatAttr(backwardSeconds)),
           at.getNamedAttr("busy_seconds",
                           at.getF64FloatAttr(timeline.busy[stage])),
           at.getNamedAttr("bubble",
                           at.getF64FloatAttr(timeline.bubble[stage])),
           at.getNamedAttr("step_seconds",
                           at.getF64FloatAttr(timeline.makespan)),
           at.getNamedAttr(
               "peak_in_flight",
               at.getI64IntegerAttr(timeline.peakInFlight[stage]))}));
  return fn;
}

LogicalResult TsrPipelinePass::run() {
  auto plan = f->getAttrOfType<DictionaryAttr>(tsr::attr::kPipeline);
  auto stagesAttr = plan ? plan.getAs<IntegerAttr>("stages") : IntegerAttr();
  auto axisAttr = plan ? plan.getAs<StringAttr>("axis") : StringAttr();
  if (!stagesAttr || !axisAttr)
    return f.emitError("tsr-pipeline needs the stage plan of "
                       "tsr-pipeline-plan (the function has no tsr.pipeline)");
  p = stagesAttr.getInt();
  axis = axisAttr.getValue();
  if (microBatches < 1)
    return f.emitError("micro-batches must be at least 1, got ")
           << microBatches.getValue();
  auto virtualAttr = plan.getAs<IntegerAttr>("virtual_stages");
  int64_t planned = virtualAttr ? virtualAttr.getInt() : 1;
  std::string problem = pipeline::getScheduleShape(this->schedule, p, planned,
                                                   microBatches, shape);
  if (!problem.empty())
    return f.emitError(problem)
           << " (the plan cut " << planned << " chunk(s) per rank)";
  chunks = shape.getNumChunks();
  FailureOr<int64_t> size = tsr::getMeshGroupSize(f, ArrayRef<StringRef>{axis});
  if (failed(size))
    return failure();
  if (*size != p)
    return f.emitError("the pipeline has ")
           << p << " stages but mesh axis '" << axis << "' has " << *size
           << " ranks";
  if (!f.getBody().hasOneBlock())
    return f.emitError("tsr-pipeline expects a single-block function");
  Block &body = f.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0)
    return f.emitError("tsr-pipeline expects the loss as the first result");
  for (unsigned i = 1, e = ret.getNumOperands(); i < e; ++i)
    if (!f.getResultAttr(i, tsr::attr::kGradOf))
      return f.emitError("unsupported: result ")
             << i
             << " is not a gradient (a pipelined step returns the loss and "
                "gradients only; batch-norm statistics and metrics are not "
                "supported)";
  for (BlockArgument arg : f.getArguments())
    if (isBatch(arg) && microBatches > 1) {
      auto type = cast<RankedTensorType>(arg.getType());
      if (getArgRole(f, arg.getArgNumber()) != tsr::Role::rng &&
          type.getRank() == 0)
        return f.emitError("argument ")
               << arg.getArgNumber()
               << " of the batch is a scalar, which micro-batches cannot "
                  "split";
    }

  if (failed(assignCells(body)))
    return failure();
  if (shape.splitBackward)
    splitBackward(body);
  outlineCells(body);
  if (failed(planMessages()))
    return failure();
  for (unsigned i = 1, e = ret.getNumOperands(); i < e; ++i) {
    Value v = ret.getOperand(i);
    auto of = f.getResultAttrOfType<IntegerAttr>(i, tsr::attr::kGradOf);
    BlockArgument arg = f.getArgument(of.getInt());
    if (isCopied(v) || isBatch(arg))
      continue;
    int64_t home = stageOf(homeCell.lookup(arg));
    if (stageOf(sourceCell(v)) != home)
      return f.emitError("unsupported: the gradient of '")
             << getArgString(f, arg.getArgNumber(), tsr::attr::kName)
             << "' is computed on pipeline stage " << stageOf(sourceCell(v))
             << " but the parameter lives on stage " << home;
  }
  Value loss = ret.getOperand(0);
  int64_t lossCell =
      isCopied(loss) ? cellIndex(chunks - 1, Phase::Forward) : sourceCell(loss);

  CostModel costs({peakFlops, bandwidth}, {});
  chunkSeconds = pipeline::ChunkSeconds::uniform(chunks, 0, 0, 0);
  for (int64_t cell = 0; cell < 3 * chunks; ++cell) {
    if (!cellFuncs[cell])
      continue;
    // Compute only: the pass has no link costs for the collectives of
    // other axes (tensor parallelism) inside a cell.
    double seconds = 0;
    cellFuncs[cell].walk(
        [&](Operation *op) { seconds += costs.getComputeCost(op).seconds; });
    Phase phase = phaseOf(cell);
    (phase == Phase::Forward    ? chunkSeconds.forward
     : phase == Phase::Backward ? chunkSeconds.backward
                                : chunkSeconds.weight)[chunkOf(cell)] = seconds;
  }
  pipeline::Schedule schedule;
  pipeline::Timeline timeline;
  problem = pipeline::generateSchedule(this->schedule, shape, chunkSeconds,
                                       /*link=*/0, schedule, timeline);
  if (!problem.empty())
    return f.emitError(problem);
  // The order in which each rank sends its messages (PipeDream: first
  // the previous step's last backward pass's).
  for (int64_t stage = 0; stage < p; ++stage) {
    for (auto [index, group] : llvm::enumerate(groups))
      if (isDeferred(stage, group))
        channels[{stage, group.toStage}].push_back({index, -(p - stage) - 1});
    for (const pipeline::Action &a : schedule[stage]) {
      int64_t cell = cellIndex(shape.getChunk(stage, a.chunk), a.phase);
      for (auto [index, group] : llvm::enumerate(groups))
        if (group.fromCell == cell && !isSentNextStep(stage, group, a))
          channels[{stage, group.toStage}].push_back({index, a.microBatch});
    }
  }

  SmallVector<Attribute> calls;
  for (int64_t stage = 0; stage < p; ++stage) {
    func::FuncOp program = buildStage(stage, schedule, timeline, lossCell);
    if (!program)
      return failure();
    calls.push_back(FlatSymbolRefAttr::get(program));
  }
  ModuleOp module = getOperation();
  f.erase();
  module->setAttr(tsr::attr::kSchedule,
                  ArrayAttr::get(module.getContext(), calls));
  return success();
}

} // namespace
