// A cluster file that cannot be read, is not JSON, or has a field that is
// unknown or of a wrong value, is an error naming the file (and the line and
// column of a syntax error, the path of a bad field); so is an axis given
// half a link, and a collective over an axis that has no link at all.

// RUN: tessera-opt %s "--tsr-print-cost=cluster=%S/Inputs/cluster-links-only.json" -verify-diagnostics -o /dev/null
// RUN: not tessera-opt %s "--tsr-print-cost=cluster=%S/Inputs/cluster-malformed.json" 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not tessera-opt %s "--tsr-print-cost=cluster=%S/Inputs/cluster-unknown-key.json" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tessera-opt %s "--tsr-print-cost=cluster=%S/Inputs/cluster-zero-bandwidth.json" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not tessera-opt %s "--tsr-print-cost=cluster=%S/Inputs/cluster-negative-latency.json" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not tessera-opt %s "--tsr-print-cost=cluster=%S/Inputs/cluster-wrong-type.json" 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not tessera-opt %s "--tsr-print-cost=cluster=%S/Inputs/cluster-not-object.json" 2>&1 | FileCheck %s --check-prefix=NOT-OBJECT
// RUN: not tessera-opt %s "--tsr-print-cost=cluster=%S/Inputs/cluster-partial-link.json" 2>&1 | FileCheck %s --check-prefix=PARTIAL
// RUN: not tessera-opt %s "--tsr-print-cost=cluster=%S/Inputs/no-such-cluster.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not tessera-opt %s "--tsr-print-cost=bandwidth=0" 2>&1 | FileCheck %s --check-prefix=DEVICE

// Line 3 of the file: `"default_link": {"latency_us": 5 "bandwidth_gb_per_s": 1}`,
// the comma missing before column 36, where the parser rejects the quote.
// MALFORMED: error: tsr-print-cost: {{.*}}cluster-malformed.json:3:36: invalid JSON: Expected , or } after object property
// UNKNOWN: error: tsr-print-cost: {{.*}}cluster-unknown-key.json: links.tp.bandwidth_gbps: unknown key (expected latency_us or bandwidth_gb_per_s)
// ZERO: error: tsr-print-cost: {{.*}}cluster-zero-bandwidth.json: default_link.bandwidth_gb_per_s: expected a positive number of GB/s, got 0
// NEGATIVE: error: tsr-print-cost: {{.*}}cluster-negative-latency.json: links.dp.latency_us: expected a non-negative number of microseconds, got -1
// TYPE: error: tsr-print-cost: {{.*}}cluster-wrong-type.json: device.peak_tflops: expected a positive number of TFLOP/s, got a string
// NOT-OBJECT: error: tsr-print-cost: {{.*}}cluster-not-object.json: links: expected an object, got an array
// PARTIAL: error: tsr-print-cost: {{.*}}cluster-partial-link.json gives mesh axis 'dp' no bandwidth_gb_per_s (in links.dp or default_link)
// MISSING: error: tsr-print-cost: cannot read cluster file '{{.*}}no-such-cluster.json': No such file or directory
// DEVICE: error: tsr-print-cost: peak-flops and bandwidth must be positive

// cluster-links-only.json gives dp a link and has no default_link: ep has
// none.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "ep"=2]>} {
  func.func @unlinked(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tsr.all_reduce %x {mesh_axes = ["dp"], reduction = #tsr.reduction<sum>} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'tsr.all_reduce' op has no link cost for mesh axis 'ep'}}
    %e = tsr.all_reduce %r {mesh_axes = ["ep"], reduction = #tsr.reduction<sum>} : (tensor<4xf32>) -> tensor<4xf32>
    return %e : tensor<4xf32>
  }
}
