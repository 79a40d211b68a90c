//===- Timeline.h - The pipeline schedule as a picture ----------*- C++ -*-===//
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

} // namespace tessera_compile

#endif // TESSERA_TOOLS_TESSERA_COMPILE_TIMELINE_H
