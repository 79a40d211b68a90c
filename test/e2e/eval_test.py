#!/usr/bin/env python3
"""Validation loss during training (tessera-compile --eval, tessera-run
--eval-data FILE --eval-every K --eval-batches N).

The character LM (1 layer, d_model 64, seq 32, global batch 16), Adam,
evaluated on its valid.bin token stream (windows of 32 tokens and the next
32 as labels).

1. The oracle: onnxruntime runs the ONNX model that --save-onnx wrote after
   the last step on the same batches (batch k: windows k*16 ... k*16+15
   modulo the windows), and the mean over the batches of each batch's mean
   cross-entropy must equal the last evaluation's loss within 1e-5
   relative (float32 sums of a few thousand terms; a wrong window, label
   shift or batch count errs by 1e-2 or more). On one rank, every sample
   once (47 batches), and under `mpirun -np 2` (each rank evaluates its
   half of every batch, the mean over the ranks), with --eval-batches 5.
2. Evaluating leaves training alone: the 60 steps' logged losses with
   --eval-every 20 equal, as strings, those of a run without evaluation,
   and the evaluations come after steps 20, 40 and 60.
3. Refusals, each with its message and a non-zero exit: --eval-data on an
   artifact compiled without --eval, --eval-every without --eval-data, a
   missing evaluation file, tessera-compile --eval with --mode=grad and
   with --mesh tp=2.

Usage: eval_test.py BUILD_DIR REPO_ROOT
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

from checks import check, finish, make_charlm, run
from data_parallel_test import mpirun

RTOL = 1e-5
BATCH, WINDOW = 16, 32


def records(log):
    with open(log) as f:
        return [json.loads(line) for line in f]


def oracle(model, tokens_path, batches):
    """The mean over `batches` batches of the batch-mean cross-entropy."""
    tokens = np.fromfile(tokens_path, dtype="<u2").astype(np.int64)
    windows = (tokens.size - 1) // WINDOW
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    losses = []
    for k in range(batches):
        rows = [(k * BATCH + i) % windows for i in range(BATCH)]
        x = np.stack([tokens[r * WINDOW:(r + 1) * WINDOW] for r in rows])
        y = np.stack([tokens[r * WINDOW + 1:(r + 1) * WINDOW + 1] for r in rows])
        logits = session.run(None, {name: x})[0].astype(np.float64)
        logits -= logits.max(axis=-1, keepdims=True)
        logp = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
        losses.append(-np.take_along_axis(logp, y[..., None], -1).mean())
    return float(np.mean(losses))


def main():
    build, root = sys.argv[1], sys.argv[2]
    bin_dir = os.path.join(build, "bin")
    compile_tool = os.path.join(bin_dir, "tessera-compile")
    run_tool = os.path.join(bin_dir, "tessera-run")
    with tempfile.TemporaryDirectory() as work:
        lm = os.path.join(work, "lm")
        make_charlm(root, lm, WINDOW, BATCH)
        model = os.path.join(lm, "charlm.onnx")
        train_data = os.path.join(lm, "tokens.bin")
        valid = os.path.join(lm, "valid.bin")
        base = [compile_tool, model, "--mode=train", "--loss=cross_entropy",
                "--logits=logits", f"--batch-size={BATCH}", "--optimizer=adam",
                "--lr=3e-3"]

        def train(art, steps, *flags, ranks=0):
            log = os.path.join(work, os.path.basename(art) + f"-{steps}.json")
            cmd = [run_tool, art, "--train", "--data", train_data, "--steps",
                   str(steps), "--threads", "1", "--log-json", log, *flags]
            out = run(mpirun(ranks) + cmd if ranks else cmd)
            return records(log), out

        # 1. Against onnxruntime.
        single = os.path.join(work, "single")
        run(base + ["--eval", "-o", single])
        saved = os.path.join(work, "single.onnx")
        logged, out = train(single, 60, "--eval-data", valid, "--save-onnx", saved)
        evals = [r for r in logged if "eval_loss" in r]
        windows = (np.fromfile(valid, dtype="<u2").size - 1) // WINDOW
        expected = oracle(saved, valid, -(-windows // BATCH))
        got = float(evals[-1]["eval_loss"]) if evals else float("nan")
        check(len(evals) == 1 and evals[0]["step"] == 60
              and evals[0]["eval_batches"] == -(-windows // BATCH)
              and abs(got - expected) <= RTOL * expected,
              f"one rank, after step 60, every one of the {windows} windows "
              f"once ({-(-windows // BATCH)} batches): eval loss {got:.7f}, "
              f"onnxruntime {expected:.7f}")
        check("eval after step 60: loss" in out and "eval loss last" in out,
              "the progress shows the evaluation and the summary its loss")

        dp2 = os.path.join(work, "dp2")
        run(base + ["--eval", "--mesh", "dp=2", "-o", dp2])
        saved2 = os.path.join(work, "dp2.onnx")
        logged, _ = train(dp2, 40, "--eval-data", valid, "--eval-batches", "5",
                          "--save-onnx", saved2, ranks=2)
        evals = [r for r in logged if "eval_loss" in r]
        expected = oracle(saved2, valid, 5)
        got = float(evals[-1]["eval_loss"]) if evals else float("nan")
        check(len(evals) == 1 and evals[0]["eval_batches"] == 5
              and abs(got - expected) <= RTOL * expected,
              f"mpirun -np 2, --eval-batches 5: eval loss {got:.7f}, "
              f"onnxruntime {expected:.7f}")

        # 2. Evaluating leaves training alone.
        with_eval, _ = train(single, 60, "--eval-data", valid, "--eval-every", "20")
        without, _ = train(single, 60)
        steps = [r for r in with_eval if "loss" in r]
        check([r["loss"] for r in steps] == [r["loss"] for r in without]
              and [r["step"] for r in with_eval if "eval_loss" in r] == [20, 40, 60],
              "--eval-every 20: evaluations after steps 20, 40 and 60, and "
              "the 60 training losses equal a run without evaluation")

        # 3. Refusals.
        plain = os.path.join(work, "plain")
        run(base + ["-o", plain])
        cases = [
            ([run_tool, plain, "--train", "--data", train_data, "--steps", "2",
              "--eval-data", valid],
             "has no evaluation program (compile it with tessera-compile --eval)"),
            ([run_tool, single, "--train", "--data", train_data, "--steps", "2",
              "--eval-every", "1"], "--eval-every needs --eval-data FILE"),
            ([run_tool, single, "--train", "--data", train_data, "--steps", "2",
              "--eval-data", os.path.join(work, "none.bin")], "--eval-data: "),
            (base[:2] + ["--mode=grad", "--loss=cross_entropy", "--logits=logits",
                         f"--batch-size={BATCH}", "--eval", "-o",
                         os.path.join(work, "x")],
             "--eval needs --mode=train"),
            (base + ["--eval", "--mesh", "tp=2", "-o", os.path.join(work, "y")],
             "--eval takes the whole parameters: it does not go with --mesh tp"),
        ]
        for cmd, message in cases:
            result = subprocess.run(cmd, capture_output=True, text=True)
            check(result.returncode != 0 and message in result.stderr,
                  f"refused (exit {result.returncode}): "
                  f"{result.stderr.strip().splitlines()[-1:] or ['no message']}")
    return finish("eval_test.py")


if __name__ == "__main__":
    sys.exit(main())
