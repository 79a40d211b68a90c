#!/usr/bin/env python3
"""Pipeline-parallel training under mpirun (CPU), against one process.

Two language models, trained 20 steps on the charlm corpus (tokens.bin)
with Adam, lr 3e-3, through ``tessera-compile --mode=train --mesh pp=P
--schedule=S --micro-batches=M`` and ``tessera-run --train``:

* the bundled character LM (make_charlm.py: 2 layers, d_model 64, 4 heads,
  seq 32, vocabulary 86, global batch 16, and 24 for M = 6);
* a 4-layer GPT exported by PyTorch (make_torch_gpt.py: d_model 64, 4
  heads, seq 16, vocabulary 96; global batch 8, and 12 for M = 6).

The oracle is the single-process run of the same global batch, without
micro-batches, except for M = 6: there it is the single process that
accumulates 6 micro-batches (--micro-batches=6), because the sum of six
micro-batch gradients divided by 6 rounds differently from the whole
batch's and Adam amplifies that on this model to 4.6e-4 by step 20 (the
pipeline equals the accumulating process bit for bit). Checked:

1. Losses: both models at pp=2 and pp=4 under gpipe, 1f1b, interleaved,
   zb-h1, zb-v, v-half and dualpipev, the character LM with M in {1, 4, 6,
   8} and the GPT with M = 4 (and 8 under 1f1b and v-half; interleaved
   with M > P only for multiples of P, dualpipev with M >= 2P, as they
   serve), interleaved with 3 chunks per
   rank, dp=2 x pp=2 (ZeRO 0 and 1; zb-v with ZeRO 1), tp=2 x pp=2 (1f1b,
   interleaved, zb-h1), dp=2 x tp=2 x pp=2 (zb-v, ZeRO 1; 8 ranks), and
   LAMB with
   --clip-grad-norm=0.5 at pp=2 (its norms sum over every stage's
   parameters; the oracle trains alike), every step's loss
   (rank 0's --log-json) equals the single run's to 1e-5 relative. A
   pipeline sums each micro-batch's gradients and divides by M, so it adds
   the same float32 terms in another order; 20 Adam steps carry the
   difference along: measured worst 1.2e-6.
2. Export: the GPT pp=4 run's --save-onnx model, to which every stage sent its
   parameters, holds the single run's trained weights to 1e-4 relative,
   while every parameter moved from its initial value by more than ten
   times that difference (so no stage's weights were left untrained); the
   key biases, whose gradient is zero in exact arithmetic, left out.
3. Memory: on meshes of pp alone, every stage's allocator peak for one
   step (--memory-report) equals the compiler's prediction for its program
   (the manifest's predicted_peak_alloc_bytes), byte for byte (the issue
   asks for 5%; the prediction models the lowering exactly, so any
   difference is a modelling bug). At pp=2 with 8 micro-batches stage 0
   of the character LM peaks below 0.8x under 1f1b (2 micro-batches in
   flight) of gpipe's (8), and the largest stage peak under v-half below
   0.85x 1f1b's. On the GPT (equal layers) at pp=2 and 4 with 8
   micro-batches, the most activations a stage holds under v-half (the
   manifest's predicted_peak_activation_bytes: its forward cells' results
   over the memory timeline whose total the allocator matches) are at
   most 0.6x of 1f1b's (measured 0.54 and 0.58).
4. Checkpoints per stage: the character LM under zb-v at pp=2 and at
   dp=2 x pp=2 with ZeRO-1 writes one checkpoint per stage after step 10
   (DIR/step-00000010 and DIR/step-00000010.stage1); resuming gives steps
   11-20 the uninterrupted run's losses bit for bit.
5. The measured timeline: ``tessera-run --trace`` of the zb-v run holds,
   per rank, its compiled actions in order (each cell's call, kind
   "action"), and ``--profile``'s table does not count them twice.
6. PipeDream (``--schedule=pipedream``, no flush): on a two-stage MLP
   trained 6 SGD steps, the weights equal a NumPy model of the schedule in
   which every backward pass uses the weights of its forward pass (weight
   stashing) to 1e-6, while the same model without stashing is at least
   1e-4 away; the character LM at pp=2 with 8 micro-batches ends 2500 Adam
   steps below 2.0 nats (mean of the last 100). --quick runs the MLP.
7. Resharding across pp: the pp=2 zb-v checkpoint of step 10 resumes on a
   4-stage artifact and on the single-process one (each tensor read, by
   name, from the stage checkpoint that holds it): steps 11-20 match the
   single run to 1e-5 relative; without its stage 1 directory it is refused
   with the reason and a non-zero exit.

With --quick (the sanitizer round's subset, docs/testing.md) only the
character LM at batch 16 runs: pp=2 1f1b, interleaved and zb-v with 4
micro-batches, dp=2 x pp=2 and tp=2 x pp=2, and check 2 on the pp=2 run's
export.

Usage: pipeline_parallel_test.py BUILD_DIR REPO_ROOT [--work DIR] [--quick]
Exits 1 on a failed check, 2 on a setup error.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

from checks import check, finish
from tensor_parallel_train_test import (STEPS, TORCH_PYTHON, compile_artifact,
                                        losses, mpirun, ranks_of, train,
                                        worst_relative)

RTOL = 1e-5
SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-v", "v-half",
             "dualpipev")
# LAMB's trust ratios and the global norm of --clip-grad-norm sum over
# every parameter, which the stages hold in parts.
CLIP = ("--optimizer=lamb", "--clip-grad-norm=0.5")


def weights(path):
    return {i.name: numpy_helper.to_array(i).astype(np.float64)
            for i in onnx.load(path).graph.initializer
            if i.data_type == onnx.TensorProto.FLOAT}


def pipedream_oracle(init, x, labels, steps, micro, stages, lr, stash):
    """PipeDream on the two-stage MLP tanh(x·w1)·w2 with SGD and a mean
    squared error: all stages forward step t's micro-batches with step t's
    weights; stage s's update at step t sums the gradients of micro-batches
    t·M - (P - s) .. t·M + M - (P - s) - 1 (the previous step's last P - s
    finish first), each computed through the weights of its forward step
    (`stash`) or, for the previous step's, through the weights current at
    its backward pass (without weight stashing)."""
    w = [init["w1"].copy(), init["w2"].copy()]
    history, rows = [], x.shape[0] // (steps * micro)
    for t in range(steps):
        history.append([v.copy() for v in w])
        new = []
        for s in range(stages):
            total = np.zeros_like(w[s])
            low = t * micro - (stages - s)
            for j in range(max(low, 0), low + micro):
                forward = history[j // micro]
                backward = forward if stash else history[t]
                xs = x[j * rows:(j + 1) * rows]
                ys = labels[j * rows:(j + 1) * rows]
                a = np.tanh(xs @ forward[0])
                d = 2 * (a @ forward[1] - ys) / ys.size
                g2 = a.T @ d
                g1 = xs.T @ ((d @ backward[1].T) * (1 - a * a))
                total += (g1, g2)[s]
            new.append(w[s] - lr * total / micro)
        w = new
    return {"w1": w[0], "w2": w[1]}


def check_pipedream(bin_dir, work, data, charlm, quick):
    """--schedule=pipedream: the weights each backward pass uses (a NumPy
    model of the schedule with and without weight stashing), and the
    character LM trained below 2.0 nats."""
    steps, micro, batch, lr = 6, 2, 8, 0.1
    rng = np.random.default_rng(7)
    init = {"w1": (rng.standard_normal((8, 16)) * 0.3).astype(np.float32),
            "w2": (rng.standard_normal((16, 4)) * 0.3).astype(np.float32)}
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
         onnx.helper.make_node("Tanh", ["h"], ["a"], name="act"),
         onnx.helper.make_node("MatMul", ["a", "w2"], ["y"], name="fc2")],
        "mlp",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT,
                                            [batch, 8])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT,
                                            [batch, 4])],
        [numpy_helper.from_array(v, n) for n, v in init.items()])
    model = os.path.join(work, "mlp.onnx")
    onnx.save(onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid("", 17)]), model)
    x = rng.standard_normal((steps * batch, 8)).astype(np.float32)
    labels = rng.standard_normal((steps * batch, 4)).astype(np.float32)
    npz = os.path.join(work, "mlp.npz")
    np.savez(npz, x=x, labels=labels)
    art = os.path.join(work, "mlp-pipedream")
    build = subprocess.run(
        [os.path.join(bin_dir, "tessera-compile"), model, "--mode=train",
         "--loss=mse", "--logits=y", f"--batch-size={batch}",
         "--optimizer=sgd", f"--lr={lr}", "--mesh", "pp=2",
         "--schedule=pipedream", f"--micro-batches={micro}",
         "--pipeline-split=fc2", "-o", art],
        capture_output=True, text=True)
    saved = os.path.join(work, "mlp-pipedream.onnx")
    run = subprocess.run(
        mpirun(2) + [os.path.join(bin_dir, "tessera-run"), art, "--train",
                     "--data", npz, "--steps", str(steps), "--threads", "1",
                     "--save-onnx", saved],
        capture_output=True, text=True, timeout=300)
    ok = build.returncode == 0 and run.returncode == 0
    if not ok:
        sys.stderr.write(build.stderr + run.stdout + run.stderr)
    got = weights(saved) if ok else {}
    start = {n: v.astype(np.float64) for n, v in init.items()}
    want = pipedream_oracle(start, x.astype(np.float64),
                            labels.astype(np.float64), steps, micro, 2, lr,
                            stash=True)
    stale = pipedream_oracle(start, x.astype(np.float64),
                             labels.astype(np.float64), steps, micro, 2, lr,
                             stash=False)
    # float32 against float64 over 6 steps: measured 8e-8.
    diff = max((np.max(np.abs(got[n] - want[n])) for n in want),
               default=np.inf)
    apart = max(np.max(np.abs(stale[n] - want[n])) for n in want)
    check(ok and diff <= 1e-6 and apart >= 1e-4,
          f"pipedream on a 2-stage MLP (SGD, 6 steps): the weights equal a "
          f"NumPy model whose backward passes use the weights of their "
          f"forward pass to {diff:.1e}; without weight stashing they would "
          f"differ by {apart:.1e}")
    if quick:
        return

    # Training: the character LM at pp=2 with 8 micro-batches, 2500 steps.
    art = compile_artifact(bin_dir, charlm, 16,
                           os.path.join(work, "charlm-pipedream"),
                           ["--mesh", "pp=2", "--schedule=pipedream",
                            "--micro-batches=8"])
    log = os.path.join(work, "charlm-pipedream.json")
    cmd = mpirun(2) + [os.path.join(bin_dir, "tessera-run"), art, "--train",
                       "--data", data, "--steps", "2500", "--threads", "1",
                       "--log-json", log]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    trained = losses(log) if run.returncode == 0 else {}
    last = [trained[s] for s in range(2401, 2501) if s in trained]
    mean = float(np.mean(last)) if len(last) == 100 else float("inf")
    check(mean < 2.0,
          f"pipedream trains the character LM at pp=2 (8 micro-batches, "
          f"2500 Adam steps): mean loss of the last 100 steps {mean:.3f} "
          f"nats (< 2.0)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("root")
    ap.add_argument("--work")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    work = args.work or tempfile.mkdtemp(prefix="tessera-pp-")
    os.makedirs(work, exist_ok=True)
    examples = os.path.join(args.root, "python", "tessera_examples")
    try:
        subprocess.run([sys.executable, os.path.join(examples, "make_charlm.py"),
                        "--out", os.path.join(work, "lm"), "--seq", "32",
                        "--batch", "16", "--layers", "2", "--d-model", "64",
                        "--heads", "4", "--no-verify"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([TORCH_PYTHON, os.path.join(examples, "make_torch_gpt.py"),
                        "--out", os.path.join(work, "gpt"), "--layers", "4"],
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"error: cannot make the models: {e}", file=sys.stderr)
        return 2
    data = os.path.join(work, "lm", "tokens.bin")
    charlm = os.path.join(work, "lm", "charlm.onnx")
    gpt = os.path.join(work, "gpt", "torch_gpt.onnx")

    def pipeline(mesh, schedule, micro):
        return ("--mesh", mesh, f"--schedule={schedule}",
                f"--micro-batches={micro}")

    # (model, batch) -> {name: flags}; "single" is the oracle. Every
    # synchronous schedule at pp=2 and pp=4 with M in {1, 4, 6, 8} on the
    # character LM, and with M = 4 on the GPT (interleaved with M > P only
    # for multiples of P); M = 6 takes a batch that 6 divides, whose oracle
    # accumulates 6 micro-batches. The GPT's other micro-batch counts
    # would run the same schedules' lowering once more on another model
    # (and took half of this test's time): only its M = 8 runs of 1f1b and
    # v-half stay, for check 3.
    jobs = {(charlm, 16): {"single": ()},
            (charlm, 24): {"single": ("--micro-batches=6",)},
            (gpt, 8): {"single": ()}}
    for p in (2, 4):
        for schedule in ("1f1b", "v-half"):
            jobs[(gpt, 8)][f"pp{p}-{schedule}-m8"] = pipeline(
                f"pp={p}", schedule, 8)
    for model, batches in ((charlm, {1: 16, 4: 16, 6: 24, 8: 16}),
                           (gpt, {4: 8})):
        for m, batch in batches.items():
            for p in (2, 4):
                for schedule in SCHEDULES:
                    if schedule == "interleaved" and m > p and m % p:
                        continue
                    if schedule == "dualpipev" and m < 2 * p:
                        continue
                    jobs[(model, batch)][f"pp{p}-{schedule}-m{m}"] = (
                        pipeline(f"pp={p}", schedule, m))
    jobs[(charlm, 16)].update({
        "pp2-interleaved-v3-m8": pipeline("pp=2", "interleaved", 8)
        + ("--virtual-stages=3",),
        "dp2pp2-1f1b-m4": pipeline("dp=2,pp=2", "1f1b", 4),
        "dp2pp2-1f1b-m4-zero1": pipeline("dp=2,pp=2", "1f1b", 4)
        + ("--zero=1",),
        "dp2pp2-zb-v-m4-zero1": pipeline("dp=2,pp=2", "zb-v", 4)
        + ("--zero=1",),
        "tp2pp2-1f1b-m2": pipeline("tp=2,pp=2", "1f1b", 2),
        "tp2pp2-interleaved-m2": pipeline("tp=2,pp=2", "interleaved", 2),
        "tp2pp2-zb-h1-m2": pipeline("tp=2,pp=2", "zb-h1", 2),
        "dp2tp2pp2-zb-v-m2-zero1": pipeline("dp=2,tp=2,pp=2", "zb-v", 2)
        + ("--zero=1",),
        "single-clip": CLIP,
        "pp2-1f1b-m4-clip": pipeline("pp=2", "1f1b", 4) + CLIP,
    })
    export = (gpt, 8, "pp4-gpipe-m4")
    if args.quick:
        keep = ("single", "pp2-1f1b-m4", "dp2pp2-1f1b-m4", "tp2pp2-1f1b-m2",
                "pp2-interleaved-m4", "pp2-zb-v-m4")
        jobs = {(charlm, 16): {name: flags for name, flags in
                               jobs[(charlm, 16)].items() if name in keep}}
        export = (charlm, 16, "pp2-1f1b-m4")
    keys = [(model, batch, name) for (model, batch), named in jobs.items()
            for name in named]

    def label(model, batch, name):
        return f"{os.path.basename(model)[:-5]}-b{batch}-{name}"

    def build(key):
        model, batch, name = key
        return compile_artifact(bin_dir, model, batch,
                                os.path.join(work, label(*key)),
                                list(jobs[(model, batch)][name]))

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        arts = dict(zip(keys, pool.map(build, keys)))

    steps = range(1, STEPS + 1)
    singles, peaks = {}, {}
    for (model, batch, name) in keys:
        if not name.startswith("single"):
            continue
        key = (model, batch, name)
        log = os.path.join(work, label(*key) + ".json")
        extra = []
        if key == export[:2] + ("single",):
            extra = ["--save-onnx", os.path.join(work, "single.onnx")]
        train(bin_dir, arts[key], 1, data, log, "--batch-size", str(batch),
              *extra)
        singles[key] = losses(log)
        first, last = singles[key][1], singles[key][STEPS]
        check(len(singles[key]) == STEPS and last < first,
              f"{label(*key)}: the single run trains, loss {first:.4f} -> "
              f"{last:.4f}")

    # 1: losses.
    for key in keys:
        model, batch, name = key
        if name.startswith("single"):
            continue
        flags = list(jobs[(model, batch)][name])
        ranks = ranks_of(flags)
        log = os.path.join(work, label(*key) + ".json")
        extra = []
        if key == export:
            extra = ["--save-onnx", os.path.join(work, "pp.onnx")]
        out = train(bin_dir, arts[key], ranks, data, log, "--batch-size",
                    str(batch), "--memory-report", *extra)
        peaks[key] = {int(r): int(b) for r, b in re.findall(
            r"memory rank (\d+) of \d+: .*, step peak (\d+) bytes", out)}
        if flags[1].startswith("pp="):
            # On a mesh of pp alone, rank r runs stage r.
            with open(os.path.join(arts[key], "manifest.json")) as f:
                predicted = {p["pipeline"]["stage"]:
                             p["predicted_peak_alloc_bytes"]
                             for p in json.load(f)["programs"]}
            check(peaks[key] == predicted,
                  f"{label(*key)}: every stage's step peak ({peaks[key]}) is "
                  f"the compiler's prediction ({predicted})")
        oracle = (model, batch, "single-clip" if name.endswith("clip")
                  else "single")
        worst = worst_relative(losses(log), singles[oracle], steps)
        check(worst <= RTOL, f"{label(*key)} on {ranks} ranks: 20 losses "
              f"match the single run, worst relative difference {worst:.2e}")

    # 1F1B holds at most P micro-batches' activations on stage 0, GPipe all
    # M: at P=2 and M=8 its peak is lower.
    if not args.quick:
        gpipe = peaks[(charlm, 16, "pp2-gpipe-m8")]
        one_f = peaks[(charlm, 16, "pp2-1f1b-m8")]
        check(one_f[0] < 0.8 * gpipe[0],
              f"charlm pp=2 M=8: stage 0's step peak is {one_f[0]} bytes "
              f"under 1f1b, {gpipe[0]} under gpipe")
        # V-Half holds half of 1F1B's activations (in chunks of half a
        # stage); the step peak also holds parameters' gradients and the
        # cells' temporaries, so the whole peak is compared, per rank.
        half = peaks[(charlm, 16, "pp2-v-half-m8")]
        check(max(half.values()) < 0.85 * max(one_f.values()),
              f"charlm pp=2 M=8: the largest stage peak is "
              f"{max(half.values())} bytes under v-half, "
              f"{max(one_f.values())} under 1f1b "
              f"({max(half.values()) / max(one_f.values()):.2f}x)")
        # The activations themselves: the most bytes of forward cells'
        # results a stage holds at once, from the memory timeline whose
        # total the allocator matched byte for byte above. On the GPT's
        # equal layers V-Half holds at most 0.6x of 1F1B's at M=8 (the
        # character LM's 2 layers cut into 8 chunks are not equal).
        for p in (2, 4):
            acts = {}
            for name in ("1f1b", "v-half"):
                path = os.path.join(arts[(gpt, 8, f"pp{p}-{name}-m8")],
                                    "manifest.json")
                with open(path) as f:
                    acts[name] = max(
                        q["pipeline"]["predicted_peak_activation_bytes"]
                        for q in json.load(f)["programs"])
            ratio = acts["v-half"] / acts["1f1b"]
            check(ratio <= 0.6,
                  f"gpt pp={p} M=8: the most activations a stage holds are "
                  f"{acts['v-half']} bytes under v-half, {acts['1f1b']} "
                  f"under 1f1b ({ratio:.2f}x, at most 0.6x)")

    # 2: the exported model of the pipeline.
    initial = weights(export[0])
    single = weights(os.path.join(work, "single.onnx"))
    exported = weights(os.path.join(work, "pp.onnx"))
    # The key projection's bias has no gradient in exact arithmetic (it adds
    # one constant to each row of scores, which softmax ignores): Adam
    # normalizes its rounding noise into full-size random steps.
    trained = [n for n in single if not np.array_equal(single[n], initial[n])
               and not n.endswith(".k.bias")]
    worst, names = 0.0, []
    for n in trained:
        scale = np.max(np.abs(single[n]))
        diff = np.max(np.abs(exported[n] - single[n])) / scale
        moved = np.max(np.abs(exported[n] - initial[n])) / scale
        worst = max(worst, diff)
        if not moved > 10 * diff:
            names.append(n)
    check(len(trained) > 30 and worst <= 1e-4 and not names,
          f"{label(*export)} --save-onnx: the {len(trained)} trained "
          f"parameters match the "
          f"single run's to {worst:.1e} relative and all moved from their "
          f"initial values" + (f" (not: {names[:4]})" if names else ""))

    # 4: checkpoints per stage, resumed bit for bit.
    run_bin = os.path.join(bin_dir, "tessera-run")
    for name in ("pp2-zb-v-m4", "dp2pp2-zb-v-m4-zero1"):
        key = (charlm, 16, name)
        if key not in arts:
            continue
        ranks = ranks_of(list(jobs[(charlm, 16)][name]))
        ckpt = os.path.join(work, "ckpt-" + name)
        common = ["--train", "--data", data, "--threads", "1",
                  "--batch-size", "16"]
        first = subprocess.run(
            mpirun(ranks) + [run_bin, arts[key], *common, "--steps", "10",
                             "--checkpoint-dir", ckpt, "--checkpoint-every",
                             "10"],
            capture_output=True, text=True, timeout=300)
        stages = [os.path.join(ckpt, "step-00000010", "manifest.json"),
                  os.path.join(ckpt, "step-00000010.stage1",
                               "manifest.json")]
        log = os.path.join(work, label(*key) + "-resumed.json")
        second = subprocess.run(
            mpirun(ranks) + [run_bin, arts[key], *common, "--steps",
                             str(STEPS), "--resume", ckpt, "--log-json", log],
            capture_output=True, text=True, timeout=300)
        full = losses(os.path.join(work, label(*key) + ".json"))
        resumed = losses(log) if second.returncode == 0 else {}
        same = sorted(resumed) == list(range(11, STEPS + 1)) and all(
            resumed[s] == full[s] for s in resumed)
        check(first.returncode == 0 and all(map(os.path.exists, stages))
              and second.returncode == 0 and same,
              f"{label(*key)}: each stage writes its checkpoint after step "
              f"10 (exits {first.returncode}, {second.returncode}), and the "
              f"resumed steps 11-{STEPS} give the uninterrupted run's losses "
              f"bit for bit")
    # 5: the measured timeline. --trace records every action of each
    # rank's schedule (the call of a cell), in the compiled order; the
    # profile table counts the cells' own regions once.
    key = (charlm, 16, "pp2-zb-v-m4")
    trace = os.path.join(work, "zbv.trace")
    run = subprocess.run(
        mpirun(2) + [run_bin, arts[key], "--train", "--data", data, "--steps",
                     "2", "--threads", "1", "--batch-size", "16", "--trace",
                     trace, "--profile"],
        capture_output=True, text=True, timeout=300)
    with open(os.path.join(arts[key], "manifest.json")) as f:
        compiled = {p["pipeline"]["stage"]: p["pipeline"]["actions"]
                    for p in json.load(f)["programs"]}
    in_order = run.returncode == 0
    counts = []
    for r in range(2):
        path = f"{trace}.rank{r}.json"
        events = json.load(open(path))["traceEvents"] if in_order else []
        # The profile leaves out the first step: one program call.
        calls = [e for e in events if e["cat"] == "program"]
        if not calls:
            in_order = False
            break
        start, end = calls[-1]["ts"], calls[-1]["ts"] + calls[-1]["dur"]
        names = [e["name"] for e in sorted(events, key=lambda e: e["ts"])
                 if e["cat"] == "action" and start <= e["ts"] < end]
        # Cells without ops (a first chunk's input gradient) are no call.
        it = iter(compiled[r])
        forwards = [a for a in compiled[r] if a.startswith("F")]
        in_order &= all(n in it for n in names) and set(forwards) <= set(names)
        counts.append(len(names))
    between = re.search(r"^\s*(-?[\d.]+)\s+(-?[\d.]+)%\s+\(between regions",
                        run.stdout, re.M)
    check(in_order and between and float(between.group(1)) >= 0,
          f"charlm pp=2 zb-v --trace: each rank's last step has its "
          f"compiled actions in order ({counts} calls), and --profile's "
          f"rows leave a non-negative remainder "
          f"({between.group(1) if between else '?'})")

    # 6: PipeDream. Weight versions against a NumPy model, then training.
    check_pipedream(bin_dir, work, data, charlm, quick=args.quick)

    # 7: resharding across pp. The pp=2 checkpoint of step 10 resumes on 4
    # stages and in one process: every tensor is read from the stage
    # checkpoint that holds it.
    ckpt = os.path.join(work, "ckpt-pp2-zb-v-m4")
    for name in ("pp4-zb-v-m8", "single"):
        key = (charlm, 16, name)
        if key not in arts or not os.path.isdir(ckpt):
            continue
        ranks = ranks_of(list(jobs[(charlm, 16)].get(name, ())))
        log = os.path.join(work, f"{name}-from-pp2.json")
        cmd = [run_bin, arts[key], "--train", "--data", data, "--steps",
               str(STEPS), "--threads", "1", "--batch-size", "16",
               "--resume", ckpt, "--log-json", log]
        run = subprocess.run(mpirun(ranks) + cmd if ranks > 1 else cmd,
                             capture_output=True, text=True, timeout=300)
        resumed = losses(log) if run.returncode == 0 else {}
        worst = worst_relative(resumed, singles[(charlm, 16, "single")],
                               range(11, STEPS + 1))
        check(sorted(resumed) == list(range(11, STEPS + 1)) and worst <= RTOL,
              f"the pp=2 checkpoint of step 10 resumes on {name} (exit "
              f"{run.returncode}): steps 11-{STEPS} match the single run, "
              f"worst relative difference {worst:.2e}")
    # Without its stage 1, the checkpoint is refused, with the reason.
    key = (charlm, 16, "pp4-zb-v-m8")
    if key in arts and os.path.isdir(ckpt):
        partial = os.path.join(work, "ckpt-partial")
        shutil.copytree(os.path.join(ckpt, "step-00000010"),
                        os.path.join(partial, "step-00000010"),
                        dirs_exist_ok=True)
        run = subprocess.run(
            mpirun(4) + [run_bin, arts[key], "--train", "--data", data,
                         "--steps", str(STEPS), "--batch-size", "16",
                         "--resume", partial],
            capture_output=True, text=True, timeout=300)
        check(run.returncode != 0 and "written on the mesh 'pp=2' (2 "
              "pipeline stages), but the checkpoint of stage 1" in run.stderr,
              f"a pp=2 checkpoint without its stage 1 is refused (exit "
              f"{run.returncode})")
    return finish("pipeline_parallel_test.py")


if __name__ == "__main__":
    sys.exit(main())
