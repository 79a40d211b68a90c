//===- TsrInterfaces.h - Interfaces of tsr ops ------------------*- C++ -*-===//
#ifndef TESSERA_DIALECT_TSR_IR_TSRINTERFACES_H
#define TESSERA_DIALECT_TSR_IR_TSRINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::tsr::detail {
/// One operation per result element.
int64_t defaultFlops(Operation *op);
/// Every operand read once, every result written once.
int64_t defaultBytesAccessed(Operation *op);
} // namespace mlir::tsr::detail

namespace mlir::tsr {
/// How an op's operand and result dimensions decompose into factors
/// (ShardingRuleOpInterface).
struct ShardingRule {
  enum class Kind {
    /// Indexes the results: a split factor splits the computation.
    Parallel,
    /// Summed over: a split factor leaves each rank a partial sum.
    Reduction,
    /// Cannot be split (the op needs the whole extent).
    Replicated,
  };
  struct Factor {
    int64_t size;
    Kind kind;
  };
  SmallVector<Factor> factors;
  /// Per operand (result), per dimension: the factors whose product the
  /// dimension is, major first; empty for a broadcast dimension of size 1.
  SmallVector<SmallVector<SmallVector<unsigned>>> operands, results;

  unsigned addFactor(int64_t size, Kind kind) {
    factors.push_back({size, kind});
    return factors.size() - 1;
  }
};
} // namespace mlir::tsr

#include "tessera/Dialect/Tsr/IR/TsrInterfaces.h.inc"

#endif // TESSERA_DIALECT_TSR_IR_TSRINTERFACES_H
