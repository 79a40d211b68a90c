//===- Kernels.h - What the GPU passes share about kernels ------*- C++ -*-===//
//
// A kernel of tsr-gpu-map is a 1-D scf.forall mapped to #gpu.block<x> whose
// body holds one 1-D scf.forall mapped to #gpu.thread<x>, both with static
// bounds; tsr-gpu-launch and tsr-gpu-emulate consume them.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_LIB_CONVERSION_GPU_KERNELS_H
#define TESSERA_LIB_CONVERSION_GPU_KERNELS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::tessera {

/// One kernel: its loop over blocks and its loop over threads.
struct Kernel {
  scf::ForallOp grid, threads;
};

/// The thread loop of `grid` if `grid` is a kernel, else null.
scf::ForallOp getKernelThreads(scf::ForallOp grid);

/// Every kernel of `function`; an error naming `pass` at the first
/// scf.forall that is not one.
FailureOr<SmallVector<Kernel>> collectKernels(func::FuncOp function,
                                              StringRef pass);

/// Whether `op` reads or writes a buffer.
bool touchesBuffer(Operation *op);

} // namespace mlir::tessera

#endif // TESSERA_LIB_CONVERSION_GPU_KERNELS_H
