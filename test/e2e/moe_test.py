#!/usr/bin/env python3
"""com.microsoft MoE imports and matches onnxruntime, case by case.

Every case is one MoE node built with onnx.helper (opset 17 plus
com.microsoft 1), compiled by `tessera-compile` for inference and run
through the runtime on random float32 inputs; onnxruntime 1.23's CPU kernel
of the same node is the oracle. Cases cover top-1 and top-2 with and
without renormalized routing weights, 2-D and 3-D inputs, biases, every
activation onnxruntime's CPU kernel runs (relu, gelu, silu, identity,
swiglu with FC3), and more experts than tokens. Tolerance: 1e-5 absolute
plus 1e-5 relative per element: both sides compute in float32, through
sums of at most `inter` products per layer, whose rounding differs by a
few ulps of the largest term (inputs are N(0, 1) scaled so that outputs
are O(1)).

Then bad models must fail with a message naming the node and what is
wrong, and a non-zero exit (never a crash): wrong weight shapes, k larger
than the number of experts, an unknown activation, sparse-mixer routing,
and a contrib op Tessera does not know.

Usage: moe_test.py BUILD_DIR
Exits 1 on a failed check, 2 on a setup error.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

# An ASan build preloads its runtime into this interpreter; the tools it
# runs link their own.
os.environ.pop("LD_PRELOAD", None)
os.environ.pop("ASAN_OPTIONS", None)

ATOL = 1e-5
RTOL = 1e-5

# name, input shape, experts, inter, k, normalize, activation, biases
CASES = [
    ("top1", (12, 16), 4, 32, 1, 0, "relu", False),
    ("top1-norm", (12, 16), 4, 32, 1, 1, "relu", False),
    ("top2", (12, 16), 4, 32, 2, 0, "relu", False),
    ("top2-norm", (12, 16), 4, 32, 2, 1, "relu", False),
    ("top2-bias", (12, 16), 4, 32, 2, 0, "relu", True),
    ("top2-3d", (3, 5, 16), 4, 24, 2, 1, "relu", True),
    ("gelu", (10, 8), 4, 16, 2, 0, "gelu", True),
    ("silu", (10, 8), 8, 16, 2, 1, "silu", False),
    ("identity", (10, 8), 4, 16, 2, 0, "identity", True),
    ("swiglu", (10, 8), 4, 16, 2, 1, "swiglu", True),
    ("swiglu-gptoss", (10, 8), 4, 16, 2, 1, "swiglu-gptoss", True),
    ("swiglu-fc3", (10, 8), 4, 16, 2, 0, "swiglu-fc3", False),
    ("swiglu-concat", (10, 8), 4, 16, 2, 1, "swiglu-concat", True),
    ("experts>tokens", (4, 8), 8, 16, 2, 0, "relu", False),
    ("top4-of-4", (6, 8), 4, 8, 4, 0, "silu", True),
]


def fail(msg: str, code: int = 1) -> None:
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(code)


def moe_model(feeds, names, shape, **attrs):
    from onnx import TensorProto, helper

    node = helper.make_node("MoE", names, ["output"], domain="com.microsoft",
                            name="moe0", **attrs)
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
              for n, a in feeds.items()]
    graph = helper.make_graph(
        [node], "moe", inputs,
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)])
    return helper.make_model(
        graph, ir_version=9,
        opset_imports=[helper.make_opsetid("", 17),
                       helper.make_opsetid("com.microsoft", 1)])


def make_case(rng, shape, experts, inter, k, normalize, activation, biases):
    """(model for Tessera, its feeds, model for onnxruntime, its feeds).

    onnxruntime's CPU kernel runs SwiGLU only with FC1 and FC3 fused and
    interleaved (swiglu_fusion = 1); the FC3 and concatenated layouts are
    checked against it with the same weights rearranged."""
    hidden = shape[-1]
    tokens = int(np.prod(shape[:-1]))
    gated = activation.startswith("swiglu")
    width = 2 * inter if gated else inter
    feeds = {
        "input": rng.standard_normal(shape).astype(np.float32),
        "router": rng.standard_normal((tokens, experts)).astype(np.float32),
        "fc1": (rng.standard_normal((experts, width, hidden)) /
                np.sqrt(hidden)).astype(np.float32),
        "fc2": (rng.standard_normal((experts, hidden, inter)) /
                np.sqrt(inter)).astype(np.float32),
    }
    names = ["input", "router", "fc1", "", "fc2", ""]
    if biases:
        feeds["b1"] = rng.standard_normal((experts, width)).astype(np.float32)
        feeds["b2"] = rng.standard_normal((experts, hidden)).astype(np.float32)
        names[3], names[5] = "b1", "b2"
    attrs = dict(k=k, normalize_routing_weights=normalize,
                 activation_type="swiglu" if gated else activation)
    if gated:
        attrs["swiglu_fusion"] = 1
    if activation == "swiglu-gptoss":
        attrs.update(activation_alpha=1.702, activation_beta=1.0,
                     swiglu_limit=7.0)
    reference = moe_model(feeds, names, shape, **attrs)
    if activation not in ("swiglu-fc3", "swiglu-concat"):
        return reference, feeds, reference, feeds
    # Interleaved rows 0, 2, 4, ... are the gate, 1, 3, 5, ... the linear.
    gate, linear = feeds["fc1"][:, 0::2], feeds["fc1"][:, 1::2]
    mine = dict(feeds)
    if activation == "swiglu-fc3":
        mine["fc1"], mine["fc3"] = np.ascontiguousarray(gate), \
            np.ascontiguousarray(linear)
        my_names = names + ["fc3"]
        fused = 0
    else:
        mine["fc1"] = np.concatenate([gate, linear], axis=1)
        if biases:
            b = feeds["b1"]
            mine["b1"] = np.concatenate([b[:, 0::2], b[:, 1::2]], axis=1)
        my_names = names
        fused = 2
    return (moe_model(mine, my_names, shape, **dict(attrs,
                                                   swiglu_fusion=fused)),
            mine, reference, feeds)


def compile_model(build, path, out):
    return subprocess.run(
        [str(pathlib.Path(build) / "bin" / "tessera-compile"), str(path),
         "-o", str(out)], capture_output=True, text=True)


def check_forward(build, tmp, rng) -> list[str]:
    import onnxruntime as ort
    from tessera.runtime import Artifact

    failures = []
    print(f"{'case':<16} {'max |diff|':>12} {'max |ref|':>10}")
    for name, *spec in CASES:
        model, feeds, reference, ref_feeds = make_case(rng, *spec)
        path = tmp / f"{name}.onnx"
        path.write_bytes(model.SerializeToString())
        session = ort.InferenceSession(reference.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        (expected,) = session.run(None, ref_feeds)
        art_dir = tmp / f"{name}.art"
        result = compile_model(build, path, art_dir)
        if result.returncode != 0:
            failures.append(f"{name}: tessera-compile exited "
                            f"{result.returncode}: {result.stderr.strip()}")
            continue
        with Artifact(str(art_dir)) as art:
            arrays = [feeds[i.name] for i in art.inputs]
            (got,) = art(*arrays)
        diff = float(np.max(np.abs(got - expected)))
        print(f"{name:<16} {diff:12.3e} {float(np.max(np.abs(expected))):10.3f}")
        if got.shape != expected.shape or not np.allclose(
                got, expected, rtol=RTOL, atol=ATOL):
            failures.append(f"{name}: differs from onnxruntime by {diff:.3e} "
                            f"(tolerance {ATOL} + {RTOL}·|ref|)")
    return failures


def check_errors(build, tmp, rng) -> list[str]:
    from onnx import helper

    def variant(name, edit):
        model, *_ = make_case(rng, (6, 8), 4, 16, 2, 0, "relu", True)
        edit(model)
        path = tmp / f"bad-{name}.onnx"
        path.write_bytes(model.SerializeToString())
        return compile_model(build, path, tmp / f"bad-{name}.art")

    def set_attr(key, value):
        def edit(model):
            node = model.graph.node[0]
            kept = [a for a in node.attribute if a.name != key]
            del node.attribute[:]
            node.attribute.extend(kept + [helper.make_attribute(key, value)])
        return edit

    def reshape_input(input_name, shape):
        def edit(model):
            for info in model.graph.input:
                if info.name == input_name:
                    dims = info.type.tensor_type.shape.dim
                    del dims[:]
                    for d in shape:
                        dims.add().dim_value = d
        return edit

    def rename_op(model):
        model.graph.node[0].op_type = "QMoE"

    expectations = [
        ("k", set_attr("k", 5), "k = 5 must be in [1, 4]"),
        ("activation", set_attr("activation_type", "tanh"),
         "activation_type 'tanh'"),
        ("sparse-mixer", set_attr("use_sparse_mixer", 1), "use_sparse_mixer"),
        ("fc1-shape", reshape_input("fc1", (4, 16, 7)),
         "fc1_experts_weights must be [4, inter, 8]"),
        ("fc2-shape", reshape_input("fc2", (4, 8, 15)),
         "fc2_experts_weights must be [4, 8, 16]"),
        ("router-shape", reshape_input("router", (5, 4)),
         "router_probs must be [6, experts]"),
        ("bias-shape", reshape_input("b1", (4, 15)),
         "an expert bias must be [4, 16]"),
        ("unknown-contrib", rename_op,
         "op 'QMoE' (domain 'com.microsoft', opset 1) at node 'moe0': only "
         "the default domain ('' / 'ai.onnx') and 'com.microsoft' MoE are "
         "supported"),
    ]
    failures = []
    for name, edit, needle in expectations:
        result = variant(name, edit)
        if result.returncode in (0, None) or result.returncode < 0:
            failures.append(f"bad model {name}: exit {result.returncode}, "
                            "expected a non-zero exit without a crash")
        elif needle not in result.stderr or "moe0" not in result.stderr:
            failures.append(f"bad model {name}: message lacks {needle!r} or "
                            f"the node name: {result.stderr.strip()}")
        else:
            print(f"bad model {name:<16} exit {result.returncode}: "
                  f"{result.stderr.strip().splitlines()[-1]}")
    return failures


def main() -> int:
    if len(sys.argv) != 2:
        fail("usage: moe_test.py BUILD_DIR", 2)
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as e:
        fail(f"{sys.executable} lacks {e.name} (run scripts/setup.sh)", 2)
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="tessera-moe-") as tmp:
        tmp = pathlib.Path(tmp)
        failures = check_forward(sys.argv[1], tmp, rng)
        failures += check_errors(sys.argv[1], tmp, rng)
    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    if failures:
        return 1
    print(f"PASS: {len(CASES)} MoE cases match onnxruntime; bad models "
          "are refused with a message")
    return 0


if __name__ == "__main__":
    sys.exit(main())
