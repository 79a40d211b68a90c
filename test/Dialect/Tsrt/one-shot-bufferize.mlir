// RUN: tessera-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s

// One-shot bufferization of the collectives (the upstream model of
// destination-passing-style ops): the result is the destination's buffer,
// reused in place where nothing reads it afterwards, else a fresh buffer
// that is not filled first (a collective never reads its destination).

// An all-reduce whose operand dies there reduces in place: one buffer, no
// copy.
// CHECK-LABEL: func.func @in_place(
// CHECK-SAME: %[[X:.*]]: memref<6xf32>) -> memref<6xf32>
// CHECK: %[[G:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
// CHECK: linalg.generic {{.*}} outs(%[[G]] : memref<6xf32>)
// CHECK-NEXT: ^bb0
// CHECK: tsrt.all_reduce ins(%[[G]] : memref<6xf32>) outs(%[[G]] : memref<6xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<mean>}
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: return %[[G]]
#id = affine_map<(d0) -> (d0)>
func.func @in_place(%x: tensor<6xf32>) -> tensor<6xf32> {
  %e = tensor.empty() : tensor<6xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<6xf32>) outs(%e : tensor<6xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<6xf32>
  %r = tsrt.all_reduce ins(%g : tensor<6xf32>) outs(%g : tensor<6xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<mean>} -> tensor<6xf32>
  return %r : tensor<6xf32>
}

// -----

// The operand is read afterwards: the result gets a buffer of its own,
// without a copy of the operand.
// CHECK-LABEL: func.func @read_later(
// CHECK: %[[G:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[G]] : memref<6xf32>)
// CHECK-NEXT: %[[R:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
// CHECK-NEXT: tsrt.all_reduce ins(%[[G]] : memref<6xf32>) outs(%[[R]] : memref<6xf32>)
// CHECK-NEXT: return %[[G]], %[[R]]
func.func @read_later(%v: f32) -> (tensor<6xf32>, tensor<6xf32>) {
  %e = tensor.empty() : tensor<6xf32>
  %g = linalg.fill ins(%v : f32) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  %r = tsrt.all_reduce ins(%g : tensor<6xf32>) outs(%g : tensor<6xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>} -> tensor<6xf32>
  return %g, %r : tensor<6xf32>, tensor<6xf32>
}

// -----

// A read-only input (tsr-to-linalg marks every function input so) is never
// written: the broadcast receives into a buffer of its own.
// CHECK-LABEL: func.func @read_only_input(
// CHECK-SAME: %[[X:.*]]: memref<5xi64>) -> memref<5xi64>
// CHECK: %[[R:.*]] = memref.alloc() {alignment = 64 : i64} : memref<5xi64>
// CHECK-NEXT: tsrt.broadcast ins(%[[X]] : memref<5xi64>) outs(%[[R]] : memref<5xi64>) {dtype = #tsrt.dtype<int64>, group = 1 : i64, root = 3 : i64}
// CHECK-NEXT: return %[[R]]
func.func @read_only_input(%x: tensor<5xi64> {bufferization.writable = false}) -> tensor<5xi64> {
  %r = tsrt.broadcast ins(%x : tensor<5xi64>) outs(%x : tensor<5xi64>) {dtype = #tsrt.dtype<int64>, group = 1 : i64, root = 3 : i64} -> tensor<5xi64>
  return %r : tensor<5xi64>
}

// -----

// An async gradient bucket: the concatenation's buffer is sent and received
// in place, the wait completes that same buffer and the slice reads it
// after the wait (the copy is the identity layout of the function's result).
// CHECK-LABEL: func.func @async_bucket(
// CHECK: %[[B:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<2xf32> to memref<2xf32, strided<[1]>>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<6xf32> to memref<6xf32, strided<[1], offset: 2>>
// CHECK-NEXT: tsrt.all_reduce async ins(%[[B]] : memref<8xf32>) outs(%[[B]] : memref<8xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, id = 0 : i64, reduction = #tsrt.reduction<mean>}
// CHECK-NEXT: tsrt.wait outs(%[[B]] : memref<8xf32>)
// CHECK-NEXT: %[[S:.*]] = memref.subview %[[B]][2] [6] [1]
// CHECK-NEXT: %[[R:.*]] = memref.alloc()
// CHECK-NEXT: memref.copy %[[S]], %[[R]]
// CHECK-NEXT: return %[[R]]
func.func @async_bucket(%a: tensor<2xf32> {bufferization.writable = false}, %b: tensor<6xf32> {bufferization.writable = false}) -> tensor<6xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %i = tensor.insert_slice %a into %e[0] [2] [1] : tensor<2xf32> into tensor<8xf32>
  %c = tensor.insert_slice %b into %i[2] [6] [1] : tensor<6xf32> into tensor<8xf32>
  %p = tsrt.all_reduce async ins(%c : tensor<8xf32>) outs(%c : tensor<8xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, id = 0 : i64, reduction = #tsrt.reduction<mean>} -> tensor<8xf32>
  %r = tsrt.wait outs(%p : tensor<8xf32>) -> tensor<8xf32>
  %s = tensor.extract_slice %r[2] [6] [1] : tensor<8xf32> to tensor<6xf32>
  return %s : tensor<6xf32>
}

// -----

// While the collective is in flight nothing may read or write its
// destination. The operand is read before the wait, so the all-reduce
// receives into another buffer (not in place, which would overwrite it).
// CHECK-LABEL: func.func @read_while_in_flight(
// CHECK: %[[G:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[G]] : memref<6xf32>)
// CHECK-NEXT: %[[R:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
// CHECK-NEXT: tsrt.all_reduce async ins(%[[G]] : memref<6xf32>) outs(%[[R]] : memref<6xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[G]] : memref<6xf32>)
// CHECK: tsrt.wait outs(%[[R]] : memref<6xf32>)
#id = affine_map<(d0) -> (d0)>
func.func @read_while_in_flight(%v: f32) -> (tensor<6xf32>, tensor<6xf32>) {
  %e = tensor.empty() : tensor<6xf32>
  %g = linalg.fill ins(%v : f32) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  %p = tsrt.all_reduce async ins(%g : tensor<6xf32>) outs(%g : tensor<6xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>} -> tensor<6xf32>
  %f = tensor.empty() : tensor<6xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%g : tensor<6xf32>) outs(%f : tensor<6xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<6xf32>
  %r = tsrt.wait outs(%p : tensor<6xf32>) -> tensor<6xf32>
  return %x, %r : tensor<6xf32>, tensor<6xf32>
}

// -----

// A write into the pending destination before the wait (here a fill of the
// tensor.empty that CSE shared with the gather, read only before the wait)
// goes to another buffer: the wait reads the destination.
// CHECK-LABEL: func.func @write_while_in_flight(
// CHECK: %[[F:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK-NEXT: %[[D:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK-NEXT: tsrt.all_gather async ins(%{{.*}} : memref<2xf32>) outs(%[[D]] : memref<8xf32>)
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[F]] : memref<8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[F]] : memref<8xf32>)
// CHECK: tsrt.wait outs(%[[D]] : memref<8xf32>)
#id = affine_map<(d0) -> (d0)>
func.func @write_while_in_flight(%s: tensor<2xf32> {bufferization.writable = false}, %v: f32) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %p = tsrt.all_gather async ins(%s : tensor<2xf32>) outs(%e : tensor<8xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64} -> tensor<8xf32>
  %f = linalg.fill ins(%v : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %o = tensor.empty() : tensor<8xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%f : tensor<8xf32>) outs(%o : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %r = tsrt.wait outs(%p : tensor<8xf32>) -> tensor<8xf32>
  return %x, %r : tensor<8xf32>, tensor<8xf32>
}

// -----

// Attention reads its operands where they are (no copies) and writes fresh
// buffers for its destinations, never read first.
// CHECK-LABEL: func.func @attention(
// CHECK-SAME: %[[Q:[^:]*]]: memref<2x16x4x16xbf16>, %[[K:[^:]*]]: memref<2x16x4x16xbf16>, %[[V:[^:]*]]: memref<2x16x4x16xbf16>, %[[S:[^:]*]]: memref<f32>)
// CHECK: %[[O:.*]] = memref.alloc() {{.*}} : memref<2x16x4x16xbf16>
// CHECK: %[[ST:.*]] = memref.alloc() {{.*}} : memref<2x4x16xf32>
// CHECK-NOT: memref.copy
// CHECK: tsrt.gpu_attention ins(%[[Q]], %[[K]], %[[V]], %[[S]] : memref<2x16x4x16xbf16>, memref<2x16x4x16xbf16>, memref<2x16x4x16xbf16>, memref<f32>) outs(%[[O]], %[[ST]] : memref<2x16x4x16xbf16>, memref<2x4x16xf32>) {causal,
// CHECK: return %[[O]], %[[ST]]
func.func @attention(%q: tensor<2x16x4x16xbf16>, %k: tensor<2x16x4x16xbf16>, %v: tensor<2x16x4x16xbf16>, %s: tensor<f32>) -> (tensor<2x16x4x16xbf16>, tensor<2x4x16xf32>) {
  %o0 = tensor.empty() : tensor<2x16x4x16xbf16>
  %st0 = tensor.empty() : tensor<2x4x16xf32>
  %o, %st = tsrt.gpu_attention ins(%q, %k, %v, %s : tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<f32>) outs(%o0, %st0 : tensor<2x16x4x16xbf16>, tensor<2x4x16xf32>) {causal, q_layout = array<i64: 0, 2, 1, 3>, k_layout = array<i64: 0, 2, 1, 3>, v_layout = array<i64: 0, 2, 1, 3>, out_layout = array<i64: 0, 2, 1, 3>} -> tensor<2x16x4x16xbf16>, tensor<2x4x16xf32>
  return %o, %st : tensor<2x16x4x16xbf16>, tensor<2x4x16xf32>
}
