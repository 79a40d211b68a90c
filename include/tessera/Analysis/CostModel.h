//===- CostModel.h - Estimated time of tsr ops and functions ----*- C++ -*-===//
//
// The cost model the planning passes read (sharding, rematerialization,
// pipeline split): the estimated time of one execution of an op, and of one
// call of a function, from a device's figures and the links of the mesh
// (a target's defaults, or those of a cluster file: ClusterSpec.h).
//
// Compute ops (every op with `CostOpInterface` that is not a collective) take
// the roofline time: the slower of doing their FLOPs at peak and moving their
// bytes at full memory bandwidth,
//
//   t = max(flops / peakFlops, bytes / memoryBandwidth).
//
// Collectives take the alpha-beta time of the ring (or binomial-tree)
// algorithm over their group of N ranks (the product of the sizes of their
// `mesh_axes`), B being the larger of their operand's and result's bytes,
// from Thakur, Rabenseifner and Gropp, "Optimization of Collective
// Communication Operations in MPICH", IJHPCA 19(1), 2005:
//
//   all_reduce      2(N-1) alpha + 2(N-1)/N B beta   (reduce-scatter, then
//                                                     all-gather)
//   reduce_scatter   (N-1) alpha +  (N-1)/N B beta
//   all_gather       (N-1) alpha +  (N-1)/N B beta
//   all_to_all       (N-1) alpha +  (N-1)/N B beta   (as all_gather)
//   broadcast_from  ceil(log2 N) (alpha + B beta)    (binomial tree)
//
// A group of one rank costs nothing. A group spanning several axes uses the
// link of its slowest axis: the one whose alpha + B beta is largest. The
// bytes a collective moves are the coefficient of beta. A function's time is
// the sum over its ops (a call costs what its callee does): a serial
// estimate, which counts async collectives as if nothing overlapped them.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_ANALYSIS_COSTMODEL_H
#define TESSERA_ANALYSIS_COSTMODEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::tessera {

/// The cost of one message over a link: alpha + beta * bytes seconds.
struct LinkCost {
  double alpha; // seconds per message (latency)
  double beta;  // seconds per byte (inverse bandwidth)
};

/// Figures of one device that the cost model reads.
struct CostParameters {
  double peakFlops;       // FLOP/s, f32
  double memoryBandwidth; // bytes/s
};

/// The estimated cost of one execution.
struct OpCost {
  /// Operations, and bytes accessed in memory (compute) or sent by one rank
  /// (collectives).
  double flops = 0, bytes = 0;
  double seconds = 0;

  OpCost &operator+=(const OpCost &other) {
    flops += other.flops;
    bytes += other.bytes;
    seconds += other.seconds;
    return *this;
  }
};

/// The estimated cost of one call of a function, by category.
struct FunctionCost {
  OpCost compute, communication;
  /// Collectives in the function's own body, in program order.
  SmallVector<std::pair<Operation *, OpCost>> collectives;

  double getSeconds() const { return compute.seconds + communication.seconds; }
};

class CostModel {
public:
  /// `links`: the link cost of each mesh axis, by name.
  CostModel(CostParameters parameters, llvm::StringMap<LinkCost> links)
      : parameters(parameters), links(std::move(links)) {}

  /// Whether `op` is a collective (costed by the alpha-beta model).
  static bool isCollective(Operation *op);

  /// The roofline cost of a compute op; zero for ops without
  /// `CostOpInterface`.
  OpCost getComputeCost(Operation *op) const;

  /// The alpha-beta cost of a collective; emits an error on `op` and fails
  /// if its axes are not the enclosing mesh's or one has no link cost.
  FailureOr<OpCost> getCollectiveCost(Operation *op) const;

  /// The cost of one call of `f`; fails (with an error) as
  /// getCollectiveCost does.
  FailureOr<FunctionCost> getFunctionCost(func::FuncOp f) const;

private:
  CostParameters parameters;
  llvm::StringMap<LinkCost> links;
};

} // namespace mlir::tessera

#endif // TESSERA_ANALYSIS_COSTMODEL_H
