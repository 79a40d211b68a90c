#!/usr/bin/env python3
"""Layer folding (tsr-layer-plan, tsr-outline-layers) on GPTs exported by
PyTorch (make_torch_gpt.py: d_model 64, 4 heads, seq 16, vocabulary 96),
trained 20 steps with Adam, lr 3e-3, batch 8 on the charlm corpus, each
with the default --fold-layers and with --fold-layers=false (the oracle:
every layer's ops in place). Checked:

1. Structure: the 4-layer step (--emit=tsr) has one function per pass of a
   layer (forward, backward, and the layer's part of the gradient norm
   after the backward pass), each serving layers 0-3 and called 4 times;
   without folding, `main` is the only function.
2. Losses: every step's loss equals the unfolded step's to 1e-6 relative
   (the same ops in the same order; only their functions differ: measured
   0).
3. Memory: the allocator's peak of a step (tessera-run's "peak step memory")
   equals the compiler's prediction (the manifest's
   predicted_peak_alloc_bytes) byte for byte, as without folding.
4. Depth: the lowered program (--emit=llvm-dialect, lines) of an 8-layer
   GPT exceeds the 4-layer one's by at most 0.4x of what it does unfolded
   (measured 0.25x: what grows is the parameters' updates, which stay in
   the step to be written in place).
5. Inference: the 4-layer model compiled --mode=infer folds too, and its
   logits equal the unfolded program's to 1e-6 relative.

Exits 1 on a failed check, 2 on a setup error.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

from checks import check, finish
from tensor_parallel_train_test import (TORCH_PYTHON, compile_artifact,
                                        losses, train, worst_relative)

STEPS = 20


def tessera_compile(bin_dir, model, *flags):
    run = subprocess.run([os.path.join(bin_dir, "tessera-compile"), model,
                          *flags], capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stdout + run.stderr)
        raise RuntimeError(f"tessera-compile {' '.join(flags)} failed")
    return run.stdout


TRAIN = ("--mode=train", "--loss=cross_entropy", "--logits=logits",
         "--batch-size=8", "--optimizer=adam", "--lr=3e-3")


def functions(tsr):
    """name -> the layers its tsr.layer lists (None: not a layer's), and
    callee -> number of calls."""
    funcs, calls = {}, {}
    for m in re.finditer(r'func\.func (?:private )?@"?([\w.-]+)"?\(.*?\)'
                         r'(?: -> .*?)?(?: attributes \{(.*?)\})? \{\n', tsr):
        layers = re.search(r"tsr\.layer = array<i64: ([\d, ]+)>",
                           m.group(2) or "")
        funcs[m.group(1)] = ([int(x) for x in layers.group(1).split(",")]
                             if layers else None)
    for m in re.finditer(r'call @"?([\w.-]+)"?\(', tsr):
        calls[m.group(1)] = calls.get(m.group(1), 0) + 1
    return funcs, calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("root")
    ap.add_argument("--work")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    work = args.work or tempfile.mkdtemp(prefix="tessera-fold-")
    os.makedirs(work, exist_ok=True)
    examples = os.path.join(args.root, "python", "tessera_examples")
    gpts = {}
    try:
        subprocess.run([sys.executable, os.path.join(examples, "make_charlm.py"),
                        "--out", os.path.join(work, "lm"), "--seq", "16",
                        "--batch", "8", "--no-verify"],
                       check=True, stdout=subprocess.DEVNULL)
        for layers in (4, 8):
            out = os.path.join(work, f"gpt{layers}")
            subprocess.run([TORCH_PYTHON,
                            os.path.join(examples, "make_torch_gpt.py"),
                            "--out", out, "--layers", str(layers)],
                           check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            gpts[layers] = os.path.join(out, "torch_gpt.onnx")
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"error: cannot make the models: {e}", file=sys.stderr)
        return 2
    data = os.path.join(work, "lm", "tokens.bin")

    # 1. Structure.
    funcs, calls = functions(tessera_compile(bin_dir, gpts[4], *TRAIN,
                                             "--emit=tsr"))
    folded = {n: l for n, l in funcs.items() if l is not None}
    passes = sorted(n.split(".", 1)[1] for n in folded)
    check(passes == ["backward", "forward", "update"] and
          all(l == [0, 1, 2, 3] and calls.get(n) == 4
              for n, l in folded.items()),
          f"the 4-layer step has one function per pass of a layer, each "
          f"serving layers 0-3 and called 4 times: "
          f"{ {n: (l, calls.get(n)) for n, l in folded.items()} }")
    unfolded, _ = functions(tessera_compile(bin_dir, gpts[4], *TRAIN,
                                            "--emit=tsr",
                                            "--fold-layers=false"))
    check(list(unfolded) == ["main"],
          f"--fold-layers=false leaves main alone: {list(unfolded)}")

    # 2. Losses and 3. memory.
    logs, peaks = {}, {}
    for fold in ("true", "false"):
        art = os.path.join(work, f"art-{fold}")
        log = os.path.join(work, f"log-{fold}.json")
        compile_artifact(bin_dir, gpts[4], 8, art, [f"--fold-layers={fold}"])
        out = train(bin_dir, art, 1, data, log)
        logs[fold] = losses(log)
        with open(os.path.join(art, "manifest.json")) as f:
            predicted = json.load(f)["programs"][0]["predicted_peak_alloc_bytes"]
        measured = re.search(r"peak step memory: (\d+) bytes", out)
        peaks[fold] = (int(measured.group(1)) if measured else None, predicted)
    steps = range(1, STEPS + 1)
    worst = worst_relative(logs["true"], logs["false"], steps)
    check(worst <= 1e-6,
          f"the folded step's {STEPS} losses equal the unfolded step's: worst "
          f"relative difference {worst:.2e} (bound 1e-6)")
    for fold, (measured, predicted) in peaks.items():
        check(measured == predicted,
              f"--fold-layers={fold}: the allocator's step peak {measured} "
              f"bytes equals the prediction {predicted}")

    # 4. Depth.
    lines = {}
    for layers in (4, 8):
        for fold in ("true", "false"):
            lowered = tessera_compile(bin_dir, gpts[layers], *TRAIN,
                                      "--emit=llvm-dialect",
                                      f"--fold-layers={fold}")
            lines[layers, fold] = lowered.count("\n")
    grow = {f: lines[8, f] - lines[4, f] for f in ("true", "false")}
    ratio = grow["true"] / grow["false"]
    check(ratio <= 0.4,
          f"4 more layers add {grow['true']} lines to the lowered program "
          f"folded, {grow['false']} unfolded: {ratio:.2f}x (bound 0.4x)")

    # 5. Inference.
    tsr = tessera_compile(bin_dir, gpts[4], "--input-shape=tokens=1x16",
                          "--emit=tsr")
    funcs, calls = functions(tsr)
    check(any(l == [0, 1, 2, 3] for l in funcs.values()),
          f"the 4-layer inference program folds its layers: {funcs}")
    inputs = os.path.join(work, "inputs")
    os.makedirs(inputs, exist_ok=True)
    tokens = np.random.default_rng(3).integers(0, 96, (1, 16))
    np.save(os.path.join(inputs, "input_0.npy"), tokens.astype(np.int64))
    logits = {}
    for fold in ("true", "false"):
        art = os.path.join(work, f"infer-{fold}")
        outs = os.path.join(work, f"outputs-{fold}")
        tessera_compile(bin_dir, gpts[4], "--input-shape=tokens=1x16",
                        f"--fold-layers={fold}", "-o", art)
        run = subprocess.run([os.path.join(bin_dir, "tessera-run"), art,
                              "--inputs-dir", inputs, "--outputs-dir", outs],
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.stderr.write(run.stdout + run.stderr)
            return 2
        tensor = onnx.TensorProto()
        with open(os.path.join(outs, "output_0.pb"), "rb") as f:
            tensor.ParseFromString(f.read())
        logits[fold] = numpy_helper.to_array(tensor).astype(np.float64)
    diff = float(np.max(np.abs(logits["true"] - logits["false"])) /
                 np.max(np.abs(logits["false"])))
    check(diff <= 1e-6,
          f"folded inference logits equal the unfolded program's: "
          f"{diff:.2e} relative (bound 1e-6)")
    return finish("fold_layers_test")


if __name__ == "__main__":
    sys.exit(main())
