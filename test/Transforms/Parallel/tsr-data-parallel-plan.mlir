// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 zero=0 bucket-bytes=24" | FileCheck %s --check-prefix=SMALL
// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=4 zero=2" | FileCheck %s --check-prefix=ZERO2
// RUN: tessera-opt %S/Inputs/mesh-dp-tp.mlir "--tsr-data-parallel-plan=zero=3" | FileCheck %s --check-prefix=MESH
// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 compression=topk:0.25" | FileCheck %s --check-prefix=TOPK
// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 compression=topk:0.001" | FileCheck %s --check-prefix=SMALLR
// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 compression=qsgd:4" | FileCheck %s --check-prefix=QSGD
// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 compression=powersgd:1" | FileCheck %s --check-prefix=PSGD1
// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 compression=powersgd:2" | FileCheck %s --check-prefix=PSGD2
// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 local-steps=8" | FileCheck %s --check-prefix=LOCAL
// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 compression=onebit:5" | FileCheck %s --check-prefix=ONEBIT
// RUN: tessera-opt %s "--tsr-data-parallel-plan=dp=2 local-steps=8" --tsr-data-parallel | FileCheck %s --check-prefix=LOCALAPPLY

// The plan is attributes only: the mesh, the ZeRO layout on the function and
// a bucket per gradient; the body is untouched. b's gradient is computed
// first (backward order), so it opens bucket 0; with 24-byte buckets w's
// 24 bytes do not fit beside b's 8 and get bucket 1.
// SMALL: module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>}
// SMALL: func.func @main(
// SMALL-SAME: tensor<3x2xf32> {tsr.bucket = 1 : i64, tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}
// SMALL-SAME: tensor<2xf32> {tsr.bucket = 0 : i64, tsr.grad_of = 1 : i64, tsr.name = "grad.b", tsr.role = #tsr.role<grad>}
// SMALL-SAME: attributes {tsr.zero = #tsr.zero<stage = 0, axes = ["dp"]>}
// SMALL-NOT: tsr.all_reduce
// SMALL-NOT: tsr.reduce_scatter
// SMALL: return
// The default 25 MiB bucket holds both.
// ZERO2: module attributes {tsr.mesh = #tsr.mesh<["dp"=4]>}
// ZERO2: tensor<3x2xf32> {tsr.bucket = 0 : i64
// ZERO2-SAME: tensor<2xf32> {tsr.bucket = 0 : i64
// ZERO2-SAME: attributes {tsr.zero = #tsr.zero<stage = 2, axes = ["dp"]>}
// With compression the matrix w gets the compressor and a bucket of its
// own, numbered after the plain ones; the vector b stays in bucket 0.
// TOPK: tensor<3x2xf32> {tsr.bucket = 1 : i64, tsr.compression = "topk:0.25", tsr.grad_of = 0 : i64
// TOPK-SAME: tensor<2xf32> {tsr.bucket = 0 : i64, tsr.grad_of = 1 : i64
// The spec is written back as given, so a small ratio survives; QSGD's
// default bucket of 512 is spelled out.
// SMALLR: tsr.compression = "topk:0.001"
// QSGD: tsr.compression = "qsgd:4:512"
// PowerSGD compresses a matrix only if its factors are smaller: for w
// [3, 2], rank 1 sends 3 + 2 < 6 elements, rank 2 would send 10.
// PSGD1: tensor<3x2xf32> {tsr.bucket = 1 : i64, tsr.compression = "powersgd:1"
// PSGD2-NOT: tsr.compression
// PSGD2: tensor<3x2xf32> {tsr.bucket = 0 : i64, tsr.grad_of = 0 : i64
// 1-bit Adam exchanges the momentum of every gradient, vectors too: both
// share one compressed bucket; the spec spells out beta1.
// ONEBIT: tensor<3x2xf32> {tsr.bucket = 0 : i64, tsr.compression = "onebit:5:0.9", tsr.grad_of = 0 : i64
// ONEBIT-SAME: tensor<2xf32> {tsr.bucket = 0 : i64, tsr.compression = "onebit:5:0.9", tsr.grad_of = 1 : i64
// Local SGD plans no bucket: the function gets the period, and
// tsr-data-parallel then reduces the loss alone (tsr-local-sgd averages
// what the optimizer updates).
// LOCAL-NOT: tsr.bucket
// LOCAL: attributes {tsr.local_steps = 8 : i64, tsr.zero = #tsr.zero<stage = 0, axes = ["dp"]>}
// LOCALAPPLY: tsr.all_reduce %{{.+}} {mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["loss"]}
// LOCALAPPLY-NOT: tsr.all_reduce
// LOCALAPPLY-NOT: tsr.wait
// LOCALAPPLY: return
func.func @main(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %b: tensor<2xf32> {tsr.name = "b", tsr.role = #tsr.role<param>},
                %x: tensor<4x3xf32> {tsr.name = "x"})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>},
        tensor<2xf32> {tsr.grad_of = 1 : i64, tsr.name = "grad.b", tsr.role = #tsr.role<grad>}) {
  %y = tsr.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %z = tsr.add %y, %b : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %l = tsr.reduce_sum %z {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  %one = tsr.constant dense<1.0> : tensor<4x2xf32>
  %gb = tsr.reduce_sum %one {axes = array<i64: 0>, keepdims = false} : (tensor<4x2xf32>) -> tensor<2xf32>
  %xt = tsr.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %gw = tsr.matmul %xt, %one : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
  return %l, %gw, %gb : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>
}

// A mesh declared by the driver (--mesh) names the data-parallel axis among
// others (Inputs/mesh-dp-tp.mlir): the plan takes its size from there and
// names it in the layout.
// MESH: module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>}
// MESH: attributes {tsr.zero = #tsr.zero<stage = 3, axes = ["dp"]>}
