// RUN: tessera-opt %s --tsr-loss-scale=scale=dynamic | FileCheck %s --check-prefix=DYN
// RUN: tessera-opt %s "--tsr-loss-scale=scale=dynamic init=1024" | FileCheck %s --check-prefix=INIT
// RUN: tessera-opt %s --tsr-loss-scale=scale=128 | FileCheck %s --check-prefix=STATIC
// RUN: tessera-opt %s --tsr-loss-scale=scale=none | FileCheck %s --check-prefix=NONE
// RUN: tessera-opt %s "--tsr-loss-scale=scale=dynamic" --tsr-autodiff "--tsr-optimizer=optimizer=sgd loss-scale=dynamic loss-scale-growth-interval=3" | FileCheck %s --check-prefix=STEP
// RUN: not tessera-opt %s --tsr-loss-scale=scale=-2 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not tessera-opt %s --tsr-autodiff "--tsr-optimizer=optimizer=sgd loss-scale=dynamic" 2>&1 | FileCheck %s --check-prefix=MISSING

// DYN-LABEL: func.func @main
// DYN-SAME: %[[S:[a-z0-9]+]]: tensor<f32> {tsr.init = 6.553600e+04 : f64, tsr.name = "loss_scale", tsr.role = #tsr.role<state>}
// DYN: %[[L:.*]] = tsr.reduce_sum
// DYN: %[[M:.*]] = tsr.mul %[[L]], %[[S]] {tsr.reason = "loss scaling: the gradients are scale times the loss's"}
// DYN: return %[[M]]
// INIT: tsr.init = 1.024000e+03 : f64, tsr.name = "loss_scale"
// STATIC-NOT: loss_scale
// STATIC: %[[C:.*]] = tsr.constant dense<1.280000e+02> : tensor<f32>
// STATIC: tsr.mul %{{.*}}, %[[C]]
// NONE-NOT: loss scaling

// The optimizer divides the gradient by the scale, returns the unscaled
// loss, keeps the parameter and the step counter on an overflow (a NaN in
// Σ g·0), and updates the scale and its clean-step count (due after 3).
// STEP-LABEL: func.func @main
// STEP-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}
// STEP-SAME: %[[S:[a-z0-9]+]]: tensor<f32> {tsr.init = 6.553600e+04 : f64, tsr.name = "loss_scale", tsr.role = #tsr.role<state>}
// STEP-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {{[{][^}]*}}tsr.name = "step"
// STEP-SAME: %[[CLEAN:[a-z0-9]+]]: tensor<i64> {{[{][^}]*}}tsr.name = "loss_scale.clean_steps"
// STEP-SAME: tsr.name = "loss_scale", tsr.role = #tsr.role<state>, tsr.updates = 2
// STEP-SAME: tsr.name = "loss_scale.clean_steps", tsr.role = #tsr.role<state>, tsr.updates = 4
// STEP: %[[INV:.*]] = tsr.div %{{.*}}, %[[S]]
// STEP: %[[G:.*]] = tsr.mul %{{.*}}, %[[INV]]
// STEP: %[[LOSS:.*]] = tsr.div %{{.*}}, %[[S]]
// STEP: %[[ZERO:.*]] = tsr.mul %[[G]], %{{.*}}
// STEP: %[[FINITE:.*]] = tsr.equal
// STEP: %[[DUE:.*]] = tsr.less %{{.*}}, %[[CLEAN]]
// STEP: %[[NEW:.*]] = tsr.sub %[[W]]
// STEP: %[[KEEPW:.*]] = tsr.where %[[FINITE]], %[[NEW]], %[[W]]
// STEP: %[[KEEPSTEP:.*]] = tsr.where %[[FINITE]], %{{.*}}, %[[STEP]]
// STEP: return %[[LOSS]], %[[KEEPW]], %[[KEEPSTEP]], %{{.*}}, %{{.*}} :

// BAD: error: loss scale '-2' is not none, dynamic or a positive number
// MISSING: error: dynamic loss scaling needs the loss_scale state that tsr-loss-scale adds before autodiff
func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %x: tensor<3xf32> {tsr.name = "x"}) -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
  %y = tsr.mul %w, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %l = tsr.reduce_sum %y {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
