// RUN: tessera-opt %s "--tsr-autodiff=frozen=enc.*,head.b wrt-inputs=true" | FileCheck %s

// Frozen parameters keep their role but get no gradient; wrt-inputs adds the
// floating-point data inputs (not the labels) in argument order.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %{{.*}}: tensor<3x3xf32> {tsr.name = "enc.w", tsr.role = #tsr.role<param>}
// CHECK-SAME: -> (tensor<f32>,
// CHECK-SAME: tensor<3x2xf32> {tsr.grad_of = 1 : i64, tsr.name = "grad.head.w", tsr.role = #tsr.role<grad>},
// CHECK-SAME: tensor<4x3xf32> {tsr.grad_of = 3 : i64, tsr.name = "grad.x", tsr.role = #tsr.role<grad>})
// CHECK-NOT: grad.enc.w
// CHECK-NOT: grad.head.b
// CHECK-NOT: grad.t
func.func @main(%ew: tensor<3x3xf32> {tsr.name = "enc.w", tsr.role = #tsr.role<param>},
                %hw: tensor<3x2xf32> {tsr.name = "head.w", tsr.role = #tsr.role<param>},
                %hb: tensor<2xf32> {tsr.name = "head.b", tsr.role = #tsr.role<param>},
                %x: tensor<4x3xf32> {tsr.name = "x"},
                %t: tensor<4xi64> {tsr.name = "t", tsr.role = #tsr.role<label>}) -> tensor<f32> {
  %h = tsr.matmul %x, %ew : tensor<4x3xf32>, tensor<3x3xf32> -> tensor<4x3xf32>
  %y = tsr.matmul %h, %hw : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %z = tsr.add %y, %hb : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %l = tsr.softmax_cross_entropy_loss %z, %t {reduction = #tsr.loss_reduction<mean>} : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
