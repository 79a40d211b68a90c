#!/usr/bin/env python3
"""Rematerialization (--remat) against the step that keeps everything.

Two language models trained 20 Adam steps on the charlm corpus with
``tessera-compile --mode=train --remat=none|selective|full`` and
``tessera-run --train``:

* the bundled character LM (make_charlm.py: 2 layers, d_model 64, 4 heads,
  sequence 128, batch 8; vocabulary padded to 128 rows);
* the 2-layer GPT exported by PyTorch (make_torch_gpt.py: d_model 64, 4
  heads, sequence 64, vocabulary 96; batch 8).

Checked, per model:

1. The losses of every step are bitwise equal (the %.9g strings of
   --log-json) to those of --remat=none: the backward pass repeats the same
   ops on the same values (dropout with the same seeds), so recomputing
   changes no bit.
2. The runtime allocator's peak bytes of one step fall: selective below
   none, full below selective.
3. The compiler's prediction (--report's "predicted peak", the tsr-level
   liveness analysis) equals the allocator's peak to the byte under every
   policy: the barriers where recomputations start cost nothing.

With --memory-budget at 60% of what each model's step needs without
rematerialization (its arguments, results and peak), the solver picks what
to recompute so that the predicted footprint fits; the prediction equals
the allocator's peak, which confirms the fit, and the 20 losses are those
of --remat=none. At 45%, which no recomputation meets (the budget is
refused with --offload=none), saved activations are offloaded to host
memory instead: the run fits a device pool of that size (tessera-run
--device-memory), the prediction equals the allocator's peak, the runtime
copies what the compiler reports, and the losses are bitwise those of
--remat=none. A budget of 1 MB is refused with one error line naming the
smallest footprint.

The character LM offloads on both ranks of tp=2 and of dp=2 with ZeRO-2
(mpirun -np 2) under budgets no recomputation meets, with the losses of the
same mesh without remat bit for bit. And the character LM at tp=2 with
--remat=full gives the losses of tp=2 without remat bit for bit: collectives are never repeated
(their results are kept), the rest of each rank's program is. A small MLP
with a training-mode Dropout (ratio 0.5, a fresh mask every step) gives
the same 20 losses with --remat=full, which repeats the dropout in the
backward pass: its mask is a function of the seed and the step.

The step-time cost of each policy is printed, not checked (timings belong
in benchmarks).

With --quick (the sanitizer round's subset, docs/testing.md) the GPT is
left out: every check but the GPT's runs.

Usage: remat_test.py BUILD_DIR REPO_ROOT [--work DIR] [--quick]
Exits 1 on a failed check, 2 on a setup error.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from checks import check, finish

for key, value in (("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                   ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
                   ("OMPI_MCA_rmaps_base_oversubscribe", "1")):
    os.environ.setdefault(key, value)

STEPS, BATCH = 20, 8
TORCH_PYTHON = "/usr/bin/python3"


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}")
    return done.stdout


def train(bin_dir, model, data, work, name, policy, ranks=1, mesh=(),
          budget=None):
    """Compiles (with --remat=policy, or --memory-budget=budget) and
    trains; returns (losses as logged, measured peak, predicted peak,
    median step seconds, --report's figures)."""
    art = os.path.join(work, name)
    choice = f"--memory-budget={budget}" if budget else f"--remat={policy}"
    report = run([os.path.join(bin_dir, "tessera-compile"), model,
                  "--mode=train", "--loss=cross_entropy", "--logits=logits",
                  f"--batch-size={BATCH}", "--optimizer=adam", "--lr=3e-3",
                  choice, "--report", "-o", art, *mesh])
    predicted = int(re.search(r"predicted peak\s+(\d+)", report).group(1))
    log = os.path.join(work, name + ".json")
    cmd = [os.path.join(bin_dir, "tessera-run"), art, "--train", "--data",
           data, "--steps", str(STEPS), "--threads", "1", "--log-json", log]
    if ranks > 1:
        asan = ":".join(filter(None, (os.environ.get("ASAN_OPTIONS"),
                                      "detect_leaks=0")))
        cmd = ["env", f"ASAN_OPTIONS={asan}", "mpirun", "-np", str(ranks)] + cmd
    out = run(cmd)
    measured = int(re.search(r"peak step memory: (\d+) bytes", out).group(1))
    with open(log) as f:
        records = [json.loads(line) for line in f]
    losses = [r["loss"] for r in records]
    seconds = statistics.median(r["seconds"] for r in records[2:])
    return losses, measured, predicted, seconds, figures(report)


def figures(report):
    """--report's total and peak bytes, the policy, what it recomputes
    (ops, milliseconds by the cost model) and how many values it
    offloads."""
    policy = re.search(r"rematerialization: (\w+).*: (\d+) ops recomputed, "
                       r"[0-9.]+ GFLOP, ([0-9.]+) ms", report)
    offload = re.search(r"offload: (\d+) saved activations", report)
    return {"total": int(re.search(r"total\s+(\d+)", report).group(1)),
            "offloaded": int(offload.group(1)) if offload else 0,
            "peak": int(re.search(r"peak activations\s+(\d+)", report).group(1)),
            "policy": policy.group(1) if policy else "none",
            "ops": int(policy.group(2)) if policy else 0,
            "ms": float(policy.group(3)) if policy else 0.0}


def make_dropout_mlp(work):
    """y = tanh(x @ w1) -> Dropout(0.5, training) -> @ w2; 40 samples."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((0.3 * rng.normal(size=(8, 16))).astype(np.float32), "w1"),
             numpy_helper.from_array((0.3 * rng.normal(size=(16, 3))).astype(np.float32), "w2"),
             numpy_helper.from_array(np.array(0.5, dtype=np.float32), "ratio"),
             numpy_helper.from_array(np.array(True), "training")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Tanh", ["h"], ["a"]),
             helper.make_node("Dropout", ["a", "ratio", "training"], ["d"]),
             helper.make_node("MatMul", ["d", "w2"], ["y"])]
    graph = helper.make_graph(
        nodes, "dropout_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path, data = os.path.join(work, "dropout.onnx"), os.path.join(work, "dropout.npz")
    onnx.save(model, path)
    np.savez(data, x=rng.normal(size=(40, 8)).astype(np.float32),
             t=rng.integers(0, 3, size=40))
    return path, data


def make_models(examples, work, quick):
    """The character LM (sequence 128, batch BATCH, vocabulary padded to 128
    rows) and, unless `quick`, the 2-layer GPT that PyTorch exports
    (sequence 64): name -> ONNX path; WORK/lm/tokens.bin is the corpus."""
    subprocess.run([sys.executable, os.path.join(examples, "make_charlm.py"),
                    "--out", os.path.join(work, "lm"), "--seq", "128",
                    "--batch", str(BATCH), "--layers", "2", "--d-model", "64",
                    "--heads", "4", "--pad-vocab", "128", "--no-verify"],
                   check=True, stdout=subprocess.DEVNULL)
    models = {"charlm": os.path.join(work, "lm", "charlm.onnx")}
    if quick:
        print("--quick: the GPT exported by PyTorch is left out (its checks "
              "are the character LM's on a second model)")
        return models
    subprocess.run([TORCH_PYTHON, os.path.join(examples, "make_torch_gpt.py"),
                    "--out", os.path.join(work, "gpt"), "--seq", "64"],
                   check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    models["gpt"] = os.path.join(work, "gpt", "torch_gpt.onnx")
    return models


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("root")
    ap.add_argument("--work")
    ap.add_argument("--quick", action="store_true",
                    help="the character LM only (the sanitizer round)")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    work = args.work or tempfile.mkdtemp(prefix="tessera-remat-")
    os.makedirs(work, exist_ok=True)
    examples = os.path.join(args.root, "python", "tessera_examples")
    try:
        models = make_models(examples, work, args.quick)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"error: cannot make the models: {e}", file=sys.stderr)
        return 2
    data = os.path.join(work, "lm", "tokens.bin")

    train_losses, reports = {}, {}
    for model, path in models.items():
        results = {p: train(bin_dir, path, data, work, f"{model}-{p}", p)
                   for p in ("none", "selective", "full")}
        base_losses, base_peak, _, base_seconds, _ = results["none"]
        train_losses[model] = base_losses
        reports[model] = {p: r[4] for p, r in results.items()}
        for policy, (losses, measured, predicted, seconds, _) in results.items():
            print(f"{model} --remat={policy}: peak {measured} bytes "
                  f"({measured / base_peak:.3f} of none), step "
                  f"{1e3 * seconds:.1f} ms ({seconds / base_seconds:.2f} of "
                  f"none)")
            check(predicted == measured,
                  f"{model} --remat={policy}: the predicted peak {predicted} "
                  f"equals the allocator's {measured}")
            if policy != "none":
                check(losses == base_losses and len(losses) == STEPS,
                      f"{model} --remat={policy}: 20 losses bitwise equal to "
                      f"--remat=none's")
        check(results["full"][1] < results["selective"][1] < base_peak,
              f"{model}: the peak falls from none ({base_peak}) to selective "
              f"({results['selective'][1]}) to full ({results['full'][1]})")

    mesh = ("--mesh", "tp=2")
    kept = train(bin_dir, models["charlm"], data, work, "tp2-none", "none", 2, mesh)
    full = train(bin_dir, models["charlm"], data, work, "tp2-full", "full", 2, mesh)
    check(full[0] == kept[0] and full[1] < kept[1],
          f"charlm tp=2 --remat=full: 20 losses bitwise equal to tp=2 without "
          f"remat, peak {full[1]} < {kept[1]} bytes per rank")
    # Offload on every rank of a tp=2 step (each rank its own transfers).
    budget = int(0.42 * kept[4]["total"])
    shared = train(bin_dir, models["charlm"], data, work, "tp2-offload", None,
                   2, mesh, budget=budget)
    check(shared[0] == kept[0] and shared[1] == shared[2] and
          shared[4]["total"] <= budget and shared[4]["offloaded"] > 0,
          f"charlm tp=2 --memory-budget={budget} (0.42 of "
          f"{kept[4]['total']}): offloaded, the allocator's peak {shared[1]} "
          f"is the predicted {shared[2]}, 20 losses bitwise equal to tp=2 "
          f"without remat")
    # And on both ranks of a dp=2 ZeRO-2 step (its gradient collectives are
    # asynchronous; the transfers run beside them).
    dp = ("--mesh", "dp=2", "--zero=2")
    replicated = train(bin_dir, models["charlm"], data, work, "dp2-none",
                       "none", 2, dp)
    # Halfway between the smallest footprints with and without offload, as
    # a budget of 1 byte makes the compiler name them.
    floors = []
    for policy in ("none", "auto"):
        refused = subprocess.run(
            [os.path.join(bin_dir, "tessera-compile"), models["charlm"],
             "--mode=train", "--loss=cross_entropy", "--logits=logits",
             f"--batch-size={BATCH}", "--optimizer=adam",
             "--memory-budget=1", f"--offload={policy}", "-o",
             os.path.join(work, "dp2-floor"), *dp],
            capture_output=True, text=True)
        # With the optimizer on the host as well, the note names the
        # smallest footprint without it: activation offload's.
        without = re.search(r"ZeRO-Offload; (\d+) bytes without",
                            refused.stderr)
        floors.append(int(without.group(1)) if without else
                      int(re.search(r"needs at least (\d+) bytes",
                                    refused.stderr).group(1)))
    check(floors[1] < floors[0],
          f"charlm dp=2 ZeRO-2: offload lowers the smallest footprint from "
          f"{floors[0]} to {floors[1]} bytes per rank")
    budget = (floors[0] + floors[1]) // 2
    offloaded = train(bin_dir, models["charlm"], data, work, "dp2-offload",
                      None, 2, dp, budget=budget)
    check(offloaded[0] == replicated[0] and offloaded[1] == offloaded[2] and
          offloaded[4]["total"] <= budget and offloaded[4]["offloaded"] > 0,
          f"charlm dp=2 ZeRO-2 --memory-budget={budget} (of "
          f"{replicated[4]['total']}): offloaded, the allocator's peak "
          f"{offloaded[1]} is the predicted {offloaded[2]}, 20 losses bitwise "
          f"equal to dp=2 without remat")

    # A budget of 60% of what the step needs without rematerialization: the
    # solver picks what to recompute, the allocator confirms the fit, and
    # the losses do not change. Below the smallest footprint it refuses and
    # names it.
    for model, path in models.items():
        needs, full = reports[model]["none"], reports[model]["full"]
        budget = int(0.6 * needs["total"])
        losses, measured, predicted, _, fit = train(
            bin_dir, path, data, work, f"{model}-budget", None, budget=budget)
        used = needs["total"] - needs["peak"] + measured
        print(f"{model} --memory-budget={budget}: {fit['ops']} ops "
              f"recomputed, {fit['ms']:.3f} ms by the cost model "
              f"(--remat=full: {full['ops']} ops, {full['ms']:.3f} ms)")
        check(fit["policy"] == "auto" and predicted == measured and
              used <= budget and losses == train_losses[model],
              f"{model} --memory-budget={budget} (0.6 of {needs['total']}): "
              f"arguments, results and the allocator's peak {measured} (as "
              f"predicted: {predicted}) take {used} bytes, 20 losses "
              f"bitwise equal")
    # Offload: at 45% of that, no recomputation fits (each forward op is
    # recomputed at most once); the plan copies saved activations to host
    # memory and back instead. The run holds the device pool to the budget
    # (tessera-run --device-memory ends the run at an allocation past it),
    # the prediction equals the allocator's peak, the losses are those of
    # --remat=none (the copies are exact), and tessera-run reports the
    # transfers.
    for model, path in models.items():
        needs = reports[model]["none"]
        budget = int(0.45 * needs["total"])
        alone = subprocess.run(
            [os.path.join(bin_dir, "tessera-compile"), path, "--mode=train",
             "--loss=cross_entropy", "--logits=logits",
             f"--batch-size={BATCH}", "--optimizer=adam", "--lr=3e-3",
             f"--memory-budget={budget}", "--offload=none", "-o",
             os.path.join(work, f"{model}-alone")],
            capture_output=True, text=True)
        check(alone.returncode == 1 and
              "(recomputing all it can), over the memory budget" in
              alone.stderr,
              f"{model} --memory-budget={budget} (0.45 of {needs['total']}) "
              f"--offload=none is refused: recomputation alone cannot meet it")
        art = os.path.join(work, f"{model}-offload")
        report = run([os.path.join(bin_dir, "tessera-compile"), path,
                      "--mode=train", "--loss=cross_entropy",
                      "--logits=logits", f"--batch-size={BATCH}",
                      "--optimizer=adam", "--lr=3e-3",
                      f"--memory-budget={budget}", "--report", "-o", art,
                      "--memory-timeline", art + ".svg"])
        with open(art + ".svg") as f:
            host = re.search(r'data-host-peak-bytes="(\d+)"', f.read())
        offload = re.search(r"offload: (\d+) saved activations, (\d+) bytes",
                            report)
        predicted = int(re.search(r"predicted peak\s+(\d+)", report).group(1))
        log = art + ".json"
        out = run([os.path.join(bin_dir, "tessera-run"), art, "--train",
                   "--data", data, "--steps", str(STEPS), "--threads", "1",
                   "--log-json", log, f"--device-memory={budget}"])
        measured = int(re.search(r"peak step memory: (\d+) bytes",
                                 out).group(1))
        moved = re.search(r"offload: (\d+) values a step, (\d+) bytes", out)
        with open(log) as f:
            losses = [json.loads(line)["loss"] for line in f]
        used = needs["total"] - needs["peak"] + measured
        print(f"{model} --memory-budget={budget}: {offload and offload.group(1)}"
              f" activations offloaded ({offload and offload.group(2)} bytes),"
              f" peak {measured}, footprint {used}; {out.splitlines()[-1]}")
        check(host is not None and offload is not None and
              host.group(1) == offload.group(2),
              f"{model}: the memory timeline draws the offloaded bytes in "
              f"host memory, at most {host and host.group(1)}, all of them "
              f"at once at the end of the forward pass")
        check(offload is not None and moved is not None and
              moved.group(1) == offload.group(1) and
              moved.group(2) == offload.group(2) and predicted == measured
              and used <= budget and losses == train_losses[model],
              f"{model} --memory-budget={budget}: the offloaded values "
              f"({offload and offload.group(1)}) are the ones the runtime "
              f"copies, the allocator's peak {measured} is the predicted "
              f"{predicted}, the footprint {used} fits, 20 losses bitwise "
              f"equal to --remat=none's")

    lm = models["charlm"]
    refused = subprocess.run(
        [os.path.join(bin_dir, "tessera-compile"), lm, "--mode=train",
         "--loss=cross_entropy", "--logits=logits", f"--batch-size={BATCH}",
         "--optimizer=adam", "--memory-budget=1MB", "-o",
         os.path.join(work, "refused")], capture_output=True, text=True)
    errors = [l for l in refused.stderr.splitlines() if "error:" in l]
    check(refused.returncode == 1 and len(errors) == 1 and
          re.search(r"the step needs at least \d+ bytes per rank", errors[0]),
          f"charlm --memory-budget=1MB is refused in one line: {errors}")

    dropout_model, dropout_data = make_dropout_mlp(work)
    losses = {}
    for policy in ("none", "full"):
        art = os.path.join(work, f"dropout-{policy}")
        run([os.path.join(bin_dir, "tessera-compile"), dropout_model,
             "--mode=train", "--loss=cross_entropy", "--logits=y", "--labels=t",
             "--batch-size=4", "--optimizer=sgd", "--lr=0.1",
             f"--remat={policy}", "-o", art])
        log = art + ".json"
        run([os.path.join(bin_dir, "tessera-run"), art, "--train", "--data",
             dropout_data, "--steps", str(STEPS), "--log-json", log])
        with open(log) as f:
            losses[policy] = [json.loads(line)["loss"] for line in f]
    check(losses["full"] == losses["none"] and len(set(losses["none"])) > 1,
          "an MLP with dropout: --remat=full repeats the dropout with its "
          "seed, 20 losses bitwise equal")

    return finish("remat_test.py")


if __name__ == "__main__":
    sys.exit(main())
