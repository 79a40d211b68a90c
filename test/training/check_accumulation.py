#!/usr/bin/env python3
"""Gradient accumulation: k micro-batches of b samples make the same update
as one batch of k·b.

A float32 two-layer MLP with a cross-entropy loss (mean over the batch) is
compiled twice with `--batch-size=16`: once as one batch, once with
`--micro-batches=k` for k in 2, 4 and 8. Each artifact runs three steps on the
same 16-sample batches, through the runtime's Python binding, with SGD with
momentum and with Adam; parameters must agree after every step.

Tolerance: the two programs sum the same per-sample gradients in a different
order (k partial means, then their mean), so they differ by float32 rounding
of sums of 16 terms: a few ulps, amplified over three steps. rtol 2e-5,
atol 1e-6 on parameters of size ~0.1-1.

Usage: check_accumulation.py BUILD_DIR
"""

import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# An ASan build preloads its sanitizer runtime into this interpreter and
# turns leak checking off for it (TESSERA_PYTHON_TEST_ENV); the tools it runs
# link their own copy and keep leak checking on.
os.environ.pop("LD_PRELOAD", None)
os.environ.pop("ASAN_OPTIONS", None)


BATCH, STEPS = 16, 3
RTOL, ATOL = 2e-5, 1e-6


def make_model(path):
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.normal(0, 0.5, s).astype(np.float32), n)
             for n, s in (("w1", (6, 8)), ("b1", (8,)), ("w2", (8, 5)), ("b2", (5,)))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"]),
             helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Tanh", ["h1"], ["h2"]),
             helper.make_node("MatMul", ["h2", "w2"], ["h3"]),
             helper.make_node("Add", ["h3", "b2"], ["logits"])]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, 6])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [BATCH, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def train(build, model, art, k, optimizer, batches):
    from tessera.runtime import Artifact
    subprocess.run([os.path.join(build, "bin", "tessera-compile"), model, "--mode=train",
                    "--loss=cross_entropy", "--logits=logits", "--labels=y",
                    f"--batch-size={BATCH}", f"--micro-batches={k}"] + optimizer +
                   ["-o", art], check=True)
    a = Artifact(art)
    init = {t.name: numpy_helper.to_array(t) for t in onnx.load(model).graph.initializer}
    values = [init[i.name].copy() if i.role == "param" else
              np.full(i.shape, i.init or 0, dtype=i.dtype) if i.role == "state" else None
              for i in a.inputs]
    history = []
    for x, y in batches:
        feed = {"x": x, "y": y}
        outs = a(*[feed[i.name] if v is None else v for i, v in zip(a.inputs, values)])
        for info, out in zip(a.outputs, outs):
            if info.updates is not None:
                values[info.updates] = out
        history.append((float(outs[0]), {i.name: v for i, v in zip(a.inputs, values)
                                          if i.role == "param"}))
    return history


def main():
    build = os.path.abspath(sys.argv[1])
    rng = np.random.default_rng(11)
    batches = [(rng.normal(size=(BATCH, 6)).astype(np.float32),
                rng.integers(0, 5, size=BATCH)) for _ in range(STEPS)]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "mlp.onnx")
        make_model(model)
        print(f"{'optimizer':<40} {'k':>3} {'max rel err (params)':>22} {'loss diff':>10}")
        for optimizer in (["--optimizer=sgd", "--lr=0.5", "--momentum=0.9"],
                          ["--optimizer=adam", "--lr=0.01"]):
            whole = train(build, model, os.path.join(tmp, "whole"), 1, optimizer, batches)
            for k in (2, 4, 8):
                split = train(build, model, os.path.join(tmp, f"k{k}"), k, optimizer, batches)
                worst, ok, dloss = 0.0, True, 0.0
                for (lw, pw), (ls, ps) in zip(whole, split):
                    dloss = max(dloss, abs(lw - ls))
                    ok &= abs(lw - ls) <= RTOL * abs(lw) + ATOL
                    for name in pw:
                        err = np.abs(ps[name] - pw[name]) / (np.abs(pw[name]) + ATOL)
                        worst = max(worst, float(err.max()))
                        ok &= bool(np.allclose(ps[name], pw[name], rtol=RTOL, atol=ATOL))
                print(f"{' '.join(optimizer):<40} {k:>3} {worst:22.3e} {dloss:10.2e} "
                      f"{'ok' if ok else 'MISMATCH'}")
                failures += not ok
    print("accumulation matches the whole batch" if not failures else
          f"{failures} configurations differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    sys.exit(main())
