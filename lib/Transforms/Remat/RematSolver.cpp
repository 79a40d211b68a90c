//===- RematSolver.cpp - Which activations to recompute under a budget ----===//
//
// The MILP follows Checkmate (Jain et al. 2020, "Checkmate: Breaking the
// Memory Wall with Optimal Tensor Rematerialization", section 4): stage t
// computes node t and may first recompute earlier nodes (R[t][i]), values
// are retained from one stage into the next (S[t][i]), FREE[t][i][k] says
// that value i is freed right after computation k of stage t, and U[t][k]
// is the memory while k runs. Two restrictions make its schedules those
// tsr-remat applies: forward stages recompute nothing, and each forward
// node is recomputed at most once. FREE is continuous: its bounds pin it to
// the product of its hazards once R and S are integral.
//
//===----------------------------------------------------------------------===//
#include "tessera/Transforms/Remat/RematSolver.h"

#include "llvm/ADT/STLExtras.h"

#include <Cbc_C_Interface.h>

#include <algorithm>
#include <map>
#include <set>

using namespace mlir::tessera::remat;

namespace {

/// Where each value instance of a schedule lives: instance i is node i's
/// forward computation, instance n + i its recomputation.
struct Run {
  std::vector<int> def, lastUse;
  /// Per event: bytes live while it runs.
  std::vector<int64_t> live;
  int64_t peakBytes = 0;
  int peakEvent = -1;
  double addedCost = 0;
};

Run run(const Graph &graph, const Stages &stages) {
  int n = graph.nodes.size();
  std::vector<std::vector<int>> recomputedAt(n);
  Run r;
  for (int i = 0; i < n; ++i)
    if (stages[i] >= 0) {
      recomputedAt[stages[i]].push_back(i);
      r.addedCost += graph.nodes[i].cost;
    }
  r.def.assign(2 * n, -1);
  r.lastUse.assign(2 * n, -1);
  int event = 0;
  auto compute = [&](int node, int stage, int instance) {
    r.def[instance] = r.lastUse[instance] = event;
    for (int operand : graph.nodes[node].operands) {
      bool clone = stages[operand] >= 0 && stages[operand] <= stage;
      r.lastUse[clone ? n + operand : operand] = event;
    }
    ++event;
  };
  for (int t = 0; t < n; ++t) {
    for (int i : recomputedAt[t])
      compute(i, t, n + i);
    compute(t, t, t);
  }
  for (int i = 0; i < n; ++i)
    if (graph.nodes[i].liveOut)
      r.lastUse[i] = event - 1;
  std::vector<int64_t> delta(event + 1, 0);
  for (int instance = 0; instance < 2 * n; ++instance) {
    if (r.def[instance] < 0)
      continue;
    int64_t bytes = graph.nodes[instance % n].bytes;
    delta[r.def[instance]] += bytes;
    delta[r.lastUse[instance] + 1] -= bytes;
  }
  r.live.resize(event);
  int64_t live = 0;
  for (int e = 0; e < event; ++e) {
    live += delta[e];
    r.live[e] = live;
    if (live > r.peakBytes || r.peakEvent < 0) {
      r.peakBytes = live;
      r.peakEvent = e;
    }
  }
  return r;
}

/// How far a run is over the budget, summed over its events.
int64_t overflow(const Run &r, int64_t budget) {
  int64_t sum = 0;
  for (int64_t live : r.live)
    sum += std::max<int64_t>(0, live - budget);
  return sum;
}

} // namespace

Stages
mlir::tessera::remat::firstNeedStages(const Graph &graph,
                                      const std::vector<bool> &recompute) {
  int n = graph.nodes.size();
  Stages stages(n, -1);
  std::vector<int> worklist;
  for (int t = graph.numForward; t < n; ++t) {
    // A recomputed operand is recomputed here with the recomputed operands
    // it reads, unless an earlier stage did.
    worklist.assign(graph.nodes[t].operands.begin(),
                    graph.nodes[t].operands.end());
    while (!worklist.empty()) {
      int i = worklist.back();
      worklist.pop_back();
      if (!recompute[i] || stages[i] >= 0)
        continue;
      stages[i] = t;
      worklist.insert(worklist.end(), graph.nodes[i].operands.begin(),
                      graph.nodes[i].operands.end());
    }
  }
  return stages;
}

Simulation mlir::tessera::remat::simulate(const Graph &graph,
                                          const Stages &stages) {
  Run r = run(graph, stages);
  return {r.peakBytes, r.addedCost};
}

std::optional<Solution>
mlir::tessera::remat::solveBeam(const Graph &graph, int64_t budget, int width,
                                int tried,
                                llvm::ArrayRef<std::vector<bool>> seeds) {
  int n = graph.nodes.size();
  int forward = graph.numForward;
  // Nodes read by the backward pass, and the last forward event reading
  // each node.
  std::vector<bool> saved(n, false);
  std::vector<int> lastForwardUse(n);
  for (int i = 0; i < n; ++i)
    lastForwardUse[i] = i;
  for (int t = 0; t < n; ++t)
    for (int i : graph.nodes[t].operands) {
      if (t >= forward)
        saved[i] = true;
      else
        lastForwardUse[i] = t;
    }
  auto runWith = [&](const std::vector<bool> &set) {
    return run(graph, firstNeedStages(graph, set));
  };

  struct State {
    std::vector<bool> recompute;
    Run run;
    int64_t overflow;
  };
  // Drops what the budget does not need, costliest first.
  auto prune = [&](std::vector<bool> recompute) {
    std::vector<int> chosen;
    for (int i = 0; i < n; ++i)
      if (recompute[i])
        chosen.push_back(i);
    llvm::sort(chosen, [&](int a, int b) {
      double ca = graph.nodes[a].cost, cb = graph.nodes[b].cost;
      return ca != cb ? ca > cb : a < b;
    });
    for (int i : chosen) {
      recompute[i] = false;
      if (runWith(recompute).peakBytes > budget)
        recompute[i] = true;
    }
    Solution solution{firstNeedStages(graph, recompute), {}};
    solution.result = simulate(graph, solution.stages);
    return solution;
  };

  Run root = runWith(std::vector<bool>(n, false));
  int64_t rootOverflow = overflow(root, budget);
  std::vector<State> beam;
  beam.push_back({std::vector<bool>(n, false), std::move(root), rootOverflow});
  std::set<std::vector<bool>> seen{beam.front().recompute};
  for (const std::vector<bool> &seed : seeds)
    if (seen.insert(seed).second) {
      Run r = runWith(seed);
      int64_t over = overflow(r, budget);
      beam.push_back({seed, std::move(r), over});
    }
  std::optional<Solution> best;
  while (!beam.empty()) {
    std::vector<State> children;
    for (State &state : beam) {
      if (state.overflow == 0) {
        Solution solution = prune(state.recompute);
        if (!best || solution.result.addedCost < best->result.addedCost)
          best = std::move(solution);
        continue;
      }
      // Candidates: values live at the peak only because the backward pass
      // reads them, with the forward producers only they read, by bytes
      // per second of recomputation.
      const Run &r = state.run;
      struct Candidate {
        std::vector<int> nodes;
        double score;
      };
      std::vector<Candidate> candidates;
      for (int v = 0; v < forward; ++v) {
        if (!graph.nodes[v].recomputable || state.recompute[v] || !saved[v] ||
            lastForwardUse[v] >= r.peakEvent || r.lastUse[v] < r.peakEvent)
          continue;
        Candidate c{{v}, 0};
        for (size_t k = 0; k < c.nodes.size(); ++k)
          for (int i : graph.nodes[c.nodes[k]].operands)
            if (graph.nodes[i].recomputable && !saved[i] &&
                !state.recompute[i] && !llvm::is_contained(c.nodes, i))
              c.nodes.push_back(i);
        double cost = 0;
        for (int i : c.nodes)
          cost += graph.nodes[i].cost;
        c.score = graph.nodes[v].bytes / std::max(cost, 1e-15);
        candidates.push_back(std::move(c));
      }
      llvm::sort(candidates, [](const Candidate &a, const Candidate &b) {
        return a.score != b.score ? a.score > b.score : a.nodes[0] < b.nodes[0];
      });
      if (candidates.size() > size_t(tried))
        candidates.resize(tried);
      for (const Candidate &c : candidates) {
        std::vector<bool> recompute = state.recompute;
        for (int i : c.nodes)
          recompute[i] = true;
        if (!seen.insert(recompute).second)
          continue;
        Run child = runWith(recompute);
        int64_t over = overflow(child, budget);
        children.push_back({std::move(recompute), std::move(child), over});
      }
    }
    // The children that removed the most overflow per second of
    // recomputation.
    auto efficiency = [&](const State &s) {
      return double(rootOverflow - s.overflow) /
             std::max(s.run.addedCost, 1e-15);
    };
    llvm::sort(children, [&](const State &a, const State &b) {
      return efficiency(a) > efficiency(b);
    });
    if (int(children.size()) > width)
      children.resize(width);
    beam = std::move(children);
  }
  return best;
}

MilpResult mlir::tessera::remat::solveMilp(const Graph &graph, int64_t budget,
                                           int maxNodes) {
  int n = graph.nodes.size();
  int forward = graph.numForward;
  // Memory in KiB keeps the coefficients small (exact in a double); time
  // scaled so that the costliest node costs 1000, far from CBC's
  // tolerances (seconds of 1e-7 would be taken for zeros).
  auto kib = [](int64_t bytes) { return double(bytes) / 1024.0; };
  double costScale = 0;
  for (const Node &node : graph.nodes)
    costScale = std::max(costScale, node.cost);
  costScale = costScale > 0 ? 1000.0 / costScale : 1.0;

  // users[i]: the nodes reading node i.
  std::vector<std::vector<int>> users(n);
  for (int k = 0; k < n; ++k)
    for (int i : graph.nodes[k].operands)
      if (!llvm::is_contained(users[i], k))
        users[i].push_back(k);
  std::vector<int> recomputable;
  for (int i = 0; i < forward; ++i)
    if (graph.nodes[i].recomputable)
      recomputable.push_back(i);
  // The last stage at which node i may be read: its last reader, or any
  // backward stage when a recomputable node reads it.
  std::vector<int> lastStage(n, -1);
  for (int i = 0; i < n; ++i) {
    for (int k : users[i])
      lastStage[i] =
          std::max(lastStage[i], graph.nodes[k].recomputable ? n - 1 : k);
    if (graph.nodes[i].liveOut)
      lastStage[i] = n;
  }

  MilpResult result;
  Cbc_Model *model = Cbc_newModel();
  auto addColumn = [&](double lb, double ub, double obj, bool integer) {
    int column = Cbc_getNumCols(model);
    Cbc_addCol(model, "", lb, ub, obj, integer, 0, nullptr, nullptr);
    if (integer)
      ++result.binaries;
    return column;
  };
  struct Term {
    int column;
    double coefficient;
  };
  auto addRow = [&](const std::vector<Term> &terms, char sense, double rhs) {
    std::vector<int> columns;
    std::vector<double> coefficients;
    for (const Term &t : terms) {
      columns.push_back(t.column);
      coefficients.push_back(t.coefficient);
    }
    Cbc_addRow(model, "", columns.size(), columns.data(), coefficients.data(),
               sense, rhs);
  };

  // R[t][i] for backward stages t and recomputable forward i; S[t][i] for
  // i < t <= n while node i may still be read. -1: the variable is 0.
  std::map<std::pair<int, int>, int> recomputeVar, retainVar;
  // Stage t may only recompute what it reads from the forward pass and the
  // forward nodes those are computed from: anything else would only add
  // time.
  for (int t = forward; t < n; ++t) {
    std::vector<bool> needed(forward, false);
    for (int i : graph.nodes[t].operands)
      if (i < forward)
        needed[i] = true;
    for (int i = forward - 1; i >= 0; --i)
      if (needed[i] && graph.nodes[i].recomputable)
        for (int j : graph.nodes[i].operands)
          needed[j] = true;
    for (int i : recomputable)
      if (needed[i])
        recomputeVar[{t, i}] =
            addColumn(0, 1, costScale * graph.nodes[i].cost, true);
  }
  // A node never recomputed is retained from its computation to its last
  // reader, as is any node up to its last reader in the forward pass: the
  // variable is fixed to 1 (CBC's presolve removes it).
  std::vector<int> retainedTo(n);
  for (int i = 0; i < n; ++i) {
    retainedTo[i] = graph.nodes[i].recomputable ? i : lastStage[i];
    for (int k : users[i])
      if (k < forward)
        retainedTo[i] = std::max(retainedTo[i], k);
  }
  for (int i = 0; i < n; ++i)
    for (int t = i + 1; t <= std::min(lastStage[i], n); ++t)
      retainVar[{t, i}] = addColumn(t == n || t <= retainedTo[i] ? 1 : 0, 1, 0,
                                    /*integer=*/true);
  auto r = [&](int t, int i) {
    if (i == t)
      return -2; // computed: the constant 1
    auto it = recomputeVar.find({t, i});
    return it == recomputeVar.end() ? -1 : it->second;
  };
  auto s = [&](int t, int i) {
    auto it = retainVar.find({t, i});
    return it == retainVar.end() ? -1 : it->second;
  };

  // Each forward node recomputed at most once, and only where node t or
  // another recomputation of the stage reads it.
  for (int i : recomputable) {
    std::vector<Term> terms;
    for (int t = forward; t < n; ++t)
      if (int rti = r(t, i); rti >= 0)
        terms.push_back({rti, 1});
    if (!terms.empty())
      addRow(terms, 'L', 1);
  }
  for (const auto &[key, column] : recomputeVar) {
    auto [t, i] = key;
    if (llvm::is_contained(users[i], t))
      continue;
    std::vector<Term> terms{{column, 1}};
    for (int j : users[i])
      if (int rtj = r(t, j); rtj >= 0)
        terms.push_back({rtj, -1});
    addRow(terms, 'L', 0);
  }
  // Retained only if retained before or computed in the stage before.
  for (const auto &[key, column] : retainVar) {
    auto [t, i] = key;
    std::vector<Term> terms{{column, 1}};
    double rhs = 0;
    if (int prev = s(t - 1, i); prev >= 0)
      terms.push_back({prev, -1});
    if (int computed = r(t - 1, i); computed == -2)
      rhs = 1;
    else if (computed >= 0)
      terms.push_back({computed, -1});
    addRow(terms, 'L', rhs);
  }

  for (int t = 0; t < n; ++t) {
    // The computations of stage t in order: recomputations, then t.
    std::vector<int> computed;
    for (int i : recomputable)
      if (r(t, i) >= 0)
        computed.push_back(i);
    computed.push_back(t);
    // U[t][first] = retained bytes + the first computation's bytes.
    int memory = -1;
    int previous = -1;
    std::vector<std::pair<int, int>> freedByPrevious; // (FREE column, node)
    for (int k : computed) {
      int rk = r(t, k);
      // Dependencies: an operand is recomputed earlier in the stage or
      // retained.
      for (int i : graph.nodes[k].operands) {
        std::vector<Term> terms;
        double rhs = 0;
        if (rk == -2)
          rhs = -1; // 1 <= ...
        else
          terms.push_back({rk, 1});
        int ri = r(t, i);
        if (ri >= 0 && i < k)
          terms.push_back({ri, -1});
        if (int si = s(t, i); si >= 0)
          terms.push_back({si, -1});
        addRow(terms, 'L', rhs);
      }
      // The memory while k runs.
      int u = addColumn(0, kib(budget), 0, false);
      std::vector<Term> terms{{u, 1}};
      double rhs = 0;
      if (previous < 0) {
        for (int i = 0; i < t; ++i)
          if (int si = s(t, i); si >= 0)
            terms.push_back({si, -kib(graph.nodes[i].bytes)});
      } else {
        terms.push_back({memory, -1});
        for (auto [column, i] : freedByPrevious)
          terms.push_back({column, kib(graph.nodes[i].bytes)});
      }
      if (rk == -2)
        rhs = kib(graph.nodes[k].bytes);
      else
        terms.push_back({rk, -kib(graph.nodes[k].bytes)});
      addRow(terms, 'E', rhs);
      memory = u;
      previous = k;
      // What k's computation frees: its operands and itself, unless a later
      // computation of the stage reads them or the next stage retains them.
      freedByPrevious.clear();
      std::vector<int> candidates(graph.nodes[k].operands.begin(),
                                  graph.nodes[k].operands.end());
      candidates.push_back(k);
      llvm::sort(candidates);
      candidates.erase(llvm::unique(candidates), candidates.end());
      for (int i : candidates) {
        std::vector<int> laterReaders;
        bool alwaysRead = false;
        for (int j : users[i]) {
          if (j <= k || !llvm::is_contained(computed, j))
            continue;
          int rj = r(t, j);
          if (rj == -2)
            alwaysRead = true;
          else if (rj >= 0)
            laterReaders.push_back(rj);
        }
        if (alwaysRead)
          continue;
        int free = addColumn(0, 1, 0, false);
        std::vector<Term> lower{{free, 1}};
        double lowerRhs = 0;
        if (rk == -2) {
          lowerRhs = 1;
        } else {
          addRow({{free, 1}, {rk, -1}}, 'L', 0);
          lower.push_back({rk, -1});
        }
        if (int next = s(t + 1, i); next >= 0) {
          addRow({{free, 1}, {next, 1}}, 'L', 1);
          lower.push_back({next, 1});
        }
        for (int rj : laterReaders) {
          addRow({{free, 1}, {rj, 1}}, 'L', 1);
          lower.push_back({rj, 1});
        }
        addRow(lower, 'G', lowerRhs);
        freedByPrevious.push_back({free, i});
      }
    }
  }

  Cbc_setLogLevel(model, 0);
  Cbc_setMaximumNodes(model, maxNodes);
  Cbc_solve(model);
  if (Cbc_isProvenInfeasible(model)) {
    result.status = MilpResult::Status::Infeasible;
  } else {
    result.status = Cbc_isProvenOptimal(model) ? MilpResult::Status::Optimal
                                               : MilpResult::Status::Stopped;
    result.bound = Cbc_getBestPossibleObjValue(model) / costScale;
    if (const double *x = Cbc_bestSolution(model)) {
      Solution solution{Stages(n, -1), {}};
      for (const auto &[key, column] : recomputeVar)
        if (x[column] > 0.5)
          solution.stages[key.second] = key.first;
      solution.result = simulate(graph, solution.stages);
      result.solution = std::move(solution);
    }
  }
  Cbc_deleteModel(model);
  return result;
}
