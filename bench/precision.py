#!/usr/bin/env python3
"""Mixed precision: step time and memory in fp32, bf16, fp16 and with int8
optimizer states, and the GEMMs.

For the bundled character LM (python/tessera_examples/make_charlm.py) and a
GPT exported by PyTorch (python/tessera_examples/make_torch_gpt.py),
compiles the Adam training step with --precision=fp32, bf16 and fp16
(dynamic loss scaling), and fp32 and bf16 with --optimizer-state=int8,
trains each for a few steps with tessera-run on the same tokens and prints,
per setting: the median step time and its ratio to fp32, the peak of the
step's own allocations (the activations and temporaries the allocator
counts, `peak step memory`) and the bytes of the optimizer state (the
manifest's state inputs), each with its ratio to fp32, all from the same
run.

Then the GEMMs alone, at the shapes of a GPT-2-small layer (tokens x 768 x
768 and x 3072): OpenBLAS sgemm (what fp32 steps call), the runtime's
tsr_gemm_bf16 (oneDNN) and tsr_gemm_f16 (widened to f32, oneDNN sgemm),
called through ctypes on the same buffers, GFLOP/s and the ratio to sgemm.

Usage: bench/precision.py [--build DIR] [--steps N] [--layers N]
                          [--d-model N] [--heads N] [--seq N] [--batch N]
                          [--threads N]
"""

import argparse
import ctypes
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
TORCH_PYTHON = "/usr/bin/python3"
# (label, tessera-compile flags)
SETTINGS = [
    ("fp32", ["--precision=fp32"]),
    ("bf16", ["--precision=bf16"]),
    ("fp16", ["--precision=fp16"]),
    ("fp32, int8 states", ["--precision=fp32", "--optimizer-state=int8"]),
    ("bf16, int8 states", ["--precision=bf16", "--optimizer-state=int8"]),
]


def run(cmd, **kw):
    done = subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, **kw)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"error: {' '.join(map(str, cmd))} exited "
                         f"{done.returncode}")
    return done.stdout + done.stderr


DTYPE_BYTES = {"float32": 4, "int64": 8, "int8": 1, "bfloat16": 2,
               "float16": 2}


def step(bin_dir, model, labels, batch, art, flags, data, steps, threads):
    run([bin_dir / "tessera-compile", model, "--mode=train",
         "--loss=cross_entropy", "--logits=logits", *labels,
         f"--batch-size={batch}", "--optimizer=adam", "--lr=1e-3", *flags,
         "-o", art])
    with open(os.path.join(art, "manifest.json")) as f:
        inputs = json.load(f)["programs"][0]["inputs"]
    state = sum(DTYPE_BYTES[t["dtype"]] * int(np.prod(t["shape"]))
                for t in inputs if t.get("role") == "state")
    log = f"{art}.json"
    out = run([bin_dir / "tessera-run", art, "--train", "--data", data,
               "--steps", steps, "--threads", threads, "--log-json", log])
    peak = int(re.search(r"peak step memory: (\d+) bytes", out).group(1))
    with open(log) as f:
        records = [json.loads(line) for line in f]
    return statistics.median(r["seconds"] for r in records[2:]), peak, state


def gemms(threads):
    """GFLOP/s of sgemm, tsr_gemm_bf16 and tsr_gemm_f16 per shape."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    runtime = ctypes.CDLL(os.environ.get(
        "TESSERA_RUNTIME_LIB", str(ROOT / "build/lib/libtessera_runtime.so")))
    blas = ctypes.CDLL("libopenblas.so.0")
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    for f in (runtime.tsr_gemm_bf16, runtime.tsr_gemm_f16):
        f.argtypes = [i64, i64, i64, ptr, i64, ptr, i64, ptr, i64,
                      ctypes.c_float]
    blas.cblas_sgemm.argtypes = [ctypes.c_int] * 6 + [
        ctypes.c_float, ptr, ctypes.c_int, ptr, ctypes.c_int, ctypes.c_float,
        ptr, ctypes.c_int]
    rng = np.random.default_rng(0)
    rows = []
    for m, k, n in [(1024, 768, 768), (1024, 768, 3072), (1024, 3072, 768)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        c = np.zeros((m, n), np.float32)
        a16 = {"bf16": (a.view(np.uint32) >> 16).astype(np.uint16),
               "f16": a.astype(np.float16)}
        b16 = {"bf16": (b.view(np.uint32) >> 16).astype(np.uint16),
               "f16": b.astype(np.float16)}
        p = lambda x: x.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
        calls = {
            "sgemm": lambda: blas.cblas_sgemm(101, 111, 111, m, n, k, 1.0,
                                              p(a), k, p(b), n, 0.0, p(c), n),
            "bf16": lambda: runtime.tsr_gemm_bf16(m, n, k, p(a16["bf16"]), k,
                                                  p(b16["bf16"]), n, p(c), n,
                                                  0.0),
            "f16": lambda: runtime.tsr_gemm_f16(m, n, k, p(a16["f16"]), k,
                                                p(b16["f16"]), n, p(c), n,
                                                0.0),
        }
        best = {}
        for name, call in calls.items():
            call()
            times = []
            for _ in range(7):
                t = time.perf_counter()
                call()
                times.append(time.perf_counter() - t)
            best[name] = 2 * m * n * k / min(times) / 1e9
        rows.append(((m, k, n), best))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    bin_dir = pathlib.Path(args.build) / "bin"
    work = tempfile.mkdtemp(prefix="tessera-bench-precision.")

    lm = os.path.join(work, "lm")
    run([sys.executable, ROOT / "python/tessera_examples/make_charlm.py",
         "--out", lm, "--seq", args.seq, "--batch", args.batch,
         "--no-verify"])
    data = os.path.join(lm, "tokens.bin")
    gpt = os.path.join(work, "gpt")
    run([TORCH_PYTHON, ROOT / "python/tessera_examples/make_torch_gpt.py",
         "--out", gpt, "--layers", args.layers, "--d-model", args.d_model,
         "--heads", args.heads, "--seq", args.seq, "--vocab", 96])
    models = [("charlm", os.path.join(lm, "charlm.onnx"),
               ["--labels=targets"]),
              (f"torch GPT {args.layers}x{args.d_model}",
               os.path.join(gpt, "torch_gpt.onnx"), [])]

    print(f"training step, Adam, batch {args.batch} x seq {args.seq}, "
          f"median of {args.steps - 2} steps, {args.threads} threads")
    print("| model | setting | ms/step | vs fp32 | peak step bytes | "
          "vs fp32 | optimizer state bytes | vs fp32 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, model, labels in models:
        base = None
        for k, (setting, flags) in enumerate(SETTINGS):
            art = os.path.join(work, f"{name.split()[0]}-{k}")
            seconds, peak, state = step(bin_dir, model, labels, args.batch,
                                        art, flags, data, args.steps,
                                        args.threads)
            base = base or (seconds, peak, state)
            print(f"| {name} | {setting} | {seconds * 1e3:.2f} | "
                  f"{seconds / base[0]:.2f} | {peak} | {peak / base[1]:.2f} | "
                  f"{state} | {state / base[2]:.2f} |")

    print(f"\nGEMM C = A·B (f32 result), best of 7, {args.threads} threads")
    print("| M x K x N | sgemm GFLOP/s | bf16 GFLOP/s | bf16/sgemm | "
          "f16 GFLOP/s | f16/sgemm |")
    print("|---|---:|---:|---:|---:|---:|")
    for (m, k, n), best in gemms(args.threads):
        print(f"| {m}x{k}x{n} | {best['sgemm']:.0f} | {best['bf16']:.0f} | "
              f"{best['bf16'] / best['sgemm']:.2f} | {best['f16']:.0f} | "
              f"{best['f16'] / best['sgemm']:.2f} |")


if __name__ == "__main__":
    main()
