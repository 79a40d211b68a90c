#!/usr/bin/env python3
"""Gradients of the low-precision step against the fp32 step's.

The three models of test/gradients/check_gradients.py (an MLP, a CNN with
batch normalization and pooling, a GPT-style block), built there in float64,
are converted to float32 (initializers, inputs and constants) and compiled
with `tessera-compile --mode=grad` three times: plain (fp32), with
`--precision=bf16` and with `--precision=fp16`. On the same inputs, every
gradient of a low-precision artifact must agree with the fp32 artifact's:

    ‖g_low − g_32‖₂ ≤ K · u · max(‖g_32‖₂, G/10),
    u = 2^-8 (bf16), 2^-11 (fp16), G = the model's largest ‖g_32‖₂

u is the type's unit roundoff. Between an input and its gradient a value is
rounded to the low type at most a few times per op it crosses (the cast of
an operand, the matmul's result, the elementwise ops that follow it, and the
same again backward); the deepest path (gpt_block: two matmuls and a bias
add forward per sub-block, their transposes backward, four sub-blocks) has
about 30 such roundings, and independent rounding errors add up like a
random walk: √30 · u ≈ 5.5u. Measured, the worst is 5.2u (gpt_block, fp16,
dw22); K = 8 leaves half as much again, while a
wrong gradient rule or a lost cast errs by O(1), that is 256u in bf16. The
run is deterministic (fixed inputs, no threads in the reductions), so the
margin does not have to absorb noise.
The floor G/10 is for gradients that vanish in exact arithmetic (the key
projection's bias in gpt_block: softmax ignores a shift shared by every
key), which are rounding noise in any precision: that noise scales with the
magnitudes flowing through the model, not with the gradient itself. The
table prints each gradient's error in units of u.

Also checked: the low-precision artifacts really compute in the low type
(`--explain` lists bf16/f16 matmuls), the fp32 artifact has no 16-bit
types, and every float input gets a gradient.

Run: .venv/bin/python test/precision/check_precision_gradients.py
[--build build] [--keep DIR]; ctest runs it as `precision-gradients`.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "test/gradients"))
import check_gradients as cg  # noqa: E402
from tessera.runtime import Artifact  # noqa: E402

K = 8
UNIT_ROUNDOFF = {"bf16": 2.0 ** -8, "fp16": 2.0 ** -11}
MODELS = ["mlp", "cnn", "gpt_block"]


def to_float32(model):
    """The float64 model `model` with every double tensor made float."""
    graph = model.graph
    for i, init in enumerate(graph.initializer):
        if init.data_type == TensorProto.DOUBLE:
            array = numpy_helper.to_array(init).astype(np.float32)
            graph.initializer[i].CopyFrom(numpy_helper.from_array(array,
                                                                  init.name))
    for info in list(graph.input) + list(graph.output):
        if info.type.tensor_type.elem_type == TensorProto.DOUBLE:
            info.type.tensor_type.elem_type = TensorProto.FLOAT
    for node in graph.node:
        for attr in node.attribute:
            if attr.name == "value" and attr.t.data_type == TensorProto.DOUBLE:
                array = numpy_helper.to_array(attr.t).astype(np.float32)
                attr.t.CopyFrom(numpy_helper.from_array(array))
    return model


def compile_grad(bin_dir, path, art, flags):
    result = subprocess.run(
        [str(bin_dir / "tessera-compile"), str(path), "--mode=grad", "-o",
         str(art), "--explain", *flags], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"tessera-compile {' '.join(flags)} failed:\n"
                           + result.stderr)
    return result.stdout


def gradients(art_dir, feeds):
    art = Artifact(str(art_dir))
    arrays = [np.array(feeds[i.name], dtype=i.dtype) for i in art.inputs]
    outputs = art(*arrays)
    grads = {art.inputs[o.of].name: np.array(g, dtype=np.float64)
             for o, g in zip(art.outputs, outputs) if o.role == "grad"}
    manifest = json.loads((pathlib.Path(art_dir) / "manifest.json").read_text())
    (program,) = manifest["programs"]
    # Running statistics are parameters that get no gradient.
    floats = [t["name"] for t in program["inputs"]
              if t["dtype"] == "float32" and not t.get("statistics")]
    art.close()
    return grads, floats


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--keep", help="keep the models and artifacts in DIR")
    args = parser.parse_args()
    bin_dir = pathlib.Path(args.build) / "bin"
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="tessera-prec."))
    work.mkdir(parents=True, exist_ok=True)
    failures = []
    print(f"{'model':<10} {'precision':<9} {'gradient':<8} {'error/u':>8}")
    for name in MODELS:
        fn, opset = cg.MODELS[name]
        m = cg.Model(name, np.random.default_rng(7), opset)
        fn(m)
        model = to_float32(m.finish())
        feeds = {k: (v.astype(np.float32) if v.dtype == np.float64 else v)
                 for k, v in m.feeds.items()}
        path = work / f"{name}.onnx"
        onnx.save(model, str(path))
        explain = compile_grad(bin_dir, path, work / f"{name}.fp32", [])
        if "bf16" in explain or "f16" in explain:
            failures.append(f"{name}: the fp32 artifact mentions a 16-bit type")
        ref, floats = gradients(work / f"{name}.fp32", feeds)
        missing = [f for f in floats if f not in ref]
        if missing:
            failures.append(f"{name}: no gradient for {missing}")
        floor = max(np.linalg.norm(g) for g in ref.values()) / 10
        for precision, u in UNIT_ROUNDOFF.items():
            art = work / f"{name}.{precision}"
            explain = compile_grad(bin_dir, path, art,
                                   [f"--precision={precision}"])
            low = "bf16" if precision == "bf16" else "f16"
            matmul = "tsr.conv" if name == "cnn" else "tsr.matmul"
            if f"  {low} {matmul}" not in explain:
                failures.append(f"{name} {precision}: --explain lists no "
                                f"{low} {matmul}")
            got, _ = gradients(art, feeds)
            for k, g32 in ref.items():
                if k not in got:
                    failures.append(f"{name} {precision}: no gradient for {k}")
                    continue
                err = np.linalg.norm(got[k] - g32) / max(
                    np.linalg.norm(g32), floor)
                ok = err <= K * u
                print(f"{name:<10} {precision:<9} {k:<8} {err / u:8.2f}"
                      f"{'' if ok else '  FAIL'}")
                if not ok:
                    failures.append(f"{name} {precision} d{k}: error "
                                    f"{err / u:.2f}u > {K}u")
    for f in failures:
        print("FAIL:", f)
    print(f"precision gradients: {'FAILED' if failures else 'passed'} "
          f"(K = {K})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
