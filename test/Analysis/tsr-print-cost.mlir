// RUN: tessera-opt %s -split-input-file "--tsr-print-cost=bandwidth=1e9 cluster=%S/Inputs/cluster.json" -verify-diagnostics -o /dev/null

// Inputs/cluster.json gives the peak (0.001 TFLOP/s = 1e9 FLOP/s); the
// memory bandwidth, which it leaves out, is the option's (1e9 bytes/s).
// Links (alpha s per message, beta s per byte): default_link 1 us and
// 1 GB/s (1e-6, 1e-9) for every axis not listed (dp, ep); pp gives only a
// latency (1e-5, 1e-9), tp only a bandwidth (1e-6, 1e-10); sp 20 us and
// 100 GB/s (2e-5, 1e-11). Errors: tsr-print-cost-invalid.mlir.

// Compute ops take the roofline time max(flops / 1e9, bytes / 1e9).
// exp of 1024 f32: 1024 flops (one per element), 8192 bytes (read and
// written): memory-bound, 8.192e-6 s. matmul 4x8 by 8x16: 2*8*64 = 1024
// flops, (32+128+64)*4 = 896 bytes: compute-bound, 1.024e-6 s. Total
// 9.216e-6 s, 2048 flops, 9088 bytes.
// expected-remark @+1 {{estimated 9.216e-06 s: compute 9.216e-06 s (2048 flops, 9088 bytes), communication 0 s (0 bytes)}}
func.func @roofline(%x: tensor<1024xf32>, %a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> (tensor<1024xf32>, tensor<4x16xf32>) {
  %e = tsr.exp %x : tensor<1024xf32>
  %m = tsr.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return %e, %m : tensor<1024xf32>, tensor<4x16xf32>
}

// -----

// Every collective on a three-axis mesh, B = 1024 bytes unless said
// (links: pp 1e-5 s + 1e-9 s/byte, dp 1e-6 + 1e-9, tp 1e-6 + 1e-10).
module attributes {tsr.mesh = #tsr.mesh<["pp"=2, "dp"=2, "tp"=4]>} {
  // Communication: 6.1536e-6 + 1.512e-6 + 7.896e-6 + 3.0096e-6 + 1.1024e-5
  // = 2.9596e-5 s, 1536 + 512 + 896 + 96 + 1024 = 4064 bytes.
  // expected-remark @+1 {{estimated 2.96e-05 s: compute 0 s (0 flops, 0 bytes), communication 2.96e-05 s (4064 bytes)}}
  func.func @collectives(%x: tensor<256xf32>, %s: tensor<32xf32>, %t: tensor<8x4xf32>) -> (tensor<256xf32>, tensor<128xf32>, tensor<256xf32>, tensor<8x4xf32>, tensor<256xf32>) {
    // N = 4 over tp: 2*3 = 6 messages, 2*3/4*1024 = 1536 bytes:
    // 6e-6 + 1.536e-7 = 6.1536e-6 s.
    // expected-note @+1 {{all_reduce over ["tp"]: 1536 bytes, 6.154e-06 s}}
    %r = tsr.all_reduce %x {mesh_axes = ["tp"], reduction = #tsr.reduction<sum>} : (tensor<256xf32>) -> tensor<256xf32>
    // N = 2 over dp, B the operand's: 1 message, 1/2*1024 = 512 bytes:
    // 1e-6 + 5.12e-7 = 1.512e-6 s.
    // expected-note @+1 {{reduce_scatter over ["dp"]: 512 bytes, 1.512e-06 s}}
    %rs = tsr.reduce_scatter %x {mesh_axes = ["dp"], reduction = #tsr.reduction<sum>} : (tensor<256xf32>) -> tensor<128xf32>
    // Two of the three axes: N = 2*4 = 8, B the result's. The slowest link
    // for 1024 bytes is dp's (1e-6 + 1.024e-6 against tp's 1e-6 +
    // 1.024e-7): 7 messages, 7/8*1024 = 896 bytes: 7e-6 + 8.96e-7 =
    // 7.896e-6 s.
    // expected-note @+1 {{all_gather over ["dp", "tp"]: 896 bytes, 7.896e-06 s}}
    %ag = tsr.all_gather %s {mesh_axes = ["dp", "tp"]} : (tensor<32xf32>) -> tensor<256xf32>
    // As all_gather: N = 4 over tp, B = 128: 3 messages, 3/4*128 = 96
    // bytes: 3e-6 + 9.6e-9 = 3.0096e-6 s.
    // expected-note @+1 {{all_to_all over ["tp"]: 96 bytes, 3.01e-06 s}}
    %a2a = tsr.all_to_all %t {mesh_axes = ["tp"]} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    // Binomial tree, N = 2 over pp: ceil(log2 2) = 1 step of 1024 bytes:
    // 1e-5 + 1.024e-6 = 1.1024e-5 s.
    // expected-note @+1 {{broadcast_from over ["pp"]: 1024 bytes, 1.102e-05 s}}
    %b = tsr.broadcast_from %x {mesh_axes = ["pp"], root = 0 : i64} : (tensor<256xf32>) -> tensor<256xf32>
    return %r, %rs, %ag, %a2a, %b : tensor<256xf32>, tensor<128xf32>, tensor<256xf32>, tensor<8x4xf32>, tensor<256xf32>
  }
}

// -----

// A broadcast over N = 8 takes ceil(log2 8) = 3 steps of B = 1024 bytes
// over dp's link: 3 * (1e-6 + 1.024e-6) = 6.072e-6 s. A group of one rank
// costs nothing (and needs no link). A call costs what its callee does:
// the caller adds 1.024e-6 s for its exp of 128 f32 (128 flops, 1024
// bytes: memory-bound) to the callee's 6.072e-6. ep takes default_link,
// though its group of one never uses it.
module attributes {tsr.mesh = #tsr.mesh<["ep"=1, "dp"=8]>} {
  // expected-remark @+1 {{estimated 6.072e-06 s: compute 0 s (0 flops, 0 bytes), communication 6.072e-06 s (3072 bytes)}}
  func.func @callee(%x: tensor<256xf32>) -> tensor<256xf32> {
    // expected-note @+1 {{broadcast_from over ["dp"]: 3072 bytes, 6.072e-06 s}}
    %b = tsr.broadcast_from %x {mesh_axes = ["dp"], root = 0 : i64} : (tensor<256xf32>) -> tensor<256xf32>
    // expected-note @+1 {{all_reduce over ["ep"]: 0 bytes, 0 s}}
    %r = tsr.all_reduce %b {mesh_axes = ["ep"], reduction = #tsr.reduction<sum>} : (tensor<256xf32>) -> tensor<256xf32>
    return %r : tensor<256xf32>
  }
  // expected-remark @+1 {{estimated 7.096e-06 s: compute 1.024e-06 s (128 flops, 1024 bytes), communication 6.072e-06 s (3072 bytes)}}
  func.func @caller(%x: tensor<256xf32>, %y: tensor<128xf32>) -> (tensor<256xf32>, tensor<128xf32>) {
    %c = func.call @callee(%x) : (tensor<256xf32>) -> tensor<256xf32>
    %e = tsr.exp %y : tensor<128xf32>
    return %c, %e : tensor<256xf32>, tensor<128xf32>
  }
}

// -----

// Two axes of one mesh with different links: dp (1e-6 s + 1e-9 s/byte)
// and sp (2e-5 + 1e-11), a high-latency, high-bandwidth link. A group over
// both goes at the pace of whichever is slower for its B: sp for small
// messages, dp for large ones.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "sp"=2]>} {
  // Communication: 3.024e-6 + 4.001e-5 + 1.2e-4 + 1.043e-4 = 2.674e-4 s,
  // 1024 + 1024 + 1536 + 98304 = 101888 bytes.
  // expected-remark @+1 {{estimated 0.0002674 s: compute 0 s (0 flops, 0 bytes), communication 0.0002674 s (101888 bytes)}}
  func.func @two_axes(%x: tensor<256xf32>, %y: tensor<16384xf32>) -> (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<16384xf32>) {
    // N = 2, B = 1024: 2 messages, 1024 bytes. Over dp: 2e-6 + 1.024e-6 =
    // 3.024e-6 s; over sp: 4e-5 + 1.024e-8 = 4.001e-5 s.
    // expected-note @+1 {{all_reduce over ["dp"]: 1024 bytes, 3.024e-06 s}}
    %a = tsr.all_reduce %x {mesh_axes = ["dp"], reduction = #tsr.reduction<sum>} : (tensor<256xf32>) -> tensor<256xf32>
    // expected-note @+1 {{all_reduce over ["sp"]: 1024 bytes, 4.001e-05 s}}
    %b = tsr.all_reduce %x {mesh_axes = ["sp"], reduction = #tsr.reduction<sum>} : (tensor<256xf32>) -> tensor<256xf32>
    // N = 4, B = 1024: sp is the slower (2e-5 + 1.024e-8 against dp's 1e-6
    // + 1.024e-6): 6 messages, 1536 bytes: 1.2e-4 + 1.536e-8 s.
    // expected-note @+1 {{all_reduce over ["dp", "sp"]: 1536 bytes, 0.00012 s}}
    %c = tsr.all_reduce %x {mesh_axes = ["dp", "sp"], reduction = #tsr.reduction<sum>} : (tensor<256xf32>) -> tensor<256xf32>
    // N = 4, B = 65536: dp is the slower (1e-6 + 6.554e-5 against sp's 2e-5
    // + 6.554e-7): 6 messages, 98304 bytes: 6e-6 + 9.83e-5 = 1.043e-4 s.
    // expected-note @+1 {{all_reduce over ["dp", "sp"]: 98304 bytes, 0.0001043 s}}
    %d = tsr.all_reduce %y {mesh_axes = ["dp", "sp"], reduction = #tsr.reduction<sum>} : (tensor<16384xf32>) -> tensor<16384xf32>
    return %a, %b, %c, %d : tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<16384xf32>
  }
}
