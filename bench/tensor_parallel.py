#!/usr/bin/env python3
"""Tensor and sequence parallelism on a GPT exported by PyTorch: per-rank
parameter bytes, communication per step, compile time and the time of one
loss-and-gradient call, against one process in the same run.

The model is python/tessera_examples/make_torch_gpt.py at a size where the
matmuls dominate (default: 4 layers, d_model 256, 8 heads, sequence 64,
vocabulary 512, batch 4). Each configuration is compiled with
``tessera-compile --mode=grad --loss=cross_entropy`` (tp=1: no mesh), its
``--explain`` listing gives the collectives and the bytes one rank sends per
step (the α-β model's β coefficient), its manifest the parameter bytes one
rank holds, and ``mpirun -np N`` times ``--repeat`` calls of the compiled
function on every rank through the runtime's Python binding (rank 0's
median; every rank runs the same program).

Training with tp is not compiled to an artifact yet (the runtime does not
hold parameter blocks), so this times the forward and backward passes, not
the optimizer step; dp is not in the table for the same reason.

    .venv/bin/python bench/tensor_parallel.py [--repeat 20] [--layers 4]
        [--d-model 256] [--heads 8] [--seq 64] [--vocab 512] [--batch 4]

Ranks share the machine's cores: on a 2-core machine, 4 ranks are
oversubscribed, so the time column there measures contention as much as
parallelism. Compare configurations by the ratio column, within one run.
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
TORCH_PYTHON = "/usr/bin/python3"


def run(cmd, **kw):
    done = subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, **kw)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} exited {done.returncode}:\n"
                 f"{done.stdout}{done.stderr}")
    return done


def block(array, sharding, rank, size):
    for d, axes in enumerate(sharding):
        if axes:
            n = array.shape[d] // size
            array = np.take(array, range(rank * n, (rank + 1) * n), axis=d)
    return array


def worker(artifact, inputs, repeat):
    sys.path.insert(0, str(ROOT / "python"))
    from tessera.runtime import Artifact, Communicator

    world = Communicator.world() if "OMPI_COMM_WORLD_SIZE" in os.environ \
        else None
    art = Artifact(artifact)
    mesh = world.mesh(art) if world else None
    rank = world.rank if world else 0
    size, coordinate = mesh.axes["tp"] if mesh else (1, 0)
    manifest = json.loads((pathlib.Path(artifact) / "manifest.json")
                          .read_text())
    arrays = np.load(inputs)
    local = [block(arrays[s["name"]], s.get("sharding", []), coordinate, size)
             for s in manifest["programs"][0]["inputs"]]
    times = []
    for i in range(repeat + 2):
        start = time.perf_counter()
        art(*local)
        if i >= 2:
            times.append(time.perf_counter() - start)
    if rank == 0:
        print(f"MEDIAN {statistics.median(times)}")
    if mesh:
        mesh.close()
    art.close()
    if world:
        world.close()
    return 0


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        return worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--batch", type=int, default=4)
    args = ap.parse_args()
    compiler = pathlib.Path(args.build) / "bin" / "tessera-compile"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               TESSERA_RUNTIME_LIB=str(pathlib.Path(args.build) / "lib" /
                                       "libtessera_runtime.so"))
    sys.path.insert(0, str(ROOT / "python"))
    import onnx
    from onnx import numpy_helper
    from tessera.runtime import Artifact

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        run([TORCH_PYTHON, ROOT / "python/tessera_examples/make_torch_gpt.py",
             "--out", tmp, "--layers", args.layers, "--d-model", args.d_model,
             "--heads", args.heads, "--seq", args.seq, "--vocab", args.vocab])
        model = tmp / "torch_gpt.onnx"
        flags = ["--mode=grad", "--loss=cross_entropy", "--logits=logits",
                 f"--batch-size={args.batch}"]
        configs = [("tp1", 1, []), ("tp2", 2, ["--mesh=tp=2"]),
                   ("tp4", 4, ["--mesh=tp=4"]),
                   ("tp2 sp", 2, ["--mesh=tp=2", "--sequence-parallel"]),
                   ("tp4 sp", 4, ["--mesh=tp=4", "--sequence-parallel"])]
        init = {i.name: numpy_helper.to_array(i)
                for i in onnx.load(model).graph.initializer}
        rows = []
        for name, n, mesh in configs:
            art = tmp / name.replace(" ", "_")
            start = time.perf_counter()
            explained = run([compiler, model, *flags, *mesh, "-o", art,
                             "--explain"], env=env).stdout
            compile_s = time.perf_counter() - start
            sent = [int(b) for b in
                    re.findall(r"over \w+, (\d+) bytes per rank", explained)]
            manifest = json.loads((art / "manifest.json").read_text())
            specs = manifest["programs"][0]["inputs"]
            params = sum(4 * int(np.prod(s["shape"])) for s in specs
                         if s.get("role") == "param")
            if name == "tp1":
                single = Artifact(str(art))
                rng = np.random.default_rng(0)
                arrays = {}
                for info in single.inputs:
                    if info.name in init:
                        arrays[info.name] = init[info.name]
                    elif info.dtype == "int64":
                        arrays[info.name] = rng.integers(0, args.vocab,
                                                         info.shape)
                    else:
                        arrays[info.name] = rng.standard_normal(
                            info.shape).astype(np.float32)
                single.close()
                np.savez(tmp / "inputs.npz", **arrays)
            cmd = [sys.executable, __file__, "--worker", art,
                   tmp / "inputs.npz", args.repeat]
            if n > 1:
                cmd = ["mpirun", "-np", n, *cmd]
            out = run(cmd, env=env).stdout
            median = float(re.search(r"MEDIAN (\S+)", out).group(1))
            rows.append((name, params, len(sent), sum(sent), compile_s,
                         median))
        base = rows[0]
        print(f"loss and gradients of a {args.layers}-layer GPT exported by "
              f"PyTorch (d_model {args.d_model}, {args.heads} heads, sequence "
              f"{args.seq}, vocabulary {args.vocab}, batch {args.batch}); "
              f"{args.repeat} calls, rank 0's median")
        print("| config | parameter bytes per rank | / tp1 | collectives per "
              "step | bytes sent per rank per step | compile s | step ms | "
              "step / tp1 |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, params, count, sent, compile_s, median in rows:
            print(f"| {name} | {params} | {params / base[1]:.3f} | {count} | "
                  f"{sent} | {compile_s:.2f} | {1e3 * median:.2f} | "
                  f"{median / base[5]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
