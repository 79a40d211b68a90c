// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2 zero=0 bucket-bytes=24" --tsr-data-parallel | FileCheck %s --check-prefix=ZERO0
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2" --tsr-data-parallel | FileCheck %s --check-prefix=IGNORE
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2 zero=0" --tsr-data-parallel | FileCheck %s --check-prefix=ONEBUCKET
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2 zero=0" "--tsr-data-parallel=reduce-type=bf16" | FileCheck %s --check-prefix=BF16
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=4 zero=2 bucket-bytes=1024" --tsr-data-parallel | FileCheck %s --check-prefix=ZERO2
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=4 zero=3" --tsr-data-parallel | FileCheck %s --check-prefix=ZERO3
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=4 zero=1" --tsr-data-parallel "--tsr-optimizer=optimizer=adam lr=0.01" | FileCheck %s --check-prefix=ADAM1
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=4 zero=3" --tsr-data-parallel "--tsr-optimizer=optimizer=lamb lr=0.01 clip-norm=1.0" | FileCheck %s --check-prefix=LAMB3
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2 compression=topk:0.25" --tsr-data-parallel | FileCheck %s --check-prefix=TOPK
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2 zero=2 compression=topk:0.25" --tsr-data-parallel "--tsr-optimizer=optimizer=sgd lr=0.1" | FileCheck %s --check-prefix=TOPK2
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2 compression=qsgd:8:4" --tsr-data-parallel | FileCheck %s --check-prefix=QSGD
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2 compression=topk:0.5" --tsr-data-parallel | FileCheck %s --check-prefix=TWO
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2 compression=powersgd:1" --tsr-data-parallel | FileCheck %s --check-prefix=PSGD
// RUN: tessera-opt %s -split-input-file "--tsr-data-parallel-plan=dp=2 compression=onebit:3" --tsr-data-parallel | FileCheck %s --check-prefix=ONEBIT

// A loss-and-gradient function as tsr-autodiff leaves it: y = x·w + b, the
// loss sums y; backward ops carry tsr.backward. The
// gradient of b (defined first) completes before that of w.
func.func @main(%w: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %b: tensor<2xf32> {tsr.name = "b", tsr.role = #tsr.role<param>},
                %x: tensor<4x3xf32> {tsr.name = "x"})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>},
        tensor<2xf32> {tsr.grad_of = 1 : i64, tsr.name = "grad.b", tsr.role = #tsr.role<grad>}) {
  %y = tsr.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %z = tsr.add %y, %b : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %l = tsr.reduce_sum %z {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  %one = tsr.constant {tsr.backward} dense<1.0> : tensor<4x2xf32> loc(fused<"tsr.grad">["l"])
  %gb = tsr.reduce_sum %one {axes = array<i64: 0>, keepdims = false, tsr.backward} : (tensor<4x2xf32>) -> tensor<2xf32> loc(fused<"tsr.grad">["z"])
  %xt = tsr.transpose %x {perm = array<i64: 1, 0>, tsr.backward} : (tensor<4x3xf32>) -> tensor<3x4xf32> loc(fused<"tsr.grad">["y"])
  %gw0 = tsr.matmul %xt, %one {tsr.backward} : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32> loc(fused<"tsr.grad">["y"])
  %gw = tsr.add %gw0, %w {tsr.backward} : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x2xf32> loc(fused<"tsr.grad">["w"])
  return %l, %gw, %gb : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>
}

// ZeRO-0 with 24-byte buckets: b's gradient (8 bytes) fills bucket 0, which
// starts right after it is computed, while w's is still to come; w's (24
// bytes) gets bucket 1. Both are waited for only before the return (where
// the optimizer update goes). The loss is averaged too.
// ZERO0: module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>}
// ZERO0: func.func @main
// ZERO0-SAME: attributes {tsr.zero = #tsr.zero<stage = 0, axes = ["dp"]>}
// ZERO0: %[[GB:.*]] = tsr.reduce_sum %{{.*}} {axes = array<i64: 0>
// ZERO0-NEXT: %[[PB:.*]] = tsr.all_reduce %[[GB]] {async, bucket = 0 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["b"]} : (tensor<2xf32>) -> tensor<2xf32>
// ZERO0-NEXT: tsr.transpose
// ZERO0: %[[GW:.*]] = tsr.add
// ZERO0-NEXT: %[[FW:.*]] = tsr.reshape %[[GW]] : tensor<3x2xf32> to tensor<6xf32>
// ZERO0-NEXT: %[[PW:.*]] = tsr.all_reduce %[[FW]] {async, bucket = 1 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w"]}
// ZERO0-NEXT: %[[L:.*]] = tsr.all_reduce %{{.*}} {mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["loss"]} : (tensor<f32>) -> tensor<f32>
// ZERO0-NEXT: %[[RB:.*]] = tsr.wait %[[PB]] : (tensor<2xf32>) -> tensor<2xf32>
// ZERO0-NEXT: %[[RW:.*]] = tsr.wait %[[PW]] : (tensor<6xf32>) -> tensor<6xf32>
// ZERO0-NEXT: %[[W2:.*]] = tsr.reshape %[[RW]] : tensor<6xf32> to tensor<3x2xf32>
// ZERO0-NEXT: return %[[L]], %[[W2]], %[[RB]]

// topk:0.25 on the matrix w (k = 2 of 6), in compressed bucket 1: this
// rank's residual is a new state argument and result (its row of [2, 6]);
// right after the gradient, the residual is added, the 2 largest
// magnitudes chosen (unsorted TopK) and sent as (i32 index, value) pairs by
// the bucket's two async all-gathers; the rest is the next residual. Before
// the return the 4 pairs are added into zeros and halved. b's vector stays
// in plain bucket 0.
// TOPK: func.func @main({{.*}}%arg3: tensor<6xf32> {tsr.global_shape = array<i64: 2, 6>, tsr.init = 0.000000e+00 : f64, tsr.name = "topk.residual.w", tsr.role = #tsr.role<state>, tsr.shards = 2 : i64})
// TOPK-SAME: tensor<6xf32> {tsr.global_shape = array<i64: 2, 6>, tsr.name = "topk.residual.w", tsr.role = #tsr.role<state>, tsr.shards = 2 : i64, tsr.updates = 3 : i64})
// TOPK: tsr.all_reduce %{{.*}} {async, bucket = 0 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["b"]}
// TOPK: %[[G:.*]] = tsr.reshape %{{.*}} : tensor<3x2xf32> to tensor<6xf32>
// TOPK-NEXT: %[[ACC:.*]] = tsr.add %[[G]], %arg3 : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
// TOPK-NEXT: %[[ABS:.*]] = tsr.abs %[[ACC]]
// TOPK-NEXT: %{{.*}}, %[[IDX:.*]] = tsr.topk %[[ABS]] {axis = 0 : i64, k = 2 : i64, largest = true, sorted = false}
// TOPK-NEXT: %[[VAL:.*]] = tsr.gather_elements %[[ACC]], %[[IDX]] {axis = 0 : i64}
// TOPK-NEXT: %[[ZERO:.*]] = tsr.constant dense<0.000000e+00> : tensor<2xf32>
// TOPK-NEXT: %[[RES:.*]] = tsr.scatter_elements %[[ACC]], %[[IDX]], %[[ZERO]] {axis = 0 : i64}
// TOPK-NEXT: %[[I32:.*]] = tsr.cast %[[IDX]] : tensor<2xi64> to tensor<2xi32>
// TOPK-NEXT: %[[GI:.*]] = tsr.all_gather %[[I32]] {async, bucket = 1 : i64, mesh_axes = ["dp"], serves = ["w"], tsr.compression = "topk:0.25", tsr.dense_bytes = 24 : i64, tsr.reason = "topk:0.25: the indices of the 2 of the 6 gradient elements of 1 parameter each rank sends"} : (tensor<2xi32>) -> tensor<4xi32>
// TOPK-NEXT: %[[GV:.*]] = tsr.all_gather %[[VAL]] {async, bucket = 1 : i64, mesh_axes = ["dp"], serves = ["w"], tsr.compression = "topk:0.25", tsr.reason = "topk:0.25: their values"} : (tensor<2xf32>) -> tensor<4xf32>
// TOPK: %[[WI:.*]] = tsr.wait %[[GI]]
// TOPK-NEXT: %[[WV:.*]] = tsr.wait %[[GV]]
// TOPK-NEXT: %[[I64:.*]] = tsr.cast %[[WI]] : tensor<4xi32> to tensor<4xi64>
// TOPK-NEXT: %[[Z6:.*]] = tsr.constant dense<0.000000e+00> : tensor<6xf32>
// TOPK-NEXT: %[[SUM:.*]] = tsr.scatter_elements %[[Z6]], %[[I64]], %[[WV]] {axis = 0 : i64, reduction = #tsr.scatter_reduction<add>}
// TOPK-NEXT: %[[HALF:.*]] = tsr.constant dense<5.000000e-01> : tensor<f32>
// TOPK-NEXT: %[[MEAN:.*]] = tsr.mul %[[SUM]], %[[HALF]]
// TOPK-NEXT: %[[W:.*]] = tsr.reshape %[[MEAN]] : tensor<6xf32> to tensor<3x2xf32>
// TOPK-NEXT: return %{{.*}}, %[[W]], %{{.*}}, %[[RES]]

// With ZeRO-2 each rank keeps its shard of the dense mean; the optimizer
// carries the residual's update through.
// TOPK2: tsr.local_shard %{{.*}} {mesh_axes = ["dp"]} : (tensor<6xf32>) -> tensor<3xf32>
// TOPK2: return
// TOPK2-SAME: tensor<i64>, tensor<6xf32>

// qsgd:8:4 on w: 6 elements padded to 2 buckets of 4, a norm per bucket,
// levels a = |v|/norm·127 rounded up with probability a − floor(a) by draws
// seeded with FNV-1a("w") and offset by the step's rng (a new argument);
// int8 levels and the norms all-gathered; every rank sums levels·norm over
// the ranks, cuts the padding and divides by 127 and by N.
// QSGD: func.func @main({{.*}}%arg3: tensor<i64> {tsr.name = "rng.step", tsr.role = #tsr.role<rng>})
// QSGD: %[[P:.*]] = tsr.pad %{{.*}} {pads = array<i64: 0, 2>} : (tensor<6xf32>) -> tensor<8xf32>
// QSGD: tsr.reduce_sum %{{.*}} {axes = array<i64: 1>, keepdims = true} : (tensor<2x4xf32>) -> tensor<2x1xf32>
// QSGD: tsr.constant dense<1.270000e+02> : tensor<f32>
// QSGD: tsr.floor
// QSGD-NEXT: tsr.random_uniform %arg3 {seed = -5808541479991114666 : i64} : (tensor<i64>) -> tensor<2x4xf32>
// QSGD: %[[Q:.*]] = tsr.cast %{{.*}} : tensor<8xf32> to tensor<8xi8>
// QSGD: %[[GL:.*]] = tsr.all_gather %[[Q]] {async, bucket = 1 : i64, mesh_axes = ["dp"], serves = ["w"], tsr.compression = "qsgd:8:4", tsr.dense_bytes = 24 : i64, {{.*}}} : (tensor<8xi8>) -> tensor<16xi8>
// QSGD-NEXT: %[[GN:.*]] = tsr.all_gather %{{.*}} {async, bucket = 1 : i64, mesh_axes = ["dp"], serves = ["w"], tsr.compression = "qsgd:8:4", {{.*}}} : (tensor<2xf32>) -> tensor<4xf32>
// QSGD: tsr.wait %[[GL]]
// QSGD: tsr.reshape %{{.*}} : tensor<16xf32> to tensor<2x2x4xf32>
// QSGD: tsr.reduce_sum %{{.*}} {axes = array<i64: 0>, keepdims = false} : (tensor<2x2x4xf32>) -> tensor<2x4xf32>
// QSGD: tsr.slice %{{.*}} {limits = array<i64: 6>, starts = array<i64: 0>
// QSGD-NOT: topk.residual

// onebit:3 (1-bit Adam): a step counter, per parameter a replicated
// momentum copy and a worker error (a row per rank), per bucket a server
// error (8 = 16 padded elements / 2 ranks); steps 1-3 all-reduce the
// gradients, later ones send the momentum's signs packed eight to an i8
// (all-to-all, chunk k to rank k) with the scales (all-gather), then the
// averaged chunk's signs and scales (two all-gathers).
// ONEBIT-LABEL: func.func @main(
// ONEBIT-SAME: tsr.name = "onebit.step"
// ONEBIT-SAME: tsr.name = "onebit.momentum.b"
// ONEBIT-SAME: tsr.global_shape = array<i64: 2, 2>, tsr.init = 0.000000e+00 : f64, tsr.name = "onebit.worker_error.b", tsr.role = #tsr.role<state>, tsr.shards = 2 : i64
// ONEBIT-SAME: tsr.name = "onebit.momentum.w"
// ONEBIT-SAME: %[[SERVER:[a-z0-9]+]]: tensor<8xf32> {tsr.global_shape = array<i64: 2, 8>, tsr.init = 0.000000e+00 : f64, tsr.name = "onebit.server_error.bucket0", tsr.role = #tsr.role<state>, tsr.shards = 2 : i64}
// ONEBIT: %[[STEP:.*]] = tsr.add %{{.*}}, %{{.*}} : tensor<i64>, tensor<i64> -> tensor<i64>
// ONEBIT: %[[WARM:.*]] = tsr.less %[[STEP]], %{{.*}} : tensor<i64>, tensor<i64> -> tensor<i1>
// ONEBIT-NEXT: %[[C:.*]] = tensor.extract %[[WARM]][] : tensor<i1>
// ONEBIT-NEXT: scf.if %[[C]] -> (tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<6xf32>, tensor<8xf32>) {
// ONEBIT: tsr.all_reduce %{{.*}} {bucket = 0 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["b", "w"], tsr.reason = "onebit:3:0.9: warm-up (steps 1-3): the 8 gradient elements, all-reduced"} : (tensor<8xf32>) -> tensor<8xf32>
// ONEBIT: } else {
// ONEBIT: tsr.cast %{{.*}} : tensor<2xi32> to tensor<2xi8>
// ONEBIT: tsr.all_to_all %{{.*}} {bucket = 0 : i64, mesh_axes = ["dp"], serves = ["b", "w"], tsr.compression = "onebit:3:0.9", tsr.dense_bytes = 32 : i64, tsr.reason = "onebit:3:0.9: the signs of the 8 momentum elements (one bit each, chunk k to rank k)"} : (tensor<2x1xi8>) -> tensor<2x1xi8>
// ONEBIT-NEXT: tsr.reshape
// ONEBIT-NEXT: tsr.all_gather %{{.*}} {bucket = 0 : i64, mesh_axes = ["dp"], serves = ["b", "w"], tsr.compression = "onebit:3:0.9", tsr.reason = "onebit:3:0.9: the ranks' scales of their signs"} : (tensor<1xf32>) -> tensor<2xf32>
// ONEBIT: tsr.local_shard %{{.*}} {mesh_axes = ["dp"]} : (tensor<16xf32>) -> tensor<8xf32>
// ONEBIT: tsr.add %{{.*}}, %[[SERVER]] : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
// ONEBIT: tsr.all_gather %{{.*}} {bucket = 0 : i64, mesh_axes = ["dp"], serves = ["b", "w"], tsr.compression = "onebit:3:0.9", tsr.reason = "onebit:3:0.9: every rank's chunk of the averaged signs"} : (tensor<1xi8>) -> tensor<2xi8>
// ONEBIT: tsr.all_gather %{{.*}} {{.*}}tsr.reason = "onebit:3:0.9: their scales"} : (tensor<1xf32>) -> tensor<2xf32>
// ONEBIT: scf.yield

// powersgd:1 on w [3, 2]: M = gradient + residual, Q warm-started (a
// uniform draw the same on every rank while the state is zero), P = M·Q
// averaged by an async all-reduce, orthonormalized (one column here),
// Q = Mᵀ·P̂ averaged, the gradient P̂·Qᵀ, the residual M − P̂·Qᵀ and Q the
// next states.
// PSGD: %arg3: tensor<6xf32> {tsr.global_shape = array<i64: 2, 6>, tsr.init = 0.000000e+00 : f64, tsr.name = "powersgd.residual.w", tsr.role = #tsr.role<state>, tsr.shards = 2 : i64}, %arg4: tensor<2x1xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "powersgd.q.w", tsr.role = #tsr.role<state>}
// PSGD: %[[M:.*]] = tsr.reshape %{{.*}} : tensor<6xf32> to tensor<3x2xf32>
// PSGD: %[[Q0:.*]] = tsr.where %{{.*}}, %{{.*}}, %arg4 : tensor<i1>, tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
// PSGD-NEXT: %[[P:.*]] = tsr.matmul %[[M]], %[[Q0]] : tensor<3x2xf32>, tensor<2x1xf32> -> tensor<3x1xf32>
// PSGD-NEXT: %[[PF:.*]] = tsr.reshape %[[P]]
// PSGD-NEXT: %[[PR:.*]] = tsr.all_reduce %[[PF]] {async, bucket = 1 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w"], tsr.compression = "powersgd:1", tsr.dense_bytes = 24 : i64, {{.*}}} : (tensor<3xf32>) -> tensor<3xf32>
// PSGD: tsr.wait %[[PR]]
// PSGD: %[[MT:.*]] = tsr.transpose %[[M]] {perm = array<i64: 1, 0>}
// PSGD-NEXT: %[[QL:.*]] = tsr.matmul %[[MT]], %{{.*}} : tensor<2x3xf32>, tensor<3x1xf32> -> tensor<2x1xf32>
// PSGD: %[[QR:.*]] = tsr.all_reduce %{{.*}} {bucket = 1 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["w"], tsr.compression = "powersgd:1", {{.*}}} : (tensor<2xf32>) -> tensor<2xf32>
// PSGD: %[[APPROX:.*]] = tsr.matmul %{{.*}}, %{{.*}} : tensor<3x1xf32>, tensor<1x2xf32> -> tensor<3x2xf32>
// PSGD: %[[RES:.*]] = tsr.sub
// PSGD-NEXT: return %{{.*}}, %[[APPROX]], %{{.*}}, %[[RES]], %{{.*}} : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>, tensor<6xf32>, tensor<2x1xf32>

// The default 25 MiB bucket holds both: one concatenated all-reduce,
// sliced back per gradient.
// ONEBUCKET: %[[CAT:.*]] = tsr.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2xf32>, tensor<6xf32>) -> tensor<8xf32>
// ONEBUCKET-NEXT: %[[P:.*]] = tsr.all_reduce %[[CAT]] {async, bucket = 0 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["b", "w"]} : (tensor<8xf32>) -> tensor<8xf32>
// ONEBUCKET: %[[R:.*]] = tsr.wait %[[P]] :
// ONEBUCKET-NEXT: tsr.slice %[[R]] {limits = array<i64: 2>, starts = array<i64: 0>
// ONEBUCKET-NEXT: tsr.slice %[[R]] {limits = array<i64: 8>, starts = array<i64: 2>
// ONEBUCKET-NOT: tsr.all_reduce %{{.*}} {bucket

// reduce-type=bf16: the bucket is divided by N, cast, summed in bf16 and
// cast back; the loss's mean stays f32.
// BF16: %[[CAT:.*]] = tsr.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2xf32>, tensor<6xf32>) -> tensor<8xf32>
// BF16-NEXT: %[[HALF:.*]] = tsr.constant dense<5.000000e-01> : tensor<f32>
// BF16-NEXT: %[[PRE:.*]] = tsr.mul %[[CAT]], %[[HALF]] : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
// BF16-NEXT: %[[LOW:.*]] = tsr.cast %[[PRE]] : tensor<8xf32> to tensor<8xbf16>
// BF16-NEXT: %[[P:.*]] = tsr.all_reduce %[[LOW]] {async, bucket = 0 : i64, mesh_axes = ["dp"], serves = ["b", "w"]} : (tensor<8xbf16>) -> tensor<8xbf16>
// BF16-NEXT: tsr.all_reduce %{{.*}} {mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["loss"]} : (tensor<f32>) -> tensor<f32>
// BF16-NEXT: %[[R:.*]] = tsr.wait %[[P]] : (tensor<8xbf16>) -> tensor<8xbf16>
// BF16-NEXT: %[[WIDE:.*]] = tsr.cast %[[R]] : tensor<8xbf16> to tensor<8xf32>
// BF16-NEXT: tsr.slice %[[WIDE]] {limits = array<i64: 2>, starts = array<i64: 0>

// ZeRO-2 on 4 ranks: every gradient is padded to 4·c (b: 2 -> 4, c = 1;
// w: 6 -> 8, c = 2) and laid out as [4, c] blocks, so the reduce-scatter
// leaves each rank its shard of both; the results are shards.
// ZERO2: func.func @main({{.*}}-> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>, tsr.shards = 4 : i64}, tensor<1xf32> {tsr.grad_of = 1 : i64, tsr.name = "grad.b", tsr.role = #tsr.role<grad>, tsr.shards = 4 : i64})
// ZERO2: tsr.pad %{{.*}} {pads = array<i64: 0, 2>} : (tensor<2xf32>) -> tensor<4xf32>
// ZERO2: tsr.reshape %{{.*}} : tensor<4xf32> to tensor<4x1xf32>
// ZERO2: tsr.pad %{{.*}} {pads = array<i64: 0, 2>} : (tensor<6xf32>) -> tensor<8xf32>
// ZERO2: tsr.reshape %{{.*}} : tensor<8xf32> to tensor<4x2xf32>
// ZERO2: tsr.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x3xf32>
// ZERO2: tsr.reshape %{{.*}} : tensor<4x3xf32> to tensor<12xf32>
// ZERO2: %[[P:.*]] = tsr.reduce_scatter %{{.*}} {async, bucket = 0 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["b", "w"]} : (tensor<12xf32>) -> tensor<3xf32>
// ZERO2: %[[S:.*]] = tsr.wait %[[P]] : (tensor<3xf32>) -> tensor<3xf32>
// ZERO2: tsr.slice %[[S]] {limits = array<i64: 1>, starts = array<i64: 0>
// ZERO2: tsr.slice %[[S]] {limits = array<i64: 3>, starts = array<i64: 1>

// ZeRO-3: trained parameters become shards; w is gathered before its
// forward use (the matmul) and again before its backward use (the add),
// b only before its forward use.
// ZERO3: func.func @main(%[[W:arg0]]: tensor<2xf32> {tsr.global_shape = array<i64: 3, 2>, tsr.name = "w", tsr.role = #tsr.role<param>, tsr.shards = 4 : i64}, %[[B:arg1]]: tensor<1xf32> {tsr.global_shape = array<i64: 2>, tsr.name = "b", tsr.role = #tsr.role<param>, tsr.shards = 4 : i64}
// ZERO3: %[[GW1:.*]] = tsr.all_gather %[[W]] {mesh_axes = ["dp"], serves = ["w"]} : (tensor<2xf32>) -> tensor<8xf32>
// ZERO3-NEXT: %[[TW1:.*]] = tsr.slice %[[GW1]] {limits = array<i64: 6>, starts = array<i64: 0>
// ZERO3-NEXT: %[[FW1:.*]] = tsr.reshape %[[TW1]] : tensor<6xf32> to tensor<3x2xf32>
// ZERO3-NEXT: tsr.matmul %{{.*}}, %[[FW1]]
// ZERO3-NEXT: %[[GB:.*]] = tsr.all_gather %[[B]] {mesh_axes = ["dp"], serves = ["b"]} : (tensor<1xf32>) -> tensor<4xf32>
// ZERO3: tsr.add %{{.*}}, %{{.*}} : tensor<4x2xf32>, tensor<2xf32>
// ZERO3: %[[GW2:.*]] = tsr.all_gather %[[W]] {mesh_axes = ["dp"], serves = ["w"]}
// ZERO3-NEXT: %[[TW2:.*]] = tsr.slice %[[GW2]]
// ZERO3-NEXT: %[[FW2:.*]] = tsr.reshape %[[TW2]]
// ZERO3-NEXT: tsr.add %{{.*}}, %[[FW2]] {tsr.backward} : tensor<3x2xf32>, tensor<3x2xf32>

// ZeRO-1 with Adam: gradients are all-reduced whole; the optimizer takes
// this rank's shard of each parameter and gradient, keeps m and v as
// shards, and all-gathers the new parameter.
// ADAM1: %[[WP:arg[0-9]+]]: tensor<3x2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}
// ADAM1: tensor<2xf32> {tsr.global_shape = array<i64: 3, 2>, tsr.init = 0.000000e+00 : f64, tsr.name = "adam.m.w", tsr.role = #tsr.role<state>, tsr.shards = 4 : i64}
// ADAM1: tsr.all_reduce %{{.*}} {async, bucket = 0 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["b", "w"]}
// ADAM1: tsr.local_shard %{{.*}} {mesh_axes = ["dp"]} : (tensor<8xf32>) -> tensor<2xf32>
// ADAM1: tsr.all_gather %{{.*}} {mesh_axes = ["dp"], serves = ["w"]} : (tensor<2xf32>) -> tensor<8xf32>
// ADAM1: return {{.*}} : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>, tensor<i64>, tensor<2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>

// ZeRO-3 with LAMB and clipping: the global gradient norm and each trust
// ratio's norms sum over every rank's shard; the new parameters stay
// shards (no gather after the update).
// (reduction sum is the default and not printed.)
// LAMB3: tsr.all_reduce %{{.*}} {mesh_axes = ["dp"], serves = ["w", "b"]} : (tensor<f64>) -> tensor<f64>
// LAMB3-COUNT-2: tsr.all_reduce %{{.*}} {mesh_axes = ["dp"], serves = ["w"]} : (tensor<f32>) -> tensor<f32>
// LAMB3-COUNT-2: tsr.all_reduce %{{.*}} {mesh_axes = ["dp"], serves = ["b"]} : (tensor<f32>) -> tensor<f32>
// LAMB3-NOT: tsr.all_gather
// LAMB3: return {{.*}} : tensor<f32>, tensor<2xf32>, tensor<1xf32>, tensor<i64>

// -----

// A loss that ignores label -100 is a mean over a different number of
// labels on every rank: each rank counts its labels, the counts are summed,
// and the rank's loss and gradients are weighted by N * count / total (zero
// on a rank that counts none) before the mean over ranks, which makes the
// result the mean over all counted labels of the global batch.
// IGNORE-LABEL: func.func @counted(
// IGNORE: %[[L:.*]] = tsr.softmax_cross_entropy_loss
// IGNORE-NEXT: %[[IGN:.*]] = tsr.constant dense<-100> : tensor<i64>
// IGNORE-NEXT: %[[IS:.*]] = tsr.equal %{{.*}}, %[[IGN]]
// IGNORE: %[[COUNTED:.*]] = tsr.where %[[IS]]
// IGNORE-NEXT: %[[COUNT:.*]] = tsr.reduce_sum %[[COUNTED]]
// IGNORE-NEXT: %[[TOTAL:.*]] = tsr.all_reduce %[[COUNT]] {mesh_axes = ["dp"], serves = ["loss"]} : (tensor<f32>) -> tensor<f32>
// IGNORE-NEXT: %[[N:.*]] = tsr.constant dense<2.000000e+00> : tensor<f32>
// IGNORE-NEXT: %[[NC:.*]] = tsr.mul %[[N]], %[[COUNT]]
// IGNORE-NEXT: %[[W:.*]] = tsr.div %[[NC]], %[[TOTAL]]
// IGNORE: %[[GW:.*]] = tsr.mul %{{.*}}, %[[W]] : tensor<4x5xf32>, tensor<f32> -> tensor<4x5xf32>
// IGNORE: tsr.all_reduce %{{.*}} {async, bucket = 0 : i64
// IGNORE: %[[LW:.*]] = tsr.mul %[[L]], %[[W]] : tensor<f32>, tensor<f32> -> tensor<f32>
// IGNORE: tsr.all_reduce %{{.*}} {mesh_axes = ["dp"], reduction = #tsr.reduction<mean>, serves = ["loss"]}
func.func @counted(%w: tensor<4x5xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                   %y: tensor<4xi64> {tsr.name = "y", tsr.role = #tsr.role<label>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<4x5xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}) {
  %l = tsr.softmax_cross_entropy_loss %w, %y {reduction = #tsr.loss_reduction<mean>, ignore_index = -100 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  %g = tsr.mul %w, %w {tsr.backward} : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32> loc(fused<"tsr.grad">["l"])
  return %l, %g : tensor<f32>, tensor<4x5xf32>
}

// -----

// A metric counts the rank's samples: the step's is their sum over dp.
// ZERO0-LABEL: func.func @metric(
// ZERO0: %[[H:.*]] = tsr.reduce_sum %arg2
// ZERO0: %[[S:.*]] = tsr.all_reduce %[[H]] {mesh_axes = ["dp"], serves = ["hits"]} : (tensor<i64>) -> tensor<i64>
// ZERO0: return %{{.*}}, %{{.*}}, %[[S]] :
func.func @metric(%w: tensor<2xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                  %x: tensor<4x2xf32> {tsr.name = "x"},
                  %i: tensor<4xi64> {tsr.name = "i"})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>},
        tensor<i64> {tsr.name = "hits", tsr.role = #tsr.role<metric>}) {
  %y = tsr.mul %x, %w : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  %g = tsr.reduce_sum %x {axes = array<i64: 0>, keepdims = false, tsr.backward} : (tensor<4x2xf32>) -> tensor<2xf32>
  %h = tsr.reduce_sum %i {axes = array<i64: 0>, keepdims = false} : (tensor<4xi64>) -> tensor<i64>
  return %l, %g, %h : tensor<f32>, tensor<2xf32>, tensor<i64>
}

// -----

// Two matrices share a compressed bucket: each is compressed alone (k = 4
// of 8 and 3 of 6 at topk:0.5), their pieces travel concatenated in the
// bucket's two all-gathers, and each rank's columns are cut apart after.
// TWO: tsr.topk %{{.*}} {axis = 0 : i64, k = 4 : i64, largest = true, sorted = false}
// TWO: tsr.topk %{{.*}} {axis = 0 : i64, k = 3 : i64, largest = true, sorted = false}
// TWO: %[[CAT:.*]] = tsr.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<4xi64>, tensor<3xi64>) -> tensor<7xi64>
// TWO: tsr.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<4xf32>, tensor<3xf32>) -> tensor<7xf32>
// TWO-NEXT: tsr.cast %[[CAT]] : tensor<7xi64> to tensor<7xi32>
// TWO-NEXT: tsr.all_gather %{{.*}} {async, bucket = 0 : i64, mesh_axes = ["dp"], serves = ["a", "c"], tsr.compression = "topk:0.5", tsr.dense_bytes = 56 : i64, tsr.reason = "topk:0.5: the indices of the 7 of the 14 gradient elements of 2 parameters each rank sends"} : (tensor<7xi32>) -> tensor<14xi32>
// TWO-NEXT: tsr.all_gather %{{.*}} {async, bucket = 0 : i64, {{.*}}} : (tensor<7xf32>) -> tensor<14xf32>
// TWO: tsr.reshape %{{.*}} : tensor<14xi64> to tensor<2x7xi64>
// TWO-NEXT: tsr.slice %{{.*}} {limits = array<i64: 2, 4>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x7xi64>) -> tensor<2x4xi64>
// TWO: tsr.scatter_elements %{{.*}} {axis = 0 : i64, reduction = #tsr.scatter_reduction<add>} : (tensor<8xf32>, tensor<8xi64>, tensor<8xf32>) -> tensor<8xf32>
// TWO: tsr.slice %{{.*}} {limits = array<i64: 2, 7>, starts = array<i64: 0, 4>, steps = array<i64: 1, 1>} : (tensor<2x7xi64>) -> tensor<2x3xi64>
// TWO: tsr.scatter_elements %{{.*}} {axis = 0 : i64, reduction = #tsr.scatter_reduction<add>} : (tensor<6xf32>, tensor<6xi64>, tensor<6xf32>) -> tensor<6xf32>
func.func @two(%a: tensor<4x2xf32> {tsr.name = "a", tsr.role = #tsr.role<param>},
               %c: tensor<2x3xf32> {tsr.name = "c", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<4x2xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.a", tsr.role = #tsr.role<grad>},
        tensor<2x3xf32> {tsr.grad_of = 1 : i64, tsr.name = "grad.c", tsr.role = #tsr.role<grad>}) {
  %l = tsr.reduce_sum %a {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  %ga = tsr.mul %a, %a {tsr.backward} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  %gc = tsr.mul %c, %c {tsr.backward} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return %l, %ga, %gc : tensor<f32>, tensor<4x2xf32>, tensor<2x3xf32>
}
