// RUN: tessera-opt %s -split-input-file --tsr-recast-parameters | FileCheck %s

// w's working copy is read by the forward matmul and by the backward
// transpose: the backward pass gets its own cast, after a barrier, right
// before its first use. b's copy has no backward use and is left alone, as
// is the cast of the activation x.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[W:arg[0-9]+]]: tensor<4x3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}
// CHECK: %[[W16:.*]] = tsr.cast %[[W]] : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK: %[[B16:.*]] = tsr.cast %{{.*}} : tensor<3xf32> to tensor<3xbf16>
// CHECK: %[[X16:.*]] = tsr.cast %{{.*}} : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK: tsr.matmul %[[X16]], %[[W16]]
// CHECK: tsr.add %{{.*}}, %[[B16]]
// CHECK: %[[BAR:.*]] = tsr.remat_barrier %[[W]] {tsr.backward} : tensor<4x3xf32>
// CHECK-NEXT: %[[AGAIN:.*]] = tsr.cast %[[BAR]] {tsr.backward} : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK-NEXT: tsr.transpose %[[AGAIN]] {perm = array<i64: 1, 0>, tsr.backward}
// CHECK-NOT: tsr.remat_barrier
func.func @main(%w: tensor<4x3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %b: tensor<3xf32> {tsr.name = "b", tsr.role = #tsr.role<param>},
                %x: tensor<2x4xf32> {tsr.name = "x"},
                %dy: tensor<2x3xbf16> {tsr.name = "dy"}) -> (tensor<2x3xbf16>, tensor<2x4xbf16>) {
  %w16 = tsr.cast %w : tensor<4x3xf32> to tensor<4x3xbf16>
  %b16 = tsr.cast %b : tensor<3xf32> to tensor<3xbf16>
  %x16 = tsr.cast %x : tensor<2x4xf32> to tensor<2x4xbf16>
  %y = tsr.matmul %x16, %w16 : tensor<2x4xbf16>, tensor<4x3xbf16> -> tensor<2x3xbf16>
  %z = tsr.add %y, %b16 : tensor<2x3xbf16>, tensor<3xbf16> -> tensor<2x3xbf16>
  %wt = tsr.transpose %w16 {perm = array<i64: 1, 0>, tsr.backward} : (tensor<4x3xbf16>) -> tensor<3x4xbf16>
  %dx = tsr.matmul %dy, %wt {tsr.backward} : tensor<2x3xbf16>, tensor<3x4xbf16> -> tensor<2x4xbf16>
  return %z, %dx : tensor<2x3xbf16>, tensor<2x4xbf16>
}

// -----

// A copy only the backward pass reads keeps its one cast.
// CHECK-LABEL: func.func @backward_only(
// CHECK-NOT: tsr.remat_barrier
func.func @backward_only(%w: tensor<4x3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                         %dy: tensor<2x3xbf16> {tsr.name = "dy"}) -> tensor<2x4xbf16> {
  %w16 = tsr.cast %w : tensor<4x3xf32> to tensor<4x3xbf16>
  %wt = tsr.transpose %w16 {perm = array<i64: 1, 0>, tsr.backward} : (tensor<4x3xbf16>) -> tensor<3x4xbf16>
  %dx = tsr.matmul %dy, %wt {tsr.backward} : tensor<2x3xbf16>, tensor<3x4xbf16> -> tensor<2x4xbf16>
  return %dx : tensor<2x4xbf16>
}
