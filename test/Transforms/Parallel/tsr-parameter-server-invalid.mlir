// RUN: not tessera-opt %s -split-input-file --tsr-parameter-server 2>&1 | FileCheck %s
// RUN: not tessera-opt %S/tsr-parameter-server.mlir "--tsr-data-parallel-plan=dp=2 servers=3" 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: not tessera-opt %S/tsr-parameter-server.mlir "--tsr-data-parallel-plan=dp=2 servers=1 zero=1" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not tessera-opt %S/tsr-parameter-server.mlir "--tsr-data-parallel-plan=dp=2 servers=1 local-steps=2" 2>&1 | FileCheck %s --check-prefix=LOCAL
// RUN: not tessera-opt %S/tsr-parameter-server.mlir "--tsr-data-parallel-plan=dp=2 staleness=2" 2>&1 | FileCheck %s --check-prefix=STALE
// RUN: not tessera-opt %S/tsr-parameter-server.mlir "--tsr-data-parallel-plan=dp=2 servers=1" --tsr-parameter-server "--tsr-optimizer=function=server0 clip-norm=1" 2>&1 | FileCheck %s --check-prefix=CLIP

// MANY: error: servers=3 but the step trains 2 parameters: a server would hold none
// ZERO: error: parameter servers hold the parameters and the optimizer state themselves: they need ZeRO-0, not ZeRO 1
// LOCAL: error: local SGD and parameter servers are two ways to train apart: choose one
// STALE: error: staleness bounds how far workers run ahead of each other around parameter servers: it needs servers=S
// CLIP: error: gradient clipping needs the norm over every parameter, which parameter servers hold in parts: not supported with parameter servers

// The placement comes from tsr-data-parallel-plan.
// CHECK: error: tsr-parameter-server needs the function's tsr.parameter_server (tsr-data-parallel-plan servers=S)
func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3xf32> {tsr.grad_of = 0 : i64, tsr.role = #tsr.role<grad>}) {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}

// -----

// Every gradient names its server.
// CHECK: error: gradient result 1 has no tsr.server (tsr-data-parallel-plan puts every parameter on a server)
func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3xf32> {tsr.grad_of = 0 : i64, tsr.role = #tsr.role<grad>})
    attributes {tsr.parameter_server = {servers = 1 : i64, staleness = -1 : i64}} {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}

// -----

// A server out of the plan's range.
// CHECK: error: gradient result 1 is on server 2 of a plan with 2 servers
func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3xf32> {tsr.grad_of = 0 : i64, tsr.role = #tsr.role<grad>, tsr.server = 2 : i64})
    attributes {tsr.parameter_server = {servers = 2 : i64, staleness = -1 : i64}} {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}

// -----

// A server with nothing to hold.
// CHECK: error: server 1 holds no parameter
func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
        tensor<3xf32> {tsr.grad_of = 0 : i64, tsr.role = #tsr.role<grad>, tsr.server = 0 : i64})
    attributes {tsr.parameter_server = {servers = 2 : i64, staleness = -1 : i64}} {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}

// -----

// The plan's dictionary is checked by the dialect.
// CHECK: error: 'func.func' op attribute 'tsr.parameter_server' must be {servers = S, staleness = K} with S >= 1 and K >= -1 (-1: bulk-synchronous), got {servers = 0 : i64, staleness = -1 : i64}
func.func @main(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>})
    attributes {tsr.parameter_server = {servers = 0 : i64, staleness = -1 : i64}} {
  %l = tsr.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
