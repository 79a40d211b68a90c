// A per-rank program on the 2x2 mesh dp=2, tp=2 (rank 2 * dp + tp), written
// by hand: every rank cuts its own block of columns out of the replicated
// input (tsr.local_shard over both axes), then the values travel over the
// tp groups, the dp groups and the whole mesh. The last collectives gather
// every rank's result, so that rank 0's outputs show all four ranks.
// test/tools/tessera-run-mesh.test runs it on 4 ranks.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2, "tp"=2]>} {
  func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"}) -> (tensor<4x4xf32> {tsr.name = "tp_sum_dp_gathered"}, tensor<1x8xf32> {tsr.name = "scattered_gathered"}, tensor<4x8xf32> {tsr.name = "dp_max_gathered"}, tensor<4x4xf32> {tsr.name = "tp_gathered"}) {
    %s = tsr.local_shard %x {dim = 1 : i64, mesh_axes = ["dp", "tp"]} : (tensor<4x8xf32>) -> tensor<4x2xf32>
    %a = tsr.all_reduce %s {mesh_axes = ["tp"], reduction = #tsr.reduction<sum>} : (tensor<4x2xf32>) -> tensor<4x2xf32>
    %b = tsr.all_gather %a {dim = 1 : i64, mesh_axes = ["dp"]} : (tensor<4x2xf32>) -> tensor<4x4xf32>
    %c = tsr.reduce_scatter %s {mesh_axes = ["dp", "tp"], reduction = #tsr.reduction<sum>} : (tensor<4x2xf32>) -> tensor<1x2xf32>
    %d = tsr.all_gather %c {dim = 1 : i64, mesh_axes = ["dp", "tp"]} : (tensor<1x2xf32>) -> tensor<1x8xf32>
    %e = tsr.all_reduce %s {mesh_axes = ["dp"], reduction = #tsr.reduction<max>} : (tensor<4x2xf32>) -> tensor<4x2xf32>
    %g = tsr.all_gather %e {dim = 1 : i64, mesh_axes = ["dp", "tp"]} : (tensor<4x2xf32>) -> tensor<4x8xf32>
    %t = tsr.all_gather %s {dim = 1 : i64, mesh_axes = ["tp"]} : (tensor<4x2xf32>) -> tensor<4x4xf32>
    return %b, %d, %g, %t : tensor<4x4xf32>, tensor<1x8xf32>, tensor<4x8xf32>, tensor<4x4xf32>
  }
}
