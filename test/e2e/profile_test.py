#!/usr/bin/env python3
"""tessera-run --profile's table adds up to the step; --trace agrees with it.

The model is the GPT of make_torch_gpt.py with GPT-2's vocabulary (50257)
and one small layer, batch 4 x 64 (the page-faults test's): its step is
dominated by the vocabulary-sized head, loss and their gradients, so the
table has large rows and small ones. Trained 6 steps on one thread with
--profile --trace --log-json; the profile covers steps 2-6. Checked:

- the table's step time is the mean of steps 2-6 as --log-json records them
  (within 1%: the table rounds to microseconds);
- the node rows sum to the step within 10% (the issue's bound): what no
  region covers (allocation, views, the runtime's work around the program)
  is at most a tenth of the step;
- the rows a user looks for are there: the head's MatMul forward and
  backward as OpenBLAS sgemm calls, the loss and its gradient, AdamW;
- the trace has one program event per profiled step, every region event
  lies inside one, and its time per kind is the table's (within 2%).

Usage: profile_test.py BUILD_DIR REPO_ROOT
Exits 1 on a failed check, 2 on a setup error. Needs Debian's python3-torch
(make_torch_gpt.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

from checks import make_vocab_gpt_step

VOCAB, SEQ, BATCH, STEPS = 50257, 64, 4, 6
PROFILED = STEPS - 1
ROW = re.compile(r"^\s+(-?[0-9.]+)\s+(-?[0-9.]+)%\s+(\d*)\s+(.*?)(?:\s{2,}(\S.*))?$")


def fail(msg: str, code: int = 1) -> None:
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(code)


def run(cmd, **kw):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if done.returncode != 0:
        fail(f"{' '.join(map(str, cmd))} exited {done.returncode}:\n"
             f"{done.stdout}{done.stderr}")
    return done


def parse_table(stdout: str):
    """The profile's header time, node rows, remainder and by-kind sums."""
    lines = stdout.splitlines()
    starts = [i for i, l in enumerate(lines) if l.startswith("profile of ")]
    if len(starts) != 1:
        fail(f"expected one profile table, found {len(starts)}:\n{stdout}")
    header = lines[starts[0]]
    m = re.match(r"profile of steps 2-6: ([0-9.]+) ms per step, by model node$", header)
    if not m:
        fail(f"unexpected profile header: {header!r}")
    rows, rest, step = [], None, None
    for line in lines[starts[0] + 2:]:
        if line.startswith("  by kind: "):
            kinds = {k: float(ms) for k, ms in
                     re.findall(r"(\w+) ([0-9.]+) ms \([0-9.]+%\)", line)}
            if not kinds:
                fail(f"unparsable by-kind line (expected ms): {line!r}")
            break
        r = ROW.match(line)
        if not r:
            fail(f"unparsable profile row: {line!r}")
        ms, node, what = float(r.group(1)), r.group(4).strip(), r.group(5) or ""
        if node.startswith("(between regions"):
            rest = ms
        elif node == "step":
            step = ms
        else:
            rows.append((node, ms, what))
    else:
        fail("the profile table has no by-kind line")
    if rest is None or step is None:
        fail("the profile table lacks its remainder or step row")
    return float(m.group(1)), rows, rest, step, kinds


def main() -> None:
    if len(sys.argv) != 3:
        fail("usage: profile_test.py BUILD_DIR REPO_ROOT", 2)
    build, root = sys.argv[1], sys.argv[2]
    bindir = os.path.join(build, "bin")
    with tempfile.TemporaryDirectory(prefix="tessera-profile.") as work:
        art, data = make_vocab_gpt_step(root, bindir, work, VOCAB, SEQ, BATCH, STEPS)
        log, trace = os.path.join(work, "log.jsonl"), os.path.join(work, "trace.json")
        done = run([os.path.join(bindir, "tessera-run"), art, "--train", "--data", data,
                    "--steps", STEPS, "--threads", 1, "--profile", "--trace", trace,
                    "--log-json", log])
        with open(log) as f:
            seconds = [json.loads(line)["seconds"] for line in f if line.strip()]
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
    print(done.stdout)
    header, rows, rest, step, kinds = parse_table(done.stdout)

    if len(seconds) != STEPS:
        fail(f"{len(seconds)} steps logged, expected {STEPS}")
    mean_ms = 1e3 * sum(seconds[1:]) / PROFILED
    if abs(header - mean_ms) > 0.01 * mean_ms or abs(step - header) > 0.001:
        fail(f"the table's step ({header} ms, row {step}) is not the mean of steps 2-6 "
             f"({mean_ms:.3f} ms)")
    covered = sum(ms for _, ms, _ in rows)
    if abs(covered + rest - step) > 0.002 * len(rows) + 0.002:
        fail(f"rows ({covered:.3f}) + remainder ({rest:.3f}) != step ({step:.3f})")
    print(f"node rows: {covered:.3f} of {step:.3f} ms ({covered / step:.1%}); "
          f"between regions {rest:.3f} ms")
    if abs(step - covered) > 0.10 * step:
        fail(f"the node rows cover {covered / step:.1%} of the step (at least 90%)")

    by_node = {node: (ms, what) for node, ms, what in rows}
    for node, kind in [("/head/MatMul", "gemm"), ("grad /head/MatMul", "gemm x2"),
                       ("loss", "kernel"), ("grad loss", "kernel"), ("adamw", "kernel")]:
        if node not in by_node:
            fail(f"no row for {node!r}: {sorted(by_node)}")
        if kind not in by_node[node][1]:
            fail(f"row {node!r} is {by_node[node][1]!r}, expected it to name {kind!r}")

    programs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["cat"] == "program")
    if len(programs) != PROFILED:
        fail(f"{len(programs)} program events in the trace, expected {PROFILED}")
    per_kind = defaultdict(float)
    for e in events:
        if e["cat"] == "program":
            continue
        per_kind[e["cat"]] += e["dur"] / 1e3 / PROFILED
        if not any(lo - 1 <= e["ts"] and e["ts"] + e["dur"] <= hi + 1 for lo, hi in programs):
            fail(f"trace event {e} lies outside every program call")
    for kind, ms in kinds.items():
        if abs(per_kind[kind] - ms) > 0.02 * ms + 0.002:
            fail(f"the trace's {kind} time ({per_kind[kind]:.3f} ms per step) is not "
                 f"the table's ({ms:.3f})")
    print("ok")


if __name__ == "__main__":
    main()
