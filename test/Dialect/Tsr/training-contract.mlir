// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// The training contract: every tsr.* attribute of a function's arguments
// and results, and of ops, is checked by the dialect; roles are an enum.

// CHECK-LABEL: func.func @step(
// CHECK-SAME: {tsr.name = "w", tsr.role = #tsr.role<param>}
// CHECK-SAME: {tsr.init = 0.000000e+00 : f64, tsr.name = "m", tsr.role = #tsr.role<state>}
// CHECK-SAME: {tsr.name = "labels", tsr.role = #tsr.role<label>}
// CHECK-SAME: {tsr.name = "loss", tsr.role = #tsr.role<loss>}
// CHECK-SAME: {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.updates = 0 : i64}
// CHECK-SAME: attributes {tsr.zero = #tsr.zero<stage = 1, axes = ["dp"]>}
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  func.func @step(%w: tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>},
                  %m: tensor<3xf32> {tsr.name = "m", tsr.role = #tsr.role<state>, tsr.init = 0.0 : f64},
                  %y: tensor<3xi64> {tsr.name = "labels", tsr.role = #tsr.role<label>})
      -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>},
          tensor<3xf32> {tsr.name = "w", tsr.role = #tsr.role<param>, tsr.updates = 0 : i64})
      attributes {tsr.zero = #tsr.zero<stage = 1, axes = ["dp"]>} {
    %l = tsr.constant dense<0.0> : tensor<f32>
    return %l, %w : tensor<f32>, tensor<3xf32>
  }
}

// -----

// expected-error @+2 {{expected ::mlir::tsr::Role to be one of: data, label, param, state, loss, metric, grad, rng}}
// expected-error @+1 {{failed to parse Tsr_RoleAttr}}
func.func @misspelled_role(%w: tensor<3xf32> {tsr.role = #tsr.role<parm>}) {
  return
}

// -----

// A role given as a string, the old spelling, is refused.
// expected-error @+1 {{argument 0 attribute 'tsr.role' must be a role such as #tsr.role<param>}}
func.func @string_role(%w: tensor<3xf32> {tsr.role = "param"}) {
  return
}

// -----

// expected-error @+1 {{argument 0 has unknown attribute 'tsr.rol' (known: tsr.name, tsr.role, tsr.updates, tsr.grad_of, tsr.bucket}}
func.func @misspelled_name(%w: tensor<3xf32> {tsr.rol = #tsr.role<param>}) {
  return
}

// -----

// expected-error @+1 {{result 0 attribute 'tsr.updates' must be the index of an argument, got 3 : i64}}
func.func @updates_out_of_range(%w: tensor<3xf32>) -> (tensor<3xf32> {tsr.updates = 3 : i64}) {
  return %w : tensor<3xf32>
}

// -----

// expected-error @+1 {{argument 0 attribute 'tsr.grad_of' belongs on a result (it names an argument)}}
func.func @grad_of_on_argument(%w: tensor<3xf32> {tsr.grad_of = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument 0 attribute 'tsr.name' must be a non-empty string, got ""}}
func.func @empty_name(%w: tensor<3xf32> {tsr.name = ""}) {
  return
}

// -----

// expected-error @+1 {{attribute 'tsr.mesh' must be a mesh such as #tsr.mesh<["dp"=4]>, got {dp = 4 : i64}}}
module attributes {tsr.mesh = {dp = 4 : i64}} {
}

// -----

// expected-error @+1 {{ZeRO stage must be 0, 1, 2 or 3, got 4}}
func.func @zero_stage() attributes {tsr.zero = #tsr.zero<stage = 4, axes = ["dp"]>} {
  return
}

// -----

// expected-error @+1 {{has unknown attribute 'tsr.meshes' (known on ops: tsr.mesh, tsr.zero, tsr.frozen, tsr.backward, tsr.remat, tsr.precision, tsr.peak_alloc_bytes, tsr.schedule, tsr.sharding, tsr.operand_shardings, tsr.partitioned, tsr.reason, tsr.stage, tsr.layer, tsr.pipeline, tsr.ranks, tsr.pipeline_schedule, tsr.pipeline_cell, tsr.scatter_shape, tsr.compression, tsr.dense_bytes, tsr.local_steps, tsr.parameter_server, tsr.server, tsr.kernel, tsr.on_host, tsr.in_place, tsr.profile_regions)}}
module attributes {tsr.meshes = #tsr.mesh<["dp"=4]>} {
}

// -----

// expected-error @+1 {{attribute 'tsr.remat' must be a policy (none, selective, full or auto), got "most"}}
func.func @remat_policy() attributes {tsr.remat = "most"} {
  return
}

// -----

func.func @remat_choice(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{attribute 'tsr.remat' must be "recompute", "recomputed" or "offload", got "discard"}}
  %y = tsr.exp %x {tsr.remat = "discard"} : tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// expected-error @+1 {{attribute 'tsr.schedule' must be a non-empty array of function symbols on a module, such as [@forward, @backward], got ["forward"]}}
module attributes {tsr.schedule = ["forward"]} {
  func.func @forward() {
    return
  }
}

// -----

// expected-error @+1 {{attribute 'tsr.schedule' calls @backward, which is not a function of the module}}
module attributes {tsr.schedule = [@forward, @backward]} {
  func.func @forward() {
    return
  }
}

// -----

// A schedule of two calls per step.
// CHECK: module attributes {tsr.schedule = [@forward, @backward]}
module attributes {tsr.schedule = [@forward, @backward]} {
  func.func @forward() {
    return
  }
  func.func @backward() {
    return
  }
}

// -----

func.func @scatter_shape_axis() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{attribute 'tsr.scatter_shape' must be [axis, d0, d1, ...]: an axis of the positive shape that follows, got array<i64: 2, 6, 8>}}
  scf.for %i = %c0 to %c1 step %c1 {
  } {tsr.scatter_shape = array<i64: 2, 6, 8>}
  return
}

// -----

// expected-error @+1 {{argument 0 attribute 'tsr.aux_loss' belongs on a result}}
func.func @aux_loss_on_argument(%x: tensor<f32> {tsr.aux_loss}) {
  return
}

// -----

// expected-error @+1 {{result 0 attribute 'tsr.aux_loss' must be a unit attribute, got 1 : i64}}
func.func @aux_loss_value(%x: tensor<f32>) -> (tensor<f32> {tsr.aux_loss = 1 : i64}) {
  return %x : tensor<f32>
}

// -----

// A gradient's compressor belongs on a result.
// expected-error @+1 {{argument 0 attribute 'tsr.compression' belongs on a result}}
func.func @compression_on_argument(%w: tensor<3x2xf32> {tsr.compression = "topk:0.1"}) {
  return
}

// -----

// expected-error @+1 {{result 0 attribute 'tsr.compression' must be a compressor such as "topk:0.01", got ""}}
func.func @empty_compression() -> (tensor<3x2xf32> {tsr.compression = ""}) {
  %0 = tsr.constant dense<0.0> : tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @negative_dense_bytes(%x: tensor<2xf32>) -> tensor<4xf32> attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  // expected-error @+1 {{attribute 'tsr.dense_bytes' must be a byte count, got -1 : i64}}
  %0 = tsr.all_gather %x {mesh_axes = ["dp"], tsr.dense_bytes = -1 : i64} : (tensor<2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{attribute 'tsr.kernel' must be a unit attribute on a function, got true}}
func.func private @k() attributes {tsr.kernel = true}

// -----

// expected-error @+1 {{attribute 'tsr.profile_regions' must be an array of {kind, callee, node, backward} dictionaries on a module, got [{callee = "f", kind = "gemm", node = "n"}]}}
module attributes {tsr.profile_regions = [{kind = "gemm", callee = "f", node = "n"}]} {
}

// -----

// expected-error @+1 {{attribute 'tsr.in_place' must be an array<i64> on a function: per result, the index of an argument or -1, got array<i64: 1>}}
func.func @in_place(%w: tensor<2xf32>) -> tensor<2xf32> attributes {tsr.in_place = array<i64: 1>} {
  return %w : tensor<2xf32>
}

// -----

// tsr.on_host marks a function, with no value.
// expected-error @+1 {{'func.func' op attribute 'tsr.on_host' must be a unit attribute on a function, got 1 : i64}}
func.func @host_update() attributes {tsr.on_host = 1 : i64} {
  return
}

// -----

// tsr.pipeline_cell marks a function of tsr-pipeline, with no value.
// expected-error @+1 {{'func.func' op attribute 'tsr.pipeline_cell' must be a unit attribute on a function, got "F0"}}
func.func private @stage0.forward() attributes {tsr.pipeline_cell = "F0"}
