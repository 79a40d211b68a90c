//===- Profile.cpp - tessera-run --profile and --trace --------------------===//
//
// Reads the runtime's per-region sums after a run and prints where a step
// went: one row per model node and direction (a node's forward kernels, and
// apart from them the kernels of its gradient), largest first, with the
// remainder that no region covers (allocation, views, the runtime's own
// work) and the step itself as the last two rows, so that the rows add up
// to the step.
//
//===----------------------------------------------------------------------===//

#include "TesseraRun.h"

#include <algorithm>
#include <cinttypes>
#include <map>

using namespace tessera_run;

namespace {

/// The rows printed before the rest are summed into one.
constexpr size_t kRows = 25;

struct Row {
  std::string node;
  double seconds = 0;
  int64_t calls = 0;
  /// Calls per kind ("gemm", "kernel", ...).
  std::map<std::string, int64_t> kinds;
};

std::string describeKinds(const std::map<std::string, int64_t> &kinds,
                          int64_t runs) {
  std::string text;
  for (const auto &[kind, calls] : kinds) {
    int64_t perRun = (calls + runs - 1) / runs;
    text += (text.empty() ? "" : ", ") + kind +
            (perRun > 1 ? " x" + std::to_string(perRun) : "");
  }
  return text;
}

} // namespace

void tessera_run::startProfile(const Options &options) {
  if (options.profile || !options.trace.empty())
    tsr_profile_start(options.trace.empty() ? 0 : 1);
}

int tessera_run::reportProfile(const Options &options,
                               const tsr_artifact_t *artifact, Process &process,
                               const std::string &what, const char *unit,
                               int64_t runs, double seconds) {
  if (!options.profile && options.trace.empty())
    return 0;
  tsr_profile_stop();
  size_t count = tsr_artifact_num_profile_regions(artifact);
  if (count == 0)
    return process.fail(options.artifact +
                        ": the artifact's programs are not profiled (the "
                        "CPU target times its kernels; recompile with "
                        "--target=cpu)");
  if (!options.trace.empty()) {
    std::string path = options.trace;
    if (process.size > 1)
      path += ".rank" + std::to_string(process.rank) + ".json";
    if (tsr_profile_write_trace(artifact, path.c_str(), process.rank) != TSR_OK)
      return process.fail("--trace " + path + ": " + tsr_last_error());
  }
  if (!options.profile || runs <= 0)
    return 0;

  std::map<std::pair<std::string, int>, Row> byNode;
  std::map<std::string, double> byKind;
  double covered = 0;
  for (size_t i = 0; i < count; ++i) {
    tsr_profile_region_t region{};
    if (tsr_artifact_profile_region(artifact, i, &region) != TSR_OK)
      return process.fail(tsr_last_error());
    // A pipeline's actions enclose the regions of their cells, which the
    // table counts already; --trace shows them.
    if (region.calls == 0 || std::string(region.kind) == "action")
      continue;
    std::string node = *region.node ? region.node : region.callee;
    if (node.empty())
      node = "(no node)";
    Row &row = byNode[{node, region.backward}];
    row.node = region.backward ? "grad " + node : node;
    row.seconds += region.seconds;
    row.calls += region.calls;
    row.kinds[region.kind] += region.calls;
    byKind[region.kind] += region.seconds;
    covered += region.seconds;
  }
  std::vector<Row> rows;
  for (auto &entry : byNode)
    rows.push_back(std::move(entry.second));
  std::stable_sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) {
    return a.seconds > b.seconds;
  });
  if (rows.size() > kRows + 1) {
    Row rest;
    rest.node = "(" + std::to_string(rows.size() - kRows) + " more node rows)";
    for (size_t i = kRows; i < rows.size(); ++i) {
      rest.seconds += rows[i].seconds;
      rest.calls += rows[i].calls;
      for (const auto &[kind, calls] : rows[i].kinds)
        rest.kinds[kind] += calls;
    }
    rows.resize(kRows);
    rows.push_back(std::move(rest));
  }

  // Milliseconds, or microseconds for a run shorter than 10 ms.
  double perRun = 1e3 / static_cast<double>(runs);
  double totalMs = seconds * perRun;
  bool micro = totalMs < 10;
  if (micro)
    perRun *= 1e3;
  double total = seconds * perRun;
  auto share = [&](double s) { return seconds > 0 ? 100 * s / seconds : 0; };
  process.print("profile of %s: %.4f ms per %s, by model node\n", what.c_str(),
                totalMs, unit);
  process.print("  %10s %7s %6s  %-40s %s\n", micro ? "us" : "ms", "share",
                "calls", "node", "regions");
  for (const Row &row : rows)
    process.print("  %10.3f %6.1f%% %6" PRId64 "  %-40s %s\n",
                  row.seconds * perRun, share(row.seconds),
                  (row.calls + runs - 1) / runs, row.node.c_str(),
                  describeKinds(row.kinds, runs).c_str());
  process.print("  %10.3f %6.1f%% %6s  %s\n", (seconds - covered) * perRun,
                share(seconds - covered), "",
                "(between regions: allocation, views, runtime)");
  process.print("  %10.3f %6.1f%% %6s  %s\n", total, share(seconds), "", unit);
  std::vector<std::pair<std::string, double>> kinds(byKind.begin(),
                                                    byKind.end());
  std::stable_sort(
      kinds.begin(), kinds.end(),
      [](const auto &a, const auto &b) { return a.second > b.second; });
  std::string line;
  for (const auto &[kind, s] : kinds) {
    char text[96];
    std::snprintf(text, sizeof text, "%s%s %.3f %s (%.1f%%)",
                  line.empty() ? "" : ", ", kind.c_str(), s * perRun,
                  micro ? "us" : "ms", share(s));
    line += text;
  }
  process.print("  by kind: %s\n", line.c_str());
  return 0;
}
