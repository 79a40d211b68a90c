// RUN: tessera-opt %s "--tsr-optimizer=optimizer=adam state-type=int8 int8-min-elements=100" | FileCheck %s --check-prefix=INT8
// RUN: tessera-opt %s "--tsr-optimizer=optimizer=sgd momentum=0.9 state-type=int8 int8-min-elements=100" | FileCheck %s --check-prefix=SGD8
// RUN: tessera-opt %s "--tsr-optimizer=optimizer=adam state-type=bf16" | FileCheck %s --check-prefix=BF16

// An embedding table (read by tsr.gather), a 8x40 weight and a bias.
func.func @main(%emb: tensor<16x8xf32> {tsr.name = "emb", tsr.role = #tsr.role<param>},
                %w: tensor<8x40xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %b: tensor<40xf32> {tsr.name = "b", tsr.role = #tsr.role<param>},
                %ids: tensor<4xi64> {tsr.name = "ids"})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<16x8xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.emb", tsr.role = #tsr.role<grad>},
        tensor<8x40xf32> {tsr.grad_of = 1 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>},
        tensor<40xf32> {tsr.grad_of = 2 : i64, tsr.name = "grad.b", tsr.role = #tsr.role<grad>}) {
  %x = tsr.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  %y = tsr.matmul %x, %w : tensor<4x8xf32>, tensor<8x40xf32> -> tensor<4x40xf32>
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x40xf32>) -> tensor<f32>
  return %l, %emb, %w, %b : tensor<f32>, tensor<16x8xf32>, tensor<8x40xf32>, tensor<40xf32>
}

// int8: w's moments (320 elements) are 8-bit codes with one f32 maximum per
// block of 256 (two blocks); the embedding table's and the 40-element
// bias's stay f32, each with the reason.
// INT8-LABEL: func.func @main(
// INT8-SAME: tensor<16x8xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "adam.m.emb", tsr.reason = "f32: an embedding table (sparse rows; 8-bit Adam's StableEmbedding keeps 32-bit states)", tsr.role = #tsr.role<state>}
// INT8-SAME: %[[M:arg[0-9]+]]: tensor<8x40xi8> {tsr.init = 0.000000e+00 : f64, tsr.name = "adam.m.w", tsr.role = #tsr.role<state>}
// INT8-SAME: %[[MMAX:arg[0-9]+]]: tensor<2xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "adam.m.w.absmax", tsr.role = #tsr.role<state>}
// INT8-SAME: tensor<8x40xi8> {tsr.init = 0.000000e+00 : f64, tsr.name = "adam.v.w", tsr.role = #tsr.role<state>}
// INT8-SAME: tensor<2xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "adam.v.w.absmax", tsr.role = #tsr.role<state>}
// INT8-SAME: tensor<40xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "adam.m.b", tsr.reason = "f32: fewer elements than int8-min-elements", tsr.role = #tsr.role<state>}
// The midpoint tables (a leading -inf, then 255 midpoints), then the code
// tables (unsigned for v, signed for m: the first code is -0.99296875).
// INT8: %[[UMID:.*]] = tsr.constant dense<"0x000080FF{{.*}}"> : tensor<256xf32>
// INT8: %[[SMID:.*]] = tsr.constant dense<"0x000080FF{{.*}}"> : tensor<256xf32>
// INT8: %[[UCODE:.*]] = tsr.constant dense<"0x00000000{{.*}}0000803F"> : tensor<256xf32>
// INT8: %[[SCODE:.*]] = tsr.constant dense<"0x33337EBF{{.*}}0000803F"> : tensor<256xf32>
// Dequantize m: code[q + 128] times its block's maximum.
// INT8: %[[FLAT:.*]] = tsr.reshape %[[M]] : tensor<8x40xi8> to tensor<320xi8>
// INT8: %[[PAD:.*]] = tsr.pad %[[FLAT]] {pads = array<i64: 0, 192>} : (tensor<320xi8>) -> tensor<512xi8>
// INT8: %[[BLK:.*]] = tsr.reshape %[[PAD]] : tensor<512xi8> to tensor<2x256xi8>
// INT8: %[[WIDE:.*]] = tsr.cast %[[BLK]] : tensor<2x256xi8> to tensor<2x256xi32>
// INT8: %[[IDX:.*]] = tsr.add %[[WIDE]], %{{.*}} : tensor<2x256xi32>, tensor<i32> -> tensor<2x256xi32>
// INT8: %[[UNIT:.*]] = tsr.gather %[[SCODE]], %[[IDX]] {axis = 0 : i64} : (tensor<256xf32>, tensor<2x256xi32>) -> tensor<2x256xf32>
// INT8: %[[MAXCOL:.*]] = tsr.reshape %[[MMAX]] : tensor<2xf32> to tensor<2x1xf32>
// INT8: tsr.mul %[[UNIT]], %[[MAXCOL]] : tensor<2x256xf32>, tensor<2x1xf32> -> tensor<2x256xf32>
// INT8: tsr.slice {{.*}}limits = array<i64: 320>
// v likewise, with the unsigned codes.
// INT8: tsr.gather %[[UCODE]]
// Requantize m: block maxima of |m'|, the block scaled by their
// reciprocals, eight probes of a binary search over the midpoints (each
// adds its step times the comparison), then the index minus 128 as i8.
// INT8: %[[ABS:.*]] = tsr.abs %{{.*}} : tensor<2x256xf32>
// INT8: %[[NEWMAX:.*]] = tsr.reduce_max %[[ABS]] {axes = array<i64: 1>, keepdims = false} : (tensor<2x256xf32>) -> tensor<2xf32>
// INT8: tsr.mul %{{.*}}, %{{.*}} : tensor<2x256xf32>, tensor<2x1xf32> -> tensor<2x256xf32>
// INT8-COUNT-8: tsr.gather %[[SMID]]
// INT8: %[[CODES:.*]] = tsr.cast %{{.*}} : tensor<2x256xi32> to tensor<2x256xi8>
// INT8: tsr.slice %{{.*}} {limits = array<i64: 320>
// INT8-COUNT-8: tsr.gather %[[UMID]]
// INT8: return

// sgd's momentum buffer is signed like Adam's m.
// SGD8-LABEL: func.func @main(
// SGD8-SAME: tensor<8x40xi8> {tsr.init = 0.000000e+00 : f64, tsr.name = "sgd.momentum.w", tsr.role = #tsr.role<state>}
// SGD8-SAME: tensor<2xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "sgd.momentum.w.absmax", tsr.role = #tsr.role<state>}

// bf16: every moment, the embedding's too, is stored in bf16 and widened
// for the update; the step counter stays i64.
// BF16-LABEL: func.func @main(
// BF16-SAME: %[[STEP:arg[0-9]+]]: tensor<i64> {tsr.init = 0.000000e+00 : f64, tsr.name = "step"
// BF16-SAME: %[[MEMB:arg[0-9]+]]: tensor<16x8xbf16> {tsr.init = 0.000000e+00 : f64, tsr.name = "adam.m.emb"
// BF16-SAME: tensor<40xbf16> {tsr.init = 0.000000e+00 : f64, tsr.name = "adam.v.b"
// BF16: %[[WIDE:.*]] = tsr.cast %[[MEMB]] : tensor<16x8xbf16> to tensor<16x8xf32>
// BF16: %[[NEXT:.*]] = tsr.add %{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
// BF16: tsr.cast %[[NEXT]] : tensor<16x8xf32> to tensor<16x8xbf16>
