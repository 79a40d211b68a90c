#!/usr/bin/env python3
"""Gradient compression and local SGD: bytes sent, step time and loss
against all-reduce.

For the bundled character LM (python/tessera_examples/make_charlm.py) and a
GPT exported by PyTorch (python/tessera_examples/make_torch_gpt.py),
compiles the Adam training step for `--mesh dp=N`, plain, with each
`--grad-compression` setting, with `--local-steps=H` (settings `local:H`)
and with S parameter servers (`ps-sync:S`, `ps-async:S`, the latter with
`--staleness=2`), trains each the same number of steps under `mpirun` (N
ranks, N+S with servers) on the same tokens, and prints per setting:

- the bytes one rank sends per step, every collective of the step (the
  manifest's, by the cost model: gradient buckets, compressed gradients,
  the loss; local SGD's average counts 1/H per step; a parameter server's
  worker sends its gradients, the manifest's `push_bytes`), and the ratio
  of plain's to it;
- the compressed gradients alone: what they send against what
  all-reducing them would (the manifest's `gradient_compression`);
- the median step time and its ratio to plain;
- the mean loss of the last 10% of steps (the same batches for every
  setting) and its ratio to plain.

It also writes loss against bytes sent (cumulative, per rank) for every
setting as an SVG plot.

Usage: bench/compression.py [--build DIR] [--out DIR] [--ranks N]
                            [--steps N] [--gpt-steps N] [--no-gpt]
                            [--optimizer adam|sgd] [--settings A,B,...]
"""

import argparse
import itertools
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from tessera.plot import line_chart  # noqa: E402

TORCH_PYTHON = "/usr/bin/python3"
SETTINGS = ("none", "topk:0.1", "topk:0.01", "qsgd:8", "powersgd:4",
            "onebit", "local:4", "local:16", "ps-sync:2", "ps-async:2")
LR = {"adam": 3e-3, "sgd": 0.3}


def run(cmd, **kw):
    done = subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, **kw)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"error: {' '.join(map(str, cmd))} exited "
                         f"{done.returncode}")
    return done.stdout


def mpirun(ranks):
    env = ["env", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
           "OMPI_MCA_rmaps_base_oversubscribe=1"]
    return env + ["mpirun", "-np", str(ranks)]


def flags(setting, steps):
    """The compiler flags of a setting: local:H is --local-steps=H; onebit
    warms up for a quarter of the run; ps-sync:S and ps-async:S add S
    parameter servers."""
    kind, _, arg = setting.partition(":")
    if kind == "local":
        return [f"--local-steps={arg}"]
    if kind == "onebit":
        return [f"--grad-compression=onebit:{max(1, steps // 4)}"]
    if kind == "ps-sync":
        return [f"--ps={arg}", "--ps-sync"]
    if kind == "ps-async":
        return [f"--ps={arg}", "--ps-async", "--staleness=2"]
    return [f"--grad-compression={setting}"]


def measure(bin_dir, model, labels, batch, ranks, setting, art, data, steps,
            optimizer):
    run([bin_dir / "tessera-compile", model, "--mode=train",
         "--loss=cross_entropy", "--logits=logits", *labels,
         f"--batch-size={batch}", f"--optimizer={optimizer}",
         f"--lr={LR[optimizer]}",
         "--mesh", f"dp={ranks}", *flags(setting, steps), "-o", art])
    with open(os.path.join(art, "manifest.json")) as f:
        manifest = json.load(f)
    total = sum(c["bytes"] for c in manifest["collectives"])
    per_step = [total] * steps
    local = manifest.get("local_sgd")
    if local:
        # The average runs on the steps H divides, and the last.
        h = local["steps"]
        per_step = [total - local["average_bytes"] * (
            0 if (s + 1) % h == 0 or s + 1 == steps else 1) for s in range(steps)]
    stats = manifest.get("gradient_compression")
    if stats and stats["method"].startswith("onebit:"):
        # The warm-up all-reduces (dense_bytes); later steps send the signs.
        warmup = int(stats["method"].split(":")[1])
        per_step = [total - (stats["sent_bytes"] if s < warmup else stats["dense_bytes"])
                    for s in range(steps)]
    servers = manifest.get("parameter_server")
    if servers:
        # A worker pushes its gradients; the servers answer.
        per_step = [total + servers["push_bytes"]] * steps
    sent = sum(per_step) / steps
    log = f"{art}.json"
    launched = ranks + (servers["servers"] if servers else 0)
    run(mpirun(launched) + [bin_dir / "tessera-run", art, "--train", "--data",
                         data, "--steps", steps, "--threads", 1,
                         "--log-json", log])
    with open(log) as f:
        records = [json.loads(line) for line in f]
    losses = [float(r["loss"]) for r in records]
    tail = losses[-max(1, len(losses) // 10):]
    grad = manifest.get("gradient_compression")
    if local:
        grad = {"sent_bytes": local["average_bytes"] // local["steps"],
                "dense_bytes": local["gradient_bytes"]}
    if servers:
        grad = {"sent_bytes": servers["push_bytes"],
                "dense_bytes": round(2 * (ranks - 1) / ranks
                                     * servers["push_bytes"])}
    return {"sent": sent, "per_step": per_step, "grad": grad,
            "seconds": statistics.median(r["seconds"] for r in records[2:]),
            "tail": statistics.mean(tail), "losses": losses}


def plot(curves, path, title):
    """Loss (moving mean over 20 steps) against cumulative MB sent, the MB
    on a log scale (plain sends orders of magnitude more)."""
    series = []
    for name, r in curves:
        mb = list(itertools.accumulate(b / 1e6 for b in r["per_step"]))
        ls = r["losses"]
        smooth = [statistics.mean(ls[max(0, i - 19):i + 1])
                  for i in range(len(ls))]
        series.append((name, mb, smooth))
    line_chart(path, series, title=title,
               x_label="MB sent by one rank (cumulative, log scale)",
               y_label="loss (mean of the last 20 steps)", log_x=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--out", help="where the plots go (default: the work "
                    "directory)")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--gpt-steps", type=int, default=60)
    ap.add_argument("--no-gpt", action="store_true")
    ap.add_argument("--optimizer", choices=sorted(LR), default="adam")
    ap.add_argument("--settings", default=",".join(SETTINGS),
                    help="comma-separated, the first the baseline (default: "
                    "all, none first)")
    args = ap.parse_args()
    settings = args.settings.split(",")
    bin_dir = pathlib.Path(args.build) / "bin"
    work = tempfile.mkdtemp(prefix="tessera-bench-compression.")
    out_dir = args.out or work
    os.makedirs(out_dir, exist_ok=True)

    lm = os.path.join(work, "lm")
    run([sys.executable, ROOT / "python/tessera_examples/make_charlm.py",
         "--out", lm, "--seq", 32, "--batch", 16, "--layers", 1,
         "--no-verify"])
    data = os.path.join(lm, "tokens.bin")
    models = [("charlm", os.path.join(lm, "charlm.onnx"), ["--labels=targets"],
               16, args.steps, data)]
    if not args.no_gpt:
        gpt = os.path.join(work, "gpt")
        run([TORCH_PYTHON, ROOT / "python/tessera_examples/make_torch_gpt.py",
             "--out", gpt, "--layers", 4, "--d-model", 256, "--heads", 4,
             "--seq", 64, "--vocab", 96])
        gpt_lm = os.path.join(work, "gpt_lm")
        run([sys.executable, ROOT / "python/tessera_examples/make_charlm.py",
             "--out", gpt_lm, "--seq", 64, "--batch", 8, "--no-verify"])
        models.append(("torch GPT 4x256", os.path.join(gpt, "torch_gpt.onnx"),
                       [], 8, args.gpt_steps,
                       os.path.join(gpt_lm, "tokens.bin")))

    print(f"data parallelism over {args.ranks} ranks (mpirun, MPI on the "
          f"CPU), {args.optimizer} lr {LR[args.optimizer]}; bytes per rank "
          "and step by the cost model")
    print("| model | setting | bytes/step | plain/this | compressed grads: "
          "sent / all-reduce (local: average per step / gradients; ps: "
          "pushed / all-reduce) | "
          "ms/step | vs plain | final loss | vs plain |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, model, labels, batch, steps, tokens in models:
        curves, base = [], None
        for k, setting in enumerate(settings):
            art = os.path.join(work, f"{name.split()[0]}-{k}")
            r = measure(bin_dir, model, labels, batch, args.ranks, setting,
                        art, tokens, steps, args.optimizer)
            base = base or r
            curves.append((setting if setting != "onebit"
                           else f"onebit:{max(1, steps // 4)}", r))
            grad = (f"{r['grad']['sent_bytes']} / {r['grad']['dense_bytes']}"
                    if r["grad"] else "-")
            shown = (f"onebit:{max(1, steps // 4)}" if setting == "onebit"
                     else setting)
            print(f"| {name} ({steps} steps) | {shown} | {r['sent']:.0f} | "
                  f"{base['sent'] / r['sent']:.1f}x | {grad} | "
                  f"{r['seconds'] * 1e3:.2f} | "
                  f"{r['seconds'] / base['seconds']:.2f} | {r['tail']:.4f} | "
                  f"{r['tail'] / base['tail']:.3f} |")
        slug = "_".join(name.lower().split()[:2])
        svg = os.path.join(out_dir, f"compression_{slug}.svg")
        plot(curves, svg, f"{name}, dp={args.ranks}: loss against bytes sent")
        print(f"plot: {svg}")


if __name__ == "__main__":
    main()
