#!/usr/bin/env python3
"""Finite-difference check of the collectives' gradient rules over MPI.

A per-rank program's gradients are the derivatives of the sum of every
rank's loss, G = Σ_s L_s, with respect to this rank's inputs
(lib/Transforms/Autodiff/CollectiveRules.cpp). This test builds one float64
tsr program over a mesh of RANKS ranks on one axis, in which each case is a
collective followed by a nonlinearity and a weighted sum:

    L_r = Σ_k Σ W_k · tanh(collective_k(X_k))

with X_k and W_k inputs that differ from rank to rank, differentiates it
with `tessera-opt --tsr-autodiff=wrt-inputs=true`, compiles it with
`tessera-compile`, and runs it under `mpirun -np RANKS` through the
runtime's Python binding. Every element of every gradient on every rank is
compared with a central difference of G: all ranks run the program with
that one element of that one rank moved by ±h, and sum their losses.

Cases: all_reduce (sum, mean), all_gather (dim 1), reduce_scatter (sum dim
0, mean dim 1), all_to_all (dim 0), broadcast_from (root 1), local_shard
(dim 1). Three ranks, so that a transposed block order or root would show.

Tolerance: |num − grad| ≤ ATOL + RTOL·|grad|, as in check_gradients.py and
for the same reason: float64, h = 1e-6·max(1, |x|), truncation ~1e-12,
rounding ~ε·S/h with S ≤ ~20 here, so ~5e-9; a wrong rule errs by O(|grad|).

Usage: check_collective_gradients.py BUILD_DIR
(the worker mode, --worker ARTIFACT, is what mpirun runs).
Exits 1 on a mismatch, 2 on a setup error.
"""

import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
RANKS = 3
RTOL, ATOL, STEP = 1e-6, 1e-7, 1e-6

# name, input shape, collective (tsr syntax with {x} for the operand and
# {t} for its type), result shape.
CASES = [
    ("all_reduce sum", (2, 3),
     'tsr.all_reduce {x} {{mesh_axes = ["x"], reduction = '
     '#tsr.reduction<sum>}} : ({t}) -> tensor<2x3xf64>', (2, 3)),
    ("all_reduce mean", (2, 3),
     'tsr.all_reduce {x} {{mesh_axes = ["x"], reduction = '
     '#tsr.reduction<mean>}} : ({t}) -> tensor<2x3xf64>', (2, 3)),
    ("all_gather dim 1", (2, 2),
     'tsr.all_gather {x} {{dim = 1 : i64, mesh_axes = ["x"]}} : ({t}) -> '
     'tensor<2x6xf64>', (2, 6)),
    ("reduce_scatter sum dim 0", (6, 2),
     'tsr.reduce_scatter {x} {{mesh_axes = ["x"], reduction = '
     '#tsr.reduction<sum>}} : ({t}) -> tensor<2x2xf64>', (2, 2)),
    ("reduce_scatter mean dim 1", (2, 6),
     'tsr.reduce_scatter {x} {{dim = 1 : i64, mesh_axes = ["x"], reduction = '
     '#tsr.reduction<mean>}} : ({t}) -> tensor<2x2xf64>', (2, 2)),
    ("all_to_all dim 0", (6, 2),
     'tsr.all_to_all {x} {{mesh_axes = ["x"]}} : ({t}) -> tensor<6x2xf64>',
     (6, 2)),
    ("broadcast_from root 1", (4,),
     'tsr.broadcast_from {x} {{mesh_axes = ["x"], root = 1 : i64}} : ({t}) '
     '-> tensor<4xf64>', (4,)),
    ("local_shard dim 1", (2, 6),
     'tsr.local_shard {x} {{dim = 1 : i64, mesh_axes = ["x"]}} : ({t}) -> '
     'tensor<2x2xf64>', (2, 2)),
]


def tensor_type(shape):
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f64>"


def program():
    """The tsr module: inputs x0, w0, x1, w1, ...; one loss result."""
    args, body, terms = [], [], []
    for k, (_, shape, collective, out) in enumerate(CASES):
        args.append(f'%x{k}: {tensor_type(shape)} {{tsr.name = "x{k}"}}')
        args.append(f'%w{k}: {tensor_type(out)} {{tsr.name = "w{k}"}}')
        o = tensor_type(out)
        axes = ", ".join(str(d) for d in range(len(out)))
        body += [
            f"%y{k} = " + collective.format(x=f"%x{k}", t=tensor_type(shape)),
            f"%h{k} = tsr.tanh %y{k} : {o}",
            f"%p{k} = tsr.mul %h{k}, %w{k} : {o}, {o} -> {o}",
            f"%l{k} = tsr.reduce_sum %p{k} {{axes = array<i64: {axes}>, "
            f"keepdims = false}} : ({o}) -> tensor<f64>",
        ]
        terms.append(f"%l{k}")
    total = terms[0]
    for k, term in enumerate(terms[1:]):
        body.append(f"%s{k} = tsr.add {total}, {term} : tensor<f64>, "
                    "tensor<f64> -> tensor<f64>")
        total = f"%s{k}"
    lines = [f'module attributes {{tsr.mesh = #tsr.mesh<["x"={RANKS}]>}} {{',
             "  func.func @main(" + ", ".join(args) + ") -> (tensor<f64> "
             '{tsr.name = "loss", tsr.role = #tsr.role<loss>}) {']
    lines += ["    " + line for line in body]
    lines += [f"    return {total} : tensor<f64>", "  }", "}"]
    return "\n".join(lines) + "\n"


def inputs(rank):
    rng = np.random.default_rng(1000 + rank)
    arrays = []
    for _, shape, _, out in CASES:
        arrays.append(rng.uniform(-1.0, 1.0, shape))
        arrays.append(rng.uniform(-1.0, 1.0, out))
    return arrays


def worker(artifact):
    sys.path.insert(0, str(ROOT / "python"))
    from tessera.runtime import Artifact, Communicator

    world = Communicator.world()
    rank, size = world.rank, world.size
    if size != RANKS:
        print(f"FAIL: rank {rank}: {size} ranks, expected {RANKS}",
              file=sys.stderr)
        return 2
    world.bind_axis(1)
    art = Artifact(artifact)
    xs = inputs(rank)
    loss, *grads = art(*xs)
    if len(grads) != len(xs):
        print(f"FAIL: {len(grads)} gradients for {len(xs)} inputs",
              file=sys.stderr)
        return 2

    def total(arrays):
        return float(world.all_reduce_sum(np.array([art(*arrays)[0]]))[0])

    # worst[i] = largest scaled error of input i on this rank.
    worst = np.zeros(len(xs))
    for owner in range(size):
        for i in range(len(xs)):
            count = world.all_reduce_sum(
                np.array([xs[i].size if rank == owner else 0], np.int64))[0]
            for e in range(count):
                moved = [x.copy() for x in xs]
                if rank == owner:
                    flat = moved[i].reshape(-1)
                    h = STEP * max(1.0, abs(flat[e]))
                    flat[e] += h
                plus = total(moved)
                if rank == owner:
                    flat[e] -= 2 * h
                minus = total(moved)
                if rank == owner:
                    num = (plus - minus) / (2 * h)
                    g = grads[i].reshape(-1)[e]
                    err = abs(num - g) / max(abs(g), ATOL / RTOL)
                    worst[i] = max(worst[i], err)
    everywhere = [world.all_reduce_sum(
        np.array([worst[i] if r == rank else 0.0])) for r in range(size)
        for i in range(len(xs))]
    failed = False
    if rank == 0:
        print(f"collective gradients over {size} ranks; pass if |num - grad| "
              f"<= {ATOL:g} + {RTOL:g}*|grad|")
        print(f"{'case':28} {'input':6} max rel error (ranks 0..{size - 1})")
    for k, (name, *_rest) in enumerate(CASES):
        for j, label in ((2 * k, "x"), (2 * k + 1, "w")):
            errors = [float(everywhere[r * len(xs) + j][0])
                      for r in range(size)]
            bad = max(errors) > RTOL
            failed |= bad
            if rank == 0:
                print(f"{name:28} {label:6} "
                      + " ".join(f"{e:9.2e}" for e in errors)
                      + ("  MISMATCH" if bad else ""))
    art.close()
    world.close()
    if failed:
        if rank == 0:
            print("FAIL: a collective's gradient differs from its central "
                  "difference", file=sys.stderr)
        return 1
    if rank == 0:
        print("All collective gradients match their central differences.")
    return 0


def run(cmd, env=None):
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        print(f"FAIL: {' '.join(cmd)} exited {done.returncode}:\n"
              f"{done.stdout}{done.stderr}", file=sys.stderr)
        sys.exit(2)
    return done


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        return worker(sys.argv[2])
    if len(sys.argv) != 2:
        print("usage: check_collective_gradients.py BUILD_DIR",
              file=sys.stderr)
        return 2
    bin_dir = pathlib.Path(sys.argv[1]) / "bin"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "step.mlir").write_text(program())
        # The tools link their own sanitizer runtime in an ASan build.
        tools_env = {k: v for k, v in os.environ.items()
                     if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
        run([str(bin_dir / "tessera-opt"), str(tmp / "step.mlir"),
             "--tsr-autodiff=wrt-inputs=true", "-o", str(tmp / "grad.mlir")],
            tools_env)
        run([str(bin_dir / "tessera-compile"), str(tmp / "grad.mlir"), "-o",
             str(tmp / "art")], tools_env)
        # An ASan build preloads its runtime into this interpreter: the
        # ranks (Python loading the runtime library) need it, mpirun not.
        forward = []
        for name in ("LD_PRELOAD", "ASAN_OPTIONS"):
            if name in os.environ:
                forward += ["-x", f"{name}={os.environ[name]}"]
        done = subprocess.run(
            ["mpirun", "-np", str(RANKS)] + forward +
            [sys.executable, __file__, "--worker", str(tmp / "art")],
            capture_output=True, text=True, env=tools_env, timeout=600)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        if done.returncode != 0:
            print(f"FAIL: mpirun exited {done.returncode}", file=sys.stderr)
            return 1 if done.returncode == 1 else 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
