// RUN: tessera-opt %s -split-input-file --tsr-gpu-attention | FileCheck %s

// A GPT's causal self-attention in bf16: the heads' transposes are read
// through layouts ([B, S, H, D] for Q, K and V, the output written back
// in it), the scale becomes an f32, and the constant mask (-inf, or -1e9,
// above the diagonal) becomes cuDNN's causal mask: one op, nothing left of
// the scores, the softmax or the transposes.
// CHECK-LABEL: func.func @causal(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<2x16x4x16xbf16>, %[[K:[^:]*]]: tensor<2x16x4x16xbf16>, %[[V:[^:]*]]: tensor<2x16x4x16xbf16>, %[[SCALE:[^:]*]]: tensor<bf16>)
// CHECK: %[[S:.*]] = tsr.cast %[[SCALE]] : tensor<bf16> to tensor<f32>
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x16x4x16xbf16>
// CHECK: %[[O:.*]] = tsrt.gpu_attention ins(%[[Q]], %[[K]], %[[V]], %[[S]] : tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<f32>) outs(%[[INIT]] : tensor<2x16x4x16xbf16>) {causal, k_layout = array<i64: 0, 2, 1, 3>, out_layout = array<i64: 0, 2, 1, 3>, q_layout = array<i64: 0, 2, 1, 3>, v_layout = array<i64: 0, 2, 1, 3>} -> tensor<2x16x4x16xbf16>
// CHECK-NOT: tsr.transpose
// CHECK-NOT: tsr.softmax
// CHECK-NOT: tsr.matmul
// CHECK: return %[[O]]
func.func @causal(%q4: tensor<2x16x4x16xbf16>, %k4: tensor<2x16x4x16xbf16>, %v4: tensor<2x16x4x16xbf16>, %scale: tensor<bf16>) -> tensor<2x16x4x16xbf16> {
  %mask32 = tsr.constant dense<[
    [0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
    [0.0, 0.0, -1.0e9, -1.0e9, -1.0e9, -1.0e9, -1.0e9, -1.0e9, -1.0e9, -1.0e9, -1.0e9, -1.0e9, -1.0e9, -1.0e9, -1.0e9, -1.0e9],
    [0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<16x16xf32>
  %mask = tsr.cast %mask32 : tensor<16x16xf32> to tensor<16x16xbf16>
  %q = tsr.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x16xbf16>) -> tensor<2x4x16x16xbf16>
  %kt = tsr.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x16x4x16xbf16>) -> tensor<2x4x16x16xbf16>
  %v = tsr.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x16xbf16>) -> tensor<2x4x16x16xbf16>
  %s = tsr.matmul %q, %kt : tensor<2x4x16x16xbf16>, tensor<2x4x16x16xbf16> -> tensor<2x4x16x16xbf16>
  %t = tsr.mul %s, %scale : tensor<2x4x16x16xbf16>, tensor<bf16> -> tensor<2x4x16x16xbf16>
  %u = tsr.add %t, %mask : tensor<2x4x16x16xbf16>, tensor<16x16xbf16> -> tensor<2x4x16x16xbf16>
  %p = tsr.softmax %u {axis = 3 : i64} : tensor<2x4x16x16xbf16>
  %o = tsr.matmul %p, %v : tensor<2x4x16x16xbf16>, tensor<2x4x16x16xbf16> -> tensor<2x4x16x16xbf16>
  %y = tsr.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x16x16xbf16>) -> tensor<2x16x4x16xbf16>
  return %y : tensor<2x16x4x16xbf16>
}

// -----

// Another bias is passed as [1, 1, Sq, Skv] (a mask that does not mask
// after the diagonal only is not causal); a divisor is inverted; operands
// that are no transposes keep the identity layout, Kᵀ its own ([B, H, D,
// S]: logical dimensions 0, 1, 3, 2); the output is written [B, H, S, D].
// CHECK-LABEL: func.func @bias(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<1x2x8x8xf16>, %[[KT:[^:]*]]: tensor<1x2x8x32xf16>, %[[V:[^:]*]]: tensor<1x2x32x8xf16>, %[[D:[^:]*]]: tensor<1x1x1x1xf16>, %[[BIAS:[^:]*]]: tensor<8x32xf16>)
// CHECK: %[[D0:.*]] = tsr.reshape %[[D]] : tensor<1x1x1x1xf16> to tensor<f16>
// CHECK: %[[D32:.*]] = tsr.cast %[[D0]] : tensor<f16> to tensor<f32>
// CHECK: %[[SCALE:.*]] = tsr.reciprocal %[[D32]] : tensor<f32>
// CHECK: %[[B4:.*]] = tsr.reshape %[[BIAS]] : tensor<8x32xf16> to tensor<1x1x8x32xf16>
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<1x2x8x8xf16>
// CHECK: tsrt.gpu_attention ins(%[[Q]], %[[KT]], %[[V]], %[[SCALE]] : tensor<1x2x8x8xf16>, tensor<1x2x8x32xf16>, tensor<1x2x32x8xf16>, tensor<f32>) bias(%[[B4]] : tensor<1x1x8x32xf16>) outs(%[[INIT]] : tensor<1x2x8x8xf16>) {k_layout = array<i64: 0, 1, 3, 2>, out_layout = array<i64: 0, 1, 2, 3>, q_layout = array<i64: 0, 1, 2, 3>, v_layout = array<i64: 0, 1, 2, 3>}
func.func @bias(%q: tensor<1x2x8x8xf16>, %kt: tensor<1x2x8x32xf16>, %v: tensor<1x2x32x8xf16>, %d: tensor<1x1x1x1xf16>, %bias: tensor<8x32xf16>) -> tensor<1x2x8x8xf16> {
  %s = tsr.matmul %q, %kt : tensor<1x2x8x8xf16>, tensor<1x2x8x32xf16> -> tensor<1x2x8x32xf16>
  %t = tsr.div %s, %d : tensor<1x2x8x32xf16>, tensor<1x1x1x1xf16> -> tensor<1x2x8x32xf16>
  %u = tsr.add %bias, %t : tensor<8x32xf16>, tensor<1x2x8x32xf16> -> tensor<1x2x8x32xf16>
  %p = tsr.softmax %u {axis = 3 : i64} : tensor<1x2x8x32xf16>
  %o = tsr.matmul %p, %v : tensor<1x2x8x32xf16>, tensor<1x2x32x8xf16> -> tensor<1x2x8x8xf16>
  return %o : tensor<1x2x8x8xf16>
}

// -----

// Without a scale cuDNN's is 1; a full [B, H, Sq, Skv] bias passes as it is.
// CHECK-LABEL: func.func @unscaled(
// CHECK: %[[ONE:.*]] = tsr.constant dense<1.000000e+00> : tensor<f32>
// CHECK: tsrt.gpu_attention ins(%arg0, %arg1, %arg2, %[[ONE]] : {{.*}}) bias(%arg3 : tensor<1x2x8x8xbf16>)
func.func @unscaled(%q: tensor<1x2x8x8xbf16>, %kt: tensor<1x2x8x8xbf16>, %v: tensor<1x2x8x8xbf16>, %bias: tensor<1x2x8x8xbf16>) -> tensor<1x2x8x8xbf16> {
  %s = tsr.matmul %q, %kt : tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16> -> tensor<1x2x8x8xbf16>
  %u = tsr.add %s, %bias : tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16> -> tensor<1x2x8x8xbf16>
  %p = tsr.softmax %u {axis = 3 : i64} : tensor<1x2x8x8xbf16>
  %o = tsr.matmul %p, %v : tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16> -> tensor<1x2x8x8xbf16>
  return %o : tensor<1x2x8x8xbf16>
}

// -----

// What stays tsr: f32 attention (cuDNN has no f32 kernels), probabilities
// that something else reads too (the backward pass of training), a head
// dimension that is no multiple of 8, and a softmax over another axis.
// CHECK-LABEL: func.func @kept(
// CHECK-NOT: tsrt.gpu_attention
// CHECK-COUNT-4: tsr.softmax
// CHECK-NOT: tsrt.gpu_attention
func.func @kept(%q: tensor<1x2x8x8xf32>, %qb: tensor<1x2x8x8xbf16>, %q12: tensor<1x2x8x12xbf16>, %k12: tensor<1x2x12x8xbf16>, %v12: tensor<1x2x8x12xbf16>) -> (tensor<1x2x8x8xf32>, tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16>, tensor<1x2x8x12xbf16>, tensor<1x2x8x8xbf16>) {
  %s = tsr.matmul %q, %q : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
  %p = tsr.softmax %s {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %o = tsr.matmul %p, %q : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
  %sb = tsr.matmul %qb, %qb : tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16> -> tensor<1x2x8x8xbf16>
  %pb = tsr.softmax %sb {axis = 3 : i64} : tensor<1x2x8x8xbf16>
  %ob = tsr.matmul %pb, %qb : tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16> -> tensor<1x2x8x8xbf16>
  %s12 = tsr.matmul %q12, %k12 : tensor<1x2x8x12xbf16>, tensor<1x2x12x8xbf16> -> tensor<1x2x8x8xbf16>
  %p12 = tsr.softmax %s12 {axis = 3 : i64} : tensor<1x2x8x8xbf16>
  %o12 = tsr.matmul %p12, %v12 : tensor<1x2x8x8xbf16>, tensor<1x2x8x12xbf16> -> tensor<1x2x8x12xbf16>
  %s2 = tsr.matmul %qb, %qb : tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16> -> tensor<1x2x8x8xbf16>
  %p2 = tsr.softmax %s2 {axis = 2 : i64} : tensor<1x2x8x8xbf16>
  %o2 = tsr.matmul %p2, %qb : tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16> -> tensor<1x2x8x8xbf16>
  return %o, %ob, %pb, %o12, %o2 : tensor<1x2x8x8xf32>, tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16>, tensor<1x2x8x12xbf16>, tensor<1x2x8x8xbf16>
}

// -----

// Training: the backward pass autodiff derives (dP = dO·Vᵀ, dV = Pᵀ·dO, the
// softmax's P ⊙ (dP − rowsum(dP ⊙ P)), the scale, dQ = dS·K, dKᵀ = Qᵀ·dS)
// becomes one tsrt.gpu_attention_backward that reads the forward op's
// output and row statistics (the scale of each pass cast from the same
// parameter, through a rematerialization barrier); dO is read through the
// transpose that split its heads, and the gradients are written in the
// layouts of the transposes that merge them back (dKᵀ's [B, H, D, S]
// permuted by [0, 3, 1, 2] is [B, S, H, D]). The new ops carry the layer
// and backward marks of the ops they replace (tsr-outline-layers cuts the
// layer cells by them).
// CHECK-LABEL: func.func @training(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<2x8x2x8xbf16>, %[[K:[^:]*]]: tensor<2x8x2x8xbf16>, %[[V:[^:]*]]: tensor<2x8x2x8xbf16>, %[[SCALE:[^:]*]]: tensor<f32>, %[[DO:[^:]*]]: tensor<2x8x2x8xbf16>)
// CHECK: %[[S:.*]] = tsr.cast %{{.*}} : tensor<bf16> to tensor<f32>
// CHECK: %[[O:.*]]:2 = tsrt.gpu_attention ins(%[[Q]], %[[K]], %[[V]], %[[S]] : {{.*}}) outs(%{{.*}}, %{{.*}} : tensor<2x8x2x8xbf16>, tensor<2x2x8xf32>) {k_layout = array<i64: 0, 2, 1, 3>, out_layout = array<i64: 0, 2, 1, 3>, q_layout = array<i64: 0, 2, 1, 3>, tsr.layer = 0 : i64, v_layout = array<i64: 0, 2, 1, 3>} -> tensor<2x8x2x8xbf16>, tensor<2x2x8xf32>
// CHECK: %[[G:.*]]:3 = tsrt.gpu_attention_backward ins(%[[Q]], %[[K]], %[[V]], %[[O]]#0, %[[DO]], %[[O]]#1, %[[S]] : {{.*}}) outs({{.*}}) {d_out_layout = array<i64: 0, 2, 1, 3>, dk_layout = array<i64: 0, 2, 1, 3>, dq_layout = array<i64: 0, 2, 1, 3>, dv_layout = array<i64: 0, 2, 1, 3>, k_layout = array<i64: 0, 2, 1, 3>, out_layout = array<i64: 0, 2, 1, 3>, q_layout = array<i64: 0, 2, 1, 3>, tsr.backward, tsr.layer = 0 : i64, v_layout = array<i64: 0, 2, 1, 3>} -> tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>
// CHECK-NOT: tsr.matmul
// CHECK-NOT: tsr.transpose
// CHECK: return %[[O]]#0, %[[G]]#0, %[[G]]#1, %[[G]]#2
func.func @training(%q4: tensor<2x8x2x8xbf16>, %k4: tensor<2x8x2x8xbf16>, %v4: tensor<2x8x2x8xbf16>, %scale32: tensor<f32>, %do4: tensor<2x8x2x8xbf16>) -> (tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>) {
  %scale = tsr.cast %scale32 : tensor<f32> to tensor<bf16>
  %q = tsr.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x8xbf16>) -> tensor<2x2x8x8xbf16>
  %kt = tsr.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x8x2x8xbf16>) -> tensor<2x2x8x8xbf16>
  %v = tsr.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x8xbf16>) -> tensor<2x2x8x8xbf16>
  %s = tsr.matmul %q, %kt : tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16> -> tensor<2x2x8x8xbf16>
  %t = tsr.mul %s, %scale : tensor<2x2x8x8xbf16>, tensor<bf16> -> tensor<2x2x8x8xbf16>
  %p = tsr.softmax %t {axis = 3 : i64} : tensor<2x2x8x8xbf16>
  %o = tsr.matmul %p, %v {tsr.layer = 0 : i64} : tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16> -> tensor<2x2x8x8xbf16>
  %y = tsr.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x8xbf16>) -> tensor<2x8x2x8xbf16>
  // The backward pass.
  %do = tsr.transpose %do4 {perm = array<i64: 0, 2, 1, 3>, tsr.backward} : (tensor<2x8x2x8xbf16>) -> tensor<2x2x8x8xbf16>
  %vt = tsr.transpose %v {perm = array<i64: 0, 1, 3, 2>, tsr.backward} : (tensor<2x2x8x8xbf16>) -> tensor<2x2x8x8xbf16>
  %dp = tsr.matmul %do, %vt {tsr.backward, tsr.layer = 0 : i64} : tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16> -> tensor<2x2x8x8xbf16>
  %pt = tsr.transpose %p {perm = array<i64: 0, 1, 3, 2>, tsr.backward} : (tensor<2x2x8x8xbf16>) -> tensor<2x2x8x8xbf16>
  %dv = tsr.matmul %pt, %do {tsr.backward} : tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16> -> tensor<2x2x8x8xbf16>
  %m1 = tsr.mul %dp, %p {tsr.backward} : tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16> -> tensor<2x2x8x8xbf16>
  %r = tsr.reduce_sum %m1 {axes = array<i64: 3>, keepdims = true, tsr.backward} : (tensor<2x2x8x8xbf16>) -> tensor<2x2x8x1xbf16>
  %sub = tsr.sub %dp, %r {tsr.backward} : tensor<2x2x8x8xbf16>, tensor<2x2x8x1xbf16> -> tensor<2x2x8x8xbf16>
  %du = tsr.mul %p, %sub {tsr.backward} : tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16> -> tensor<2x2x8x8xbf16>
  %barrier = tsr.remat_barrier %scale32 {tsr.backward} : tensor<f32>
  %scale2 = tsr.cast %barrier {tsr.backward} : tensor<f32> to tensor<bf16>
  %ds = tsr.mul %du, %scale2 {tsr.backward} : tensor<2x2x8x8xbf16>, tensor<bf16> -> tensor<2x2x8x8xbf16>
  %k = tsr.transpose %kt {perm = array<i64: 0, 1, 3, 2>, tsr.backward} : (tensor<2x2x8x8xbf16>) -> tensor<2x2x8x8xbf16>
  %dq = tsr.matmul %ds, %k {tsr.backward} : tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16> -> tensor<2x2x8x8xbf16>
  %qt = tsr.transpose %q {perm = array<i64: 0, 1, 3, 2>, tsr.backward} : (tensor<2x2x8x8xbf16>) -> tensor<2x2x8x8xbf16>
  %dkt = tsr.matmul %qt, %ds {tsr.backward} : tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16> -> tensor<2x2x8x8xbf16>
  %dq4 = tsr.transpose %dq {perm = array<i64: 0, 2, 1, 3>, tsr.backward} : (tensor<2x2x8x8xbf16>) -> tensor<2x8x2x8xbf16>
  %dk4 = tsr.transpose %dkt {perm = array<i64: 0, 3, 1, 2>, tsr.backward} : (tensor<2x2x8x8xbf16>) -> tensor<2x8x2x8xbf16>
  %dv4 = tsr.transpose %dv {perm = array<i64: 0, 2, 1, 3>, tsr.backward} : (tensor<2x2x8x8xbf16>) -> tensor<2x8x2x8xbf16>
  return %y, %dq4, %dk4, %dv4 : tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>, tensor<2x8x2x8xbf16>
}

// -----

// A trainable scale: its gradient reads the scores and dU too, which
// cuDNN's backward does not give. Neither pass is fused.
// CHECK-LABEL: func.func @trainable_scale(
// CHECK-NOT: tsrt.gpu_attention
// CHECK: tsr.softmax
// CHECK-NOT: tsrt.gpu_attention
func.func @trainable_scale(%q: tensor<1x1x8x8xbf16>, %kt: tensor<1x1x8x8xbf16>, %v: tensor<1x1x8x8xbf16>, %scale: tensor<bf16>, %do: tensor<1x1x8x8xbf16>) -> (tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16>, tensor<bf16>) {
  %s = tsr.matmul %q, %kt : tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16> -> tensor<1x1x8x8xbf16>
  %t = tsr.mul %s, %scale : tensor<1x1x8x8xbf16>, tensor<bf16> -> tensor<1x1x8x8xbf16>
  %p = tsr.softmax %t {axis = 3 : i64} : tensor<1x1x8x8xbf16>
  %o = tsr.matmul %p, %v : tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16> -> tensor<1x1x8x8xbf16>
  %vt = tsr.transpose %v {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x1x8x8xbf16>) -> tensor<1x1x8x8xbf16>
  %dp = tsr.matmul %do, %vt : tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16> -> tensor<1x1x8x8xbf16>
  %pt = tsr.transpose %p {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x1x8x8xbf16>) -> tensor<1x1x8x8xbf16>
  %dv = tsr.matmul %pt, %do : tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16> -> tensor<1x1x8x8xbf16>
  %m1 = tsr.mul %dp, %p : tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16> -> tensor<1x1x8x8xbf16>
  %r = tsr.reduce_sum %m1 {axes = array<i64: 3>, keepdims = true} : (tensor<1x1x8x8xbf16>) -> tensor<1x1x8x1xbf16>
  %sub = tsr.sub %dp, %r : tensor<1x1x8x8xbf16>, tensor<1x1x8x1xbf16> -> tensor<1x1x8x8xbf16>
  %du = tsr.mul %p, %sub : tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16> -> tensor<1x1x8x8xbf16>
  %ds = tsr.mul %du, %scale : tensor<1x1x8x8xbf16>, tensor<bf16> -> tensor<1x1x8x8xbf16>
  %gs = tsr.mul %du, %s : tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16> -> tensor<1x1x8x8xbf16>
  %dscale = tsr.reduce_sum %gs {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x1x8x8xbf16>) -> tensor<bf16>
  %k = tsr.transpose %kt {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x1x8x8xbf16>) -> tensor<1x1x8x8xbf16>
  %dq = tsr.matmul %ds, %k : tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16> -> tensor<1x1x8x8xbf16>
  %qt = tsr.transpose %q {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x1x8x8xbf16>) -> tensor<1x1x8x8xbf16>
  %dkt = tsr.matmul %qt, %ds : tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16> -> tensor<1x1x8x8xbf16>
  return %o, %dq, %dkt, %dv, %dscale : tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16>, tensor<1x1x8x8xbf16>, tensor<bf16>
}
