//===- ShardingRules.h - The sharding rules of tsr ops ----------*- C++ -*-===//
//
// Which factors of an op's dimensions may be split over a mesh axis
// (ShardingRuleOpInterface, TsrInterfaces.h). The structured ops carry the
// interface as external models registered here; elementwise ops (the
// `Elementwise` trait, and the broadcasting binary ops and tsr.where) share
// one rule; every other op has none and is replicated.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_TRANSFORMS_PARALLEL_SHARDINGRULES_H
#define TESSERA_TRANSFORMS_PARALLEL_SHARDINGRULES_H

#include "mlir/IR/DialectRegistry.h"
#include "tessera/Dialect/Tsr/IR/TsrInterfaces.h"

#include <optional>

namespace mlir::tessera {

/// Attaches ShardingRuleOpInterface to the structured tsr ops.
void registerShardingRules(DialectRegistry &registry);

/// The rule of `op`: its interface's, the elementwise rule, or none.
std::optional<tsr::ShardingRule> getShardingRule(Operation *op);

/// Whether `op` may run on the operands marked in `partial` while they are
/// partial sums, its result then a partial sum over the same axes (it is
/// linear in them): reshapes, transposes, broadcasts, slices, reduce_sum,
/// negation and float casts of a partial value; a product or matmul with
/// exactly one partial factor; a quotient with a partial dividend; sums and
/// concatenations whose every operand is partial.
bool acceptsPartial(Operation *op, ArrayRef<bool> partial);

} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_PARALLEL_SHARDINGRULES_H
