#!/usr/bin/env python3
"""Sequence parallelism's activation memory against Korthikanti et al.

Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
Transformer Models", section 4) split a transformer layer's activations in
two. Tensor parallelism over t ranks splits the attention heads and the MLP's
hidden units, so the activations inside the attention and MLP blocks (their
part S) shrink by t; the rest (R: the LayerNorms' inputs, the residual
stream, the inputs of the column-parallel blocks and the dropouts, 10sbh of
the 34sbh + 5as^2b bytes per layer in their fp16 accounting) stays whole on
every rank. Sequence parallelism splits R along the sequence too:

    without SP:  A(t) = C + R + S / t        (their sbh(10 + 24/t + 5as/ht))
    with SP:     A(t) = C + (R + S) / t      (their sbh/t (34 + 5as/h))

C is what neither splits. This test checks that law on the per-rank peak
bytes of one training step (the runtime allocator's count of the step's own
allocations, `tessera-run --memory-report`'s "peak step memory": saved
activations plus the gradients and temporaries live with them), on the
bundled character LM at a size where activations dominate (2 layers,
d_model 64, 4 heads, sequence 128, batch 8, vocabulary padded to 128 rows so
that both embeddings split at t = 4; SGD, so no optimizer state).

C, R and S are this compiler's, not the paper's fp16 figures: they are
solved from three runs (t = 1; t = 2; t = 2 with SP), and the law must then
predict the two others (t = 4 with and without SP) within 1% (the issue asks
for 5%). A layout that left some replicated activation whole under SP, or
split something only at one t, misses the prediction by the bytes of that
tensor: one [b, s, h] float32 tensor is 262144 bytes here, 3.8% of the t = 4
figure and 4.4% of the t = 4 SP one. Measured, t = 4 is predicted to 0.20%
and t = 4 with SP to 0.23% (the law leaves out buffers that scale otherwise,
tens of KB here); R is 5 [b, s, h] tensors (2.5 per layer), C 1.6 MB.

Usage: sequence_parallel_memory_test.py BUILD_DIR REPO_ROOT [--work DIR]
Exits 1 on a failed check, 2 on a setup error.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

for key, value in (("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                   ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
                   ("OMPI_MCA_rmaps_base_oversubscribe", "1")):
    os.environ.setdefault(key, value)

BATCH, SEQ, D_MODEL, TOLERANCE = 8, 128, 64, 0.01
failures = []


def check(ok, message):
    print(("PASS " if ok else "FAIL ") + message, flush=True)
    if not ok:
        failures.append(message)


def peak_bytes(bin_dir, work, model, t, sp):
    """Rank 0's peak step bytes of a tp=t (sequence-parallel) step."""
    name = f"tp{t}{'sp' if sp else ''}"
    art = os.path.join(work, name)
    flags = (["--mesh", f"tp={t}"] if t > 1 else []) + \
        (["--sequence-parallel"] if sp else [])
    subprocess.run([os.path.join(bin_dir, "tessera-compile"), model,
                    "--mode=train", "--loss=cross_entropy", "--logits=logits",
                    f"--batch-size={BATCH}", "--optimizer=sgd", "--lr=1e-3",
                    "-o", art, *flags], check=True, capture_output=True)
    cmd = [os.path.join(bin_dir, "tessera-run"), art, "--train", "--data",
           os.path.join(work, "tokens.bin"), "--steps", "2", "--threads", "1"]
    if t > 1:
        asan = ":".join(filter(None, (os.environ.get("ASAN_OPTIONS"),
                                      "detect_leaks=0")))
        cmd = ["env", f"ASAN_OPTIONS={asan}", "mpirun", "-np", str(t)] + cmd
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return int(re.search(r"peak step memory: (\d+) bytes", out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("root")
    ap.add_argument("--work")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    work = args.work or tempfile.mkdtemp(prefix="tessera-sp-memory-")
    os.makedirs(work, exist_ok=True)
    gen = os.path.join(args.root, "python", "tessera_examples", "make_charlm.py")
    try:
        subprocess.run([sys.executable, gen, "--out", work, "--seq", str(SEQ),
                        "--batch", str(BATCH), "--layers", "2", "--d-model",
                        str(D_MODEL), "--heads", "4", "--pad-vocab", "128",
                        "--no-verify"], check=True, stdout=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"error: cannot make the model: {e}", file=sys.stderr)
        return 2
    model = os.path.join(work, "charlm.onnx")
    a = {(t, sp): peak_bytes(bin_dir, work, model, t, sp)
         for t, sp in ((1, False), (2, False), (2, True), (4, False), (4, True))}
    for (t, sp), v in a.items():
        print(f"tp={t}{' sequence-parallel' if sp else ''}: peak step "
              f"{v} bytes per rank")

    # Solve C + R + S = a(1), C + R + S/2 = a(2), C + R/2 + S/2 = a(2, SP).
    s = 2 * (a[(1, False)] - a[(2, False)])
    r = 2 * (a[(2, False)] - a[(2, True)])
    c = a[(1, False)] - r - s
    bsh = BATCH * SEQ * D_MODEL * 4
    print(f"C = {c}, R = {r} ({r / bsh:.2f} [b, s, h] float32 tensors), "
          f"S = {s} bytes")
    check(r > 0 and s > 0, "sequence parallelism splits activations that "
          "tensor parallelism leaves whole (R > 0), tensor parallelism splits "
          "others (S > 0)")
    for sp in (False, True):
        predicted = c + (r + s) / 4 if sp else c + r + s / 4
        measured = a[(4, sp)]
        error = abs(measured - predicted) / measured
        check(error <= TOLERANCE,
              f"tp=4{' with' if sp else ' without'} sequence parallelism: "
              f"{measured} bytes per rank, the law predicts {predicted:.0f} "
              f"({100 * error:.2f}% off)")
    check(a[(4, True)] < a[(4, False)] and a[(2, True)] < a[(2, False)],
          "sequence parallelism lowers the per-rank peak at t = 2 and 4")
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
