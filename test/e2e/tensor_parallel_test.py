#!/usr/bin/env python3
"""Tensor parallelism found on an unannotated model, against one process.

The GPT block of make_models.py (attention with MatMul+Add projections and
heads by Reshape/Transpose, a GELU MLP, two LayerNorms, residuals) is
compiled with ``tessera-compile --mode=grad --loss=mse`` once for one process
and once with ``--mesh tp=N`` (N = 2 and 4), where tsr-sharding-propagation
decides the layout and tsr-sharding-partition rewrites the loss function per
rank before autodiff. Checked:

* the layout is Megatron's: the Q, K, V and FC1 weights split by columns
  (with their biases), the attention output and FC2 weights by rows, the
  norms and the row-parallel biases whole (manifest ``sharding``);
* the communication is Megatron's: in the forward pass exactly two
  all-reduces of the [batch, seq, d_model] activations and nothing else; in
  the backward pass two all-reduces of activations (their transposes) plus
  one all-reduce per gradient of a whole (replicated) parameter or input,
  and no all-gather or reduce-scatter;
* numbers: under ``mpirun -np N`` (the runtime's Python binding binds the
  tp group), every rank's loss equals the single process's, and every
  gradient (this rank's block of a split parameter, all of a whole one)
  equals the matching part of the single process's gradient.

Tolerance: float32, rtol 2e-5 and atol 1e-6 relative to the largest
element of any gradient (the key projection's bias has an analytically zero
gradient, softmax being shift-invariant: float32 noise of 1e-10 there is
no error). Splitting a contraction over N ranks sums the same
products in another order (N partial sums added by the all-reduce): the
difference is a few float32 ulps (2^-24 ≈ 6e-8) of the summed magnitudes,
measured 3.0e-7 of the largest gradient element; a wrong layout or a missing reduction errs by
O(1).

Usage: tensor_parallel_test.py BUILD_DIR REPO_ROOT
(the worker mode, --worker ARTIFACT INPUTS OUT, is what mpirun runs).
Exits 1 on a failed check, 2 on a setup error.
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np

RTOL, ATOL = 2e-5, 1e-6

COLUMN = ["attn.q", "attn.k", "attn.v", "mlp.fc1"]
ROW = ["attn.out", "mlp.fc2"]


def fail(msg, code=1):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(code)


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        fail(f"{' '.join(map(str, cmd))} exited {done.returncode}:\n"
             f"{done.stdout}{done.stderr}", 2)
    return done


def block(array, sharding, rank, size):
    """This rank's block of `array` laid out as `sharding` over one axis."""
    for d, axes in enumerate(sharding):
        if axes:
            n = array.shape[d] // size
            array = np.take(array, range(rank * n, (rank + 1) * n), axis=d)
    return array


def worker(artifact, inputs, out):
    root = pathlib.Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "python"))
    from tessera.runtime import Artifact, Communicator

    world = Communicator.world()
    world.bind_axis(1)  # the group of mesh axis 0, tp
    manifest = json.loads((pathlib.Path(artifact) / "manifest.json").read_text())
    specs = manifest["programs"][0]["inputs"]
    arrays = np.load(inputs)
    local = [block(arrays[s["name"]], s.get("sharding", []), world.rank,
                   world.size) for s in specs]
    art = Artifact(artifact)
    outputs = art(*local)
    np.savez(out.replace("RANK", str(world.rank)),
             **{f"out{i}": o for i, o in enumerate(outputs)})
    art.close()
    world.close()
    return 0


def check_ir(ir, n):
    """Megatron's collectives in the per-rank program of --emit=tsr."""
    activation = "tensor<2x16x64xf32>"
    forward, backward = [], []
    for line in ir.splitlines():
        m = re.search(r"tsr\.(all_reduce|all_gather|reduce_scatter|all_to_all"
                      r"|broadcast_from) .*\{(.*)\} : \((tensor<[^)]*>)\)", line)
        if m:
            (backward if "tsr.backward" in line else forward).append(
                (m.group(1), m.group(2), m.group(3)))
    problems = []
    if [(k, t) for k, _, t in forward] != [("all_reduce", activation)] * 2:
        problems.append(f"forward collectives {forward}, expected two "
                        f"all-reduces of {activation}")
    if any(k != "all_reduce" for k, _, _ in backward):
        problems.append(f"backward has a collective other than all_reduce: "
                        f"{backward}")
    transposes = [c for c in backward if "serves = [" not in c[1]]
    if [(k, t) for k, _, t in transposes] != [("all_reduce", activation)] * 2:
        problems.append(f"backward activation collectives {transposes}, "
                        f"expected the two transposed all-reduces")
    print(f"tp={n}: forward {len(forward)} collectives "
          f"({', '.join(k + ' ' + t for k, _, t in forward)}); backward "
          f"{len(transposes)} activation all-reduces + "
          f"{len(backward) - len(transposes)} gradient all-reduces of whole "
          f"values")
    return problems


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        return worker(*sys.argv[2:])
    if len(sys.argv) != 3:
        fail("usage: tensor_parallel_test.py BUILD_DIR REPO_ROOT", 2)
    build, repo = map(pathlib.Path, sys.argv[1:])
    bin_dir = build / "bin"
    sys.path.insert(0, str(repo / "python"))
    import onnx
    from onnx import numpy_helper
    from tessera.runtime import Artifact

    tools_env = {k: v for k, v in os.environ.items()
                 if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    forward = []
    for name in ("LD_PRELOAD", "ASAN_OPTIONS"):
        if name in os.environ:
            forward += ["-x", f"{name}={os.environ[name]}"]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        run([sys.executable, repo / "python/tessera_examples/make_models.py",
             "--out", tmp, "--only", "gpt_block", "--no-verify"])
        model = tmp / "gpt_block.onnx"
        compile_args = [bin_dir / "tessera-compile", model, "--mode=grad",
                        "--loss=mse", "--logits=y"]
        run(compile_args + ["-o", tmp / "single"], env=tools_env)
        single = Artifact(str(tmp / "single"))
        rng = np.random.default_rng(7)
        init = {i.name: numpy_helper.to_array(i)
                for i in onnx.load(model).graph.initializer}
        arrays = {}
        for info in single.inputs:
            arrays[info.name] = init[info.name] if info.name in init else \
                rng.standard_normal(info.shape).astype(np.float32)
        np.savez(tmp / "inputs.npz", **arrays)
        reference = single(*[arrays[i.name] for i in single.inputs])
        names = [o.name for o in single.outputs]
        single.close()

        for n in (2, 4):
            art = tmp / f"tp{n}"
            run(compile_args + [f"--mesh=tp={n}", "-o", art], env=tools_env)
            ir = run(compile_args + [f"--mesh=tp={n}", "--emit=tsr"],
                     env=tools_env).stdout
            problems += check_ir(ir, n)
            manifest = json.loads((art / "manifest.json").read_text())
            specs = {s["name"]: s.get("sharding", [])
                     for s in manifest["programs"][0]["inputs"]}
            for prefix in COLUMN:
                if specs[prefix + ".weight"] != [[], ["tp"]] or \
                        specs[prefix + ".bias"] != [["tp"]]:
                    problems.append(f"tp={n}: {prefix} is not column-"
                                    f"parallel: {specs[prefix + '.weight']}, "
                                    f"{specs[prefix + '.bias']}")
            for prefix in ROW:
                if specs[prefix + ".weight"] != [["tp"], []] or \
                        specs[prefix + ".bias"]:
                    problems.append(f"tp={n}: {prefix} is not row-parallel: "
                                    f"{specs[prefix + '.weight']}, "
                                    f"{specs[prefix + '.bias']}")
            for other in ("ln1.weight", "ln2.bias", "x", "labels"):
                if specs[other]:
                    problems.append(f"tp={n}: {other} is split: {specs[other]}")

            done = subprocess.run(
                ["mpirun", "-np", str(n)] + forward +
                [sys.executable, __file__, "--worker", str(art),
                 str(tmp / "inputs.npz"), str(tmp / f"tp{n}.RANK.npz")],
                capture_output=True, text=True, env=tools_env, timeout=600)
            if done.returncode != 0:
                fail(f"mpirun -np {n} exited {done.returncode}:\n"
                     f"{done.stdout}{done.stderr}")
            worst = 0.0
            scale = max(float(np.abs(r).max()) for r in reference[1:])
            grad_specs = manifest["programs"][0]["outputs"]
            input_specs = manifest["programs"][0]["inputs"]
            for rank in range(n):
                got = np.load(tmp / f"tp{n}.{rank}.npz")
                for i, name in enumerate(names):
                    out = got[f"out{i}"]
                    spec = grad_specs[i]
                    sharding = []
                    if "of" in spec:
                        sharding = input_specs[spec["of"]].get("sharding", [])
                    want = block(reference[i], sharding, rank, n)
                    err = float(np.max(np.abs(out - want) /
                                       (ATOL * scale + RTOL * np.abs(want))))
                    worst = max(worst, float(np.max(np.abs(out - want))) /
                                scale)
                    if err > 1.0:
                        problems.append(
                            f"tp={n} rank {rank}: {name} differs from one "
                            f"process by {float(np.max(np.abs(out - want))):.3g}"
                            f" (largest gradient element {scale:.3g})")
            print(f"tp={n}: loss and {len(names) - 1} gradients on {n} ranks "
                  f"match one process; largest difference {worst:.2e} of the "
                  f"largest gradient element")
    if problems:
        for p in problems:
            print(f"FAIL: {p}", file=sys.stderr)
        return 1
    print("tensor parallelism matches one process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
