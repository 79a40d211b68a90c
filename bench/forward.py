#!/usr/bin/env python3
"""Forward-pass benchmark: Tessera beside onnxruntime, same machine, same run.

For each bundled example model (the GPT-style decoder block and the CNN from
python/tessera_examples/make_models.py) this compiles the model with
tessera-compile, times N invocations of the artifact with `tessera-run
--repeat N` (the model function only: no process start, no file I/O), times N
`InferenceSession.run` calls of onnxruntime on the same input with the same
thread count, and prints one table row per model. Ratios, not absolute times,
are what to compare: the machines are shared and noisy.

With --vectorize-gain it also compiles each model with
`tessera-compile --cpu-vector-size=0` (tsr-cpu-vectorize off: every linalg op
that is not a BLAS call becomes scalar loops) and prints a second table: the
time with and without the pass, in the same run.

Usage: .venv/bin/python bench/forward.py [--repeat 200] [--threads 2]
                                         [--vectorize-gain]
Needs a built tree (scripts/build.sh).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
MODELS = ["gpt_block", "cnn"]


def run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit(f"forward.py: error: {' '.join(cmd)} failed:\n{proc.stderr}")
    return proc.stdout


def tessera_ms(model, inputs_dir, work, repeat, threads, extra=()):
    art = os.path.join(work, os.path.basename(model) + "".join(extra) + ".art")
    start = time.perf_counter()
    run([os.path.join(BIN, "tessera-compile"), model, "--mode=infer",
         "--target=cpu", "-o", art, *extra])
    compile_s = time.perf_counter() - start
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    out = run([os.path.join(BIN, "tessera-run"), art, "--inputs-dir",
               inputs_dir, "--repeat", str(repeat)], env=env)
    m = re.search(r"mean ([0-9.]+) ms, min ([0-9.]+) ms", out)
    if not m:
        sys.exit(f"forward.py: error: unexpected tessera-run output: {out}")
    return float(m.group(1)), float(m.group(2)), compile_s


def ort_ms(model, inputs_dir, repeat, threads):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    feeds = {}
    for i, inp in enumerate(sess.get_inputs()):
        t = onnx.load_tensor(os.path.join(inputs_dir, f"input_{i}.pb"))
        feeds[inp.name] = numpy_helper.to_array(t)
    sess.run(None, feeds)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.mean(times)), float(np.min(times))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--vectorize-gain", action="store_true",
                    help="also time each model compiled without "
                         "tsr-cpu-vectorize (--cpu-vector-size=0)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        run([sys.executable, os.path.join(ROOT, "python", "tessera_examples",
                                          "make_models.py"), "--out", work])
        rows, gains = [], []
        for name in MODELS:
            model = os.path.join(work, name + ".onnx")
            inputs = os.path.join(work, name + "_inputs")
            t_mean, t_min, compile_s = tessera_ms(model, inputs, work,
                                                  args.repeat, args.threads)
            o_mean, o_min = ort_ms(model, inputs, args.repeat, args.threads)
            rows.append((name, t_mean, t_min, o_mean, o_min, compile_s))
            if args.vectorize_gain:
                _, s_min, s_compile = tessera_ms(
                    model, inputs, work, args.repeat, args.threads,
                    ("--cpu-vector-size=0",))
                gains.append((name, s_min, t_min, s_compile, compile_s))
    print(f"forward pass, {args.repeat} runs each, {args.threads} threads")
    print(f"| model | Tessera mean ms | Tessera min ms | onnxruntime mean ms "
          f"| onnxruntime min ms | Tessera/onnxruntime (min) | compile s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, t_mean, t_min, o_mean, o_min, compile_s in rows:
        print(f"| {name} | {t_mean:.3f} | {t_min:.3f} | {o_mean:.3f} | "
              f"{o_min:.3f} | {t_min / o_min:.2f} | {compile_s:.2f} |")
    if gains:
        print()
        print("tsr-cpu-vectorize off (--cpu-vector-size=0) vs on (default)")
        print("| model | scalar loops min ms | vectorized min ms | speedup "
              "| compile s off | compile s on |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, s_min, t_min, s_compile, compile_s in gains:
            print(f"| {name} | {s_min:.3f} | {t_min:.3f} | {s_min / t_min:.1f}x "
                  f"| {s_compile:.2f} | {compile_s:.2f} |")


if __name__ == "__main__":
    main()
