//===- ClusterSpec.h - A cluster's figures for the cost model ---*- C++ -*-===//
//
// A cluster file describes, in a small JSON object, the machines a program
// will run on: the figures of one device and the link of each mesh axis,
// in human units that the cost model's (CostModel.h) seconds are made of.
// Every field is optional; a figure the file leaves out falls back to the
// target's default.
//
//   {
//     "device": {"peak_tflops": 0.185, "memory_bandwidth_gb_per_s": 25},
//     "default_link": {"latency_us": 5, "bandwidth_gb_per_s": 1},
//     "links": {"tp": {"latency_us": 1, "bandwidth_gb_per_s": 5}}
//   }
//
// peak_tflops is 1e12 FLOP/s (f32), GB/s is 1e9 bytes/s, and a link's
// latency (microseconds) and bandwidth become its alpha (seconds per
// message) and beta (seconds per byte, 1 / bandwidth). `links` is keyed by
// mesh axis name; an axis it does not list, and every field an entry leaves
// out, takes `default_link`'s figure. Bandwidths and the peak must be
// positive, latencies non-negative; unknown keys and values of the wrong
// type are errors.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_ANALYSIS_CLUSTERSPEC_H
#define TESSERA_ANALYSIS_CLUSTERSPEC_H

#include "tessera/Analysis/CostModel.h"

#include "llvm/Support/Error.h"

namespace mlir::tessera {

/// The figures of one link that a cluster file gives; either may be unset.
struct LinkSpec {
  std::optional<double> alpha; // seconds per message
  std::optional<double> beta;  // seconds per byte

  /// This link's figures, each unset one taken from `fallback`.
  LinkCost resolve(LinkCost fallback) const {
    return {alpha.value_or(fallback.alpha), beta.value_or(fallback.beta)};
  }
};

/// The contents of a cluster file in the cost model's units. A
/// default-constructed one gives no figure, so every figure falls back.
struct ClusterSpec {
  /// FLOP/s and bytes/s of one device.
  std::optional<double> peakFlops, memoryBandwidth;
  /// The link of every axis `links` does not list, and of every field an
  /// entry of `links` leaves out.
  LinkSpec defaultLink;
  /// The link of each mesh axis, by name.
  llvm::StringMap<LinkSpec> links;

  /// The device's figures, each the file does not give taken from
  /// `fallback`.
  CostParameters getCostParameters(CostParameters fallback) const;

  /// The figures the file gives mesh axis `axis`: its entry's, field by
  /// field, else `default_link`'s.
  LinkSpec getLink(StringRef axis) const;
};

/// Parses the text of a cluster file. Errors name `fileName`, the line and
/// column of a JSON syntax error, and the path of an offending field
/// (`links.tp.bandwidth_gb_per_s`).
llvm::Expected<ClusterSpec> parseClusterSpec(StringRef json,
                                             StringRef fileName);

/// Reads and parses the cluster file at `path`.
llvm::Expected<ClusterSpec> readClusterSpec(StringRef path);

} // namespace mlir::tessera

#endif // TESSERA_ANALYSIS_CLUSTERSPEC_H
