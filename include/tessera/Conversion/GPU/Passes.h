//===- Passes.h - GPU code generation passes --------------------*- C++ -*-===//
#ifndef TESSERA_CONVERSION_GPU_PASSES_H
#define TESSERA_CONVERSION_GPU_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::scf {
class ForallOp;
} // namespace mlir::scf

namespace mlir::tessera {
#define GEN_PASS_DECL
#include "tessera/Conversion/GPU/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "tessera/Conversion/GPU/Passes.h.inc"

/// The thread loop of a kernel that tsr-gpu-map built: `grid` is a 1-D
/// scf.forall mapped to #gpu.block<x> with a static bound whose body holds
/// one 1-D scf.forall mapped to #gpu.thread<x>, also with a static bound.
/// Null for any other loop.
scf::ForallOp getKernelThreads(scf::ForallOp grid);

} // namespace mlir::tessera

#endif // TESSERA_CONVERSION_GPU_PASSES_H
