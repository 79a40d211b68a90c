//===- VerifyPipeline.cpp - Deadlock check of per-rank programs -----------===//
#include "tessera/Transforms/Parallel/Passes.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Transforms/Parallel/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <deque>
#include <map>

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRVERIFYPIPELINE
#include "tessera/Transforms/Parallel/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

/// What a program does that another rank of the axis sees.
struct Event {
  enum Kind { Send, Recv, Collective } kind;
  int64_t peer = -1;
  Operation *op;
};

struct Program {
  func::FuncOp function;
  int64_t rank;
  std::vector<Event> events;
  size_t next = 0;
  bool done() const { return next == events.size(); }
};

bool onAxis(Operation *op, StringRef axis) {
  auto axes = op->getAttrOfType<ArrayAttr>("mesh_axes");
  return axes && llvm::any_of(axes, [&](Attribute a) {
           return cast<StringAttr>(a).getValue() == axis;
         });
}

} // namespace

LogicalResult mlir::tessera::verifyPipelinePrograms(ModuleOp module) {
  std::vector<Program> programs;
  StringRef axis;
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto ranks = fn->getAttrOfType<DictionaryAttr>(tsr::attr::kRanks);
    if (!ranks || fn.isExternal())
      continue;
    if (ranks.size() != 1)
      return fn.emitError("tsr-verify-pipeline checks programs that differ "
                          "along one mesh axis, but tsr.ranks is ")
             << ranks;
    NamedAttribute entry = *ranks.begin();
    if (!axis.empty() && axis != entry.getName().getValue())
      return fn.emitError("programs differ along mesh axes '")
             << axis << "' and '" << entry.getName().getValue() << "'";
    axis = entry.getName().getValue();
    Program program{fn, cast<IntegerAttr>(entry.getValue()).getInt(), {}};
    for (Program &other : programs)
      if (other.rank == program.rank)
        return fn.emitError("@")
               << fn.getName() << " and @" << other.function.getName()
               << " both run on " << axis << " = " << program.rank;
    fn.walk([&](Operation *op) {
      if (auto send = dyn_cast<tsr::SendOp>(op); send && onAxis(op, axis))
        program.events.push_back(
            {Event::Send, static_cast<int64_t>(send.getPeer()), op});
      else if (auto recv = dyn_cast<tsr::RecvOp>(op); recv && onAxis(op, axis))
        program.events.push_back(
            {Event::Recv, static_cast<int64_t>(recv.getPeer()), op});
      else if (isa<tsr::AllReduceOp, tsr::ReduceScatterOp, tsr::AllGatherOp,
                   tsr::AllToAllOp, tsr::BroadcastFromOp>(op) &&
               onAxis(op, axis))
        program.events.push_back({Event::Collective, -1, op});
    });
    programs.push_back(std::move(program));
  }
  if (programs.empty())
    return success();

  // The messages in flight on each (from, to) channel, oldest first.
  std::map<std::pair<int64_t, int64_t>, std::deque<Operation *>> channels;
  while (true) {
    bool progress = false;
    for (Program &program : programs) {
      while (!program.done()) {
        const Event &e = program.events[program.next];
        if (e.kind == Event::Collective)
          break;
        if (e.kind == Event::Send) {
          channels[{program.rank, e.peer}].push_back(e.op);
        } else {
          std::deque<Operation *> &queue = channels[{e.peer, program.rank}];
          if (queue.empty())
            break;
          Operation *send = queue.front();
          queue.pop_front();
          Type sent = send->getOperand(0).getType(),
               expected = e.op->getResult(0).getType();
          if (sent != expected) {
            InFlightDiagnostic diag = e.op->emitOpError("receives ")
                                      << expected << " on " << axis << " = "
                                      << program.rank
                                      << ", but the message from " << axis
                                      << " = " << e.peer << " is " << sent;
            diag.attachNote(send->getLoc()) << "sent here";
            return diag;
          }
        }
        ++program.next;
        progress = true;
      }
    }
    if (progress)
      continue;
    bool allDone = llvm::all_of(
        programs, [](const Program &program) { return program.done(); });
    if (allDone)
      break;
    // Every program is done or waits: a collective over the axis runs when
    // all are at one.
    bool allAtCollective = llvm::all_of(programs, [](const Program &program) {
      return !program.done() &&
             program.events[program.next].kind == Event::Collective;
    });
    if (allAtCollective) {
      Operation *first = programs.front().events[programs.front().next].op;
      for (Program &program : programs) {
        Operation *op = program.events[program.next].op;
        if (op->getName() != first->getName() ||
            op->getOperandTypes() != first->getOperandTypes()) {
          InFlightDiagnostic diag =
              op->emitOpError("on ")
              << axis << " = " << program.rank
              << " meets another collective on the other ranks";
          diag.attachNote(first->getLoc()) << "this one";
          return diag;
        }
        ++program.next;
      }
      continue;
    }
    InFlightDiagnostic diag =
        module.emitError("the per-rank programs of mesh axis '")
        << axis << "' deadlock: every one that has not finished waits";
    for (Program &program : programs) {
      if (program.done()) {
        diag.attachNote(program.function.getLoc())
            << "@" << program.function.getName() << " (" << axis << " = "
            << program.rank << ") has finished";
        continue;
      }
      const Event &e = program.events[program.next];
      if (e.kind == Event::Recv)
        diag.attachNote(e.op->getLoc())
            << "@" << program.function.getName() << " (" << axis << " = "
            << program.rank << ") waits here for a message from " << axis
            << " = " << e.peer;
      else
        diag.attachNote(e.op->getLoc())
            << "@" << program.function.getName() << " (" << axis << " = "
            << program.rank << ") waits here for the other ranks";
    }
    return diag;
  }
  for (auto &[route, queue] : channels)
    if (!queue.empty())
      return queue.front()->emitOpError("sends a message from ")
             << axis << " = " << route.first << " to " << axis << " = "
             << route.second << " that is never received";
  return success();
}

namespace {

struct TsrVerifyPipelinePass
    : tessera::impl::TsrVerifyPipelineBase<TsrVerifyPipelinePass> {
  void runOnOperation() override {
    if (failed(verifyPipelinePrograms(getOperation())))
      signalPassFailure();
  }
};

} // namespace
