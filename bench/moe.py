#!/usr/bin/env python3
"""Expert, data and tensor parallelism training a mixture-of-experts GPT: tokens per
second, all-to-all and other bytes per step, per-rank memory and compile
time, against one process in the same run.

The model is python/tessera_examples/make_moe_gpt.py (one com.microsoft
MoE node per layer; default: 4 layers, d_model 128, 4 heads, 8 experts of
a GELU MLP 128 -> 512 -> 128, top-2, renormalized gates, sequence 64,
global batch 16, Adam). Each configuration is compiled with
``tessera-compile --mode=train --explain`` (timed), whose listing gives the
collectives and the bytes one rank sends per step ((N-1)/N of the buffer
for an all-to-all, 2(N-1)/N for an all-reduce), and trained for
``--steps`` steps with ``tessera-run --train --memory-report`` (under
``mpirun -np N``), whose rank 0 reports the parameter and optimizer-state
bytes it holds and the peak of one step's own allocations, and whose log
gives the tokens per second of the whole mesh (median after the first two
steps).

    .venv/bin/python bench/moe.py [--steps 12] [--layers 4] [--d-model 128]
        [--experts 8] [--top-k 2] [--seq 64] [--batch 16] [--threads 1]
        [--capacity-factor F]

Needs Debian's /usr/bin/python3 with PyTorch for the export. Ranks share
the machine's cores: on a 2-core machine 4 ranks are oversubscribed, so
compare configurations by the ratio columns, within one run.
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from tensor_parallel import ranks, run  # noqa: E402
CONFIGS = [
    ("1 process", []),
    ("dp2", ["--mesh=dp=2"]),
    ("ep2", ["--mesh=ep=2"]),
    ("ep4", ["--mesh=ep=4"]),
    ("dp2 x ep2", ["--mesh=dp=2,ep=2"]),
    ("dp2 x ep2 ZeRO-3", ["--mesh=dp=2,ep=2", "--zero=3"]),
    ("ep2 x tp2", ["--mesh=ep=2,tp=2"]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--capacity-factor", type=float, default=0.0,
                    help="--moe-capacity-factor for every configuration "
                         "(default: dropless)")
    args = ap.parse_args()
    if args.steps < 3:
        ap.error("--steps must be at least 3 (the first two are not timed)")
    bin_dir = pathlib.Path(args.build) / "bin"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        run(["/usr/bin/python3", ROOT / "python/tessera_examples/make_moe_gpt.py",
             "--out", tmp, "--layers", args.layers, "--d-model", args.d_model,
             "--heads", args.heads, "--experts", args.experts, "--top-k",
             args.top_k, "--seq", args.seq, "--normalize"])
        config = json.loads((tmp / "moe_gpt.json").read_text())
        model = tmp / "moe_gpt.onnx"
        flags = ["--mode=train", "--loss=cross_entropy", "--logits=logits",
                 "--optimizer=adam", "--lr=3e-3", f"--batch-size={args.batch}"]
        if args.capacity_factor > 0:
            flags.append(f"--moe-capacity-factor={args.capacity_factor}")
        rows = []
        for name, mesh in CONFIGS:
            n = ranks(mesh)
            art = tmp / re.sub(r"\W+", "_", name)
            start = time.perf_counter()
            explained = run([bin_dir / "tessera-compile", model, *flags, *mesh,
                             "-o", art, "--explain"], env=env).stdout
            compile_s = time.perf_counter() - start
            listed = re.findall(r"#\d+ (\w+) over [\w,]+, (\d+) bytes per rank",
                                explained)
            a2a = [int(b) for kind, b in listed if kind == "all_to_all"]
            other = [int(b) for kind, b in listed if kind != "all_to_all"]
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
            entries = [json.loads(line)
                       for line in log.read_text().splitlines()]
            tokens = statistics.median(e["tokens_per_second"]
                                       for e in entries[2:])
            rows.append((name, n, int(report.group(1)), int(report.group(2)),
                         int(peak.group(1)), len(a2a), sum(a2a), len(other),
                         sum(other), compile_s, tokens))
        base = rows[0]
        capacity = (f"capacity factor {args.capacity_factor}"
                    if args.capacity_factor > 0 else "dropless")
        print(f"training the MoE GPT ({args.layers} layers, d_model "
              f"{args.d_model}, {args.heads} heads, {args.experts} experts "
              f"top-{args.top_k} {capacity}, sequence {args.seq}, vocabulary "
              f"{config['vocab']}, global batch {args.batch}, Adam); "
              f"{args.steps} steps, median tokens/s of the mesh after the "
              f"first two, {args.threads} thread(s) per rank")
        print("| config | ranks | params B/rank | / 1 process | optimizer "
              "state B/rank | step peak B/rank | all-to-alls per step | "
              "all-to-all B sent per rank per step | other collectives | "
              "their B per rank | compile s | tokens/s | / 1 process |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
              "---:|")
        for (name, n, params, state, peak, a2a, a2a_bytes, other, other_bytes,
             compile_s, tokens) in rows:
            print(f"| {name} | {n} | {params} | {params / base[2]:.3f} | "
                  f"{state} | {peak} | {a2a} | {a2a_bytes} | {other} | "
                  f"{other_bytes} | {compile_s:.2f} | {tokens:.0f} | "
                  f"{tokens / base[10]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
