//===- ZeroFill.h - The zero fill a GEMM may overwrite instead -*- C++ -*-===//
//
// Shared by the CPU (tsr-linalg-to-blas) and GPU (tsr-gpu-gemm) lowerings of
// linalg.matmul on buffers: linalg accumulates into its output, which
// tsr-to-linalg fills with zeros first; a library GEMM can write the product
// with beta 0 instead and the fill, a pass over the output, goes.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_CONVERSION_ZEROFILL_H
#define TESSERA_CONVERSION_ZEROFILL_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"

namespace mlir::tessera {

/// The `linalg.fill` of zero that makes `c` (a fresh allocation) the
/// product's first write, with nothing reading `c` between the two: the
/// product can then overwrite `c` instead of accumulating into it. Only a
/// fresh allocation qualifies: a function argument may share its buffer
/// with another (an in-place output and its input).
inline linalg::FillOp getZeroFill(Operation *gemm, Value c) {
  if (!c.getDefiningOp<memref::AllocOp>())
    return {};
  linalg::FillOp fill;
  for (Operation *user : c.getUsers()) {
    if (user == gemm)
      continue;
    Operation *ancestor = gemm->getBlock()->findAncestorOpInBlock(*user);
    if (!ancestor)
      return {};
    if (ancestor->isBeforeInBlock(gemm)) {
      auto f = dyn_cast<linalg::FillOp>(user);
      if (!f || fill || f.getOutputs()[0] != c)
        return {};
      fill = f;
    }
  }
  if (!fill)
    return {};
  // Nothing between the fill and the product may touch c through a view:
  // c's only users before the product are the fill itself (checked above).
  FloatAttr value;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&value)) ||
      !value.getValue().isZero())
    return {};
  return fill;
}

} // namespace mlir::tessera

#endif // TESSERA_CONVERSION_ZEROFILL_H
