#!/usr/bin/env python3
"""GPT-2-shaped training step: Tessera beside PyTorch eager, same machine, same run.

Builds the GPT-style model of python/tessera_examples/make_torch_gpt.py at
GPT-2-small's shape (12 layers, d_model 768, 12 heads, vocabulary 50257,
untied head; 163M parameters), exports it to ONNX, and trains it for the
same steps on the same random batches with AdamW at the same learning rate:

- Tessera: `tessera-compile --mode=train --loss=cross_entropy
  --optimizer=adamw`, then `tessera-run --train --log-json`, whose "seconds"
  field times each whole step (batch fill, forward, backward, update).
- PyTorch eager: the very module that was exported (same weights: it is
  rebuilt from the same seed), torch.optim.AdamW with the same
  hyperparameters; each step is timed from the batch copy to the end of
  optimizer.step() (loss.item() included). It runs in a child process, so
  that its peak RSS is its own.

Each process's peak memory is its maximum resident set size (getrusage of the
child). The step's FLOPs are counted from the shapes (matmuls only: 2 per
multiply-add, the backward twice the forward) and divided by the median step
time, as a fraction of the SGEMM rate measured in the same run (OpenBLAS's
cblas_sgemm on 2048^3 with the same threads, the machine's reference rate;
Tessera's GEMMs are oneDNN's unless compiled with --cpu-gemm=openblas).

Run with Debian's python (python3-torch, python3-numpy, python3-onnx):

    /usr/bin/python3 bench/gpt2.py [--steps 10] [--layers 12] [--threads 2] ...

Needs a built tree (scripts/build.sh). See bench/README.md.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import common  # bench/common.py, beside this file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "python", "tessera_examples")
WARMUP = 2  # steps left out of the median
COMPARE = 3  # leading losses compared between Tessera and PyTorch
DATA_SEED = 7


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description="GPT-2-shaped training step: Tessera vs PyTorch eager.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run with /usr/bin/python3 (Debian's python3-torch). See bench/README.md.")
    ap.add_argument("--steps", type=int, default=10, help="training steps (default 10)")
    ap.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    ap.add_argument("--torch-blas-threads", type=int, default=1,
                    help="OPENBLAS_NUM_THREADS of the PyTorch process (default 1)")
    ap.add_argument("--lr", type=float, default=3e-4, help="AdamW learning rate (default 3e-4)")
    ap.add_argument("--weight-decay", type=float, default=0.01,
                    help="AdamW weight decay (default 0.01)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--tessera-bin", default=os.path.join(ROOT, "build", "bin"),
                    help="where tessera-compile and tessera-run live (default build/bin)")
    ap.add_argument("--compile-also", type=int, metavar="LAYERS",
                    help="also export and compile (only) the model at this depth twice, "
                         "alternately with the first depth, and print the least compile "
                         "time of each (the depth check: 24)")
    ap.add_argument("--work", help="work directory (kept); default a temporary one")
    ap.add_argument("--torch-child", metavar="JSON", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.steps <= WARMUP:
        ap.error(f"--steps must be more than {WARMUP} (the warm-up steps)")
    return args


def fail(message: str):
    sys.exit(f"gpt2.py: error: {message}")


def run_child(cmd, env=None):
    """Runs cmd; returns (stdout, wall s, CPU s, peak RSS bytes)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        fail(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{out}")
    return out, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def batches(args):
    """Random tokens, labels the next token (the last wraps): batch s is
    samples s*B .. s*B+B-1, which is what tessera-run feeds."""
    import numpy as np
    rng = np.random.default_rng(DATA_SEED)
    n = args.batch * args.steps
    tokens = rng.integers(0, args.vocab, size=(n, args.seq), dtype=np.int64)
    labels = np.roll(tokens, -1, axis=1)
    return tokens, labels


def sgemm_rate(threads: int) -> float:
    """FLOP/s of OpenBLAS's cblas_sgemm on 2048^3 (best of 5) with `threads`."""
    import numpy as np
    blas = ctypes.CDLL("libopenblas.so.0")
    blas.openblas_set_num_threads(ctypes.c_int(threads))
    n = 2048
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    c = np.zeros((n, n), dtype=np.float32)
    p = ctypes.POINTER(ctypes.c_float)
    args = (ctypes.c_int(101), ctypes.c_int(111), ctypes.c_int(111), ctypes.c_int(n),
            ctypes.c_int(n), ctypes.c_int(n), ctypes.c_float(1.0), a.ctypes.data_as(p),
            ctypes.c_int(n), b.ctypes.data_as(p), ctypes.c_int(n), ctypes.c_float(0.0),
            c.ctypes.data_as(p), ctypes.c_int(n))
    blas.cblas_sgemm(*args)  # warm-up
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        blas.cblas_sgemm(*args)
        best = min(best, time.perf_counter() - start)
    if not np.allclose(c[:4, :4], a[:4] @ b[:, :4], rtol=1e-3, atol=1e-2):
        fail("cblas_sgemm through ctypes gave a wrong product")
    return 2.0 * n ** 3 / best


# --------------------------------------------------------------------------- #
# PyTorch (child process)
# --------------------------------------------------------------------------- #
def torch_child(args) -> int:
    import numpy as np
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, EXAMPLES)
    import make_torch_gpt

    torch.set_num_threads(args.threads)
    model = make_torch_gpt.build_model(args.vocab, args.seq, args.d_model, args.heads,
                                       args.layers)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=args.weight_decay)
    tokens, labels = batches(args)
    losses, seconds = [], []
    for step in range(args.steps):
        rows = slice(step * args.batch, (step + 1) * args.batch)
        x, y = tokens[rows], labels[rows]
        start = time.perf_counter()
        logits = model(torch.from_numpy(x))
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               torch.from_numpy(y).reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()
        seconds.append(time.perf_counter() - start)
        losses.append(value)
        if not np.isfinite(value):
            fail(f"PyTorch step {step + 1}: the loss is {value}")
    with open(args.torch_child, "w") as f:
        json.dump({"losses": losses, "seconds": seconds, "torch": torch.__version__,
                   "threads": torch.get_num_threads()}, f)
    return 0


def run_torch(args, work: str):
    out = os.path.join(work, "torch.json")
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.torch_blas_threads),
               OMP_NUM_THREADS=str(args.threads))
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-child", out,
           "--steps", str(args.steps), "--threads", str(args.threads), "--lr", str(args.lr),
           "--weight-decay", str(args.weight_decay), "--batch", str(args.batch),
           "--seq", str(args.seq), "--layers", str(args.layers), "--d-model",
           str(args.d_model), "--heads", str(args.heads), "--vocab", str(args.vocab)]
    _, _, _, rss = run_child(cmd, env=env)
    with open(out) as f:
        result = json.load(f)
    result["rss"] = rss
    return result


# --------------------------------------------------------------------------- #
# Tessera
# --------------------------------------------------------------------------- #
def compile_step(args, compile_bin: str, model_path: str, art: str):
    """tessera-compile's training step: (report, wall s, CPU s, peak RSS)."""
    return run_child([compile_bin, model_path, "--mode=train", "--loss=cross_entropy",
                      "--logits=logits", "--labels=labels", "--batch-size", str(args.batch),
                      "--optimizer=adamw", f"--lr={args.lr}",
                      f"--weight-decay={args.weight_decay}", "-o", art])


def export(args, out: str, layers: int) -> str:
    """make_torch_gpt.py's model at `layers`, exported to out/torch_gpt.onnx
    by a child process: a child's peak RSS (ru_maxrss) starts from the
    parent's, which holding PyTorch's 163M-parameter model would raise to
    4.6 GB."""
    run_child([sys.executable, os.path.join(EXAMPLES, "make_torch_gpt.py"), "--out", out,
               "--vocab", str(args.vocab), "--seq", str(args.seq), "--layers", str(layers),
               "--d-model", str(args.d_model), "--heads", str(args.heads)])
    return os.path.join(out, "torch_gpt.onnx")


def run_tessera(args, work: str, model_path: str, data_path: str):
    try:
        compile_bin, run_bin = common.tessera_tools(args.tessera_bin)
    except common.BenchError as error:
        fail(str(error))
    art = os.path.join(work, "gpt2.art")
    log = os.path.join(work, "tessera_log.json")
    report, compile_wall, compile_cpu, compile_rss = compile_step(args, compile_bin,
                                                                  model_path, art)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads),
               OMP_NUM_THREADS=str(args.threads))
    out, _, _, rss = run_child([run_bin, art, "--train", "--data", data_path, "--steps",
                                str(args.steps), "--log-json", log], env=env)
    arena = re.search(r"arena (\d+) bytes", out)
    if not arena:
        fail(f"tessera-run printed no arena size:\n{out}")
    try:
        losses, seconds = common.read_step_log(log, args.steps)
    except common.BenchError as error:
        fail(str(error))
    with open(os.path.join(art, "manifest.json")) as f:
        program = json.load(f)["programs"][0]
    itemsize = {"float32": 4, "int64": 8, "int32": 4, "float64": 8}
    input_bytes = sum(itemsize[t["dtype"]] * math.prod(t["shape"]) for t in program["inputs"])
    return {"losses": losses, "seconds": seconds, "rss": rss, "compile_wall": compile_wall,
            "input_bytes": input_bytes, "step_peak": program["peak_alloc_bytes"],
            "arena": int(arena.group(1)),
            "compile_cpu": compile_cpu, "compile_rss": compile_rss, "report": report}


def median_s(seconds):
    return statistics.median(seconds[WARMUP:])


def main(args) -> int:
    if args.torch_child:
        return torch_child(args)
    import numpy as np

    load = os.getloadavg()[0]
    if load > 1.0:
        print(f"gpt2.py: warning: the machine is busy (1-minute load average {load:.2f}); "
              "timings will be noisy", file=sys.stderr)
    work = args.work or tempfile.mkdtemp(prefix="tessera-bench-gpt2.")
    os.makedirs(work, exist_ok=True)
    model_path = export(args, work, args.layers)
    tokens, labels = batches(args)
    data_path = os.path.join(work, "data.npz")
    np.savez(data_path, tokens=tokens, labels=labels)

    tessera = run_tessera(args, work, model_path, data_path)
    # The trained values, as tessera-compile counts them: PyTorch's
    # parameters (the attention masks are buffers, frozen).
    counted = re.search(r"training \d+ parameters \((\d+) values\)", tessera["report"])
    if not counted:
        fail(f"tessera-compile printed no parameter count:\n{tessera['report']}")
    params = int(counted.group(1))
    pytorch = run_torch(args, work)
    deeper = None
    if args.compile_also:
        deeper_dir = os.path.join(work, f"layers{args.compile_also}")
        os.makedirs(deeper_dir, exist_ok=True)
        deeper_model = export(args, deeper_dir, args.compile_also)
        compile_bin, _ = common.tessera_tools(args.tessera_bin)
        # Two more compiles of each depth, alternately: reading the model
        # (0.65-1 GB) costs system time that varies with the page cache,
        # so the ratio is of the least CPU time of each depth.
        shallow, deep = [tessera["compile_cpu"]], []
        for _ in range(2):
            deep.append(compile_step(args, compile_bin, deeper_model,
                                     os.path.join(deeper_dir, "gpt2.art"))[2])
            shallow.append(compile_step(args, compile_bin, model_path,
                                        os.path.join(work, "again.art"))[2])
        deeper = (min(deep), min(shallow))
    sgemm = sgemm_rate(args.threads)
    flops = common.gpt_step_flops(args.d_model, args.seq, args.vocab,
                                  args.layers, args.batch)

    # The model's state: parameters, gradients and AdamW's two moments.
    state = 4 * params * 4
    t_s, p_s = median_s(tessera["seconds"]), median_s(pytorch["seconds"])
    mib = 1024.0 ** 2
    print(f"GPT-2-shaped model: {args.layers} layers, d_model {args.d_model}, {args.heads} "
          f"heads, vocab {args.vocab}, {params} parameters; batch {args.batch} x seq "
          f"{args.seq}; AdamW lr {args.lr} weight decay {args.weight_decay}; {args.steps} "
          f"steps, {args.threads} threads")
    print(f"step time: median of steps {WARMUP + 1}..{args.steps}; PyTorch "
          f"{pytorch['torch']} eager, {pytorch['threads']} OpenMP threads, "
          f"OPENBLAS_NUM_THREADS={args.torch_blas_threads}; step FLOPs (matmuls) "
          f"{flops / 1e9:.1f} G; OpenBLAS SGEMM 2048^3: {sgemm / 1e9:.1f} GFLOP/s")
    print()
    print("| | Tessera | PyTorch eager | Tessera/PyTorch |")
    print("|---|---:|---:|---:|")
    print(f"| compile s (CPU) | {tessera['compile_cpu']:.1f} | - | |")
    print(f"| compile s (wall) | {tessera['compile_wall']:.1f} | - | |")
    if deeper is not None:
        print(f"| compile s (CPU), {args.compile_also} layers, least of 2 | {deeper[0]:.1f} | - "
              f"| {deeper[0] / deeper[1]:.2f}x the {args.layers} layers' least of 3 "
              f"({deeper[1]:.1f} s) |")
    print(f"| s/step (median) | {t_s:.3f} | {p_s:.3f} | {t_s / p_s:.2f} |")
    print(f"| s/step (min) | {min(tessera['seconds'][WARMUP:]):.3f} | "
          f"{min(pytorch['seconds'][WARMUP:]):.3f} | |")
    print(f"| FLOP rate / SGEMM rate | {flops / t_s / sgemm:.2f} | {flops / p_s / sgemm:.2f} | |")
    print(f"| peak RSS MiB | {tessera['rss'] / mib:.0f} | {pytorch['rss'] / mib:.0f} | "
          f"{tessera['rss'] / pytorch['rss']:.2f} |")
    print(f"| parameters + gradients + AdamW state MiB | {state / mib:.0f} | {state / mib:.0f} | |")
    # The bound: the state and the activations (the step's own peak,
    # gradients included, as its manifest records it) plus 10%.
    bound = 1.1 * (tessera["input_bytes"] + tessera["step_peak"])
    print(f"| step peak (manifest) MiB | {tessera['step_peak'] / mib:.0f} | | |")
    print(f"| runtime arena MiB | {tessera['arena'] / mib:.0f} | | "
          f"{tessera['arena'] / tessera['step_peak']:.3f}x the step peak |")
    print(f"| bound: (inputs + step peak) x 1.1, MiB | {bound / mib:.0f} | | "
          f"peak RSS {tessera['rss'] / bound:.2f}x the bound |")
    print(f"| first loss | {tessera['losses'][0]:.5f} | {pytorch['losses'][0]:.5f} | |")
    print(f"| last loss (step {args.steps}) | {tessera['losses'][-1]:.5f} | "
          f"{pytorch['losses'][-1]:.5f} | |")
    n = min(COMPARE, args.steps)
    rel = max(abs(a - b) / abs(b) for a, b in zip(tessera["losses"][:n], pytorch["losses"][:n]))
    print()
    print(f"max relative difference of the first {n} losses: {rel:.2e}")
    if args.work:
        print(f"work directory: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(parse_args()))
