#!/usr/bin/env python3
"""tessera.plot (`python -m tessera.plot`) on real `--log-json` logs.

Generates the character LM at its cheapest (1 layer, d_model 32, 2 heads,
seq 16, batch 8), compiles its Adam step and trains it 30 steps twice, data
in order (in_order.jsonl) and shuffled with seed 3 (shuffled.jsonl). Checks:

- each chart (linear y against the step, log y against the tokens, a log
  whose last loss is null) exits 0 and writes an SVG (read with
  xml.etree) that has one polyline per log, named by its legend entry in
  the polyline's colour, in order;
- the axes: the tick labels are numbers whose positions are a linear map
  of the value (log10 of it on a log axis) from the first tick to the
  last;
- every polyline point is its record's (x, loss) through that map, to
  0.02 px (coordinates are written to 0.01 px, so a point and each tick
  may be 0.005 px off), x being the step or step × 128 tokens; a null loss
  is left out;
- bad input (a missing file, an empty file, a line that is not JSON, a
  missing metric, a missing x field, a loss of 0 on a log axis, too few
  labels, a PNG output, a directory that does not exist) exits 1 with one
  line on stderr that names the file and line where there is one, no
  traceback and no output file.

Run: .venv/bin/python test/e2e/plot_test.py BUILD_DIR REPO_ROOT (it runs
the plotter with PYTHONPATH=REPO_ROOT/python).
"""

import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from checks import check, finish  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
STEPS = 30
TOKENS_PER_STEP = 8 * 16
TOLERANCE_PX = 0.02


def run(cmd, env=None):
    """Runs `cmd`; exits the test if it fails."""
    done = subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, env=env)
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"FAIL: {' '.join(map(str, cmd[:2]))} exited "
                         f"{done.returncode}")
    return done


def axis_map(group, coordinate, log, sign):
    """The value -> pixel map the tick labels of an axis group define, the
    pixel span of the ticks, and whether every tick lies on the map with
    the pixels going the way of `sign` (+1: right, -1: up) as values
    grow."""
    ticks = [(float(t.text), float(t.get(coordinate)))
             for t in group.iter(SVG + "text")]
    f = math.log10 if log else float
    (v0, p0), (v1, p1) = ticks[0], ticks[-1]

    def to_px(v):
        return p0 + (f(v) - f(v0)) / (f(v1) - f(v0)) * (p1 - p0)

    ok = (len(ticks) >= 2 and (p1 - p0) * sign > 0
          and all(abs(to_px(v) - p) <= TOLERANCE_PX for v, p in ticks))
    return to_px, sorted((p0, p1)), ok


def check_chart(svg, name, runs, x_of, log_y):
    """`runs`: (label, records) in legend order; x_of(record) is its x."""
    root = ET.parse(svg).getroot()
    groups = {g.get("class"): g for g in root.iter(SVG + "g")}
    to_x, x_span, x_ok = axis_map(groups["x-axis"], "x", False, 1)
    to_y, y_span, y_ok = axis_map(groups["y-axis"], "y", log_y, -1)
    check(x_ok and y_ok, f"{name}: the values of both axes grow rightwards "
          "and upwards, every tick on the linear map of the first and last")
    lines = [p for p in root.iter(SVG + "polyline")
             if p.get("class") == "curve"]
    legend = [(t.text, t.get("fill"))
              for t in groups["legend"].iter(SVG + "text")]
    check(legend == [(label, p.get("stroke"))
                     for (label, _), p in zip(runs, lines)]
          and len(lines) == len(runs)
          and [p.find(SVG + "title").text for p in lines]
          == [label for label, _ in runs],
          f"{name}: one polyline per log, the legend names "
          f"{[label for label, _ in runs]} in their colours")
    for (label, records), line in zip(runs, lines):
        points = [tuple(map(float, p.split(",")))
                  for p in line.get("points").split()]
        kept = [r for r in records if r["loss"] is not None]
        worst = max((max(abs(px - to_x(x_of(r))), abs(py - to_y(r["loss"])))
                     for (px, py), r in zip(points, kept)), default=math.inf)
        inside = all(x_span[0] <= px <= x_span[1] and
                     y_span[0] <= py <= y_span[1] for px, py in points)
        check(len(points) == len(kept) and worst <= TOLERANCE_PX and inside,
              f"{name}: the {len(points)} points of {label}, between the "
              f"first and last ticks, are its {len(kept)} logged losses "
              f"through the axes (largest error {worst:.4f} px, at most "
              f"{TOLERANCE_PX})")


def check_refused(done, message, out):
    """`done` exited 1 with the one line `message` and wrote no `out`."""
    ok = (done.returncode == 1 and not out.exists() and
          done.stderr == f"python -m tessera.plot: error: {message}\n")
    check(ok, f"refused with exit status 1 and one line: {message}" +
          ("" if ok else f" (got {done.returncode}: {done.stderr!r})"))


def main() -> int:
    if len(sys.argv) != 3:
        raise SystemExit("usage: plot_test.py BUILD_DIR REPO_ROOT")
    build, repo = (pathlib.Path(a).resolve() for a in sys.argv[1:])
    bin_dir = build / "bin"
    env = {**os.environ, "PYTHONPATH": str(repo / "python")}
    plot = [sys.executable, "-m", "tessera.plot"]
    with tempfile.TemporaryDirectory(prefix="tessera-plot-") as tmp:
        work = pathlib.Path(tmp)
        run([sys.executable, repo / "python/tessera_examples/make_charlm.py",
             "--out", work / "lm", "--seq", 16, "--batch", 8, "--layers", 1,
             "--d-model", 32, "--heads", 2, "--no-verify"])
        run([bin_dir / "tessera-compile", work / "lm/charlm.onnx",
             "--mode=train", "--loss=cross_entropy", "--logits=logits",
             "--labels=targets", "--batch-size=8", "--optimizer=adam",
             "--lr=3e-3", "-o", work / "art"])
        runs = []
        for label, flags in (("in_order", []),
                             ("shuffled", ["--shuffle", "--seed", 3])):
            log = work / f"{label}.jsonl"
            run([bin_dir / "tessera-run", work / "art", "--train", "--data",
                 work / "lm/tokens.bin", "--steps", STEPS, "--threads", 1,
                 "--log-json", log, *flags])
            runs.append((label, [json.loads(line)
                                 for line in log.read_text().splitlines()]))
        a, b = (work / f"{label}.jsonl" for label, _ in runs)

        done = run(plot + [a, b, "-o", work / "loss.svg"], env)
        wrote = (f"wrote {work}/loss.svg: loss against step; in_order "
                 f"{STEPS} points, shuffled {STEPS} points\n")
        check(done.stdout == wrote, f"it says {wrote.strip()!r}")
        check_chart(work / "loss.svg", "loss against step", runs,
                    lambda r: r["step"], False)

        run(plot + [a, b, "-o", work / "tokens.svg", "--x", "tokens",
                    "--log-y", "--labels", "one,two"], env)
        check_chart(work / "tokens.svg", "log loss against tokens",
                    [("one", runs[0][1]), ("two", runs[1][1])],
                    lambda r: r["step"] * TOKENS_PER_STEP, True)

        # tessera-run logs a non-finite loss as null.
        records = [dict(r) for r in runs[0][1]]
        records[-1]["loss"] = None
        diverged = work / "diverged.jsonl"
        diverged.write_text("".join(json.dumps(r) + "\n" for r in records))
        done = run(plot + [diverged, "-o", work / "diverged.svg"], env)
        wrote = (f"wrote {work}/diverged.svg: loss against step; diverged "
                 f"{STEPS - 1} points\n")
        check(done.stdout == wrote, f"it says {wrote.strip()!r}")
        check_chart(work / "diverged.svg", "a null loss",
                    [("diverged", records)], lambda r: r["step"], False)

        # A log with evaluations (--eval-data) adds its validation curve.
        train = runs[0][1]
        evals = [{"step": 10, "eval_loss": 3.5, "eval_batches": 4,
                  "eval_seconds": 0.01},
                 {"step": STEPS, "eval_loss": 3.25, "eval_batches": 4,
                  "eval_seconds": 0.01}]
        evaluated = work / "evaluated.jsonl"
        evaluated.write_text("".join(
            json.dumps(r) + "\n"
            for r in train[:10] + evals[:1] + train[10:] + evals[1:]))
        done = run(plot + [evaluated, "-o", work / "evaluated.svg", "--x",
                           "tokens"], env)
        wrote = (f"wrote {work}/evaluated.svg: loss against tokens; "
                 f"evaluated {STEPS} points, evaluated (validation) 2 "
                 "points\n")
        check(done.stdout == wrote, f"it says {wrote.strip()!r}")
        check_chart(work / "evaluated.svg", "loss and validation loss",
                    [("evaluated", train),
                     ("evaluated (validation)",
                      [{"step": e["step"], "loss": e["eval_loss"]}
                       for e in evals])],
                    lambda r: r["step"] * TOKENS_PER_STEP, False)

        lines = a.read_text().splitlines(keepends=True)
        (work / "empty.jsonl").write_text("")
        (work / "cut.jsonl").write_text("".join(lines[:4]) + lines[4][:17])
        zero = json.loads(lines[2]) | {"loss": 0}
        (work / "zero.jsonl").write_text(
            "".join(lines[:2]) + json.dumps(zero) + "\n")
        svg, png = work / "refused.svg", work / "loss.png"
        nowhere = work / "nowhere/loss.svg"
        for args, out, message in (
                ([work / "missing.jsonl"], svg,
                 f"{work}/missing.jsonl: cannot read: No such file or "
                 "directory"),
                ([work / "empty.jsonl"], svg,
                 f"{work}/empty.jsonl: empty (no records)"),
                ([work / "cut.jsonl"], svg,
                 f"{work}/cut.jsonl:5: not JSON (Expecting value at column "
                 "18)"),
                ([a, "--metric", "accuracy"], svg,
                 f"{a}:1: the record has no 'accuracy' (it has step, loss, "
                 "seconds, tokens_per_second, page_faults, lr, grad_norm)"),
                ([a, "--x", "samples"], svg,
                 f"{a}:1: the record has no 'samples_per_second' (it has "
                 "step, loss, seconds, tokens_per_second, page_faults, lr, "
                 "grad_norm)"),
                ([work / "zero.jsonl", "--log-y"], svg,
                 f"{work}/zero.jsonl:3: loss 0 cannot be drawn on a log "
                 "scale (--log-y)"),
                ([a, b, "--labels", "one"], svg,
                 "--labels names 1 curves, but 2 logs are given"),
                ([a], png, f"-o {png}: only SVG output is supported; name "
                 "the file FILE.svg"),
                ([a], nowhere, f"{nowhere}: cannot write: No such file or "
                 "directory")):
            done = subprocess.run([str(c) for c in plot + args + ["-o", out]],
                                  capture_output=True, text=True, env=env)
            check_refused(done, message, out)
    return finish("plot_test.py")


if __name__ == "__main__":
    sys.exit(main())
