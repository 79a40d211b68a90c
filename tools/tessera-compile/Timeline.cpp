//===- Timeline.cpp - The pipeline schedule as a picture ------------------===//
#include "Timeline.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir::tessera;

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
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"12\">\n",
                      left + width + 20, height);
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
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
      bool forward = !s->actions[k].empty() && s->actions[k][0] == 'F';
      os << llvm::formatv("<rect x=\"{0:f2}\" y=\"{1}\" width=\"{2:f2}\" "
                          "height=\"{3}\" fill=\"{4}\" stroke=\"white\"/>\n",
                          x0, y, std::max(x1 - x0, 0.5), row,
                          forward ? "#6baed6" : "#fd8d3c");
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
                      "fill=\"#e6e6e6\"/><text x=\"{2}\" y=\"{3}\">idle "
                      "(bubble)</text>\n",
                      left + 360, legend - 11, left + 380, legend);
  os << "</svg>\n";
  return svg;
}
