// RUN: tessera-opt %s | tessera-opt | FileCheck %s

// Every collective prints and parses back with its axis, reduction and the
// values it serves; the mesh is the module's.
module attributes {tsr.mesh = {dp = 4 : i64}} {
  // CHECK-LABEL: func.func @collectives(
  func.func @collectives(%x: tensor<8x3xf32>, %s: tensor<2x3xf32>, %i: tensor<8xi64>) -> (tensor<8x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8xi64>, tensor<2x3xf32>) {
    // CHECK: tsr.all_reduce %{{.*}} {bucket = 0 : i64, mesh_axis = "dp", reduction = "mean", serves = ["w", "b"]} : (tensor<8x3xf32>) -> tensor<8x3xf32>
    %a = tsr.all_reduce %x {mesh_axis = "dp", reduction = "mean", serves = ["w", "b"], bucket = 0 : i64} : (tensor<8x3xf32>) -> tensor<8x3xf32>
    // The default reduction, sum, is not printed.
    // CHECK: tsr.reduce_scatter %{{.*}} {mesh_axis = "dp", serves = ["w"]} : (tensor<8x3xf32>) -> tensor<2x3xf32>
    %r = tsr.reduce_scatter %x {mesh_axis = "dp", reduction = "sum", serves = ["w"]} : (tensor<8x3xf32>) -> tensor<2x3xf32>
    // CHECK: tsr.all_gather %{{.*}} {id = 3 : i64, mesh_axis = "dp", serves = ["w"]} : (tensor<2x3xf32>) -> tensor<8x3xf32>
    %g = tsr.all_gather %s {mesh_axis = "dp", serves = ["w"], id = 3 : i64} : (tensor<2x3xf32>) -> tensor<8x3xf32>
    // CHECK: tsr.all_to_all %{{.*}} {mesh_axis = "dp"} : (tensor<8x3xf32>) -> tensor<8x3xf32>
    %t = tsr.all_to_all %x {mesh_axis = "dp"} : (tensor<8x3xf32>) -> tensor<8x3xf32>
    // CHECK: tsr.broadcast_from %{{.*}} {mesh_axis = "dp", root = 2 : i64, serves = ["ids"]} : (tensor<8xi64>) -> tensor<8xi64>
    %b = tsr.broadcast_from %i {mesh_axis = "dp", root = 2 : i64, serves = ["ids"]} : (tensor<8xi64>) -> tensor<8xi64>
    // CHECK: tsr.local_shard %{{.*}} {mesh_axis = "dp"} : (tensor<8x3xf32>) -> tensor<2x3xf32>
    %l = tsr.local_shard %x {mesh_axis = "dp"} : (tensor<8x3xf32>) -> tensor<2x3xf32>
    return %a, %r, %g, %t, %b, %l : tensor<8x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8xi64>, tensor<2x3xf32>
  }
}

// An async collective and the wait that completes it.
module attributes {tsr.mesh = {dp = 2 : i64}} {
  // CHECK-LABEL: func.func @async(
  func.func @async(%g: tensor<6xf32>) -> tensor<3xf32> {
    // CHECK: %[[P:.*]] = tsr.reduce_scatter %{{.*}} {async, bucket = 1 : i64, mesh_axis = "dp", reduction = "mean", serves = ["w"]} : (tensor<6xf32>) -> tensor<3xf32>
    %p = tsr.reduce_scatter %g {async, bucket = 1 : i64, mesh_axis = "dp", reduction = "mean", serves = ["w"]} : (tensor<6xf32>) -> tensor<3xf32>
    // CHECK: tsr.wait %[[P]] : (tensor<3xf32>) -> tensor<3xf32>
    %r = tsr.wait %p : (tensor<3xf32>) -> tensor<3xf32>
    return %r : tensor<3xf32>
  }
}
