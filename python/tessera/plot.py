"""Loss curves of training runs, drawn as SVG.

    PYTHONPATH=python python -m tessera.plot RUN.jsonl [RUN2.jsonl ...]
        -o loss.svg [--x step|samples|tokens|time] [--metric NAME]
        [--labels A,B,...] [--title T] [--log-y]

Each RUN.jsonl is a log that ``tessera-run --train --log-json`` writes: one
JSON object per step, ``{"step": 1, "loss": 4.57498, "seconds": 0.0016,
"tokens_per_second": 80618.0, "metrics": {"lr": 0.003, "grad_norm": 5.93}}``
(``samples_per_second`` for ``.npz`` data). Every file becomes one curve
with its own colour and legend entry (the file's name without its suffix,
or ``--labels``).

The y axis is ``--metric``: ``loss`` (default), another number of the
record (``seconds``, ``loss_scale``) or a scalar of its ``metrics`` (``lr``,
``grad_norm``). A null value (a non-finite loss) is left out. The x axis is
the step, the samples or tokens trained through the step (step times the
items of one step, ``*_per_second`` times ``seconds``), or the time: the
step times of the logged steps summed (setup, logging and checkpoints left
out).

A log of a run with ``--eval-data`` also holds evaluation records,
``{"step": 200, "eval_loss": 2.31, "eval_batches": 47, ...}``. With the
metric ``loss`` each such log adds a second curve, its validation loss
(legend "NAME (validation)"), at the x of its step; ``--metric
eval_loss`` draws that curve alone. Other metrics skip them.

The output is SVG only (no plotting library is needed); other suffixes are
refused. Errors are one line on stderr naming the file and, where there is
one, the line (``run.jsonl:3: not JSON (Expecting value at column 1)``),
and exit status 1.

``line_chart`` is the SVG writer itself, also used by the benchmarks.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
from dataclasses import dataclass
from xml.sax.saxutils import escape

PALETTE = ("black", "steelblue", "darkred", "darkgreen", "darkorange",
           "olive", "purple", "gray")
WIDTH, HEIGHT = 640, 380
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 32, 48
# The width of a character of the 11 px sans-serif font, for the legend box.
CHAR_WIDTH = 6.5

X_AXES = {"step": "step", "samples": "samples", "tokens": "tokens",
          "time": "time (s, summed step times)"}


class PlotError(Exception):
    """Input that cannot be plotted; the message names the file and line."""


@dataclass
class Scale:
    """A linear or logarithmic axis from its first tick to its last."""
    ticks: list[float]
    log: bool

    def fraction(self, value: float) -> float:
        """Where `value` lies on the axis: 0 at the first tick, 1 at the
        last."""
        f = math.log10 if self.log else float
        lo, hi = f(self.ticks[0]), f(self.ticks[-1])
        return (f(value) - lo) / (hi - lo)


def linear_ticks(lo: float, hi: float) -> list[float]:
    """Ticks 1, 2 or 5 times a power of ten apart (four to eight of
    them), from one at or below `lo` to one at or above `hi` > `lo`."""
    wanted = (hi - lo) / 5
    power = 10.0 ** math.floor(math.log10(wanted))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= wanted)
    # The slack keeps a value that is a tick but for rounding off the next.
    first = math.floor(lo / step + 1e-9)
    last = math.ceil(hi / step - 1e-9)
    return [k * step for k in range(first, last + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks around [lo, hi] (0 < lo < hi): every integer times a power
    of ten within one decade, 1, 2 and 5 times one over two, powers of ten
    over more."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    b = max(b, a + 1)
    mantissas = {1: range(1, 10), 2: (1, 2, 5)}.get(b - a, (1,))
    candidates = [m * 10.0 ** e for e in range(a, b) for m in mantissas]
    candidates.append(10.0 ** b)
    first = max((i for i, c in enumerate(candidates) if c <= lo), default=0)
    last = min((i for i, c in enumerate(candidates) if c >= hi),
               default=len(candidates) - 1)
    return candidates[first:last + 1]


def scale(values: list[float], log: bool) -> Scale:
    """The axis of `values`; one value alone gets room either side."""
    lo, hi = min(values), max(values)
    if lo == hi:
        lo, hi = (lo / 2, hi * 2) if log else (lo - (abs(lo) / 2 or 1),
                                                 hi + (abs(hi) / 2 or 1))
    return Scale(log_ticks(lo, hi) if log else linear_ticks(lo, hi), log)


def line_chart(path, curves, *, x_label: str, y_label: str,
               title: str | None = None, log_x: bool = False,
               log_y: bool = False) -> None:
    """Writes an SVG chart of `curves`, a list of (label, xs, ys), to
    `path`: one polyline per curve in the colours of PALETTE, axes with
    ticks and grid lines, a legend in the top right corner. Values on a log
    axis must be positive. The ticks are the groups of class x-axis and
    y-axis, the curves polylines of class curve, the legend the group of
    class legend."""
    sx = scale([x for _, xs, _ in curves for x in xs], log_x)
    sy = scale([y for _, _, ys in curves for y in ys], log_y)
    right, bottom = WIDTH - RIGHT, HEIGHT - BOTTOM

    def px(x):
        return LEFT + sx.fraction(x) * (right - LEFT)

    def py(y):
        return bottom - sy.fraction(y) * (bottom - TOP)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
             f'height="{HEIGHT}" font-family="sans-serif" font-size="11">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    if title:
        parts.append(f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" '
                     f'font-size="13">{escape(title)}</text>')
    parts.append('<g class="x-axis">')
    for v in sx.ticks:
        x = px(v)
        parts.append(f'<line x1="{x:.2f}" y1="{TOP}" x2="{x:.2f}" '
                     f'y2="{bottom + 4}" stroke="#ddd"/>')
        parts.append(f'<text x="{x:.2f}" y="{bottom + 16}" '
                     f'text-anchor="middle">{v:g}</text>')
    parts.append('</g>')
    parts.append('<g class="y-axis">')
    for v in sy.ticks:
        y = py(v)
        parts.append(f'<line x1="{LEFT - 4}" y1="{y:.2f}" x2="{right}" '
                     f'y2="{y:.2f}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 7}" y="{y:.2f}" text-anchor="end" '
                     f'dominant-baseline="middle">{v:g}</text>')
    parts.append('</g>')
    parts.append(f'<text x="{(LEFT + right) / 2}" y="{HEIGHT - 12}" '
                 f'text-anchor="middle">{escape(x_label)}</text>')
    middle = (TOP + bottom) / 2
    parts.append(f'<text x="14" y="{middle}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {middle})">{escape(y_label)}'
                 '</text>')
    parts.append(f'<rect x="{LEFT}" y="{TOP}" width="{right - LEFT}" '
                 f'height="{bottom - TOP}" fill="none" stroke="black"/>')
    for k, (label, xs, ys) in enumerate(curves):
        points = " ".join(f"{px(x):.2f},{py(y):.2f}" for x, y in zip(xs, ys))
        parts.append(f'<polyline class="curve" fill="none" '
                     f'stroke="{PALETTE[k % len(PALETTE)]}" '
                     f'points="{points}"><title>{escape(label)}</title>'
                     '</polyline>')
    width = 36 + CHAR_WIDTH * max(len(label) for label, _, _ in curves)
    x0 = right - 8 - width
    parts.append('<g class="legend">')
    parts.append(f'<rect x="{x0:.2f}" y="{TOP + 8}" width="{width:.2f}" '
                 f'height="{16 * len(curves) + 8}" fill="white" '
                 'fill-opacity="0.85" stroke="#ddd"/>')
    for k, (label, _, _) in enumerate(curves):
        colour = PALETTE[k % len(PALETTE)]
        y = TOP + 20 + 16 * k
        parts.append(f'<line x1="{x0 + 6:.2f}" y1="{y}" x2="{x0 + 26:.2f}" '
                     f'y2="{y}" stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{x0 + 30:.2f}" y="{y}" '
                     f'dominant-baseline="middle" fill="{colour}">'
                     f'{escape(label)}</text>')
    parts.append('</g>')
    parts.append('</svg>')
    pathlib.Path(path).write_text("\n".join(parts) + "\n")


def read_log(path: str) -> list[tuple[int, dict]]:
    """The records of a --log-json file with their line numbers."""
    try:
        data = pathlib.Path(path).read_bytes()
    except OSError as e:
        raise PlotError(f"{path}: cannot read: {e.strerror}") from None
    records = []
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise PlotError(f"{path}:{n}: not JSON ({e.msg} at column "
                            f"{e.colno})") from None
        except UnicodeDecodeError:
            raise PlotError(f"{path}:{n}: not UTF-8 text") from None
        if not isinstance(record, dict):
            raise PlotError(f"{path}:{n}: not a JSON object")
        records.append((n, record))
    if not records:
        raise PlotError(f"{path}: empty (no records)")
    return records


def field(record: dict, name: str, where: str,
          nullable: bool = False) -> float | None:
    """The number `name` of a record, top-level or one of its metrics;
    None for null where `nullable`."""
    metrics = record.get("metrics")
    metrics = metrics if isinstance(metrics, dict) else {}
    if name in record:
        value = record[name]
    elif name in metrics:
        value = metrics[name]
    else:
        keys = [k for k in record if k != "metrics"] + list(metrics)
        raise PlotError(f"{where}: the record has no '{name}' (it has "
                        f"{', '.join(keys)})")
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlotError(f"{where}: '{name}' is {json.dumps(value)}, not a "
                        "number")
    return value


def curves(path: str, x_axis: str, metric: str,
           log_y: bool) -> list[tuple[str, list[float], list[float]]]:
    """The curves of one log as (kind, xs, ys): its steps' `metric`
    ("steps"), and with metric loss its evaluations ("validation"), or
    with metric eval_loss those alone. Null values are left out."""
    points: dict[str, tuple[list[float], list[float]]] = {
        "steps": ([], []), "validation": ([], [])}
    elapsed, items = 0.0, None
    for n, record in read_log(path):
        where = f"{path}:{n}"
        step = field(record, "step", where)
        if "eval_loss" in record:
            if metric not in ("loss", "eval_loss"):
                continue
            kind = "validation"
            y = field(record, "eval_loss", where, nullable=True)
            # At the x of its step: the time and items trained so far.
            if x_axis not in ("step", "time") and items is None:
                raise PlotError(f"{where}: an evaluation before any step "
                                f"record, so no {x_axis} to draw it at")
            x = (step if x_axis == "step" else elapsed if x_axis == "time"
                 else step * items)
        else:
            kind = "steps"
            if x_axis != "step":
                seconds = field(record, "seconds", where)
                elapsed += seconds
                if x_axis != "time":
                    items = round(
                        field(record, f"{x_axis}_per_second", where) * seconds)
            x = (step if x_axis == "step" else elapsed if x_axis == "time"
                 else step * items)
            if metric == "eval_loss":
                continue
            y = field(record, metric, where, nullable=True)
        if y is None or not math.isfinite(y):
            continue
        if log_y and y <= 0:
            raise PlotError(f"{where}: {metric} {y:g} cannot be drawn on a "
                            "log scale (--log-y)")
        points[kind][0].append(x)
        points[kind][1].append(y)
    found = [(kind, xs, ys) for kind, (xs, ys) in points.items() if ys]
    if not found:
        raise PlotError(f"{path}: no finite value of '{metric}'")
    return found


def plot(args: argparse.Namespace) -> None:
    """Writes the chart main's arguments ask for and says so."""
    if pathlib.Path(args.output).suffix.lower() != ".svg":
        raise PlotError(f"-o {args.output}: only SVG output is supported; "
                        "name the file FILE.svg")
    labels = (args.labels.split(",") if args.labels is not None
              else [pathlib.Path(p).stem for p in args.logs])
    if len(labels) != len(args.logs):
        raise PlotError(f"--labels names {len(labels)} curves, but "
                        f"{len(args.logs)} logs are given")
    drawn = []
    for label, path in zip(labels, args.logs):
        found = curves(path, args.x, args.metric, args.log_y)
        for kind, xs, ys in found:
            drawn.append((label + (" (validation)" if kind == "validation"
                                   and len(found) > 1 else ""), xs, ys))
    y_label = args.metric + (" (log scale)" if args.log_y else "")
    try:
        line_chart(args.output, drawn, x_label=X_AXES[args.x],
                   y_label=y_label, title=args.title, log_y=args.log_y)
    except OSError as e:
        raise PlotError(f"{args.output}: cannot write: "
                        f"{e.strerror}") from None
    counts = ", ".join(f"{label} {len(xs)} points" for label, xs, _ in drawn)
    print(f"wrote {args.output}: {args.metric} against {args.x}; {counts}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tessera.plot",
        description="Draw the loss curves of tessera-run --train --log-json "
        "logs as an SVG chart (SVG only: no other output format).")
    ap.add_argument("logs", nargs="+", metavar="RUN.jsonl",
                    help="a --log-json file; one curve each")
    ap.add_argument("-o", "--output", required=True, metavar="FILE.svg",
                    help="the SVG file to write")
    ap.add_argument("--x", choices=X_AXES, default="step",
                    help="the x axis: step (default), samples or tokens "
                    "trained, or time (the summed step times)")
    ap.add_argument("--metric", default="loss",
                    help="the y axis: loss (default), another number of the "
                    "record or one of its metrics (lr, grad_norm)")
    ap.add_argument("--labels", help="the legend's names of the curves, "
                    "comma-separated (default: the file names without "
                    "their suffix)")
    ap.add_argument("--title", help="a title above the chart")
    ap.add_argument("--log-y", action="store_true",
                    help="a logarithmic y axis")
    args = ap.parse_args(argv)
    try:
        plot(args)
    except PlotError as e:
        print(f"{ap.prog}: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
