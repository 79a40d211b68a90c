// RUN: tessera-opt %s --tsr-precision-plan=precision=bf16 | FileCheck %s
// RUN: tessera-opt %s --tsr-precision-plan=precision=fp16 | FileCheck %s --check-prefix=FP16
// RUN: tessera-opt %s "--tsr-precision-plan=precision=bf16 keep-fp32=n_fc2*,w1" | FileCheck %s --check-prefix=KEEP
// RUN: tessera-opt %s --tsr-precision-plan=precision=fp32 | FileCheck %s --check-prefix=FP32

// An MLP with a softmax and its loss. Matmuls go to the low type; the bias
// add and the relu follow the matmul; the residual add of an f32 input and
// a bf16 activation is f32 (the widest); the softmax stores its input's
// type; the reduction, exp and the loss stay f32; the gather of a parameter
// by indices (an embedding lookup) is bf16; integer ops get nothing.

// CHECK-LABEL: func.func @main
// CHECK-SAME: tsr.precision = "bf16"
// FP16-LABEL: func.func @main
// FP16-SAME: tsr.precision = "fp16"
// FP32-NOT: tsr.precision
func.func @main(%x: tensor<4x8xf32>, %ids: tensor<4xi64>,
                %w1: tensor<8x8xf32> {tsr.name = "w1", tsr.role = #tsr.role<param>},
                %b1: tensor<8xf32> {tsr.name = "b1", tsr.role = #tsr.role<param>},
                %emb: tensor<10x8xf32> {tsr.name = "emb", tsr.role = #tsr.role<param>},
                %w2: tensor<8x3xf32> {tsr.name = "w2", tsr.role = #tsr.role<param>},
                %labels: tensor<4xi64> {tsr.role = #tsr.role<label>}) -> tensor<f32> {
  %mask = tsr.constant dense<1.0> : tensor<4x8xf32>
  // CHECK: tsr.matmul {{.*}}tsr.precision = "bf16", tsr.reason = "matmul: bf16 operands, f32 accumulation"
  // FP16: tsr.matmul {{.*}}tsr.precision = "f16", tsr.reason = "matmul: f16 operands, f32 accumulation"
  // KEEP: tsr.matmul {{.*}}tsr.precision = "f32", tsr.reason = "--keep-fp32 matches parameter 'w1'"
  %h = tsr.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("n_fc1")
  // CHECK: tsr.add {{.*}}tsr.precision = "bf16", tsr.reason = "follows its activation operands"
  // KEEP: tsr.add {{.*}}tsr.precision = "f32", tsr.reason = "follows its activation operands"
  %a = tsr.add %h, %b1 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: tsr.relu {{.*}}tsr.precision = "bf16"
  %r0 = tsr.relu %a : tensor<4x8xf32>
  // A value computed from constants alone (a mask) adapts to its user like
  // a parameter: the add follows the bf16 activation.
  // CHECK: tsr.neg {{.*}}tsr.precision = "f32", tsr.reason = "follows its operands: no activation operand, f32"
  %m = tsr.neg %mask : tensor<4x8xf32>
  // CHECK: tsr.add {{.*}}tsr.precision = "bf16", tsr.reason = "follows its activation operands"
  %r = tsr.add %r0, %m : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // An embedding lookup reads the table's bf16 working copy, so the
  // stream it starts is bf16.
  // CHECK: tsr.gather {{.*}}tsr.precision = "bf16", tsr.reason = "embedding lookup: bf16 rows of the table's working copy"
  %e = tsr.gather %emb, %ids {axis = 0 : i64} : (tensor<10x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  // CHECK: tsr.add {{.*}}tsr.precision = "bf16", tsr.reason = "follows its activation operands"
  %s0 = tsr.add %e, %r : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // The f32 data input and a bf16 value: the widest, f32 (PyTorch's
  // promotion).
  // CHECK: tsr.add {{.*}}tsr.precision = "f32", tsr.reason = "follows its activation operands"
  %s = tsr.add %x, %s0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: tsr.exp {{.*}}tsr.precision = "f32", tsr.reason = "exp/log/pow/sqrt/reciprocal/softplus: f32 (range)"
  %x2 = tsr.exp %s : tensor<4x8xf32>
  // CHECK: tsr.matmul {{.*}}tsr.precision = "bf16"
  // KEEP: tsr.matmul {{.*}}tsr.precision = "f32", tsr.reason = "--keep-fp32 matches node 'n_fc2.mm'"
  %l = tsr.matmul %x2, %w2 : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32> loc("n_fc2.mm")
  // The softmax of the bf16 logits stores bf16 (f32 inside).
  // CHECK: tsr.softmax {{.*}}tsr.precision = "bf16", tsr.reason = "softmax: f32 arithmetic inside, stored in its input's type"
  // KEEP: tsr.softmax {{.*}}tsr.precision = "f32", tsr.reason = "softmax: f32 arithmetic inside, stored in its input's type"
  %p = tsr.softmax %l {axis = 1 : i64} : tensor<4x3xf32>
  // CHECK: tsr.reduce_sum {{.*}}tsr.precision = "f32", tsr.reason = "reduction: f32 (accumulation)"
  %t = tsr.reduce_sum %p {axes = array<i64: 1>, keepdims = false} : (tensor<4x3xf32>) -> tensor<4xf32>
  // CHECK: = tsr.cast %{{.*}} : tensor<4xi64> to tensor<4xi32>
  %li = tsr.cast %labels : tensor<4xi64> to tensor<4xi32>
  // CHECK: tsr.softmax_cross_entropy_loss {{.*}}tsr.precision = "f32", tsr.reason = "loss: f32"
  %loss = tsr.softmax_cross_entropy_loss %l, %labels : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
