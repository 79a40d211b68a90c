#!/usr/bin/env python3
"""The CPU target's f32 exp, log, tanh and erf against float64 references.

tsr-cpu-approximate-math replaces libm's f32 calls by MLIR's polynomial
approximations (vectorizable). This test compiles one ONNX model with an
Exp, Log, Tanh, Erf, Softplus (log(1 + exp)) and Sigmoid on a float32[N]
input (N = 2^20), runs it with tessera-run, and compares every output with
numpy's float64 result rounded to float32:

- on finite inputs over each function's useful range, the error is at most
  MAX_ULP[op] units in the last place of the float32 result, with an
  absolute floor of 2^-126 near zero (a cruder approximation breaks it);
- special values are exact: exp(-inf) = 0, exp(inf) = inf, exp of large
  arguments over/underflows to inf/0, log(0) = -inf, log(x < 0) = nan,
  log(inf) = inf, tanh(+-inf) = +-1, erf(+-inf) = +-1, and nan stays nan.

Usage: math_accuracy_test.py BUILD_DIR REPO_ROOT
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from math import erf

import numpy as np
import onnx
from onnx import TensorProto, helper

# The bound per output, in float32 ulps of the reference: the measured
# maxima (exp 4.7 ulp near its overflow threshold, tanh 4.3, erf 4.7,
# softplus 2.5, sigmoid 2.0, log 0.9; libm's were 0.5-2.2, and softplus's
# log(1 + e^-|x|) lost every digit below -17 before log1p was approximated)
# with about a third of margin.
MAX_ULP = {"exp": 6, "log": 2, "tanh": 6, "erf": 6, "softplus": 4, "sigmoid": 4}
N = 1 << 20


def ulp_error(got: np.ndarray, want64: np.ndarray) -> np.ndarray:
    want = want64.astype(np.float32)
    spacing = np.maximum(np.spacing(np.abs(want)), np.float32(2.0 ** -126))
    return np.abs(got.astype(np.float64) - want64) / spacing.astype(np.float64)


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: math_accuracy_test.py BUILD_DIR REPO_ROOT", file=sys.stderr)
        return 2
    bindir = os.path.join(sys.argv[1], "bin")
    rng = np.random.default_rng(0)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 100.0, -100.0,
                         88.0, -87.0, 1e-30, -1e-30, 1.0, -1.0], dtype=np.float32)
    body = np.concatenate([
        rng.uniform(-90, 90, N // 4),                    # exp's whole range
        rng.uniform(-10, 10, N // 4),                    # tanh, erf, sigmoid
        np.exp(rng.uniform(-80, 80, N // 4)),            # log over many binades
        rng.uniform(-1, 1, N // 4 - specials.size)]).astype(np.float32)
    x = np.concatenate([specials, body])
    ops = ["exp", "log", "tanh", "erf", "softplus", "sigmoid"]
    onnx_ops = {"exp": "Exp", "log": "Log", "tanh": "Tanh", "erf": "Erf",
                "softplus": "Softplus", "sigmoid": "Sigmoid"}
    graph = helper.make_graph(
        [helper.make_node(onnx_ops[op], ["x"], [op], name=op) for op in ops],
        "math", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
        [helper.make_tensor_value_info(op, TensorProto.FLOAT, [N]) for op in ops])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    failures = []
    with tempfile.TemporaryDirectory(prefix="tessera-math.") as work:
        onnx.save(model, os.path.join(work, "math.onnx"))
        os.mkdir(os.path.join(work, "in"))
        np.save(os.path.join(work, "in", "input_0.npy"), x)
        art = os.path.join(work, "math.art")
        for cmd in ([os.path.join(bindir, "tessera-compile"), os.path.join(work, "math.onnx"),
                     "-o", art],
                    [os.path.join(bindir, "tessera-run"), art, "--inputs-dir",
                     os.path.join(work, "in"), "--outputs-dir", os.path.join(work, "out")]):
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stdout + done.stderr, file=sys.stderr)
                return 1
        got = {}
        for i, op in enumerate(ops):
            t = onnx.TensorProto()
            with open(os.path.join(work, "out", f"output_{i}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            got[op] = onnx.numpy_helper.to_array(t)

    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        want = {"exp": np.exp(x64), "log": np.log(x64), "tanh": np.tanh(x64),
                "erf": np.vectorize(erf, otypes=[np.float64])(x64),
                "softplus": np.logaddexp(0.0, x64), "sigmoid": 1.0 / (1.0 + np.exp(-x64))}
    for op in ops:
        w = want[op]
        with np.errstate(over="ignore"):
            w32_all = w.astype(np.float32)
        finite = np.isfinite(w32_all) & np.isfinite(x64)
        err = ulp_error(got[op][finite], w[finite])
        worst = int(np.argmax(err))
        print(f"{op}: max error {err.max():.2f} ulp over {finite.sum()} finite results "
              f"(bound {MAX_ULP[op]}; worst at x = {x[finite][worst]!r})")
        if err.max() > MAX_ULP[op]:
            failures.append(f"{op}: {err.max():.2f} ulp")
        special = ~finite
        w32 = w32_all[special]
        g = got[op][special]
        same = (g == w32) | (np.isnan(g) & np.isnan(w32))
        if not same.all():
            bad = np.flatnonzero(~same)[:5]
            failures.append(f"{op}: special values {x[special][bad]} gave {g[bad]}, "
                            f"expected {w32[bad]}")
    for f in failures:
        print("FAIL", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
