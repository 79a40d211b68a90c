//===- PrintRematSolvers.cpp - Compare the rematerialization solvers ------===//
#include "tessera/Transforms/Remat/Passes.h"
#include "tessera/Transforms/Remat/Remat.h"

#include "tessera/Analysis/CostModel.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRPRINTREMATSOLVERS
#include "tessera/Transforms/Remat/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

struct TsrPrintRematSolversPass
    : tessera::impl::TsrPrintRematSolversBase<TsrPrintRematSolversPass> {
  using Base::Base;

  void runOnOperation() override {
    CostModel costs({peakFlops, bandwidth}, {});
    raw_ostream &os = llvm::outs();
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      if (f.isExternal() ||
          llvm::none_of(f.getBody().front(), [](Operation &op) {
            return op.hasAttr(tsr::attr::kBackward);
          }))
        continue;
      auto start = std::chrono::steady_clock::now();
      remat::Graph graph = buildRematGraph(f, costs, bandwidth);
      double buildSeconds = secondsSince(start);
      int recomputable = llvm::count_if(
          graph.nodes, [](const remat::Node &n) { return n.recomputable; });
      int64_t peak =
          remat::simulate(graph, remat::Stages(graph.nodes.size(), -1))
              .peakBytes;
      os << "@" << f.getSymName() << ": " << graph.nodes.size() << " nodes, "
         << graph.numForward << " forward (" << recomputable
         << " recomputable), peak " << peak
         << " bytes without recomputation (graph built in "
         << llvm::format("%.3f", buildSeconds) << " s)\n";
      for (StringRef policy : {"selective", "full"}) {
        remat::Simulation sim =
            remat::simulate(graph, getPolicyStages(f, graph, policy));
        os << "  --remat=" << policy << ": "
           << llvm::format("%.4g", sim.addedCost) << " s (peak "
           << sim.peakBytes << ")\n";
      }
      std::vector<std::vector<bool>> seeds = getPolicySeeds(f, graph);
      for (double fraction : fractions) {
        int64_t budget = int64_t(fraction * peak);
        os << "  budget " << llvm::format("%.2f", fraction) << " (" << budget
           << " bytes): ";
        std::optional<remat::MilpResult> milp;
        if (this->milp) {
          start = std::chrono::steady_clock::now();
          milp = remat::solveMilp(graph, budget, searchNodes);
          double seconds = secondsSince(start);
          os << "milp ";
          if (milp->status == remat::MilpResult::Status::Infeasible)
            os << "infeasible";
          else if (!milp->solution)
            os << "no schedule within " << searchNodes << " nodes";
          else
            os << llvm::format("%.4g", milp->solution->result.addedCost)
               << " s (peak " << milp->solution->result.peakBytes << ", "
               << (milp->status == remat::MilpResult::Status::Optimal
                       ? "optimal"
                       : "stopped, bound " +
                             llvm::formatv("{0:g}", milp->bound).str())
               << ", " << milp->binaries << " binaries, solved in "
               << llvm::format("%.2f", seconds) << " s)";
          os << ", ";
        }
        start = std::chrono::steady_clock::now();
        std::optional<remat::Solution> beam =
            remat::solveBeam(graph, budget, beamWidth, beamTried, seeds);
        double seconds = secondsSince(start);
        os << "beam ";
        if (!beam) {
          os << "no schedule\n";
          continue;
        }
        os << llvm::format("%.4g", beam->result.addedCost) << " s (peak "
           << beam->result.peakBytes << ", solved in "
           << llvm::format("%.3f", seconds) << " s)";
        if (milp && milp->solution &&
            milp->status == remat::MilpResult::Status::Optimal) {
          double optimum = milp->solution->result.addedCost;
          double ratio = optimum > 0
                             ? beam->result.addedCost / optimum
                             : (beam->result.addedCost > 0 ? INFINITY : 1.0);
          os << ": " << llvm::format("%.3f", ratio) << " of the optimum";
        }
        os << "\n";
      }
    }
  }
};

} // namespace
