"""Checks the outputs of Inputs/mesh-collectives.mlir run on the 2x2 mesh
dp=2, tp=2 against NumPy.

The expected values are computed here from the mesh layout alone: the rank
at coordinates (dp, tp) is 2 * dp + tp (row-major, the last axis
innermost), and a group over several axes is numbered row-major over them.
The input holds small integers, so every sum is exact in float32 and the
outputs must equal NumPy's bit for bit.

Usage: check_mesh_outputs.py INPUTS_DIR OUTPUTS_DIR
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

DP, TP = 2, 2


def rank(dp, tp):
    return dp * TP + tp


def main(inputs_dir, outputs_dir):
    x = np.load(f"{inputs_dir}/input_0.npy")
    ranks = DP * TP
    width = x.shape[1] // ranks
    # tsr.local_shard over [dp, tp]: rank r holds columns [r*w, (r+1)*w).
    shard = {r: x[:, r * width:(r + 1) * width] for r in range(ranks)}

    # all_reduce over [tp]: the two ranks of a tp group share dp.
    tp_sum = {rank(d, t): shard[rank(d, 0)] + shard[rank(d, 1)]
              for d in range(DP) for t in range(TP)}
    # all_gather over [dp] along dim 1: block d from the rank with dp = d.
    want = {"tp_sum_dp_gathered": np.concatenate(
        [tp_sum[rank(d, 0)] for d in range(DP)], axis=1)}
    # reduce_scatter over [dp, tp] along dim 0, then all_gather of the rows
    # over [dp, tp] along dim 1.
    total = sum(shard.values())
    want["scattered_gathered"] = np.concatenate(
        [total[r:r + 1] for r in range(ranks)], axis=1)
    # all_reduce max over [dp]: the two ranks of a dp group share tp.
    dp_max = {rank(d, t): np.maximum(shard[rank(0, t)], shard[rank(1, t)])
              for d in range(DP) for t in range(TP)}
    want["dp_max_gathered"] = np.concatenate(
        [dp_max[r] for r in range(ranks)], axis=1)
    # all_gather over [tp] along dim 1 on rank 0 (dp = 0).
    want["tp_gathered"] = np.concatenate(
        [shard[rank(0, t)] for t in range(TP)], axis=1)

    for i, (name, expected) in enumerate(want.items()):
        tensor = onnx.load_tensor(f"{outputs_dir}/output_{i}.pb")
        got = numpy_helper.to_array(tensor)
        if tensor.name != name or got.shape != expected.shape or \
                not np.array_equal(got, expected.astype(np.float32)):
            print(f"output {i} '{tensor.name}' (expected '{name}'):\n{got}\n"
                  f"expected:\n{expected}")
            return 1
        print(f"output {i} '{name}' {list(got.shape)} equals NumPy")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
