#!/usr/bin/env python3
"""BERT-base-shaped encoder inference: Tessera beside onnxruntime, same run.

Builds a BERT-base-shaped encoder in PyTorch from a fixed seed (vocabulary
30522, 512 positions, 12 post-LayerNorm layers of d_model 768, 12 heads,
feed-forward 3072 with exact GELU, dropout 0: 109M parameters), exports it
to ONNX (opset 17; input token ids int64 [batch, seq], output the last
hidden states float32 [batch, seq, 768]) and times its inference at batch 1
x sequence 128 on the same random tokens:

- Tessera: `tessera-compile --mode=infer --target=cpu`, then `tessera-run
  --repeat N`, which times the model function alone (no process start, no
  file I/O; `tessera-run --threads` = --threads: oneDNN's GEMM threads);
- onnxruntime: N `InferenceSession.run` calls on the same input with the
  same thread count (CPUExecutionProvider, all graph optimizations on).

Both outputs are compared (max absolute difference, printed) before timing.
`--profile` also prints `tessera-run --profile`'s table of where Tessera's
time goes.

Run with the repo's venv (numpy, onnx, onnxruntime); the export runs in
Debian's python3 (python3-torch) as a child process:

    .venv/bin/python bench/bert.py [--repeat 50] [--threads 2] [--seq 128]
        [--layers 12] [--profile]

Needs a built tree (scripts/build.sh). See bench/README.md.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
TORCH_PYTHON = "/usr/bin/python3"
VOCAB, POSITIONS, D_MODEL, HEADS, FF = 30522, 512, 768, 12, 3072


def export(out: str, layers: int, seq: int) -> None:
    """Runs under python3-torch: writes bert.onnx to `out`."""
    import torch
    from torch import nn

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(VOCAB, D_MODEL)
            self.position = nn.Embedding(POSITIONS, D_MODEL)
            self.norm = nn.LayerNorm(D_MODEL, eps=1e-12)
            layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=0.0,
                                               activation="gelu", batch_first=True,
                                               layer_norm_eps=1e-12)
            self.encoder = nn.TransformerEncoder(layer, layers,
                                                 enable_nested_tensor=False)

        def forward(self, tokens):
            positions = torch.arange(tokens.shape[1]).unsqueeze(0)
            h = self.norm(self.word(tokens) + self.position(positions))
            return self.encoder(h)

    torch.manual_seed(0)
    model = Bert().eval()
    # TransformerEncoder deep-copies one layer: give every layer weights of
    # its own (the exporter would store identical ones once), BERT's
    # N(0, 0.02) for all but the LayerNorms.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.normal_(0.0, 0.02)
    tokens = torch.randint(0, VOCAB, (1, seq))
    # Gradients stay enabled: under no_grad an eval-mode encoder layer takes
    # PyTorch's fused fast path, which has no ONNX export.
    torch.onnx.export(model, (tokens,), os.path.join(out, "bert.onnx"),
                      input_names=["tokens"], output_names=["hidden"],
                      opset_version=17)


def run(cmd, **kw):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit(f"bert.py: error: {' '.join(map(str, cmd))} failed:\n"
                 f"{proc.stdout}{proc.stderr}")
    return proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--profile", action="store_true",
                    help="also print tessera-run --profile's table")
    ap.add_argument("--export-only", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.export_only:
        export(args.export_only, args.layers, args.seq)
        return

    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    with tempfile.TemporaryDirectory(prefix="tessera-bench-bert.") as work:
        run([TORCH_PYTHON, os.path.abspath(__file__), "--export-only", work,
             "--layers", args.layers, "--seq", args.seq])
        model = os.path.join(work, "bert.onnx")
        params = sum(int(np.prod(t.dims)) for t in onnx.load(model).graph.initializer)
        tokens = np.random.default_rng(0).integers(0, VOCAB, (1, args.seq), dtype=np.int64)
        inputs = os.path.join(work, "in")
        os.mkdir(inputs)
        np.save(os.path.join(inputs, "input_0.npy"), tokens)

        art = os.path.join(work, "bert.art")
        start = time.perf_counter()
        run([os.path.join(BIN, "tessera-compile"), model, "--mode=infer",
             "--target=cpu", "-o", art])
        compile_s = time.perf_counter() - start
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads))
        outputs = os.path.join(work, "out")
        run([os.path.join(BIN, "tessera-run"), art, "--inputs-dir", inputs,
             "--outputs-dir", outputs], env=env)
        ours = numpy_helper.to_array(onnx.load_tensor(os.path.join(outputs, "output_0.pb")))

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = args.threads
        opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        theirs = sess.run(None, {sess.get_inputs()[0].name: tokens})[0]
        diff = float(np.max(np.abs(ours - theirs)))

        out = run([os.path.join(BIN, "tessera-run"), art, "--inputs-dir", inputs,
                   "--repeat", args.repeat, "--threads", args.threads]
                  + (["--profile"] if args.profile else []), env=env)
        m = re.search(r"mean ([0-9.]+) ms, min ([0-9.]+) ms", out)
        if not m:
            sys.exit(f"bert.py: error: unexpected tessera-run output: {out}")
        t_mean, t_min = float(m.group(1)), float(m.group(2))
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            sess.run(None, {sess.get_inputs()[0].name: tokens})
            times.append((time.perf_counter() - start) * 1e3)
        o_mean, o_min = float(np.mean(times)), float(np.min(times))

    print(f"BERT-base-shaped encoder: {args.layers} layers, d_model {D_MODEL}, "
          f"{HEADS} heads, ff {FF}, vocab {VOCAB}, {params} parameters; batch 1 x seq "
          f"{args.seq}; {args.repeat} runs each, {args.threads} threads; "
          f"onnxruntime {ort.__version__}")
    print(f"outputs agree: max |Tessera - onnxruntime| = {diff:.3g}")
    print()
    print("| | Tessera | onnxruntime | Tessera/onnxruntime |")
    print("|---|---:|---:|---:|")
    print(f"| ms (mean) | {t_mean:.2f} | {o_mean:.2f} | {t_mean / o_mean:.2f} |")
    print(f"| ms (min) | {t_min:.2f} | {o_min:.2f} | {t_min / o_min:.2f} |")
    print(f"| compile s (wall) | {compile_s:.1f} | - | |")
    if args.profile:
        print()
        print(out[out.index("profile of"):].rstrip())


if __name__ == "__main__":
    main()
