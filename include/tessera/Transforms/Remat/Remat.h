//===- Remat.h - Rematerialization, callable from other passes --*- C++ -*-===//
//
// The two halves of tsr-remat-plan and tsr-remat as functions, so that a
// planner can try a policy on a copy of a function and measure it.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_TRANSFORMS_REMAT_REMAT_H
#define TESSERA_TRANSFORMS_REMAT_REMAT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tessera {

/// Marks with tsr.remat = "recompute" the forward ops of `f` that the
/// backward pass repeats under `policy` ("selective" or "full"; "none"
/// marks nothing).
void planRemat(func::FuncOp f, StringRef policy);

/// Clones the marked ops of `f` before their first backward use, reading
/// other forward values through tsr.remat_barrier, and drops the marks.
void applyRemat(func::FuncOp f);

} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_REMAT_REMAT_H
