//===- Passes.h - CPU code generation passes --------------------*- C++ -*-===//
#ifndef TESSERA_CONVERSION_CPU_PASSES_H
#define TESSERA_CONVERSION_CPU_PASSES_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tessera {
#define GEN_PASS_DECL
#include "tessera/Conversion/CPU/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "tessera/Conversion/CPU/Passes.h.inc"

/// Patterns that bring the vector ops `tsr-cpu-vectorize` creates down to
/// 1-D transfers, arithmetic and vector.reduction (transfer permutation
/// maps, multi_reduction, unit dimensions, broadcasts sunk below elementwise
/// ops), ready for convert-vector-to-scf and convert-vector-to-llvm.
void populateCpuVectorLoweringPatterns(RewritePatternSet &patterns);

} // namespace mlir::tessera

#endif // TESSERA_CONVERSION_CPU_PASSES_H
