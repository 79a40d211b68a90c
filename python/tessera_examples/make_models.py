#!/usr/bin/env python3
"""Generate Tessera's bundled example ONNX models and a random input for each.

Models (opset 17, IR version 8 so that Debian's libonnx 1.12 can read them,
static shapes, weights stored as initializers, fixed RNG seed so that every
run produces byte-identical files):

``gpt_block.onnx``
    One GPT-style pre-LayerNorm decoder block. Input ``x`` float32
    [2, 16, 64] (batch, seq, d_model), output ``y`` float32 [2, 16, 64]::

        h = x + Wo · Attn(LN1(x))              4 heads of 16, causal mask
        y = h + W2 · Gelu(W1 · LN2(h) + b1) + b2   MLP 64 -> 256 -> 64

    Attention uses MatMul+Add projections, Reshape/Transpose into heads, a
    scaled Q·K^T, a constant additive causal mask (-1e9 above the diagonal),
    Softmax and attention·V. Gelu is spelled out as 0.5*x*(1+Erf(x/sqrt(2))).

``cnn.onnx``
    A small convolutional classifier. Input ``x`` float32 [2, 3, 16, 16],
    output ``logits`` float32 [2, 10]::

        Conv 3->8 3x3 pad 1, BatchNormalization, Relu, MaxPool 2x2
        Conv 8->16 3x3 pad 1, BatchNormalization, Relu, AveragePool 2x2
        Conv 16->16 3x3 pad 1 group 4 dilation 1, Relu
        GlobalAveragePool, Flatten, Gemm 16->10 (transB=1)

For each model ``<name>.onnx`` the script also writes
``<name>_inputs/input_0.pb``: a random input as an ONNX TensorProto, in the
layout ``tessera-run --inputs-dir`` and ``compare.py --inputs-dir`` read.

Every model is checked with ``onnx.checker`` (full check) and, unless
``--no-verify`` is given, run once in onnxruntime.

Usage::

    python make_models.py --out DIR [--only gpt_block|cnn] [--no-verify]
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # the newest IR version libonnx 1.12 (Debian bookworm) accepts
SEED = 20240501


class GraphBuilder:
    """Tiny helper that accumulates nodes and initializers with unique names."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._count: dict[str, int] = {}

    def _name(self, base: str) -> str:
        n = self._count.get(base, 0)
        self._count[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def const(self, name: str, value) -> str:
        """Add an initializer and return its name."""
        name = self._name(name)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, name: str, shape, std: float) -> str:
        w = self.rng.normal(0.0, std, size=shape).astype(np.float32)
        return self.const(name, w)

    def op(self, op_type: str, inputs, out: str | None = None, **attrs) -> str:
        """Add one node with a single output and return the output name."""
        out = self._name(out or op_type.lower())
        self.nodes.append(
            helper.make_node(op_type, list(inputs), [out], name=self._name("n_" + out), **attrs)
        )
        return out

    def model(self, graph_name, inputs, outputs) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, graph_name, inputs, outputs, initializer=self.inits)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="tessera_examples.make_models",
        )
        model.ir_version = IR_VERSION
        return model


# --------------------------------------------------------------------------- #
# GPT-style decoder block
# --------------------------------------------------------------------------- #
GPT_BATCH, GPT_SEQ, GPT_DMODEL, GPT_HEADS, GPT_DFF = 2, 16, 64, 4, 256


def make_gpt_block(rng: np.random.Generator) -> onnx.ModelProto:
    B, T, D, H, F = GPT_BATCH, GPT_SEQ, GPT_DMODEL, GPT_HEADS, GPT_DFF
    Dh = D // H
    g = GraphBuilder(rng)

    def layer_norm(x: str, prefix: str) -> str:
        scale = g.const(prefix + ".weight", (1.0 + rng.normal(0, 0.1, D)).astype(np.float32))
        bias = g.const(prefix + ".bias", rng.normal(0, 0.1, D).astype(np.float32))
        return g.op("LayerNormalization", [x, scale, bias], prefix, axis=-1, epsilon=1e-5)

    def linear(x: str, prefix: str, din: int, dout: int, std: float) -> str:
        w = g.weight(prefix + ".weight", (din, dout), std)
        b = g.weight(prefix + ".bias", (dout,), 0.02)
        return g.op("Add", [g.op("MatMul", [x, w], prefix + ".mm"), b], prefix)

    heads_shape = g.const("heads_shape", np.array([B, T, H, Dh], dtype=np.int64))
    model_shape = g.const("model_shape", np.array([B, T, D], dtype=np.int64))

    def split_heads(t: str, name: str, perm) -> str:
        r = g.op("Reshape", [t, heads_shape], name + ".split")
        return g.op("Transpose", [r], name + ".heads", perm=perm)

    # --- attention sub-block -------------------------------------------------
    ln1 = layer_norm("x", "ln1")
    q = split_heads(linear(ln1, "attn.q", D, D, 0.1), "q", [0, 2, 1, 3])  # [B,H,T,Dh]
    k = split_heads(linear(ln1, "attn.k", D, D, 0.1), "k", [0, 2, 3, 1])  # [B,H,Dh,T]
    v = split_heads(linear(ln1, "attn.v", D, D, 0.1), "v", [0, 2, 1, 3])  # [B,H,T,Dh]

    scores = g.op("MatMul", [q, k], "scores")  # [B,H,T,T]
    scale = g.const("attn.scale", np.array(1.0 / math.sqrt(Dh), dtype=np.float32))
    scores = g.op("Mul", [scores, scale], "scores.scaled")
    mask = np.triu(np.full((T, T), -1e9, dtype=np.float32), k=1).reshape(1, 1, T, T)
    scores = g.op("Add", [scores, g.const("causal_mask", mask)], "scores.masked")
    probs = g.op("Softmax", [scores], "probs", axis=-1)
    ctx = g.op("MatMul", [probs, v], "ctx")  # [B,H,T,Dh]
    ctx = g.op("Transpose", [ctx], "ctx.t", perm=[0, 2, 1, 3])  # [B,T,H,Dh]
    ctx = g.op("Reshape", [ctx, model_shape], "ctx.merged")  # [B,T,D]
    attn_out = linear(ctx, "attn.out", D, D, 0.1)
    h = g.op("Add", ["x", attn_out], "resid1")

    # --- MLP sub-block -------------------------------------------------------
    ln2 = layer_norm(h, "ln2")
    u = linear(ln2, "mlp.fc1", D, F, 0.1)
    sqrt2 = g.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    one = g.const("one", np.array(1.0, dtype=np.float32))
    half = g.const("half", np.array(0.5, dtype=np.float32))
    erf = g.op("Erf", [g.op("Div", [u, sqrt2], "gelu.div")], "gelu.erf")  # erf(u/sqrt2)
    gelu = g.op("Mul", [u, g.op("Add", [erf, one], "gelu.add")], "gelu.mul")  # u*(1+erf)
    gelu = g.op("Mul", [gelu, half], "gelu")  # 0.5*u*(1+erf)
    m = linear(gelu, "mlp.fc2", F, D, 0.05)
    g.op("Add", [h, m], "y")

    return g.model(
        "gpt_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, T, D])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, T, D])],
    )


# --------------------------------------------------------------------------- #
# Small CNN
# --------------------------------------------------------------------------- #
CNN_BATCH, CNN_CLASSES = 2, 10


def make_cnn(rng: np.random.Generator) -> onnx.ModelProto:
    g = GraphBuilder(rng)

    def conv(x, prefix, cin, cout, group=1, **attrs):
        """3x3 Conv with bias, padding 1; He-initialised so activations stay O(1)."""
        fan_in = (cin // group) * 9
        w = g.weight(prefix + ".weight", (cout, cin // group, 3, 3), math.sqrt(2.0 / fan_in))
        b = g.weight(prefix + ".bias", (cout,), 0.05)
        return g.op(
            "Conv", [x, w, b], prefix, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
            group=group, **attrs,
        )

    def batch_norm(x, prefix, c):
        scale = g.const(prefix + ".scale", (1.0 + rng.normal(0, 0.1, c)).astype(np.float32))
        bias = g.const(prefix + ".bias", rng.normal(0, 0.1, c).astype(np.float32))
        mean = g.const(prefix + ".mean", rng.normal(0, 0.1, c).astype(np.float32))
        var = g.const(prefix + ".var", rng.uniform(0.5, 1.5, c).astype(np.float32))
        return g.op("BatchNormalization", [x, scale, bias, mean, var], prefix, epsilon=1e-5)

    t = conv("x", "conv1", 3, 8)  # [2,8,16,16]
    t = g.op("Relu", [batch_norm(t, "bn1", 8)], "relu1")
    t = g.op("MaxPool", [t], "pool1", kernel_shape=[2, 2], strides=[2, 2])  # [2,8,8,8]
    t = conv(t, "conv2", 8, 16, strides=[1, 1])  # [2,16,8,8]
    t = g.op("Relu", [batch_norm(t, "bn2", 16)], "relu2")
    t = g.op("AveragePool", [t], "pool2", kernel_shape=[2, 2], strides=[2, 2])  # [2,16,4,4]
    t = conv(t, "conv3", 16, 16, group=4, dilations=[1, 1])  # [2,16,4,4]
    t = g.op("Relu", [t], "relu3")
    t = g.op("GlobalAveragePool", [t], "gap")  # [2,16,1,1]
    t = g.op("Flatten", [t], "flat", axis=1)  # [2,16]
    w = g.weight("fc.weight", (CNN_CLASSES, 16), 0.5)
    b = g.weight("fc.bias", (CNN_CLASSES,), 0.05)
    g.op("Gemm", [t, w, b], "logits", transB=1)

    return g.model(
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [CNN_BATCH, 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [CNN_BATCH, CNN_CLASSES])],
    )


# --------------------------------------------------------------------------- #
MODELS = {
    # name: (builder, {input name: shape})
    "gpt_block": (make_gpt_block, {"x": (GPT_BATCH, GPT_SEQ, GPT_DMODEL)}),
    "cnn": (make_cnn, {"x": (CNN_BATCH, 3, 16, 16)}),
}


def verify_with_onnxruntime(path: str, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outs = sess.run(None, inputs)
    for o in outs:
        if not np.all(np.isfinite(o)):
            raise RuntimeError(f"{path}: onnxruntime produced non-finite outputs")
    return outs


def write_model(out_dir: str, name: str, verify: bool) -> None:
    builder, input_shapes = MODELS[name]
    # One RNG per model (seeded from the model name too) so each file is
    # reproducible on its own, whatever --only selects.
    seed = SEED + sum(name.encode())
    rng = np.random.default_rng(seed)
    model = builder(rng)
    onnx.checker.check_model(model, full_check=True)

    path = os.path.join(out_dir, name + ".onnx")
    onnx.save(model, path)

    in_dir = os.path.join(out_dir, name + "_inputs")
    os.makedirs(in_dir, exist_ok=True)
    feeds = {}
    for i, (iname, shape) in enumerate(input_shapes.items()):
        arr = rng.standard_normal(shape).astype(np.float32)
        feeds[iname] = arr
        with open(os.path.join(in_dir, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(arr, iname).SerializeToString())

    msg = f"wrote {path} ({len(model.graph.node)} nodes) and {in_dir}/"
    if verify:
        outs = verify_with_onnxruntime(path, feeds)
        shapes = ", ".join(f"{o.name}{list(a.shape)}" for o, a in zip(model.graph.output, outs))
        msg += f"; onnxruntime OK: {shapes}"
    print(msg)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="Generate Tessera's example ONNX models (gpt_block.onnx, cnn.onnx) and "
        "a random input for each (DIR/<name>_inputs/input_0.pb).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Models use opset 17, IR version 8, static shapes and a fixed RNG seed.",
    )
    ap.add_argument("--out", required=True, metavar="DIR", help="output directory (created)")
    ap.add_argument("--only", choices=sorted(MODELS), action="append",
                    help="generate only this model (may repeat)")
    ap.add_argument("--no-verify", action="store_true",
                    help="skip the onnxruntime smoke run (onnx.checker still runs)")
    args = ap.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    for name in args.only or list(MODELS):
        write_model(args.out, name, verify=not args.no_verify)
    return 0


if __name__ == "__main__":
    sys.exit(main())
