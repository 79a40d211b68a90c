//===- Timeline.cpp - The pipeline schedule and memory as pictures --------===//
#include "Timeline.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir::tessera;

/// The opening of a picture of `width` x `height` on white.
static void openSvg(llvm::raw_ostream &os, double width, double height) {
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"12\">\n",
                      width, height);
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

std::string tessera_compile::renderTimelineSvg(const ArtifactSignature &sig) {
  std::vector<const ArtifactPipelineStage *> stages;
  for (const ArtifactProgram &program : sig.programs)
    if (program.pipeline)
      stages.push_back(&*program.pipeline);
  if (stages.empty())
    return "";
  std::sort(stages.begin(), stages.end(),
            [](const auto *a, const auto *b) { return a->stage < b->stage; });
  const ArtifactPipelineStage &first = *stages.front();
  double step = first.stepSeconds > 0 ? first.stepSeconds : 1;
  int64_t p = static_cast<int64_t>(stages.size()), m = first.microBatches;
  double busy = 0;
  for (const auto *s : stages)
    busy += s->busySeconds;
  double bubble = 1 - busy / (double(p) * step);
  double theory = double(p - 1) / double(m + p - 1);

  const double left = 120, width = 880, row = 30, gap = 8, top = 58;
  double height = top + double(p) * (row + gap) + 40;
  std::string svg;
  llvm::raw_string_ostream os(svg);
  openSvg(os, left + width + 20, height);
  os << llvm::formatv(
      "<text x=\"10\" y=\"20\" font-size=\"14\">pp={0}, schedule {1}, {2} "
      "micro-batches: predicted step {3:f1} us, bubble {4:f1}%</text>\n",
      p, first.schedule, m, step * 1e6, bubble * 100);
  os << llvm::formatv("<text x=\"10\" y=\"40\" fill=\"#555\">(P - 1) / (M + "
                      "P - 1) = {0:f1}% for equal stages; times from the cost "
                      "model</text>\n",
                      theory * 100);
  for (auto [i, s] : llvm::enumerate(stages)) {
    double y = top + double(i) * (row + gap);
    os << llvm::formatv("<text x=\"10\" y=\"{0}\">stage {1}: {2:f0}% idle"
                        "</text>\n",
                        y + row / 2 + 4, s->stage, s->bubble * 100);
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" "
                        "height=\"{3}\" fill=\"#e6e6e6\"/>\n",
                        left, y, width, row);
    for (size_t k = 0;
         k < s->actions.size() && k < s->starts.size() && k < s->ends.size();
         ++k) {
      double x0 = left + width * s->starts[k] / step;
      double x1 = left + width * s->ends[k] / step;
      // Forward blue, backward orange, weight gradient green; a rank's
      // later chunks ("F3.1") darker.
      llvm::StringRef action = s->actions[k];
      bool later = action.contains('.') && !action.ends_with(".0");
      const char *fill =
          action.starts_with("F")   ? (later ? "#2171b5" : "#6baed6")
          : action.starts_with("B") ? (later ? "#d94801" : "#fd8d3c")
                                    : (later ? "#238b45" : "#74c476");
      os << llvm::formatv("<rect x=\"{0:f2}\" y=\"{1}\" width=\"{2:f2}\" "
                          "height=\"{3}\" fill=\"{4}\" stroke=\"white\"/>\n",
                          x0, y, std::max(x1 - x0, 0.5), row, fill);
      if (x1 - x0 >= 18)
        os << llvm::formatv(
            "<text x=\"{0:f2}\" y=\"{1}\" text-anchor=\"middle\" "
            "fill=\"white\">{2}</text>\n",
            (x0 + x1) / 2, y + row / 2 + 4, s->actions[k]);
    }
  }
  double legend = top + double(p) * (row + gap) + 16;
  os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"14\" height=\"14\" "
                      "fill=\"#6baed6\"/><text x=\"{2}\" y=\"{3}\">forward of "
                      "micro-batch m (Fm)</text>\n",
                      left, legend - 11, left + 20, legend);
  os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"14\" height=\"14\" "
                      "fill=\"#fd8d3c\"/><text x=\"{2}\" y=\"{3}\">backward "
                      "(Bm)</text>\n",
                      left + 220, legend - 11, left + 240, legend);
  os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"14\" height=\"14\" "
                      "fill=\"#74c476\"/><text x=\"{2}\" y=\"{3}\">weight "
                      "gradient (Wm)</text>\n",
                      left + 360, legend - 11, left + 380, legend);
  os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"14\" height=\"14\" "
                      "fill=\"#e6e6e6\"/><text x=\"{2}\" y=\"{3}\">idle "
                      "(bubble)</text>\n",
                      left + 520, legend - 11, left + 540, legend);
  os << "</svg>\n";
  return svg;
}

namespace {

/// Bytes in a readable unit: "12.3 MiB".
std::string formatBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  return llvm::formatv("{0:f1} {1}", bytes, units[u]).str();
}

/// Escapes text for an SVG element or attribute.
std::string escape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

const char *phaseColor(llvm::StringRef phase) {
  if (phase == "parameter copies")
    return "#9e9ac8";
  if (phase == "forward")
    return "#6baed6";
  if (phase == "backward")
    return "#fd8d3c";
  if (phase == "update")
    return "#74c476";
  return "#bdbdbd"; // callee
}

} // namespace

std::string
tessera_compile::renderMemoryTimelineSvg(const ArtifactSignature &sig,
                                         int64_t budget) {
  const double left = 90, width = 900, panel = 260, top = 30, gap = 90;
  double height = top + double(sig.programs.size()) * (panel + gap);
  std::string svg;
  llvm::raw_string_ostream os(svg);
  openSvg(os, left + width + 30, height);
  for (auto [index, program] : llvm::enumerate(sig.programs)) {
    const ArtifactMemoryTimeline &t = program.memoryTimeline;
    double y0 = top + double(index) * (panel + gap) + 40;
    size_t n = t.bytes.size();
    // The step with the most bytes live (the first such).
    size_t at = 0;
    int64_t peak = 0;
    std::vector<int64_t> totals;
    for (size_t s = 0; s < n; ++s) {
      int64_t total = 0;
      for (int64_t b : t.bytes[s])
        total += b;
      totals.push_back(total);
      if (total > peak) {
        peak = total;
        at = s;
      }
    }
    int64_t hostPeak = 0;
    for (int64_t bytes : t.hostBytes)
      hostPeak = std::max(hostPeak, bytes);
    double scale =
        std::max<double>({double(peak), double(budget), double(hostPeak), 1.0});
    auto x = [&](double step) {
      return left + width * step / double(std::max<size_t>(n, 1));
    };
    auto y = [&](double bytes) { return y0 + panel - panel * bytes / scale; };
    os << llvm::formatv(
        "<text x=\"10\" y=\"{0}\" font-size=\"14\">{1}{2}: predicted live "
        "bytes over the {3} steps of one call; peak {4} bytes ({5}) at step "
        "{6}</text>\n",
        y0 - 24, sig.mode, sig.programs.size() > 1 ? " " + program.name : "", n,
        peak, formatBytes(peak), at);
    os << llvm::formatv("<g class=\"memory-timeline\" data-program=\"{0}\" "
                        "data-steps=\"{1}\" data-peak-bytes=\"{2}\" "
                        "data-peak-step=\"{3}\">\n",
                        escape(program.name), n, peak, at);
    // Axes: bytes at the left, steps below.
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" "
                        "height=\"{3}\" fill=\"none\" stroke=\"#999\"/>\n",
                        left, y0, width, panel);
    for (int k = 0; k <= 4; ++k) {
      double bytes = scale * k / 4;
      os << llvm::formatv("<text x=\"{0}\" y=\"{1:f1}\" text-anchor=\"end\" "
                          "fill=\"#555\">{2}</text>\n",
                          left - 6, y(bytes) + 4, formatBytes(bytes));
    }
    // One band per phase, stacked in order: its top edge and the previous
    // band's top edge back.
    std::vector<int64_t> below(n, 0);
    for (auto [c, phase] : llvm::enumerate(t.phases)) {
      std::string points;
      for (size_t s = 0; s < n; ++s) {
        int64_t top = below[s] + t.bytes[s][c];
        points += llvm::formatv("{0:f2},{1:f2} {2:f2},{1:f2} ", x(s),
                                y(double(top)), x(s + 1))
                      .str();
      }
      for (size_t s = n; s-- > 0;)
        points += llvm::formatv("{0:f2},{1:f2} {2:f2},{1:f2} ", x(s + 1),
                                y(double(below[s])), x(s))
                      .str();
      for (size_t s = 0; s < n; ++s)
        below[s] += t.bytes[s][c];
      os << llvm::formatv("<polygon class=\"phase\" data-phase=\"{0}\" "
                          "fill=\"{1}\" points=\"{2}\"/>\n",
                          escape(phase), phaseColor(phase), points);
    }
    // Where the phases of the ops change: forward, backward, update.
    for (size_t s = 1; s < n; ++s)
      if (t.stepPhases[s] != t.stepPhases[s - 1])
        os << llvm::formatv(
            "<line x1=\"{0:f2}\" y1=\"{1}\" x2=\"{0:f2}\" y2=\"{2}\" "
            "stroke=\"#333\" stroke-dasharray=\"2,3\"><title>step {3}: "
            "{4}</title></line>\n",
            x(s), y0, y0 + panel, s, escape(t.stepPhases[s]));
    if (n) {
      os << llvm::formatv(
          "<line x1=\"{0:f2}\" y1=\"{1:f2}\" x2=\"{0:f2}\" y2=\"{2}\" "
          "stroke=\"red\"/>\n<text x=\"{3:f2}\" y=\"{4:f2}\" "
          "fill=\"red\">peak: {5}</text>\n",
          x(at + 0.5), y(double(peak)), y0 + panel,
          std::min(x(at + 0.5) + 4, left + width - 240), y(double(peak)) + 14,
          escape(t.ops[at]));
    }
    // Offloaded values: the bytes held in host memory, not in the bands.
    if (!t.hostBytes.empty()) {
      std::string points;
      for (size_t s = 0; s < n; ++s)
        points += llvm::formatv("{0:f2},{1:f2} {2:f2},{1:f2} ", x(s),
                                y(double(t.hostBytes[s])), x(s + 1))
                      .str();
      os << llvm::formatv("<polyline class=\"host\" data-host-peak-bytes="
                          "\"{0}\" fill=\"none\" stroke=\"purple\" "
                          "stroke-width=\"2\" stroke-dasharray=\"4,2\" "
                          "points=\"{1}\"><title>offloaded to host memory: "
                          "at most {0} bytes</title></polyline>\n",
                          hostPeak, points);
    }
    if (budget > 0)
      os << llvm::formatv(
          "<line x1=\"{0}\" y1=\"{1:f2}\" x2=\"{2}\" y2=\"{1:f2}\" "
          "stroke=\"black\" stroke-dasharray=\"6,4\"/>\n<text x=\"{3}\" "
          "y=\"{4:f2}\">budget {5} bytes</text>\n",
          left, y(double(budget)), left + width, left + 4,
          y(double(budget)) - 4, budget);
    os << "</g>\n";
    // Legend.
    double ly = y0 + panel + 30, lx = left;
    for (const std::string &phase : t.phases) {
      os << llvm::formatv(
          "<rect x=\"{0}\" y=\"{1}\" width=\"14\" height=\"14\" "
          "fill=\"{2}\"/><text x=\"{3}\" y=\"{4}\">{5}</text>\n",
          lx, ly - 11, phaseColor(phase), lx + 20, ly, escape(phase));
      lx += 40 + 8 * double(phase.size());
    }
    if (!t.hostBytes.empty()) {
      os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" "
                          "y2=\"{1}\" stroke=\"purple\" stroke-width=\"2\" "
                          "stroke-dasharray=\"4,2\"/><text x=\"{3}\" "
                          "y=\"{4}\">offloaded (host memory)</text>\n",
                          lx, ly - 4, lx + 14, lx + 20, ly);
      lx += 40 + 8 * 23.0;
    }
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" fill=\"#555\">steps of "
                        "the lowering in program order; buffers the "
                        "function allocates itself, arguments "
                        "excluded</text>\n",
                        lx + 10, ly);
  }
  os << "</svg>\n";
  return svg;
}
