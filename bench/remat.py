#!/usr/bin/env python3
"""Rematerialization under a memory budget: fit, step time and solver time.

For a GPT exported by PyTorch (python/tessera_examples/make_torch_gpt.py),
compiles the training step (Adam) without rematerialization, with
--remat=selective and --remat=full, and under --memory-budget at several
fractions of what the step needs without rematerialization (the smallest
below what recomputation alone meets, so that saved activations are
offloaded to host memory); trains each for a few steps with tessera-run
and prints, per setting: the footprint --report predicts (arguments,
results and the predicted peak), the one the allocator measures, what was
recomputed (ops, and their time by the cost model), what was offloaded, the
copies' time per step over an emulated host link (--host-bandwidth, for
the compiler's plan and tessera-run alike), the time the step waited for
them and so the share compute hid, and the median step time as a ratio to
no rematerialization and to --remat=full, all in the same run; and the
same with the optimizer's update and state on the host
(--offload-optimizer: the footprint is the device program's, the copies
are the gradients down and the parameters up, none overlapped). It also
writes the Pareto plot (step time against footprint, both as ratios to no
rematerialization) as an SVG file.

Then the solver's own time on a GPT-2-small-shaped step (12 layers, d_model
768, 12 heads, sequence 1024, vocabulary 50257, batch 8; 4400 ops): the
tsr-remat-plan pass under budgets of 0.9, 0.7, 0.55 and 0.33 (below
recomputation's floor: offload) of the step's
footprint, timed by tessera-opt -mlir-timing on the step tessera-compile
--emit=tsr writes (the rest of the compile is the same with or without a
budget).

Usage: bench/remat.py [--build DIR] [--out DIR] [--steps N] [--layers N]
                      [--d-model N] [--heads N] [--seq N] [--batch N]
                      [--host-bandwidth RATE] [--no-solver]
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

ROOT = pathlib.Path(__file__).resolve().parent.parent
TORCH_PYTHON = "/usr/bin/python3"
FRACTIONS = (0.9, 0.75, 0.6, 0.5, 0.4, 0.35)


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"error: {' '.join(map(str, cmd))} exited "
                         f"{done.returncode}")
    return done.stdout + done.stderr


def make_gpt(out, layers, d_model, heads, seq, vocab):
    run([TORCH_PYTHON, ROOT / "python/tessera_examples/make_torch_gpt.py",
         "--out", out, "--layers", str(layers), "--d-model", str(d_model),
         "--heads", str(heads), "--seq", str(seq), "--vocab", str(vocab)])
    return os.path.join(out, "torch_gpt.onnx")


def compile_step(bin_dir, model, batch, art, flags):
    """--report's figures: total, arguments+results, recomputed ops/ms."""
    report = run([os.path.join(bin_dir, "tessera-compile"), model,
                  "--mode=train", "--loss=cross_entropy", "--logits=logits",
                  f"--batch-size={batch}", "--optimizer=adam", "--lr=1e-3",
                  "--report", "-o", art, *flags])
    total = int(re.search(r"total\s+(\d+)", report).group(1))
    peak = int(re.search(r"peak activations\s+(\d+)", report).group(1))
    recomputed = re.search(r"(\d+) ops recomputed, [0-9.]+ GFLOP, "
                           r"([0-9.]+) ms", report)
    offload = re.search(r"offload: (\d+) saved activations, (\d+) bytes.*"
                        r"copies ([0-9.]+) ms, ([0-9.]+) ms of them", report)
    return {"total": total, "caller": total - peak,
            "ops": int(recomputed.group(1)) if recomputed else 0,
            "ms": float(recomputed.group(2)) if recomputed else 0.0,
            "offloaded": int(offload.group(1)) if offload else 0,
            "offloaded_bytes": int(offload.group(2)) if offload else 0,
            # The optimizer's update and state moved to the host.
            "host_update": "optimizer on the host (ZeRO-Offload)" in report,
            "exposed_ms": float(offload.group(4)) if offload else 0.0}


def train(bin_dir, art, data, steps, log, flags=()):
    """The allocator's peak, the median step seconds, and the runtime's
    offload figures per step: copy time, time waited (ms)."""
    out = run([os.path.join(bin_dir, "tessera-run"), art, "--train", "--data",
               data, "--steps", str(steps), "--threads", "1", "--log-json",
               log, *flags])
    measured = int(re.search(r"peak step memory: (\d+) bytes", out).group(1))
    moved = re.search(r"copies ([0-9.]+) ms a step, waited ([0-9.]+) ms", out)
    # With the optimizer on the host: its copies, none of them overlapped.
    update = re.search(r"optimizer on the host: .* a step, ([0-9.]+) ms", out)
    copy_ms = float(moved.group(1)) if moved else 0.0
    waited_ms = float(moved.group(2)) if moved else 0.0
    if update:
        copy_ms += float(update.group(1))
        waited_ms += float(update.group(1))
    with open(log) as f:
        records = [json.loads(line) for line in f]
    return (measured, statistics.median(r["seconds"] for r in records[2:]),
            copy_ms, waited_ms)


def pareto_svg(points, path):
    """Step time (x) against footprint (y), ratios to no remat."""
    w, h, pad = 560, 360, 50
    xs = [p[1] for p in points]
    ys = [p[2] for p in points]
    x0, x1 = min(xs + [1.0]) - 0.05, max(xs) + 0.05
    y0, y1 = 0.0, max(ys + [1.0]) + 0.05

    def sx(x):
        return pad + (x - x0) / (x1 - x0) * (w - 2 * pad)

    def sy(y):
        return h - pad - (y - y0) / (y1 - y0) * (h - 2 * pad)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" '
             f'height="{h}" font-family="sans-serif" font-size="11">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" '
             'stroke="black"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" '
             'stroke="black"/>',
             f'<text x="{w / 2}" y="{h - 12}" text-anchor="middle">step time '
             '(of no rematerialization)</text>',
             f'<text x="14" y="{h / 2}" transform="rotate(-90 14 {h / 2})" '
             'text-anchor="middle">footprint (of no rematerialization)</text>']
    for v in (x0, (x0 + x1) / 2, x1):
        parts.append(f'<text x="{sx(v)}" y="{h - pad + 14}" '
                     f'text-anchor="middle">{v:.2f}</text>')
    for v in (y0, (y0 + y1) / 2, y1):
        parts.append(f'<text x="{pad - 6}" y="{sy(v) + 4}" '
                     f'text-anchor="end">{v:.2f}</text>')
    budget = sorted((p for p in points if p[0].startswith("budget")),
                    key=lambda p: p[2])
    if budget:
        parts.append('<polyline fill="none" stroke="steelblue" points="' +
                     " ".join(f"{sx(p[1])},{sy(p[2])}" for p in budget) +
                     '"/>')
    for name, x, y in points:
        colour = "steelblue" if name.startswith("budget") else "darkred"
        parts.append(f'<circle cx="{sx(x)}" cy="{sy(y)}" r="4" '
                     f'fill="{colour}"/>')
        parts.append(f'<text x="{sx(x) + 6}" y="{sy(y) - 6}">{name}</text>')
    parts.append("</svg>")
    pathlib.Path(path).write_text("\n".join(parts) + "\n")


def solver_time(bin_dir, work):
    model = make_gpt(os.path.join(work, "gpt2s"), 12, 768, 12, 1024, 50257)
    step = os.path.join(work, "gpt2s.mlir")
    with open(step, "w") as f:
        f.write(run([os.path.join(bin_dir, "tessera-compile"), model,
                     "--mode=train", "--loss=cross_entropy",
                     "--logits=logits", "--batch-size=8", "--optimizer=adam",
                     "--emit=tsr", "--fold-layers=false"]))
    # The footprint without rematerialization: what the step's arguments
    # and results hold (parsed from the signature) plus the predicted peak.
    text = pathlib.Path(step).read_text()
    signature = text[text.index("func.func @main"):text.index("{\n",
                                                              text.index("func.func @main"))]
    caller = 0
    for dims, elem in re.findall(r"tensor<([0-9x]*)x?(f32|i64|i32)>", signature):
        count = 1
        for d in filter(None, dims.split("x")):
            count *= int(d)
        caller += count * (8 if elem == "i64" else 4)
    peak = int(re.search(r"predicted peak (\d+) bytes",
                         run([os.path.join(bin_dir, "tessera-opt"), step,
                              "--tsr-print-peak-memory", "-o",
                              os.devnull])).group(1))
    nodes = re.search(r"(\d+) nodes", run(
        [os.path.join(bin_dir, "tessera-opt"), step,
         "--tsr-print-remat-solvers=fractions= milp=false", "-o",
         os.devnull])).group(1)
    rows = []
    planned = os.path.join(work, "gpt2s-planned.mlir")
    for fraction in (0.9, 0.7, 0.55, 0.33):
        budget = int(fraction * (caller + peak))
        seconds = []
        for _ in range(3):
            out = subprocess.run(
                [os.path.join(bin_dir, "tessera-opt"), step,
                 f"--tsr-remat-plan=policy=auto budget={budget}",
                 "-mlir-timing", "-o", planned],
                capture_output=True, text=True)
            seconds.append(float(re.search(r"([0-9.]+) \(\s*[0-9.]+%\)\s+"
                                           r"TsrRematPlan", out.stderr).group(1)))
            fits = out.returncode == 0
        marks = pathlib.Path(planned).read_text() if fits else ""
        rows.append((fraction, budget, fits, statistics.median(seconds),
                     marks.count('tsr.remat = "recompute"'),
                     marks.count('tsr.remat = "offload"')))
    return int(nodes), caller + peak, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--out", help="where the Pareto plot goes (default: the "
                    "work directory)")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--host-bandwidth", default="8GB/s",
                    help="the host link the budgets' offload plans by and "
                    "tessera-run emulates (default 8GB/s: slower than this "
                    "machine's memcpy, so that the copies take the link's "
                    "time)")
    ap.add_argument("--no-solver", action="store_true",
                    help="skip the GPT-2-small solver timing")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    work = tempfile.mkdtemp(prefix="tessera-bench-remat-")
    out_dir = args.out or work
    os.makedirs(out_dir, exist_ok=True)

    lm = os.path.join(work, "lm")
    run([sys.executable, ROOT / "python/tessera_examples/make_charlm.py",
         "--out", lm, "--seq", str(args.seq), "--batch", str(args.batch),
         "--no-verify"])
    data = os.path.join(lm, "tokens.bin")
    model = make_gpt(os.path.join(work, "gpt"), args.layers, args.d_model,
                     args.heads, args.seq, 96)

    link = f"--host-bandwidth={args.host_bandwidth}"
    settings = [("none", ["--remat=none"]), ("selective", ["--remat=selective"]),
                ("full", ["--remat=full"]),
                ("optimizer on the host", ["--offload-optimizer"])]
    results = {}
    for name, flags in settings:
        art = os.path.join(work, name)
        results[name] = compile_step(bin_dir, model, args.batch, art, flags)
        results[name].update(zip(("measured", "seconds", "copy_ms",
                                  "waited_ms"), train(
            bin_dir, art, data, args.steps, art + ".json", [link])))
    needs = results["none"]["total"]
    for fraction in FRACTIONS:
        name = f"budget {fraction:.2f}"
        budget = int(fraction * needs)
        art = os.path.join(work, f"budget{fraction}")
        try:
            results[name] = compile_step(bin_dir, model, args.batch, art,
                                         [f"--memory-budget={budget}", link])
        except SystemExit:
            print(f"{name}: {budget} bytes refused (below the smallest "
                  f"footprint)")
            continue
        results[name]["budget"] = budget
        results[name].update(zip(("measured", "seconds", "copy_ms",
                                  "waited_ms"), train(
            bin_dir, art, data, args.steps, art + ".json", [link])))

    none, full = results["none"], results["full"]
    print(f"GPT exported by PyTorch: {args.layers} layers, d_model "
          f"{args.d_model}, {args.heads} heads, sequence {args.seq}, batch "
          f"{args.batch}; Adam; {args.steps} steps, median step time; "
          f"offload planned for and run at {args.host_bandwidth}")
    print("| setting | budget | predicted footprint | measured footprint | "
          "fits | recomputed | cost model ms | offloaded | copies ms | "
          "waited ms | hidden | step ms | of none | of full |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
          "---:|")
    points = []
    for name, r in results.items():
        measured = r["caller"] + r["measured"]
        budget = r.get("budget")
        fits = "" if budget is None else ("yes" if measured <= budget else "NO")
        hidden = (f"{max(0.0, 1 - r['waited_ms'] / r['copy_ms']):.0%}"
                  if r["copy_ms"] else "")
        offloaded = (f"{r['offloaded']} ({r['offloaded_bytes'] >> 20} MiB)"
                     if r["offloaded"] else "")
        if r["host_update"]:
            offloaded = ", ".join(filter(None, (offloaded, "optimizer")))
        copies = (f"{r['copy_ms']:.1f} | {r['waited_ms']:.1f}"
                  if r["copy_ms"] else " | ")
        print(f"| {name} | {budget or ''} | {r['total']} | {measured} | "
              f"{fits} | {r['ops']} | {r['ms']:.3f} | {offloaded} | {copies} "
              f"| {hidden} | {1e3 * r['seconds']:.1f} | "
              f"{r['seconds'] / none['seconds']:.2f} "
              f"| {r['seconds'] / full['seconds']:.2f} |")
        points.append((name, r["seconds"] / none["seconds"],
                       measured / (none["caller"] + none["measured"])))
    svg = os.path.join(out_dir, "remat_pareto.svg")
    pareto_svg(points, svg)
    print(f"Pareto plot: {svg}")

    if not args.no_solver:
        nodes, footprint, rows = solver_time(bin_dir, work)
        print(f"\ntsr-remat-plan on a GPT-2-small-shaped step ({nodes} ops, "
              f"footprint {footprint} bytes without rematerialization), "
              f"median of 3")
        print("| budget | bytes | fits | recomputed ops | offloaded values | "
              "pass seconds |")
        print("|---:|---:|---|---:|---:|---:|")
        for fraction, budget, fits, seconds, recomputed, offloaded in rows:
            print(f"| {fraction:.2f} | {budget} | {'yes' if fits else 'refused'} "
                  f"| {recomputed} | {offloaded} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
