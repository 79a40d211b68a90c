#!/usr/bin/env python3
"""After the first step, a training step faults in (almost) no new memory.

A step allocates the same buffers in the same order every time. glibc hands
blocks above its mmap threshold (32 MiB at most) back to the kernel on free,
so without the runtime's arena (runtime/lib/Memory.cpp: the first call of a
program is recorded, every block gets an offset in one arena, and later
calls are served from it) every step would fault its large buffers in
again, and the kernel zero-fills each page: the issue that started this
measured 31% of a GPT-2-shaped step there.

The model is the GPT of make_torch_gpt.py with GPT-2's vocabulary (50257)
and one small layer, batch 4 x 64: its logits and their gradient are
4*64*50257 float32 = 51 MB each, above the threshold, so each step without
reuse would fault at least 2 * 12566 pages. tessera-run --log-json records
each step's minor page faults (getrusage). Checked, single-threaded (no
OpenBLAS thread stacks):

- step 1 faults at least the logits' pages (the counter counts);
- every later step faults at most MAX_LATER (the "few hundred" bound of the
  performance issue): what remains is the runtime's and the data loader's
  own bookkeeping;
- the arena (tessera-run's "arena N bytes") holds the step's peak of live
  bytes ("peak step memory") and at most ARENA_SLACK more, plus the 2 MiB
  the runtime rounds a large arena up to (today the arena is within that
  rounding of the peak; the per-size block cache the arena replaced held
  60% more).

Usage: page_faults_test.py BUILD_DIR REPO_ROOT
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

from checks import make_vocab_gpt_step

VOCAB, SEQ, BATCH, STEPS = 50257, 64, 4, 6
LOGITS_PAGES = BATCH * SEQ * VOCAB * 4 // 4096
MAX_LATER = 300
ARENA_SLACK = 0.05


def fail(msg: str, code: int = 1) -> None:
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(code)


def run(cmd, **kw):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if done.returncode != 0:
        fail(f"{' '.join(map(str, cmd))} exited {done.returncode}:\n"
             f"{done.stdout}{done.stderr}")
    return done


def main() -> None:
    if len(sys.argv) != 3:
        fail("usage: page_faults_test.py BUILD_DIR REPO_ROOT", 2)
    build, root = sys.argv[1], sys.argv[2]
    bindir = os.path.join(build, "bin")
    with tempfile.TemporaryDirectory(prefix="tessera-page-faults.") as work:
        art, data = make_vocab_gpt_step(root, bindir, work, VOCAB, SEQ, BATCH, STEPS)
        log = os.path.join(work, "log.jsonl")
        out = run([os.path.join(bindir, "tessera-run"), art, "--train", "--data",
                   data, "--steps", STEPS, "--threads", 1, "--log-json", log]).stdout
        with open(log) as f:
            faults = [json.loads(line)["page_faults"] for line in f if line.strip()]
    if len(faults) != STEPS:
        fail(f"{len(faults)} steps logged, expected {STEPS}")
    print(f"minor page faults per step: {faults} (the logits: {LOGITS_PAGES} pages; "
          f"later steps at most {MAX_LATER})")
    if faults[0] < LOGITS_PAGES:
        fail(f"step 1 faulted {faults[0]} pages, fewer than its logits alone "
             f"({LOGITS_PAGES}): the counter does not count")
    for step, count in enumerate(faults[1:], start=2):
        if count > MAX_LATER:
            fail(f"step {step} faulted {count} pages (at most {MAX_LATER}): the step's "
                 "buffers are not reused")
    found = re.search(r"peak step memory: (\d+) bytes \(artifact allocations; "
                      r"arena (\d+) bytes\)", out)
    if not found:
        fail(f"tessera-run printed no peak step memory and arena line:\n{out}")
    peak, arena = int(found.group(1)), int(found.group(2))
    print(f"arena {arena} bytes for a peak of {peak} bytes ({arena / peak:.4f}x)")
    if arena < peak:
        fail(f"the arena ({arena} bytes) is smaller than the peak ({peak} bytes)")
    if arena > peak * (1 + ARENA_SLACK) + (2 << 20):
        fail(f"the arena ({arena} bytes) exceeds the peak ({peak} bytes) by more "
             f"than {ARENA_SLACK:.0%} and 2 MiB")
    print("ok")


if __name__ == "__main__":
    main()
