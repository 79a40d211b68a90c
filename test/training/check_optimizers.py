#!/usr/bin/env python3
"""The compiled optimizers against their published update formulas.

For each optimizer configuration this compiles a small float64 model with
`tessera-compile --mode=train`, runs three steps in-process through the
runtime's Python binding, and compares the parameters after every step with
an independent NumPy implementation of the formula from its paper (or, for
SGD and Adam, PyTorch's documented algorithm).

The model is loss = ½‖w − x‖² + ½Σᵢ‖b − yᵢ‖² with parameters w [3, 4] and
b [4] and fresh random data x, y [3, 4] each step, so the gradients (w − x,
Σᵢ(b − yᵢ)) depend on the parameters and the three steps follow a real
trajectory.

Tolerance: everything is float64 and the formulas are evaluated in the same
order up to reassociation, so the results agree to a few ulps of the values
involved: rtol 1e-12, atol 1e-14.

Usage: check_optimizers.py BUILD_DIR
"""

import math
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


RTOL, ATOL = 1e-12, 1e-14
STEPS = 3


def make_model(path, w0, b0):
    half = helper.make_node("Constant", [], ["half"],
                            value=numpy_helper.from_array(np.array(0.5)))
    nodes = [half]
    terms = []
    for p, d in (("w", "x"), ("b", "y")):
        nodes += [
            helper.make_node("Sub", [p, d], [p + "_d"]),
            helper.make_node("Mul", [p + "_d", p + "_d"], [p + "_sq"]),
            helper.make_node("ReduceSum", [p + "_sq"], [p + "_s"], keepdims=0),
        ]
        terms.append(p + "_s")
    nodes += [helper.make_node("Add", terms, ["sum"]),
              helper.make_node("Mul", ["sum", "half"], ["loss"])]
    graph = helper.make_graph(
        nodes, "quadratic",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [3, 4]),
         helper.make_tensor_value_info("y", TensorProto.DOUBLE, [3, 4])],
        [helper.make_tensor_value_info("loss", TensorProto.DOUBLE, [])],
        [numpy_helper.from_array(w0, "w"), numpy_helper.from_array(b0, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


# ---------------------------------------------------------------------------
# Reference formulas. `state` is a dict per parameter; t is 1-based.
# ---------------------------------------------------------------------------

def lr_at(cfg, t):
    lr = cfg["lr"]
    if cfg.get("base_batch_size"):
        lr *= cfg["batch_size"] / cfg["base_batch_size"]
    sched, w = cfg.get("schedule", "constant"), cfg.get("warmup_steps", 0)
    if sched == "constant":
        return lr
    if sched == "warmup":
        return lr * t / w if t < w else lr
    if w and t < w:
        return lr * t / w
    p = min(max((t - w) / (cfg["total_steps"] - w), 0.0), 1.0)
    m = cfg.get("min_lr_ratio", 0.0)
    return lr * (m + (1 - m) * 0.5 * (1 + math.cos(math.pi * p)))


def sgd(cfg, p, g, st, t, lr):
    # PyTorch SGD: d = g + wd·p; buf = μ·buf + d; nesterov: d + μ·buf.
    d = g + cfg.get("weight_decay", 0.0) * p
    mu = cfg.get("momentum", 0.0)
    if mu:
        st["buf"] = mu * st.get("buf", np.zeros_like(p)) + d
        d = d + mu * st["buf"] if cfg.get("nesterov") else st["buf"]
    return p - lr * d


def adam_like(cfg, p, g, st, t, lr):
    # Kingma & Ba (Algorithm 1) with PyTorch's L2 decay for adam,
    # Loshchilov & Hutter's decoupled decay for adamw, You et al.'s trust
    # ratio for lamb.
    b1, b2, eps = cfg.get("beta1", 0.9), cfg.get("beta2", 0.999), cfg.get("eps", 1e-8)
    wd, kind = cfg.get("weight_decay", 0.0), cfg["optimizer"]
    if kind == "adam":
        g = g + wd * p
    st["m"] = b1 * st.get("m", np.zeros_like(p)) + (1 - b1) * g
    st["v"] = b2 * st.get("v", np.zeros_like(p)) + (1 - b2) * g * g
    mhat, vhat = st["m"] / (1 - b1 ** t), st["v"] / (1 - b2 ** t)
    r = mhat / (np.sqrt(vhat) + eps)
    if kind == "adam":
        return p - lr * r
    if kind == "adamw":
        return p - lr * wd * p - lr * r
    r = r + wd * p
    pn, rn = np.linalg.norm(p), np.linalg.norm(r)
    trust = pn / rn if pn > 0 and rn > 0 else 1.0
    return p - lr * trust * r


def lars(cfg, p, g, st, t, lr):
    # You, Gitman & Ginsburg 2017, Algorithm 1 (with momentum).
    eta, wd, mu = cfg.get("lars_eta", 0.001), cfg.get("weight_decay", 0.0), cfg.get("momentum", 0.0)
    pn, gn = np.linalg.norm(p), np.linalg.norm(g)
    local = eta * pn / (gn + wd * pn) if pn > 0 and gn > 0 else eta
    v = lr * local * (g + wd * p)
    if mu:
        st["v"] = mu * st.get("v", np.zeros_like(p)) + v
        v = st["v"]
    return p - v


def adafactor(cfg, p, g, st, t, lr):
    # Shazeer & Stern 2018, Algorithms 4 (matrices) and 5 (vectors), with
    # β₂(t) = 1 − t^decay, ε₁ added to g², update clipping at d, no momentum.
    decay, eps1, d = cfg.get("decay_rate", -0.8), cfg.get("eps", 1e-30), cfg.get("clip_threshold", 1.0)
    beta = 1.0 - t ** decay
    g2 = g * g + eps1
    if p.ndim >= 2:
        st["r"] = beta * st.get("r", 0.0) + (1 - beta) * g2.mean(axis=-1)
        st["c"] = beta * st.get("c", 0.0) + (1 - beta) * g2.mean(axis=-2)
        vhat = np.outer(st["r"], st["c"]) / st["r"].mean()
    else:
        st["v"] = beta * st.get("v", 0.0) + (1 - beta) * g2
        vhat = st["v"]
    u = g / np.sqrt(vhat)
    u = u / max(1.0, np.sqrt(np.mean(u * u)) / d)
    return p - lr * u - lr * cfg.get("weight_decay", 0.0) * p


RULES = {"sgd": sgd, "adam": adam_like, "adamw": adam_like, "lamb": adam_like,
         "lars": lars, "adafactor": adafactor}

CONFIGS = [
    {"optimizer": "sgd", "lr": 0.1},
    {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.01},
    {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True},
    {"optimizer": "adam", "lr": 0.01, "weight_decay": 0.05},
    {"optimizer": "adamw", "lr": 0.01, "weight_decay": 0.1, "beta1": 0.8, "beta2": 0.99},
    {"optimizer": "lamb", "lr": 0.01, "weight_decay": 0.01, "eps": 1e-6},
    {"optimizer": "lars", "lr": 0.5, "momentum": 0.9, "weight_decay": 0.001, "lars_eta": 0.02},
    {"optimizer": "adafactor", "lr": 0.01, "eps": 1e-30},
    {"optimizer": "adafactor", "lr": 0.01, "eps": 1e-30, "weight_decay": 0.1, "clip_threshold": 0.5},
    {"optimizer": "sgd", "lr": 0.1, "schedule": "warmup", "warmup_steps": 3},
    {"optimizer": "adam", "lr": 0.05, "schedule": "cosine", "warmup_steps": 1,
     "total_steps": 4, "min_lr_ratio": 0.1},
    {"optimizer": "sgd", "lr": 0.1, "clip_norm": 0.5},
    {"optimizer": "sgd", "lr": 0.1, "batch_size": 3, "base_batch_size": 1},
]

FLAGS = {"lr": "--lr", "momentum": "--momentum", "weight_decay": "--weight-decay",
         "beta1": "--beta1", "beta2": "--beta2", "eps": "--eps",
         "lars_eta": "--lars-eta", "decay_rate": "--adafactor-decay-rate",
         "clip_threshold": "--adafactor-clip-threshold", "schedule": "--lr-schedule",
         "warmup_steps": "--warmup-steps", "total_steps": "--total-steps",
         "min_lr_ratio": "--min-lr-ratio", "clip_norm": "--clip-grad-norm",
         "base_batch_size": "--base-batch-size", "batch_size": "--batch-size",
         "optimizer": "--optimizer"}


def reference(cfg, params, data):
    states = {name: {} for name in params}
    rule = RULES[cfg["optimizer"]]
    history = []
    for t, (x, y) in enumerate(data, start=1):
        grads = {"w": params["w"] - x, "b": (params["b"] - y).sum(axis=0)}
        if cfg.get("clip_norm"):
            norm = math.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
            scale = min(1.0, cfg["clip_norm"] / (norm + 1e-6))
            grads = {k: g * scale for k, g in grads.items()}
        lr = lr_at(cfg, t)
        params = {k: rule(cfg, params[k], grads[k], states[k], t, lr) for k in params}
        history.append(params)
    return history


def compiled(build, cfg, model, art, data):
    from tessera.runtime import Artifact
    cmd = [os.path.join(build, "bin", "tessera-compile"), model, "--mode=train",
           "--loss-output=loss", "-o", art]
    for key, value in cfg.items():
        if key == "nesterov":
            cmd.append("--nesterov")
        elif key == "batch_size":
            continue  # the scaling rule reads the model's batch below
        else:
            cmd.append(f"{FLAGS[key]}={value}")
    if cfg.get("base_batch_size"):
        cmd.append(f"--batch-size={cfg['batch_size']}")
    subprocess.run(cmd, check=True)
    a = Artifact(art)
    init = {t.name: numpy_helper.to_array(t) for t in onnx.load(model).graph.initializer}
    values = []
    for info in a.inputs:
        if info.role == "param":
            values.append(init[info.name].copy())
        elif info.role == "state":
            values.append(np.full(info.shape, info.init or 0, dtype=info.dtype))
        else:
            values.append(None)
    history = []
    for x, y in data:
        feed = {"x": x, "y": y}
        args = [feed[i.name] if v is None else v for i, v in zip(a.inputs, values)]
        outs = a(*args)
        for info, out in zip(a.outputs, outs):
            if info.updates is not None:
                values[info.updates] = out
        history.append({i.name: v for i, v in zip(a.inputs, values) if i.role == "param"})
    return history


def main():
    build = os.path.abspath(sys.argv[1])
    rng = np.random.default_rng(7)
    w0, b0 = rng.normal(size=(3, 4)), rng.normal(size=4)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "quadratic.onnx")
        make_model(model, w0, b0)
        print(f"{'optimizer and options':<78} {'max rel err':>12}")
        for n, cfg in enumerate(CONFIGS):
            data = [(rng.normal(size=(3, 4)), rng.normal(size=(3, 4))) for _ in range(STEPS)]
            want = reference(cfg, {"w": w0, "b": b0}, data)
            got = compiled(build, cfg, model, os.path.join(tmp, f"art{n}"), data)
            worst = 0.0
            ok = True
            for step_want, step_got in zip(want, got):
                for k in ("w", "b"):
                    err = np.abs(step_got[k] - step_want[k])
                    worst = max(worst, float(np.max(err / (np.abs(step_want[k]) + 1e-300))))
                    ok &= bool(np.allclose(step_got[k], step_want[k], rtol=RTOL, atol=ATOL))
            desc = " ".join(f"{k}={v}" for k, v in cfg.items())
            print(f"{desc:<78} {worst:12.3e} {'ok' if ok else 'MISMATCH'}")
            failures += not ok
    print(f"{len(CONFIGS) - failures} of {len(CONFIGS)} configurations match "
          f"their formula over {STEPS} steps (rtol {RTOL}, atol {ATOL})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    sys.exit(main())
