// RUN: tessera-opt %s --split-input-file --pass-pipeline='builtin.module(tsr-donate-updates)' | FileCheck %s
// RUN: tessera-opt %s --split-input-file --pass-pipeline='builtin.module(tsr-donate-updates,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},drop-equivalent-buffer-results)' | FileCheck %s --check-prefix=BUF

#map = affine_map<(d0) -> (d0)>

// An SGD step: w - g is written over w (its init becomes the argument,
// which becomes writable), and the step counter, returned as it is, is
// donated as it is. The loss updates nothing. Bufferized, the update
// writes w's buffer and returns it.
// CHECK-LABEL: func.func @sgd(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4xf32> {bufferization.writable = true}
// CHECK-SAME: %[[G:[^:]*]]: tensor<4xf32> {bufferization.writable = false}
// CHECK-SAME: %[[S:[^:]*]]: tensor<i64> {bufferization.writable = true}
// CHECK-SAME: -> (tensor<f32>, tensor<4xf32>, tensor<i64>)
// CHECK-SAME: attributes {tsr.in_place = array<i64: -1, 0, 2>}
// CHECK-NOT: tensor.empty
// CHECK: %[[NEW:.*]] = linalg.generic {{.*}} ins(%[[W]], %[[G]] : tensor<4xf32>, tensor<4xf32>) outs(%[[W]] : tensor<4xf32>)
// CHECK: return %{{.*}}, %[[NEW]], %[[S]]
// BUF-LABEL: func.func @sgd(
// BUF-SAME: %[[W:[^:]*]]: memref<4xf32>
// BUF: linalg.generic {{.*}} outs(%[[W]] : memref<4xf32>)
// BUF: return %{{.*}}, %[[W]], %{{.*}} :
func.func @sgd(%w: tensor<4xf32> {bufferization.writable = false},
               %g: tensor<4xf32> {bufferization.writable = false},
               %s: tensor<i64> {bufferization.writable = false})
    -> (tensor<f32>, tensor<4xf32> {tsr.updates = 0 : i64},
        tensor<i64> {tsr.updates = 2 : i64}) {
  %loss = arith.constant dense<1.0> : tensor<f32>
  %e = tensor.empty() : tensor<4xf32>
  %w2 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%w, %g : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  return %loss, %w2, %s : tensor<f32>, tensor<4xf32>, tensor<i64>
}

// -----

#map = affine_map<(d0) -> (d0)>

// An embedding: the gather before the update reads the table inside its
// body (tensor.extract). The read is the gather's, which runs before: the
// update is written over the table.
// CHECK-LABEL: func.func @embedding(
// CHECK-SAME: %[[T:[^:]*]]: tensor<4xf32> {bufferization.writable = true}
// CHECK-SAME: attributes {tsr.in_place = array<i64: -1, 0>}
// CHECK: tensor.extract %[[T]]
// CHECK: linalg.generic {{.*}} outs(%[[T]] : tensor<4xf32>)
func.func @embedding(%table: tensor<4xf32>, %ids: tensor<2xindex>, %g: tensor<4xf32>)
    -> (tensor<2xf32>, tensor<4xf32> {tsr.updates = 0 : i64}) {
  %e0 = tensor.empty() : tensor<2xf32>
  %rows = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%ids : tensor<2xindex>) outs(%e0 : tensor<2xf32>) {
  ^bb0(%i: index, %o: f32):
    %x = tensor.extract %table[%i] : tensor<4xf32>
    linalg.yield %x : f32
  } -> tensor<2xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %next = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%table, %g : tensor<4xf32>, tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  return %rows, %next : tensor<2xf32>, tensor<4xf32>
}

// -----

#map = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (3 - d0)>

// Not donated: the argument is read after the update (by %late), read by
// the update through another indexing map (%flip), or also returned as
// another result (%kept). Each keeps
// its own init and tsr.updates is consumed all the same.
// CHECK-LABEL: func.func @conflicts(
// CHECK-NOT: bufferization.writable = true
// CHECK-NOT: tsr.in_place
// CHECK-NOT: tsr.updates
// CHECK: tensor.empty
// CHECK: tensor.empty
// CHECK: tensor.empty
// CHECK: tensor.empty
func.func @conflicts(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>)
    -> (tensor<4xf32> {tsr.updates = 0 : i64}, tensor<4xf32>,
        tensor<4xf32> {tsr.updates = 1 : i64},
        tensor<4xf32> {tsr.updates = 2 : i64}, tensor<4xf32>) {
  %e0 = tensor.empty() : tensor<4xf32>
  %a2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e0 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %d = arith.addf %x, %x : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %late = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %d = arith.mulf %x, %x : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %flip = linalg.generic {indexing_maps = [#rev, #map], iterator_types = ["parallel"]}
      ins(%b : tensor<4xf32>) outs(%e2 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4xf32>
  %e3 = tensor.empty() : tensor<4xf32>
  %c2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%c : tensor<4xf32>) outs(%e3 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %d = arith.addf %x, %x : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  return %a2, %late, %flip, %c2, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

#map = affine_map<(d0) -> (d0)>

// A repeated layer's update cell (tsr-outline-layers marks the results it
// may write over its arguments): the cell is donated first, then its
// callers, whose result is the call's, written into the argument they pass.
// @late reads its argument after the call: the call's result is not its.
// Bufferized, @step returns %w's own buffer, which the cell wrote.
// CHECK-LABEL: func.func private @cell(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4xf32> {bufferization.writable = true}
// CHECK-SAME: -> tensor<4xf32> attributes {tsr.in_place = array<i64: 0>}
// CHECK: linalg.generic {{.*}} outs(%[[W]] : tensor<4xf32>)
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %{{[^:]*}}: tensor<4xf32> {bufferization.writable = true}
// CHECK-SAME: attributes {tsr.in_place = array<i64: 0>}
// CHECK-LABEL: func.func @late(
// CHECK-NOT: bufferization.writable = true
// CHECK-NOT: tsr.in_place
// BUF-LABEL: func.func private @cell(
// BUF-SAME: %[[W:[^:]*]]: memref<4xf32>, %{{[^:]*}}: memref<4xf32>) attributes
// BUF-LABEL: func.func @step(
// BUF-SAME: %[[W:[^:]*]]: memref<4xf32>
// BUF: call @cell(%[[W]],
// BUF: return %[[W]] :
// BUF-LABEL: func.func @late(
// BUF: memref.alloc
// BUF: memref.copy
func.func private @cell(%w: tensor<4xf32>, %g: tensor<4xf32>)
    -> (tensor<4xf32> {tsr.updates = 0 : i64}) {
  %e = tensor.empty() : tensor<4xf32>
  %w2 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%w, %g : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  return %w2 : tensor<4xf32>
}
func.func @step(%w: tensor<4xf32> {bufferization.writable = false},
                %g: tensor<4xf32> {bufferization.writable = false})
    -> (tensor<4xf32> {tsr.updates = 0 : i64}) {
  %w2 = func.call @cell(%w, %g) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %w2 : tensor<4xf32>
}
func.func @late(%w: tensor<4xf32> {bufferization.writable = false},
                %g: tensor<4xf32> {bufferization.writable = false})
    -> (tensor<4xf32> {tsr.updates = 0 : i64}, tensor<4xf32>) {
  %w2 = func.call @cell(%w, %g) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %sq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%w : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.mulf %a, %a : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  return %w2, %sq : tensor<4xf32>, tensor<4xf32>
}
