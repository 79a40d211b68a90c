//===- Timeline.h - The pipeline schedule and memory as pictures -*- C++
//-*-===//
#ifndef TESSERA_TOOLS_TESSERA_COMPILE_TIMELINE_H
#define TESSERA_TOOLS_TESSERA_COMPILE_TIMELINE_H

#include "tessera/Pipelines/Target.h"

#include <string>

namespace tessera_compile {

/// An SVG drawing of the simulated schedule of a pipeline's stage programs:
/// one row per stage, a block per forward (blue) and backward (orange)
/// micro-batch pass at its predicted start, the idle time between them
/// grey. Empty if the artifact has no pipeline.
std::string renderTimelineSvg(const mlir::tessera::ArtifactSignature &sig);

/// An SVG drawing of each program's predicted live bytes over the steps of
/// one call (ArtifactProgram::memoryTimeline): one panel per program, the
/// bytes stacked by the phase that allocated them, the peak marked (with
/// `budget` > 0, a line at the budget too).
std::string renderMemoryTimelineSvg(const mlir::tessera::ArtifactSignature &sig,
                                    int64_t budget);

} // namespace tessera_compile

#endif // TESSERA_TOOLS_TESSERA_COMPILE_TIMELINE_H
