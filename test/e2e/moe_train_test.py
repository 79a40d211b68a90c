#!/usr/bin/env python3
"""The MoE GPT (python/tessera_examples/make_moe_gpt.py) trains, alone and
data-parallel.

Two 2-layer GPTs with 4 experts, top-2, in each block, in the two forms MoE
models arrive in ONNX: one com.microsoft MoE node per layer (dropless,
routing weights renormalized), and GShard's formulation in ordinary ONNX
ops (softmax, TopK, OneHot, CumSum, Einsum) with a capacity of 6 tokens per
expert and sequence, so that tokens are dropped. For each:

- step 1's loss equals onnxruntime's cross-entropy of the exported model on
  the same batch (rtol 1e-4: float32 through two different kernels, the
  tolerance of the other exported-model tests);
- every loss is finite and training makes progress: each later 20-step
  mean lies below the first;
- the contrib form also trains under `mpirun -np 2` with `--mesh dp=2` at
  ZeRO 0 and 3, and its 20 losses match the single-process run with the
  same global batch to 1e-5 relative. Routing is per sequence (a group is
  one sequence), so splitting the batch changes no routing decision.

Usage: moe_train_test.py BUILD_DIR REPO_ROOT
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile

from checks import check, finish

for key, value in (("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                   ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
                   ("OMPI_MCA_rmaps_base_oversubscribe", "1")):
    os.environ.setdefault(key, value)

BATCH, STEPS, WINDOW, DP_STEPS = 8, 60, 20, 20
ORT_RTOL, DP_RTOL = 1e-4, 1e-5
TORCH_PYTHON = "/usr/bin/python3"


def mpirun(ranks):
    """OpenMPI's own allocations are leaks to LeakSanitizer: ranks run
    without leak checking in an ASan build."""
    asan = ":".join(filter(None, (os.environ.get("ASAN_OPTIONS"),
                                  "detect_leaks=0")))
    return ["env", f"ASAN_OPTIONS={asan}", "mpirun", "-np", str(ranks)]


def run(cmd, what):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise RuntimeError(f"{what} exited {done.returncode}")
    return done


def losses(log):
    with open(log) as f:
        return [float(json.loads(line)["loss"]) for line in f]


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: moe_train_test.py BUILD_DIR REPO_ROOT", file=sys.stderr)
        return 2
    build, repo = sys.argv[1:]
    import numpy as np
    import onnxruntime as ort
    sys.path.insert(0, os.path.join(repo, "python", "tessera_examples"))
    import charlm_data

    bin_dir = os.path.join(build, "bin")
    make = os.path.join(repo, "python", "tessera_examples", "make_moe_gpt.py")
    with tempfile.TemporaryDirectory(prefix="tessera-moe-train-") as work:
        singles = {}
        for style, extra in (("contrib", ["--normalize"]),
                             ("gshard", ["--capacity", "6",
                                         "--batch", str(BATCH)])):
            out = os.path.join(work, style)
            run([TORCH_PYTHON, make, "--out", out, "--style", style,
                 "--experts", "4", "--top-k", "2", *extra], f"make_moe_gpt {style}")
            model = os.path.join(out, "moe_gpt.onnx")
            data = os.path.join(out, "tokens.bin")
            compile_cmd = [os.path.join(bin_dir, "tessera-compile"), model,
                           "--mode=train", "--loss=cross_entropy",
                           "--logits=logits", f"--batch-size={BATCH}",
                           "--optimizer=adam", "--lr=3e-3"]
            art = os.path.join(out, "art")
            run(compile_cmd + ["-o", art], f"tessera-compile {style}")
            log = os.path.join(out, "log.jsonl")
            run([os.path.join(bin_dir, "tessera-run"), art, "--train", "--data",
                 data, "--steps", str(STEPS), "--threads", "1", "--log-json",
                 log], f"tessera-run {style}")
            got = losses(log)
            singles[style] = got

            tokens = charlm_data.load_tokens(data)
            with open(os.path.join(out, "moe_gpt.json")) as f:
                seq = json.load(f)["seq"]
            x, y = charlm_data.batch(tokens, 0, BATCH, seq)
            session = ort.InferenceSession(model,
                                           providers=["CPUExecutionProvider"])
            logits = session.run(["logits"], {"tokens": x.astype(np.int64)})[0]
            reference = charlm_data.cross_entropy(logits, y)
            check(len(got) == STEPS and
                  abs(got[0] - reference) <= ORT_RTOL * abs(reference),
                  f"{style}: step 1 loss {got[0]:.6f} = onnxruntime "
                  f"{reference:.6f} (rtol {ORT_RTOL})")
            means = [sum(got[i:i + WINDOW]) / WINDOW
                     for i in range(0, len(got), WINDOW)]
            check(all(math.isfinite(v) for v in got) and len(means) > 1 and
                  all(m < means[0] for m in means[1:]),
                  f"{style}: {STEPS} Adam steps, 20-step mean losses " +
                  ", ".join(f"{m:.3f}" for m in means))

            if style != "contrib":
                continue
            for zero in (0, 3):
                dp_art = os.path.join(out, f"dp2z{zero}")
                run(compile_cmd + ["--mesh", "dp=2", f"--zero={zero}", "-o",
                                   dp_art], f"tessera-compile dp=2 ZeRO-{zero}")
                dp_log = os.path.join(out, f"dp2z{zero}.jsonl")
                run(mpirun(2) + [os.path.join(bin_dir, "tessera-run"), dp_art,
                                 "--train", "--data", data, "--steps",
                                 str(DP_STEPS), "--threads", "1",
                                 "--log-json", dp_log],
                    f"mpirun -np 2 ZeRO-{zero}")
                dp = losses(dp_log)
                worst = (max(abs(a - b) / abs(b) for a, b in zip(dp, got))
                         if len(dp) == DP_STEPS else math.inf)
                check(worst <= DP_RTOL,
                      f"contrib: mpirun -np 2 dp=2 ZeRO-{zero}: {DP_STEPS} "
                      f"losses match one process, worst relative difference "
                      f"{worst:.2e}")
    return finish("moe_train_test.py")


if __name__ == "__main__":
    sys.exit(main())
