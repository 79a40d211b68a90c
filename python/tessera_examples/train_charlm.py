#!/usr/bin/env python3
"""The character LM, compiled, trained, evaluated and sampled from Python.

    python -m tessera_examples.train_charlm --out DIR [--steps N]

Makes the model and its data (make_charlm.py beside this file), compiles
the Adam training step with its evaluation program
(``tessera.compile(..., eval=True)``), trains it in-process with the
validation loss every quarter of the run, saves the trained ONNX model,
compiles that for inference and runs it on one batch, printing the
most likely next character of every position's window.
"""

import argparse
import json
import pathlib
import subprocess
import sys

import numpy as np

import tessera


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the working directory")
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable,
                    str(pathlib.Path(__file__).with_name("make_charlm.py")),
                    "--out", str(out), "--seq", "32", "--batch", "16",
                    "--layers", "1", "--no-verify"],
                   check=True, stdout=subprocess.DEVNULL)

    step = tessera.compile(out / "charlm.onnx", out / "step", mode="train",
                           loss="cross_entropy", logits="logits",
                           batch_size=16, optimizer="adam", lr=3e-3,
                           eval=True)
    log = step.train(out / "tokens.bin", steps=args.steps,
                     eval_data=out / "valid.bin",
                     eval_every=max(1, args.steps // 4),
                     save_onnx=out / "trained.onnx")
    print(f"trained {len(log)} steps: loss {log[0].loss:.4f} -> "
          f"{log[-1].loss:.4f}")
    for e in log.evals:
        print(f"validation loss after step {e.step}: {e.loss:.4f} "
              f"({e.batches} batches)")

    model = tessera.compile(out / "trained.onnx", out / "infer", mode="infer")
    tokens = np.fromfile(out / "valid.bin", dtype="<u2")[:16 * 32]
    logits = model.run({"tokens": tokens.reshape(16, 32).astype(np.int64)})
    vocab = json.loads((out / "vocab.json").read_text())
    guess = "".join(vocab[i] for i in logits["logits"][0].argmax(-1))
    text = "".join(vocab[i] for i in tokens[1:33])
    hits = sum(a == b for a, b in zip(guess, text))
    print(f"next-character guesses on a validation window: {hits}/32 right")
    print(f"  text:    {text!r}")
    print(f"  guesses: {guess!r}")


if __name__ == "__main__":
    main()
