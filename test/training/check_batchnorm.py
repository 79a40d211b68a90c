#!/usr/bin/env python3
"""BatchNormalization in a training step against its formulas.

A float64 model y = BatchNormalization(x, scale, bias, mean, var) with
loss = Σ y·R (R a fixed random Constant) is compiled with
`tessera-compile --mode=train --optimizer=sgd` (the default
`--batch-norm=batch`) and run for three steps through the runtime's Python
binding. NumPy computes the same steps independently:

    μ = mean(x), σ² = mean((x − μ)²) over every axis but 1 (batch statistics)
    x̂ = (x − μ)/√(σ² + ε),  y = scale·x̂ + bias,  loss = Σ y·R
    ∂loss/∂scale = Σ R·x̂,  ∂loss/∂bias = Σ R     (SGD: p −= lr·g)
    running = 0.9·running + 0.1·batch statistic (ONNX's training formula)

and the reported loss, the updated scale and bias and the running mean and
variance must agree. With `--batch-norm=running` the running statistics stay
as they are and the step normalizes with them.

Tolerance: float64 throughout, the same formulas up to reassociation:
rtol 1e-10, atol 1e-12.

Usage: check_batchnorm.py BUILD_DIR
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


RTOL, ATOL = 1e-10, 1e-12
SHAPE, EPS, LR, STEPS = (4, 3, 5, 2), 1e-5, 0.1, 3


def make_model(path, rng):
    c = SHAPE[1]
    r = rng.normal(size=SHAPE)
    inits = {"scale": rng.uniform(0.5, 1.5, c), "bias": rng.normal(size=c),
             "mean": rng.normal(size=c), "var": rng.uniform(0.5, 2.0, c)}
    nodes = [
        helper.make_node("Constant", [], ["R"], value=numpy_helper.from_array(r)),
        helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"],
                         ["y"], epsilon=EPS),
        helper.make_node("Mul", ["y", "R"], ["yr"]),
        helper.make_node("ReduceSum", ["yr"], ["loss"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "bn", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, SHAPE)],
        [helper.make_tensor_value_info("loss", TensorProto.DOUBLE, [])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return r, inits


def reference(r, p, xs, batch_stats):
    p = {k: v.copy() for k, v in p.items()}
    axes, shape = (0, 2, 3), (1, SHAPE[1], 1, 1)
    history = []
    for x in xs:
        if batch_stats:
            mu, var = x.mean(axis=axes), x.var(axis=axes)
        else:
            mu, var = p["mean"], p["var"]
        xhat = (x - mu.reshape(shape)) / np.sqrt(var.reshape(shape) + EPS)
        y = p["scale"].reshape(shape) * xhat + p["bias"].reshape(shape)
        loss = float(np.sum(y * r))
        p["scale"] = p["scale"] - LR * np.sum(r * xhat, axis=axes)
        p["bias"] = p["bias"] - LR * np.sum(r, axis=axes)
        if batch_stats:
            p["mean"] = 0.9 * p["mean"] + 0.1 * mu
            p["var"] = 0.9 * p["var"] + 0.1 * var
        history.append((loss, {k: v.copy() for k, v in p.items()}))
    return history


def compiled(build, model, art, inits, xs, mode):
    from tessera.runtime import Artifact
    subprocess.run([os.path.join(build, "bin", "tessera-compile"), model,
                    "--mode=train", "--optimizer=sgd", f"--lr={LR}",
                    f"--batch-norm={mode}", "-o", art], check=True)
    a = Artifact(art)
    values = [inits[i.name].copy() if i.role == "param" else
              np.full(i.shape, i.init or 0, dtype=i.dtype) if i.role == "state" else None
              for i in a.inputs]
    history = []
    for x in xs:
        outs = a(*[x if v is None else v for v in values])
        for info, out in zip(a.outputs, outs):
            if info.updates is not None:
                values[info.updates] = out
        history.append((float(outs[0]), {i.name: v for i, v in zip(a.inputs, values)
                                          if i.role == "param"}))
    return history


def main():
    build = os.path.abspath(sys.argv[1])
    rng = np.random.default_rng(5)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "bn.onnx")
        r, inits = make_model(model, rng)
        xs = [rng.normal(2.0, 3.0, size=SHAPE) for _ in range(STEPS)]
        for mode in ("batch", "running"):
            want = reference(r, inits, xs, mode == "batch")
            got = compiled(build, model, os.path.join(tmp, mode), inits, xs, mode)
            worst = 0.0
            ok = True
            for (lw, pw), (lg, pg) in zip(want, got):
                worst = max(worst, abs(lg - lw) / abs(lw))
                ok &= bool(np.isclose(lg, lw, rtol=RTOL, atol=ATOL))
                for k in pw:
                    worst = max(worst, float(np.max(np.abs(pg[k] - pw[k]) /
                                                    (np.abs(pw[k]) + ATOL))))
                    ok &= bool(np.allclose(pg[k], pw[k], rtol=RTOL, atol=ATOL))
            print(f"--batch-norm={mode:<8} {STEPS} steps: max rel err {worst:.3e} "
                  f"{'ok' if ok else 'MISMATCH'}")
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    sys.exit(main())
