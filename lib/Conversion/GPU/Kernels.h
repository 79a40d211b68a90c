//===- Kernels.h - What the GPU passes share about kernels ------*- C++ -*-===//
//
// A kernel of tsr-gpu-map is a 1-D scf.forall mapped to #gpu.block<x> whose
// body holds the block's workgroup memory (memref.alloca in
// #gpu.address_space<workgroup>, static shapes) and one 1-D scf.forall
// mapped to #gpu.thread<x>, both loops with static bounds. The threads of a
// warp are 32 consecutive ones. The thread loop's body may hold, at its top
// level only (every thread reaches them), gpu.barrier and
// gpu.subgroup_reduce. tsr-gpu-launch and tsr-gpu-emulate consume kernels.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_LIB_CONVERSION_GPU_KERNELS_H
#define TESSERA_LIB_CONVERSION_GPU_KERNELS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::tessera {

/// Threads of a warp: the lanes that a gpu.subgroup_reduce combines.
constexpr int64_t kWarpSize = 32;

/// Threads per block of tsr-gpu-map's kernels (8 warps).
constexpr int64_t kBlockSize = 256;

/// The warp reduction of `combine` if tsr-gpu-map's warps run reductions
/// it combines (addf, mulf, maximumf, minimumf, maxnumf, minnumf).
std::optional<gpu::AllReduceOperation> getWarpCombiner(Operation *combine);

/// One kernel: its loop over blocks, its workgroup buffers and its loop
/// over threads.
struct Kernel {
  scf::ForallOp grid, threads;
  SmallVector<memref::AllocaOp> workgroup;
};

/// Creates an empty kernel of `blocks` blocks of `threads` threads at
/// `b`'s insertion point and moves the insertion point into the thread
/// loop; returns the thread loop (its parent is the block loop).
scf::ForallOp createKernel(OpBuilder &b, Location loc, int64_t blocks,
                           int64_t threads);

/// Whether `type` is in workgroup (shared) memory.
bool isWorkgroupMemory(MemRefType type);

/// The thread loop of `grid` if `grid` is a kernel, else null.
scf::ForallOp getKernelThreads(scf::ForallOp grid);

/// Every kernel of `function`; an error naming `pass` at the first
/// scf.forall that is not one, or at a gpu.barrier or gpu.subgroup_reduce
/// that not every thread of its kernel reaches.

FailureOr<SmallVector<Kernel>> collectKernels(func::FuncOp function,
                                              StringRef pass);

/// Whether `op` reads or writes a buffer.
bool touchesBuffer(Operation *op);

/// The buffer that `value` views: the function argument or allocation its
/// view-like ops (subview, collapse_shape, ...) come from.
Value viewRoot(Value value);

/// viewRoot(value), but with `argumentsAlias` (a function whose callers may
/// pass one buffer for two arguments) the function's first argument for
/// any of its arguments: they count as one buffer.
Value bufferRoot(Value value, bool argumentsAlias);

} // namespace mlir::tessera

#endif // TESSERA_LIB_CONVERSION_GPU_KERNELS_H
