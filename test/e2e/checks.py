"""What the check scripts of test/e2e share: one PASS or FAIL line per
check, and the exit status that sums them up."""

failures = []


def check(ok, message):
    """Prints `message` as a PASS or FAIL line; remembers a failure."""
    print(("PASS " if ok else "FAIL ") + message, flush=True)
    if not ok:
        failures.append(message)


def finish(script):
    """The exit status: 1 after a failed check, else 0, with a last line."""
    if failures:
        print(f"{script}: {len(failures)} check(s) failed")
        return 1
    print(f"{script}: every check passed")
    return 0


def run(cmd, **kwargs):
    """Runs `cmd` and returns its stdout; a non-zero exit prints its output
    and raises."""
    import subprocess
    import sys
    done = subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, **kwargs)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited "
                           f"{done.returncode}")
    return done.stdout


def make_charlm(root, out, seq=32, batch=16):
    """The bundled character LM (1 layer) and its data in `out`:
    charlm.onnx, tokens.bin, valid.bin, vocab.json."""
    import os
    import sys
    run([sys.executable, os.path.join(root, "python", "tessera_examples",
                                      "make_charlm.py"),
         "--out", out, "--seq", seq, "--batch", batch, "--layers", 1,
         "--no-verify"])


def make_vocab_gpt_step(root, bindir, work, vocab, seq, batch, steps):
    """A 1-layer GPT of make_torch_gpt.py (d_model 64, 4 heads) with a
    vocabulary of `vocab`, compiled as an AdamW training step of batch
    `batch` x `seq` into WORK/gpt.art, and `steps` batches of random tokens
    (labels the next token) in WORK/data.npz. Returns (artifact, data).
    The export needs PyTorch: Debian's /usr/bin/python3."""
    import os

    import numpy as np
    run(["/usr/bin/python3", os.path.join(root, "python", "tessera_examples",
                                          "make_torch_gpt.py"),
         "--out", work, "--vocab", vocab, "--seq", seq, "--layers", 1,
         "--d-model", 64, "--heads", 4])
    art = os.path.join(work, "gpt.art")
    run([os.path.join(bindir, "tessera-compile"), os.path.join(work, "torch_gpt.onnx"),
         "--mode=train", "--loss=cross_entropy", "--logits=logits",
         "--batch-size", batch, "--optimizer=adamw", "--lr=3e-4", "-o", art])
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, vocab, size=(batch * steps, seq), dtype=np.int64)
    data = os.path.join(work, "data.npz")
    np.savez(data, tokens=tokens, labels=np.roll(tokens, -1, axis=1))
    return art, data
