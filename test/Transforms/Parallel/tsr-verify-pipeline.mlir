// RUN: tessera-opt %s -split-input-file -verify-diagnostics --tsr-verify-pipeline | FileCheck %s

// Programs that agree pass unchanged: stage 0 sends first, stage 1
// receives, answers, and both meet at the broadcast.
// CHECK-LABEL: func.func @stage0(
module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
func.func @stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tsr.ranks = {pp = 0 : i64}} {
  tsr.send %x {mesh_axes = ["pp"], peer = 1 : i64} : tensor<4xf32>
  %d = tsr.recv {mesh_axes = ["pp"], peer = 1 : i64} : tensor<4xf32>
  %l = tsr.broadcast_from %d {mesh_axes = ["pp"], root = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %l : tensor<4xf32>
}
func.func @stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tsr.ranks = {pp = 1 : i64}} {
  %a = tsr.recv {mesh_axes = ["pp"], peer = 0 : i64} : tensor<4xf32>
  tsr.send %a {mesh_axes = ["pp"], peer = 0 : i64} : tensor<4xf32>
  %l = tsr.broadcast_from %a {mesh_axes = ["pp"], root = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %l : tensor<4xf32>
}
}

// -----

// A hand-corrupted 1F1B: both stages receive before they send.
// expected-error @+1 {{the per-rank programs of mesh axis 'pp' deadlock: every one that has not finished waits}}
module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
func.func @stage0(%x: tensor<4xf32>) attributes {tsr.ranks = {pp = 0 : i64}} {
  // expected-note @+1 {{@stage0 (pp = 0) waits here for a message from pp = 1}}
  %d = tsr.recv {mesh_axes = ["pp"], peer = 1 : i64} : tensor<4xf32>
  tsr.send %x {mesh_axes = ["pp"], peer = 1 : i64} : tensor<4xf32>
  return
}
func.func @stage1() attributes {tsr.ranks = {pp = 1 : i64}} {
  // expected-note @+1 {{@stage1 (pp = 1) waits here for a message from pp = 0}}
  %a = tsr.recv {mesh_axes = ["pp"], peer = 0 : i64} : tensor<4xf32>
  tsr.send %a {mesh_axes = ["pp"], peer = 0 : i64} : tensor<4xf32>
  return
}
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
func.func @stage0(%x: tensor<4xf32>) attributes {tsr.ranks = {pp = 0 : i64}} {
  // expected-note @+1 {{sent here}}
  tsr.send %x {mesh_axes = ["pp"], peer = 1 : i64} : tensor<4xf32>
  return
}
func.func @stage1() attributes {tsr.ranks = {pp = 1 : i64}} {
  // expected-error @+1 {{'tsr.recv' op receives 'tensor<8xf32>' on pp = 1, but the message from pp = 0 is 'tensor<4xf32>'}}
  %a = tsr.recv {mesh_axes = ["pp"], peer = 0 : i64} : tensor<8xf32>
  return
}
}

// -----

module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
func.func @stage0(%x: tensor<4xf32>) attributes {tsr.ranks = {pp = 0 : i64}} {
  // expected-error @+1 {{'tsr.send' op sends a message from pp = 0 to pp = 1 that is never received}}
  tsr.send %x {mesh_axes = ["pp"], peer = 1 : i64} : tensor<4xf32>
  return
}
func.func @stage1() attributes {tsr.ranks = {pp = 1 : i64}} {
  return
}
}

// -----

// One stage waits in a collective the other never reaches.
// expected-error @+1 {{deadlock}}
module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
func.func @stage0(%x: tensor<4xf32>) attributes {tsr.ranks = {pp = 0 : i64}} {
  // expected-note @+1 {{@stage0 (pp = 0) waits here for the other ranks}}
  %l = tsr.broadcast_from %x {mesh_axes = ["pp"], root = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}
// expected-note @+1 {{@stage1 (pp = 1) has finished}}
func.func @stage1() attributes {tsr.ranks = {pp = 1 : i64}} {
  return
}
}
