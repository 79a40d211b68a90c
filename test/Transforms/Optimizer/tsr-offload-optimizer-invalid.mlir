// RUN: not tessera-opt %s -split-input-file --tsr-offload-optimizer 2>&1 | FileCheck %s
// RUN: not tessera-opt %S/tsr-offload-optimizer.mlir --tsr-offload-optimizer "--tsr-optimizer=optimizer=sgd function=host_update loss-scale=1024" 2>&1 | FileCheck %s --check-prefix=SCALE

// SCALE: error: loss scaling unscales the loss, which a host program's update does not take

// Dynamic loss scaling's state is updated with the step's overflow check.
// CHECK: error: cannot offload the optimizer to the host: loss scaling unscales the loss in the update (use --loss-scale=none)
func.func @main(%w: tensor<4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %s: tensor<f32> {tsr.name = "loss_scale", tsr.role = #tsr.role<state>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<4xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}) {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

// -----

// Running statistics are the step's own updates.
// CHECK: error: cannot offload the optimizer to the host: result 2 updates running statistics in the step
func.func @main(%w: tensor<4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                %m: tensor<4xf32> {tsr.name = "mean", tsr.role = #tsr.role<state>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<4xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>},
        tensor<4xf32> {tsr.name = "mean", tsr.role = #tsr.role<state>, tsr.updates = 1 : i64}) {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l, %w, %m : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A pipeline's or the parameter servers' schedule is theirs.
// CHECK: error: cannot offload the optimizer to the host: the module already has a schedule of several programs (a pipeline or parameter servers)
module attributes {tsr.schedule = [@main]} {
func.func @main(%w: tensor<4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<4xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}) {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}
}

// -----

// The name is free.
// CHECK: error: the module already has a function @host_update
func.func @main(%w: tensor<4xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<4xf32> {tsr.grad_of = 0 : i64, tsr.name = "grad.w", tsr.role = #tsr.role<grad>}) {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}
func.func private @host_update()
