// RUN: tessera-opt %s -split-input-file "--tsr-optimizer=optimizer=sgd lr=0.5 momentum=0.9 nesterov=true weight-decay=0.01" | FileCheck %s --check-prefix=SGD
// RUN: tessera-opt %s -split-input-file "--tsr-optimizer=optimizer=adamw lr=0.001 weight-decay=0.1" | FileCheck %s --check-prefix=ADAMW
// RUN: tessera-opt %s -split-input-file "--tsr-optimizer=optimizer=adafactor lr=0.01" | FileCheck %s --check-prefix=ADAFACTOR
// RUN: tessera-opt %s -split-input-file "--tsr-optimizer=optimizer=lamb lr=0.01 schedule=cosine warmup-steps=2 total-steps=10 clip-norm=1.0" | FileCheck %s --check-prefix=LAMB
// RUN: tessera-opt %s -split-input-file "--tsr-optimizer=optimizer=sgd lr=0.5 metrics=true" | FileCheck %s --check-prefix=METRICS
// RUN: tessera-opt %s -split-input-file "--tsr-optimizer=optimizer=adam lr=0.001 freeze-variance-after=5" | FileCheck %s --check-prefix=FROZEN

// With metrics: the step's learning rate and ‖g‖₂ (the square root of the
// summed squares of every gradient) come last, as f32 metric results.
// METRICS-LABEL: func.func @main(
// METRICS-SAME: tensor<f32> {tsr.name = "lr", tsr.role = #tsr.role<metric>}, tensor<f32> {tsr.name = "grad_norm", tsr.role = #tsr.role<metric>})
// METRICS: %[[SQ:.*]] = tsr.sqrt
// METRICS: %[[N:.*]] = tsr.cast %[[SQ]]
// METRICS: return {{.*}}, %[[N]] :

// The loss-and-gradient function tsr-autodiff leaves: w is a parameter, x data.
func.func @main(%w: tensor<3x4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %x: tensor<3x4xf32> {tsr.name = "x"})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3x4xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}) {
  %p = tsr.mul %w, %x : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  %l = tsr.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x4xf32>) -> tensor<f32>
  return %l, %x : tensor<f32>, tensor<3x4xf32>
}

// sgd: one momentum buffer; the step counter is state too. Outputs name the
// input they replace.
// SGD-LABEL: func.func @main(
// SGD-SAME: %[[W:arg[0-9]+]]: tensor<3x4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>}
// SGD-SAME: %[[STEP:arg[0-9]+]]: tensor<i64> {tsr.init = 0.000000e+00 : f64, tsr.name = "step", tsr.role = #tsr.role<state>}
// SGD-SAME: %[[BUF:arg[0-9]+]]: tensor<3x4xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "sgd.momentum.w", tsr.role = #tsr.role<state>}
// SGD-SAME: -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}, tensor<3x4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.updates = 0 : i64}, tensor<i64> {tsr.name = "step", tsr.role = #tsr.role<state>, tsr.updates = 2 : i64}, tensor<3x4xf32> {tsr.name = "sgd.momentum.w", tsr.role = #tsr.role<state>, tsr.updates = 3 : i64})
// d = g + wd·w; buf' = μ·buf + d; Nesterov: w' = w − lr·(d + μ·buf')
// SGD: %[[WD:.*]] = tsr.mul %{{.*}}, %[[W]]
// SGD: %[[D:.*]] = tsr.add %{{.*}}, %[[WD]]
// SGD: %[[MB:.*]] = tsr.mul %{{.*}}, %[[BUF]]
// SGD: %[[NEXT:.*]] = tsr.add %[[MB]], %[[D]]
// SGD: %[[MN:.*]] = tsr.mul %{{.*}}, %[[NEXT]]
// SGD: %[[NES:.*]] = tsr.add %[[D]], %[[MN]]
// SGD: %[[STEPSZ:.*]] = tsr.mul %{{.*}}, %[[NES]]
// SGD: %[[W1:.*]] = tsr.sub %[[W]], %[[STEPSZ]]
// SGD: return %{{.*}}, %[[W1]], %{{.*}}, %[[NEXT]]

// adamw: two moments, bias corrections from the step counter, decoupled decay.
// With freeze-variance-after=5 (1-bit Adam's second phase) v keeps its
// value after step 5 and its bias correction uses min(t, 5).
// FROZEN-LABEL: func.func @main(
// FROZEN-SAME: %[[V:[a-z0-9]+]]: tensor<3x4xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "adam.v.w"
// FROZEN: %[[W:.*]] = tsr.constant dense<5.000000e+00> : tensor<f32>
// FROZEN-NEXT: %[[LATE:.*]] = tsr.greater %[[T:[0-9]+]], %[[W]]
// FROZEN-NEXT: %[[KEPT:.*]] = tsr.where %[[LATE]], %[[V]], %{{.*}}
// FROZEN: %[[TV:.*]] = tsr.min %[[T]],
// FROZEN: tsr.pow %{{.*}}, %[[T]]
// FROZEN: tsr.pow %{{.*}}, %[[TV]]
// FROZEN: return {{.*}}%[[KEPT]]
// ADAMW-LABEL: func.func @main(
// ADAMW-SAME: tsr.name = "adamw.m.w"
// ADAMW-SAME: tsr.name = "adamw.v.w"
// ADAMW: %[[T:.*]] = tsr.add %{{.*}}, %{{.*}} : tensor<i64>, tensor<i64> -> tensor<i64>
// ADAMW: tsr.pow
// ADAMW: tsr.sqrt
// ADAMW: return

// adafactor factors the 3x4 second moment into a row (3) and a column (4)
// accumulator.
// ADAFACTOR-LABEL: func.func @main(
// ADAFACTOR-SAME: tensor<3xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "adafactor.row.w", tsr.role = #tsr.role<state>}
// ADAFACTOR-SAME: tensor<4xf32> {tsr.init = 0.000000e+00 : f64, tsr.name = "adafactor.col.w", tsr.role = #tsr.role<state>}

// lamb with a cosine schedule and global-norm clipping: the schedule reads
// the step counter, clipping the norm of all gradients together.
// LAMB-LABEL: func.func @main(
// LAMB: tsr.cos
// LAMB: tsr.min
// LAMB: return
