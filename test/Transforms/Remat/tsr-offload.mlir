// RUN: tessera-opt %s --tsr-offload | FileCheck %s
// RUN: tessera-opt %s "--tsr-offload=host-bandwidth=1e6" | FileCheck %s --check-prefix=SLOW
// RUN: not tessera-opt %s "--tsr-offload=host-bandwidth=0" 2>&1 | FileCheck %s --check-prefix=BANDWIDTH

// The tanh's result is copied out right after it is made; at 50 GB/s the
// 64 KiB copy (1.3 us) is covered by the next matmul (4.2 MFLOP, 23 us at
// 185 GFLOP/s), so the step waits for it after that matmul, the forward
// pass's last read. The copy back starts one backward op before the first
// backward read (again covered) and is waited for right before it. The
// backward ops read the prefetched value, the backward reshape a clone of
// the forward reshape on it; transfers are numbered in program order, the
// marks are gone.
// CHECK-LABEL: func.func @mlp(
// CHECK: %[[H:.*]] = tsr.tanh %{{.*}} : tensor<64x256xf32>
// CHECK-NEXT: tsr.offload_start %[[H]] {copy_seconds = 1.310720e-06 : f64, exposed_seconds = 0.000000e+00 : f64, transfer = 0 : i64, tsr.reason = "saved for the backward pass; 65536 bytes to host memory and back, each copy 1.311e-06 s at 5.000e+10 bytes/s, 0.000e+00 s of it not overlapped by compute"} : tensor<64x256xf32>
// CHECK-NEXT: tsr.reshape %[[H]]
// CHECK-NEXT: %[[Y:.*]] = tsr.matmul %[[H]], %arg2
// CHECK-NEXT: tsr.offload_wait %[[H]] {transfer = 0 : i64} : tensor<64x256xf32>
// CHECK-NEXT: tsr.matmul %[[Y]], %arg2 :
// CHECK-NEXT: tsr.matmul {{.*}} {tsr.backward}
// CHECK-NEXT: %[[P:.*]] = tsr.prefetch_start {transfer = 0 : i64, tsr.backward} -> tensor<64x256xf32>
// CHECK-NEXT: %[[DH:.*]] = tsr.matmul {{.*}} {tsr.backward}
// CHECK-NEXT: %[[B:.*]] = tsr.prefetch_wait %[[P]] {transfer = 0 : i64, tsr.backward} : tensor<64x256xf32> -> tensor<64x256xf32>
// CHECK-NEXT: %[[R:.*]] = tsr.reshape %[[B]] {tsr.backward} : tensor<64x256xf32> to tensor<16384xf32>
// CHECK-NEXT: tsr.mul %[[B]], %[[DH]] {tsr.backward}
// CHECK-NEXT: tsr.reshape %[[R]] {tsr.backward}
// CHECK-NOT: tsr.remat
// CHECK: return

// At 1 MB/s the copy (66 ms) outlasts the rest of the forward pass: the
// step waits for it where the backward pass starts, and the model counts
// both copies as exposed.
// SLOW-LABEL: func.func @mlp(
// SLOW: tsr.offload_start %{{.*}} {copy_seconds = 0.065535999999999997 : f64, exposed_seconds = 0.13{{[0-9]+}} : f64
// SLOW-NEXT: tsr.reshape
// SLOW-NEXT: tsr.matmul %{{.*}}, %arg2 :
// SLOW-NEXT: tsr.matmul %{{.*}}, %arg2 :
// SLOW-NEXT: tsr.offload_wait
// SLOW-NEXT: tsr.prefetch_start
// SLOW-NEXT: tsr.matmul {{.*}} {tsr.backward}

// BANDWIDTH: error: tsr-offload needs positive bandwidths and peak FLOP/s
func.func @mlp(%x: tensor<64x256xf32>, %w: tensor<256x256xf32>, %w2: tensor<256x256xf32>) -> tensor<64x256xf32> {
  %a = tsr.matmul %x, %w : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %h = tsr.tanh %a {tsr.remat = "offload"} : tensor<64x256xf32>
  %r = tsr.reshape %h : tensor<64x256xf32> to tensor<16384xf32>
  %y = tsr.matmul %h, %w2 : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %y2 = tsr.matmul %y, %w2 : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %dy = tsr.matmul %y2, %w2 {tsr.backward} : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %dh = tsr.matmul %dy, %w2 {tsr.backward} : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %t = tsr.mul %h, %dh {tsr.backward} : tensor<64x256xf32>, tensor<64x256xf32> -> tensor<64x256xf32>
  %rb = tsr.reshape %r {tsr.backward} : tensor<16384xf32> to tensor<64x256xf32>
  %u = tsr.add %t, %rb {tsr.backward} : tensor<64x256xf32>, tensor<64x256xf32> -> tensor<64x256xf32>
  return %u : tensor<64x256xf32>
}

// A marked op that the backward pass does not read has nothing to offload:
// the mark goes, nothing is inserted.
// CHECK-LABEL: func.func @unread(
// CHECK-NOT: tsr.offload_start
// CHECK-NOT: tsr.remat
// CHECK: return
func.func @unread(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = tsr.tanh %x {tsr.remat = "offload"} : tensor<4xf32>
  %g = tsr.mul %x, %x {tsr.backward} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s = tsr.add %h, %g : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}
