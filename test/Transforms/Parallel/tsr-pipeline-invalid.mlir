// RUN: tessera-opt %s -split-input-file -verify-diagnostics "--tsr-pipeline=micro-batches=2"
// RUN: not tessera-opt %S/tsr-pipeline.mlir -split-input-file "--tsr-pipeline-plan=split=head" --tsr-autodiff "--tsr-pipeline=schedule=zigzag" 2>&1 | FileCheck %s --check-prefix=SCHEDULE

// SCHEDULE: error: unknown pipeline schedule 'zigzag' (known: gpipe, 1f1b)

// expected-error @+1 {{tsr-pipeline needs the stage plan of tsr-pipeline-plan (the function has no tsr.pipeline)}}
func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"}) -> tensor<f32> {
  %l = tsr.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["pp"=4]>} {
// expected-error @+1 {{the pipeline has 2 stages but mesh axis 'pp' has 4 ranks}}
func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"}) -> tensor<f32>
    attributes {tsr.pipeline = {axis = "pp", stages = 2 : i64}} {
  %l = tsr.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false, tsr.stage = 0 : i64} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
}

// -----

// Stages run in order: a forward op of stage 0 cannot read stage 1's.
module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"}) -> tensor<f32>
    attributes {tsr.pipeline = {axis = "pp", stages = 2 : i64}} {
  %a = tsr.relu %x {tsr.stage = 1 : i64} : tensor<4x8xf32>
  // expected-error @+1 {{runs in pipeline cell stage0.forward but reads a value of the later cell stage1.forward}}
  %b = tsr.neg %a {tsr.stage = 0 : i64} : tensor<4x8xf32>
  %l = tsr.reduce_sum %b {axes = array<i64: 0, 1>, keepdims = false, tsr.stage = 1 : i64} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
}

// -----

// Messages between two ranks arrive in order, so the backward pass of an
// earlier stage may not read what a later stage's forward pass computed.
module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
// expected-error @+1 {{unsupported: the backward pass of pipeline stage 0 reads a value of the forward pass of stage 1}}
func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"}) -> tensor<f32>
    attributes {tsr.pipeline = {axis = "pp", stages = 2 : i64}} {
  %a = tsr.relu %x {tsr.stage = 1 : i64} : tensor<4x8xf32>
  %b = tsr.neg %a {tsr.backward, tsr.stage = 0 : i64} : tensor<4x8xf32>
  %l = tsr.reduce_sum %b {axes = array<i64: 0, 1>, keepdims = false, tsr.backward, tsr.stage = 0 : i64} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
}

// -----

// A scalar batch input has no rows to split into micro-batches.
module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
// expected-error @+1 {{argument 0 of the batch is a scalar, which micro-batches cannot split}}
func.func @main(%x: tensor<f32> {tsr.name = "x"}) -> tensor<f32>
    attributes {tsr.pipeline = {axis = "pp", stages = 2 : i64}} {
  %l = tsr.neg %x {tsr.stage = 1 : i64} : tensor<f32>
  return %l : tensor<f32>
}
}
