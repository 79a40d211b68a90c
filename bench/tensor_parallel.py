#!/usr/bin/env python3
"""Data, tensor and sequence parallelism training the bundled language
model: step time, bytes communicated per step, per-rank memory and compile
time, against one process in the same run.

The model is python/tessera_examples/make_charlm.py at a size where the
matmuls dominate (default: 4 layers, d_model 256, 8 heads, sequence 64,
global batch 16, Adam), its vocabulary padded to a multiple of 128 rows
(``--pad-vocab 128``, Megatron-LM's --make-vocab-size-divisible-by) so that
tensor parallelism can split the embedding and the LM head. Each
configuration is compiled with ``tessera-compile --mode=train --explain``
(timed), whose listing gives the collectives and the bytes one rank sends
per step (the α-β model's β coefficient: 2(N-1)/N·B for an all-reduce of B
bytes, (N-1)/N·B for an all-gather or reduce-scatter), and trained for
``--steps`` steps with ``tessera-run --train --memory-report`` (under
``mpirun -np N``), whose rank 0 reports the parameter and optimizer-state
bytes it holds, the peak bytes of one step's own allocations
(activations, gradients, collective buffers) and its step times (median
after the first two steps).

    .venv/bin/python bench/tensor_parallel.py [--steps 12] [--layers 4]
        [--d-model 256] [--heads 8] [--seq 64] [--batch 16] [--threads 1]

Ranks share the machine's cores: on a 2-core machine, 4 ranks are
oversubscribed, so the time column there measures contention as much as
parallelism. Compare configurations by the ratio columns, within one run.
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIGS = [
    ("1 process", []),
    ("dp4", ["--mesh=dp=4"]),
    ("dp4 ZeRO-3", ["--mesh=dp=4", "--zero=3"]),
    ("tp4", ["--mesh=tp=4"]),
    ("tp4 sp", ["--mesh=tp=4", "--sequence-parallel"]),
    ("dp2 x tp2", ["--mesh=dp=2,tp=2"]),
    ("dp2 x tp2 sp", ["--mesh=dp=2,tp=2", "--sequence-parallel"]),
    ("dp2 x tp2 sp ZeRO-3", ["--mesh=dp=2,tp=2", "--sequence-parallel",
                             "--zero=3"]),
]


def run(cmd, **kw):
    done = subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, **kw)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} exited {done.returncode}:\n"
                 f"{done.stdout}{done.stderr}")
    return done


def ranks(flags):
    mesh = [f.split("=", 1)[1] for f in flags if f.startswith("--mesh=")]
    n = 1
    for axis in mesh[0].split(",") if mesh else []:
        n *= int(axis.split("=")[1])
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.steps < 3:
        ap.error("--steps must be at least 3 (the first two are not timed)")
    bin_dir = pathlib.Path(args.build) / "bin"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        run([sys.executable, ROOT / "python/tessera_examples/make_charlm.py",
             "--out", tmp, "--layers", args.layers, "--d-model", args.d_model,
             "--heads", args.heads, "--seq", args.seq, "--batch", args.batch,
             "--pad-vocab", 128, "--no-verify"])
        config = json.loads((tmp / "charlm.json").read_text())
        model = tmp / "charlm.onnx"
        flags = ["--mode=train", "--loss=cross_entropy", "--logits=logits",
                 "--optimizer=adam", "--lr=3e-3", f"--batch-size={args.batch}"]
        rows = []
        for name, mesh in CONFIGS:
            n = ranks(mesh)
            art = tmp / re.sub(r"\W+", "_", name)
            start = time.perf_counter()
            explained = run([bin_dir / "tessera-compile", model, *flags, *mesh,
                             "-o", art, "--explain"], env=env).stdout
            compile_s = time.perf_counter() - start
            sent = [int(b) for b in
                    re.findall(r"over [\w,x]+, (\d+) bytes per rank", explained)]
            log = tmp / (art.name + ".json")
            cmd = [bin_dir / "tessera-run", art, "--train", "--data",
                   tmp / "tokens.bin", "--steps", args.steps, "--threads",
                   args.threads, "--log-json", log, "--memory-report"]
            if n > 1:
                cmd = ["mpirun", "-np", n, *cmd]
            out = run(cmd, env=env).stdout
            report = re.search(r"memory rank 0 of \d+: params (\d+) bytes, "
                               r"gradients \d+ bytes, optimizer state (\d+)",
                               out)
            peak = re.search(r"peak step memory: (\d+) bytes", out)
            seconds = [json.loads(line)["seconds"]
                       for line in log.read_text().splitlines()]
            rows.append((name, n, int(report.group(1)), int(report.group(2)),
                         int(peak.group(1)), len(sent), sum(sent), compile_s,
                         statistics.median(seconds[2:])))
        base = rows[0]
        print(f"training the bundled LM ({args.layers} layers, d_model "
              f"{args.d_model}, {args.heads} heads, sequence {args.seq}, "
              f"vocabulary {config['vocab']} padded to "
              f"{config['vocab_rows']}, {config['parameters']} parameters, "
              f"global batch {args.batch}, Adam); {args.steps} steps, rank "
              f"0's median step after the first two, {args.threads} "
              f"thread(s) per rank")
        print("| config | ranks | params B/rank | optimizer state B/rank | "
              "step peak B/rank | / 1 process | collectives per step | bytes "
              "sent per rank per step | compile s | step ms | step / 1 "
              "process |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, n, params, state, peak, count, sent, compile_s, step in rows:
            print(f"| {name} | {n} | {params} | {state} | {peak} | "
                  f"{peak / base[4]:.3f} | {count} | {sent} | {compile_s:.2f} "
                  f"| {1e3 * step:.1f} | {step / base[8]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
