#!/usr/bin/env python3
"""The tsr-level peak-memory prediction against the runtime allocator.

tessera-compile predicts, on tsr before lowering (lib/Analysis/PeakMemory),
the most bytes one call of the step holds in buffers it allocates itself,
and records it in the manifest (``predicted_peak_alloc_bytes`` of the
program).
tessera-run measures the same quantity with its allocator (``peak step
memory: N bytes (artifact allocations)``). For every bundled model, single
rank and under data parallelism with each ZeRO stage, the prediction must
be within 3% of the measurement (the architecture issue's bound: the
prediction drives remat and offload decisions, which need it close but not
exact, since it does not model every in-place choice of bufferization).

Models: the character LM (make_charlm.py, 1 layer, Adam) and the GPT block
of make_models.py (MSE on its output, SGD with momentum). Data parallelism
runs under mpirun on 2 ranks, ZeRO 0-3, and on 4 ranks with ZeRO 3, for the
LM (not for the GPT block, whose Reshape hard-codes the batch).

Not covered, because the bound does not hold yet: the CNN of
make_models.py, predicted 20% low (114028 against 142604 bytes at batch
4). Its peak is in the backward convolutions, whose im2col lowering holds
scratch buffers (columns, transposed operands) that the analysis does not
model, and CSE shares the forward and backward paddings of the same input,
which keeps a padded copy alive across the step.

Usage: peak_memory_test.py BUILD_DIR REPO_ROOT
Exits 1 on a failed check, 2 on a setup error.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

TOLERANCE = 0.03


def fail(msg: str, code: int = 1) -> None:
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(code)


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        fail(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done


def main() -> int:
    if len(sys.argv) != 3:
        fail("usage: peak_memory_test.py BUILD_DIR REPO_ROOT", 2)
    build, repo = sys.argv[1:]
    try:
        import numpy as np
    except ImportError as e:
        fail(f"{sys.executable} lacks {e.name} (run scripts/setup.sh)", 2)
    compiler = os.path.join(build, "bin", "tessera-compile")
    runner = os.path.join(build, "bin", "tessera-run")
    examples = os.path.join(repo, "python", "tessera_examples")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    # Only the mpirun ranks host OpenMPI, whose memory LeakSanitizer cannot
    # attribute (docs/testing.md).
    mpi_env = dict(env, ASAN_OPTIONS="detect_leaks=0")

    with tempfile.TemporaryDirectory(prefix="tessera-peak-") as work:
        run([sys.executable, os.path.join(examples, "make_charlm.py"), "--out", work,
             "--seq", "32", "--batch", "16", "--layers", "1", "--no-verify"])
        run([sys.executable, os.path.join(examples, "make_models.py"), "--out", work,
             "--no-verify"])
        rng = np.random.default_rng(0)
        datasets = {}
        for name, out in (("gpt_block", "y"),):
            import onnx
            model = onnx.load(os.path.join(work, f"{name}.onnx"))
            dims = lambda vi: [d.dim_value for d in vi.type.tensor_type.shape.dim]
            x_shape = dims(model.graph.input[0])
            y_shape = dims(model.graph.output[0])
            batch = x_shape[0]  # the GPT block hard-codes it in a Reshape
            x = rng.normal(size=[batch] + x_shape[1:]).astype(np.float32)
            t = rng.normal(size=[batch] + y_shape[1:]).astype(np.float32)
            path = os.path.join(work, f"{name}.npz")
            np.savez(path, x=x, labels=t)
            datasets[name] = (path, out, batch)

        cases = []
        lm = ["--loss=cross_entropy", "--logits=logits", "--batch-size=16",
              "--optimizer=adam", "--lr=3e-3"]
        lm_data = ["--data", os.path.join(work, "tokens.bin")]
        cases.append(("charlm", os.path.join(work, "charlm.onnx"), lm, lm_data, 1))
        for zero in range(4):
            cases.append((f"charlm dp=2 zero={zero}", os.path.join(work, "charlm.onnx"),
                          lm + ["--mesh", "dp=2", f"--zero={zero}"], lm_data, 2))
        cases.append(("charlm dp=4 zero=3", os.path.join(work, "charlm.onnx"),
                      lm + ["--mesh", "dp=4", "--zero=3"], lm_data, 4))
        for name, (path, out, batch) in datasets.items():
            flags = ["--loss=mse", f"--logits={out}", f"--batch-size={batch}",
                     "--optimizer=sgd", "--lr=0.01", "--momentum=0.9"]
            onnx_path = os.path.join(work, f"{name}.onnx")
            cases.append((name, onnx_path, flags, ["--data", path], 1))

        worst = 0.0
        for i, (label, model, flags, data, ranks) in enumerate(cases):
            art = os.path.join(work, f"art{i}")
            run([compiler, model, "--mode=train", *flags, "-o", art], env=env)
            with open(os.path.join(art, "manifest.json")) as f:
                predicted = json.load(f)["programs"][0]["predicted_peak_alloc_bytes"]
            cmd = [runner, art, "--train", *data, "--steps", "2", "--threads", "1"]
            if ranks > 1:
                cmd = ["mpirun", "-np", str(ranks), *cmd]
            out = run(cmd, env=mpi_env if ranks > 1 else env).stdout
            m = re.search(r"peak step memory: (\d+) bytes", out)
            if not m:
                fail(f"{label}: tessera-run printed no peak step memory:\n{out}")
            measured = int(m.group(1))
            error = abs(predicted - measured) / measured
            worst = max(worst, error)
            print(f"{label:24s} predicted {predicted:10d}  measured {measured:10d}  "
                  f"error {100 * error:5.2f}%")
            if error > TOLERANCE:
                fail(f"{label}: predicted {predicted} bytes, the allocator measured "
                     f"{measured} ({100 * error:.2f}% off, bound {100 * TOLERANCE:.0f}%)")
    print(f"PASS: {len(cases)} cases, worst error {100 * worst:.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
