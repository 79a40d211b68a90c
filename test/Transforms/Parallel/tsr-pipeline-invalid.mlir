// RUN: tessera-opt %s -split-input-file -verify-diagnostics "--tsr-pipeline=micro-batches=2"
// RUN: not tessera-opt %S/tsr-pipeline.mlir -split-input-file "--tsr-pipeline-plan=split=head" --tsr-autodiff "--tsr-pipeline=schedule=zigzag" 2>&1 | FileCheck %s --check-prefix=SCHEDULE

// SCHEDULE: error: unknown pipeline schedule 'zigzag' (known: gpipe, 1f1b, interleaved, zb-h1, zb-v, v-half, dualpipev, pipedream)

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

// A schedule that places another number of chunks per rank than the plan
// cut.
module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
// expected-error @+1 {{schedule '1f1b' runs 1 model chunk(s) per rank, got --virtual-stages=2 (interleaved runs several) (the plan cut 2 chunk(s) per rank)}}
func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"}) -> tensor<f32>
    attributes {tsr.pipeline = {axis = "pp", stages = 2 : i64, virtual_stages = 2 : i64}} {
  %l = tsr.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false, tsr.stage = 1 : i64} : (tensor<4x8xf32>) -> tensor<f32>
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
