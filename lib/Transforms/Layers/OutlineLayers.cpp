//===- OutlineLayers.cpp - One function per kind of repeated layer --------===//
#include "tessera/Transforms/Layers/Passes.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSROUTLINELAYERS
#include "tessera/Transforms/Layers/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// Ops that compute from splat constants alone (a scalar, a broadcast of
/// one): copied into each cell that reads them rather than passed in, so
/// that the cells CSE left reading one layer's copy stay alike and each can
/// fold them. Another constant (an inference program's weights) is passed
/// in: each layer may have its own.
class Constants {
public:
  bool contains(Operation *op) {
    if (auto it = known.find(op); it != known.end())
      return it->second;
    bool constant = op->getNumRegions() == 0 && op->getNumResults() > 0 &&
                    isMemoryEffectFree(op);
    if (auto value = op->getAttrOfType<ElementsAttr>("value"))
      constant &= value.isSplat();
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      constant =
          constant && def && def->getBlock() == op->getBlock() && contains(def);
    }
    return known[op] = constant;
  }

  /// Clones `op` and the constants it reads into `b`'s block, once.
  Value clone(OpBuilder &b, Value v, IRMapping &map) {
    if (Value mapped = map.lookupOrNull(v))
      return mapped;
    Operation *op = v.getDefiningOp();
    for (Value operand : op->getOperands())
      clone(b, operand, map);
    b.clone(*op, map)->removeAttr(tsr::attr::kLayer);
    return map.lookup(v);
  }

  /// Erases `op`, forgetting it (a new op may take its address).
  void erase(Operation *op) {
    known.erase(op);
    op->erase();
  }

private:
  llvm::DenseMap<Operation *, bool> known;
};

/// The values `op` (or an op in its regions) reads from outside it.
SmallVector<Value> readFromOutside(Operation *op) {
  SmallVector<Value> values;
  op->walk([&](Operation *inner) {
    for (Value v : inner->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def ? !op->isAncestor(def)
              : !op->isAncestor(v.getParentBlock()->getParentOp()))
        values.push_back(v);
    }
  });
  return values;
}

/// The passes of a layer: its forward ops, its backward ops (tsr.backward)
/// and its update (after the function's last backward op).
enum class Phase { Forward, Backward, Update };

StringRef phaseName(Phase phase) {
  switch (phase) {
  case Phase::Forward:
    return "forward";
  case Phase::Backward:
    return "backward";
  case Phase::Update:
    return "update";
  }
  return "";
}

/// One part of a layer's pass, outlined.
struct Cell {
  int64_t layer;
  Phase phase;
  /// Paths that leave the pass and come back (an update that reads a sum
  /// over every layer) split it: part k runs after part k - 1's results
  /// have been out.
  int64_t part;
  func::FuncOp callee;
  SmallVector<func::CallOp> calls;
};

/// "/blocks.0/attn/MatMul" and "/blocks.11/attn/MatMul" give
/// "/blocks.*/attn/MatMul": what the names share around the part they do
/// not, never cutting a number in two.
std::string commonName(ArrayRef<StringRef> names) {
  StringRef first = names.front();
  size_t prefix = first.size(), suffix = first.size();
  for (StringRef name : names.drop_front()) {
    size_t p = 0;
    while (p < std::min(prefix, name.size()) && first[p] == name[p])
      ++p;
    prefix = p;
    size_t s = 0;
    while (s < std::min(suffix, name.size()) &&
           first[first.size() - 1 - s] == name[name.size() - 1 - s])
      ++s;
    suffix = s;
  }
  if (prefix == first.size())
    return first.str(); // All the same.
  while (prefix > 0 && llvm::isDigit(first[prefix - 1]))
    --prefix;
  while (suffix > 0 && llvm::isDigit(first[first.size() - suffix]))
    --suffix;
  size_t shortest = first.size();
  for (StringRef name : names)
    shortest = std::min(shortest, name.size());
  if (prefix + suffix > shortest)
    suffix = shortest - prefix;
  return (first.take_front(prefix) + "*" + first.take_back(suffix)).str();
}

/// The location of an op that stands for `locs`, the locations of its
/// copies: the names they share, the rest of the first's.
Location commonLocation(ArrayRef<Location> locs) {
  Location first = locs.front();
  if (llvm::all_equal(locs))
    return first;
  if (auto name = dyn_cast<NameLoc>(first)) {
    SmallVector<StringRef> names;
    SmallVector<Location> children;
    for (Location loc : locs) {
      auto other = dyn_cast<NameLoc>(loc);
      if (!other)
        return first;
      names.push_back(other.getName().getValue());
      children.push_back(other.getChildLoc());
    }
    return NameLoc::get(StringAttr::get(first.getContext(), commonName(names)),
                        commonLocation(children));
  }
  if (auto fused = dyn_cast<FusedLoc>(first)) {
    size_t n = fused.getLocations().size();
    SmallVector<Location> merged;
    for (size_t i = 0; i < n; ++i) {
      SmallVector<Location> column;
      for (Location loc : locs) {
        auto other = dyn_cast<FusedLoc>(loc);
        if (!other || other.getLocations().size() != n ||
            other.getMetadata() != fused.getMetadata())
          return first;
        column.push_back(other.getLocations()[i]);
      }
      merged.push_back(commonLocation(column));
    }
    return FusedLoc::get(first.getContext(), merged, fused.getMetadata());
  }
  return first;
}

/// Marks each result of update cell `callee` that `f` returns as the next
/// value of one of its arguments (`tsr.updates`) with the callee's argument
/// that `call` passes it as, when `call` is the last to read it: the cell
/// may then write it in place (tsr-donate-updates), as `f` would have.
void markUpdates(func::FuncOp f, func::FuncOp callee, func::CallOp call) {
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  Builder b(f.getContext());
  for (auto [i, result] : llvm::enumerate(call.getResults()))
    for (OpOperand &use : result.getUses()) {
      if (use.getOwner() != ret)
        continue;
      auto updates = f.getResultAttrOfType<IntegerAttr>(use.getOperandNumber(),
                                                        tsr::attr::kUpdates);
      if (!updates)
        continue;
      BlockArgument arg = f.getArgument(updates.getInt());
      auto operands = call.getOperands();
      if (llvm::count(operands, Value(arg)) != 1 ||
          llvm::any_of(arg.getUsers(), [&](Operation *user) {
            return user != call && !f.getBody()
                                        .front()
                                        .findAncestorOpInBlock(*user)
                                        ->isBeforeInBlock(call);
          }))
        continue;
      int64_t a = llvm::find(operands, Value(arg)) - operands.begin();
      callee.setResultAttr(i, tsr::attr::kUpdates, b.getI64IntegerAttr(a));
    }
}

struct TsrOutlineLayersPass
    : tessera::impl::TsrOutlineLayersBase<TsrOutlineLayersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal() && f.getBody().hasOneBlock())
        functions.push_back(f);
    SmallVector<Cell> cells;
    for (func::FuncOp f : functions) {
      outlineCells(f, symbols, cells);
      // Constants only cells read.
      for (Operation &op :
           llvm::make_early_inc_range(llvm::reverse(f.getBody().front())))
        if (op.use_empty() && constants.contains(&op))
          constants.erase(&op);
    }
    shareBodies(symbols, cells);
  }

  void outlineCells(func::FuncOp f, SymbolTable &symbols,
                    SmallVector<Cell> &cells);
  SmallVector<Operation *> between(Block &body, ArrayRef<Operation *> ops);
  SmallVector<SmallVector<Operation *>>
  splitParts(Block &body, ArrayRef<Operation *> ops,
             const llvm::DenseSet<Operation *> &members);
  std::optional<Cell> outline(func::FuncOp f, const Cell &key,
                              ArrayRef<Operation *> part, SymbolTable &symbols);
  void shareBodies(SymbolTable &symbols, MutableArrayRef<Cell> cells);

  Constants constants;
  /// The part of a layer's pass each op (of the function being outlined)
  /// is in, as an index into `parts`.
  llvm::DenseMap<Operation *, size_t> partOf;
};

/// Within the ops from `first` to `last`: those that read a result of
/// `members` (directly or not; members included) and those whose results
/// `members` read (idem).
void reachable(Block &body, Operation *first, Operation *last,
               const llvm::DenseSet<Operation *> &members,
               llvm::DenseSet<Operation *> &after,
               llvm::DenseSet<Operation *> &before) {
  auto range =
      llvm::make_range(first->getIterator(), std::next(last->getIterator()));
  for (Operation &op : range) {
    bool reads = members.contains(&op);
    for (Value v : readFromOutside(&op))
      if (Operation *def = v.getDefiningOp())
        reads |= after.contains(body.findAncestorOpInBlock(*def));
    if (reads)
      after.insert(&op);
  }
  for (Operation &op : llvm::reverse(range)) {
    bool read = members.contains(&op);
    for (Operation *user : op.getUsers())
      read |= before.contains(body.findAncestorOpInBlock(*user));
    if (read)
      before.insert(&op);
  }
}

void TsrOutlineLayersPass::outlineCells(func::FuncOp f, SymbolTable &symbols,
                                        SmallVector<Cell> &cells) {
  Block &body = f.getBody().front();
  Operation *lastBackward = nullptr;
  for (Operation &op : body)
    if (op.hasAttr(tsr::attr::kBackward))
      lastBackward = &op;
  auto phaseOf = [&](Operation &op) {
    if (op.hasAttr(tsr::attr::kBackward))
      return Phase::Backward;
    return lastBackward && lastBackward->isBeforeInBlock(&op) ? Phase::Update
                                                              : Phase::Forward;
  };
  // Each layer's passes, in program order: the pure ops marked with the
  // layer (collectives stay in the function and split the pass).
  llvm::MapVector<std::pair<int64_t, int>, SmallVector<Operation *>> found;
  for (Operation &op : body.without_terminator())
    if (auto layer = op.getAttrOfType<IntegerAttr>(tsr::attr::kLayer);
        layer && !constants.contains(&op) && isMemoryEffectFree(&op))
      found[{layer.getInt(), static_cast<int>(phaseOf(op))}].push_back(&op);
  // A pass alone in its phase: no other layer could share its body.
  int64_t count[3] = {0, 0, 0};
  for (auto &entry : found)
    ++count[entry.first.second];
  // Each pass takes in the pure, unmarked ops on a path between two of its
  // ops (a cast another pass inserted) that are on no other pass's path.
  SmallVector<SmallVector<Operation *>> passes;
  llvm::DenseMap<Operation *, int64_t> takers;
  for (auto &[key, ops] : found) {
    if (count[key.second] < 2)
      continue;
    passes.push_back(between(body, ops));
    for (Operation *op : passes.back())
      ++takers[op];
  }
  SmallVector<std::pair<Cell, SmallVector<Operation *>>> parts;
  size_t next = 0;
  for (auto &[key, ops] : found) {
    if (count[key.second] < 2)
      continue;
    SmallVector<Operation *> &taken = passes[next++];
    llvm::erase_if(taken, [&](Operation *op) { return takers[op] > 1; });
    llvm::DenseSet<Operation *> members(ops.begin(), ops.end());
    members.insert(taken.begin(), taken.end());
    for (auto [k, part] : llvm::enumerate(splitParts(body, ops, members)))
      parts.push_back({Cell{key.first,
                            static_cast<Phase>(key.second),
                            static_cast<int64_t>(k),
                            {},
                            {}},
                       std::move(part)});
  }
  partOf.clear();
  for (auto [i, part] : llvm::enumerate(parts))
    for (Operation *op : part.second)
      partOf[op] = i;
  for (auto &[key, ops] : parts)
    if (std::optional<Cell> cell = outline(f, key, ops, symbols))
      cells.push_back(std::move(*cell));
}

SmallVector<Operation *>
TsrOutlineLayersPass::between(Block &body, ArrayRef<Operation *> ops) {
  llvm::DenseSet<Operation *> members(ops.begin(), ops.end()), after, before;
  reachable(body, ops.front(), ops.back(), members, after, before);
  SmallVector<Operation *> taken;
  for (Operation &op : llvm::make_range(ops.front()->getIterator(),
                                        std::next(ops.back()->getIterator())))
    if (after.contains(&op) && before.contains(&op) && !members.contains(&op) &&
        !op.hasAttr(tsr::attr::kLayer) && isMemoryEffectFree(&op) &&
        !constants.contains(&op))
      taken.push_back(&op);
  return taken;
}

SmallVector<SmallVector<Operation *>>
TsrOutlineLayersPass::splitParts(Block &body, ArrayRef<Operation *> ops,
                                 const llvm::DenseSet<Operation *> &members) {
  auto range = llvm::make_range(ops.front()->getIterator(),
                                std::next(ops.back()->getIterator()));
  // An op's part: the most paths out of the pass and back that lead to
  // it. `exits[op]` is the part an op of the pass reading `op` (out of
  // the pass) would be in at least.
  llvm::DenseMap<Operation *, int64_t> part, exits;
  SmallVector<SmallVector<Operation *>> parts;
  for (Operation &op : range) {
    int64_t k = 0;
    bool tainted = false;
    for (Value v : readFromOutside(&op)) {
      Operation *def = v.getDefiningOp();
      Operation *top = def ? body.findAncestorOpInBlock(*def) : nullptr;
      if (!top)
        continue;
      if (auto it = part.find(top); it != part.end()) {
        k = std::max(k, it->second + (members.contains(&op) ? 0 : 1));
        tainted = true;
      } else if (auto it = exits.find(top); it != exits.end()) {
        k = std::max(k, it->second);
        tainted = true;
      }
    }
    if (members.contains(&op)) {
      part[&op] = k;
      if (static_cast<int64_t>(parts.size()) <= k)
        parts.resize(k + 1);
      parts[k].push_back(&op);
    } else if (tainted) {
      exits[&op] = k;
    }
  }
  llvm::erase_if(parts,
                 [](const SmallVector<Operation *> &p) { return p.empty(); });
  return parts;
}

std::optional<Cell> TsrOutlineLayersPass::outline(func::FuncOp f,
                                                  const Cell &key,
                                                  ArrayRef<Operation *> part,
                                                  SymbolTable &symbols) {
  Block &body = f.getBody().front();
  // In program order (outlining another part may have moved some ahead).
  SmallVector<Operation *> members(part);
  llvm::sort(members,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  Operation *first = members.front(), *last = members.back();
  // The part is its ops and those on a path between two of them; the ops
  // its ops read (directly or not) go ahead of the call.
  llvm::DenseSet<Operation *> cell(members.begin(), members.end());
  llvm::DenseSet<Operation *> after, before;
  reachable(body, first, last, cell, after, before);
  size_t self = partOf.lookup(first);
  SmallVector<Operation *> ops, ahead;
  auto end = std::next(last->getIterator());
  for (Operation &op : llvm::make_range(first->getIterator(), end)) {
    bool inCell = after.contains(&op) && before.contains(&op);
    if (!inCell) {
      if (before.contains(&op))
        ahead.push_back(&op);
      continue;
    }
    // On a path through another part, or not pure: the part stays.
    if (auto it = partOf.find(&op); it != partOf.end() && it->second != self)
      return std::nullopt;
    if (!isMemoryEffectFree(&op))
      return std::nullopt;
    ops.push_back(&op);
  }
  cell = llvm::DenseSet<Operation *>(ops.begin(), ops.end());

  // What the cell reads from outside (constants are copied in) and what
  // is read of it outside.
  llvm::SetVector<Value> inputs, outputs, copied;
  for (Operation *op : ops)
    for (Value v : readFromOutside(op)) {
      Operation *def = v.getDefiningOp();
      Operation *top = def ? body.findAncestorOpInBlock(*def) : nullptr;
      if (top && cell.contains(top))
        continue;
      if (top && constants.contains(top))
        copied.insert(v);
      else
        inputs.insert(v);
    }
  for (Operation *op : ops)
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation *user) {
            return !cell.contains(body.findAncestorOpInBlock(*user));
          }))
        outputs.insert(r);

  // The function.
  MLIRContext *ctx = f.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(f);
  SmallVector<Type> inputTypes, outputTypes;
  for (Value v : inputs)
    inputTypes.push_back(v.getType());
  for (Value v : outputs)
    outputTypes.push_back(v.getType());
  std::string suffix = "." + phaseName(key.phase).str() +
                       (key.part ? "." + std::to_string(key.part) : "");
  auto callee = func::FuncOp::create(
      b, first->getLoc(), "layer" + std::to_string(key.layer) + suffix,
      b.getFunctionType(inputTypes, outputTypes));
  callee.setPrivate();
  callee->setAttr(tsr::attr::kLayer, b.getDenseI64ArrayAttr({key.layer}));
  symbols.insert(callee);
  Block *entry = callee.addEntryBlock();
  OpBuilder inner = OpBuilder::atBlockEnd(entry);
  IRMapping map;
  for (auto [v, arg] : llvm::zip(inputs, entry->getArguments()))
    map.map(v, arg);
  for (Value v : copied)
    constants.clone(inner, v, map);
  for (Operation *op : ops)
    inner.clone(*op, map)->removeAttr(tsr::attr::kLayer);
  SmallVector<Value> results;
  for (Value v : outputs)
    results.push_back(map.lookup(v));
  func::ReturnOp::create(inner, callee.getLoc(), results);

  // The call, after what the cell reads; the rest of the span after it.
  for (Operation *op : ahead)
    op->moveBefore(first);
  b.setInsertionPoint(first);
  auto call =
      func::CallOp::create(b, first->getLoc(), callee, inputs.getArrayRef());
  call->setAttr(tsr::attr::kLayer, b.getI64IntegerAttr(key.layer));
  if (key.phase == Phase::Backward)
    call->setAttr(tsr::attr::kBackward, b.getUnitAttr());
  for (auto [v, result] : llvm::zip(outputs, call.getResults()))
    Value(v).replaceUsesWithIf(result, [&](OpOperand &use) {
      return !cell.contains(body.findAncestorOpInBlock(*use.getOwner()));
    });
  for (Operation *op : llvm::reverse(ops)) {
    partOf.erase(op);
    constants.erase(op);
  }
  if (key.phase == Phase::Update)
    markUpdates(f, callee, call);
  Cell made = key;
  made.callee = callee;
  made.calls = {call};
  return made;
}

void TsrOutlineLayersPass::shareBodies(SymbolTable &symbols,
                                       MutableArrayRef<Cell> cells) {
  // Cells with the same type and the same ops, in the order made.
  SmallVector<SmallVector<Cell *>> classes;
  llvm::DenseMap<llvm::hash_code, SmallVector<size_t>> byHash;
  for (Cell &cell : cells) {
    llvm::hash_code h = llvm::hash_combine(
        static_cast<int>(cell.phase), cell.part, cell.callee.getFunctionType(),
        cell.callee.getBody().front().getOperations().size());
    for (Operation &op : cell.callee.getBody().front())
      h = llvm::hash_combine(h, op.getName().getStringRef());
    bool placed = false;
    for (size_t c : byHash[h]) {
      func::FuncOp rep = classes[c].front()->callee;
      if (rep.getResAttrsAttr() == cell.callee.getResAttrsAttr() &&
          OperationEquivalence::isRegionEquivalentTo(
              &rep.getBody(), &cell.callee.getBody(),
              OperationEquivalence::IgnoreLocations)) {
        classes[c].push_back(&cell);
        placed = true;
        break;
      }
    }
    if (!placed) {
      byHash[h].push_back(classes.size());
      classes.push_back({&cell});
    }
  }

  Builder b(getOperation().getContext());
  for (ArrayRef<Cell *> members : classes) {
    if (members.size() < 2)
      continue;
    func::FuncOp rep = members.front()->callee;
    // The shared body's ops at the locations their copies have in common.
    SmallVector<SmallVector<Operation *>> copies;
    for (Cell *cell : members) {
      SmallVector<Operation *> &walked = copies.emplace_back();
      cell->callee.walk([&](Operation *op) { walked.push_back(op); });
    }
    for (size_t i = 0, n = copies.front().size(); i < n; ++i) {
      SmallVector<Location> locs;
      for (ArrayRef<Operation *> copy : copies)
        locs.push_back(copy[i]->getLoc());
      copies.front()[i]->setLoc(commonLocation(locs));
    }
    // One function, named after the layers it serves.
    SmallVector<int64_t> layers;
    for (Cell *cell : members)
      layers.push_back(cell->layer);
    llvm::sort(layers);
    bool contiguous = true;
    for (size_t i = 1; i < layers.size(); ++i)
      contiguous &= layers[i] == layers[i - 1] + 1;
    const Cell &key = *members.front();
    std::string name =
        "layers" + std::to_string(layers.front()) +
        (contiguous ? "-" + std::to_string(layers.back()) : std::string()) +
        "." + phaseName(key.phase).str() +
        (key.part ? "." + std::to_string(key.part) : "");
    symbols.remove(rep);
    rep.setSymName(name);
    symbols.insert(rep);
    rep->setAttr(tsr::attr::kLayer, b.getDenseI64ArrayAttr(layers));
    for (Cell *cell : members) {
      for (func::CallOp call : cell->calls)
        call.setCalleeAttr(FlatSymbolRefAttr::get(rep.getSymNameAttr()));
      if (cell->callee != rep)
        cell->callee.erase();
    }
  }
}

} // namespace
