#!/usr/bin/env python3
"""Optimizer-state offload (--offload-optimizer, ZeRO-Offload) against the
step that updates on the device.

Two language models trained 20 Adam steps on the charlm corpus, compiled
with and without ``tessera-compile --offload-optimizer``:

* the bundled character LM (make_charlm.py: 2 layers, d_model 64, 4 heads,
  sequence 128, batch 8; vocabulary padded to 128 rows);
* the 2-layer GPT exported by PyTorch (make_torch_gpt.py: d_model 64, 4
  heads, sequence 64, vocabulary 96; batch 8).

Checked, per model:

1. The artifact runs two programs, the step (@main) and the update on the
   host (@host_update, "on_host" in the manifest).
2. The 20 losses (the %.9g strings of --log-json) and the trained
   parameters (--save-onnx, byte for byte) equal those of the artifact
   that updates on the device: the update is the same arithmetic on the
   same values, only where its buffers live changes.
3. The device pool: the run fits --device-memory set to the device
   footprint --report gives for @main (its arguments, outputs and peak),
   and the artifact without offload does not fit that pool (it ends with
   the device pool's message): the optimizer state no longer counts there.
4. The host pool: the runtime's host-pool peak equals the footprint
   --report gives for @host_update (parameters, optimizer state, the
   gradients' copies, outputs and the update's peak), and the bytes copied
   a step are the gradients down and the parameters up, as the compile
   summary says.

Under --memory-budget (the character LM): a budget of one byte is refused
naming the smallest footprint, with the update on the host, and the one
without; a budget halfway between the two moves the update to the host by
itself (--offload=auto), fits a device pool of that size, and gives the
losses of the device update.

And the character LM on dp=2 (mpirun -np 2) with ZeRO 0, 2 and 3: the
losses equal those of the same mesh without offload bit for bit, and with
ZeRO 2 and 3 a rank copies its half of the gradients down.

With --quick (the sanitizer round's subset, docs/testing.md) the GPT is
left out: every check but the GPT's runs.

Usage: offload_optimizer_test.py BUILD_DIR REPO_ROOT [--work DIR] [--quick]
Exits 1 on a failed check, 2 on a setup error.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from checks import check, finish
from remat_test import make_models

for key, value in (("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                   ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
                   ("OMPI_MCA_rmaps_base_oversubscribe", "1")):
    os.environ.setdefault(key, value)

STEPS, BATCH = 20, 8


def run(cmd, expect_ok=True):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if expect_ok and done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}")
    return done


def totals(report):
    """--report's total of each program, by name."""
    found = re.findall(r"memory footprint of one call of the train function"
                       r"(?: (\w+))?.*?\n(?:.*\n)*?  total\s+(\d+)", report)
    return {name or "main": int(total) for name, total in found}


def compile_model(bin_dir, model, art, offload, mesh=()):
    extra = ["--offload-optimizer"] if offload else []
    done = run([os.path.join(bin_dir, "tessera-compile"), model,
                "--mode=train", "--loss=cross_entropy", "--logits=logits",
                f"--batch-size={BATCH}", "--optimizer=adam", "--lr=3e-3",
                "--report", "-o", art, *mesh, *extra])
    return done.stdout + done.stderr


def train(bin_dir, art, data, work, ranks=1, device_memory=None):
    """Trains; returns (losses as logged, tessera-run's output, the saved
    model's path)."""
    name = os.path.basename(art)
    log = os.path.join(work, name + ".json")
    saved = os.path.join(work, name + "-trained.onnx")
    cmd = [os.path.join(bin_dir, "tessera-run"), art, "--train", "--data",
           data, "--steps", str(STEPS), "--threads", "1", "--log-json", log,
           "--save-onnx", saved]
    if device_memory:
        cmd += ["--device-memory", str(device_memory)]
    if ranks > 1:
        asan = ":".join(filter(None, (os.environ.get("ASAN_OPTIONS"),
                                      "detect_leaks=0")))
        cmd = ["env", f"ASAN_OPTIONS={asan}", "mpirun", "-np", str(ranks)] + cmd
    out = run(cmd).stdout
    with open(log) as f:
        losses = [json.loads(line)["loss"] for line in f]
    return losses, out, saved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("root")
    ap.add_argument("--work")
    ap.add_argument("--quick", action="store_true",
                    help="the character LM only (the sanitizer round)")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    work = args.work or tempfile.mkdtemp(prefix="tessera-offload-optimizer-")
    os.makedirs(work, exist_ok=True)
    examples = os.path.join(args.root, "python", "tessera_examples")
    try:
        models = make_models(examples, work, args.quick)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"error: cannot make the models: {e}", file=sys.stderr)
        return 2
    data = os.path.join(work, "lm", "tokens.bin")
    run_bin = os.path.join(bin_dir, "tessera-run")
    base_losses = {}

    for model, path in models.items():
        plain_art = os.path.join(work, f"{model}-device")
        off_art = os.path.join(work, f"{model}-host")
        plain_report = compile_model(bin_dir, path, plain_art, False)
        off_report = compile_model(bin_dir, path, off_art, True)
        with open(os.path.join(off_art, "manifest.json")) as f:
            manifest = json.load(f)
        programs = {p["name"]: p.get("on_host", False)
                    for p in manifest["programs"]}
        check(programs == {"main": False, "host_update": True} and
              [c["program"] for c in manifest["schedule"]] ==
              ["main", "host_update"],
              f"{model}: the artifact runs @main on the device, then "
              f"@host_update on the host ({programs})")

        plain_losses, _, plain_saved = train(bin_dir, plain_art, data, work)
        base_losses[model] = plain_losses
        off_losses, out, off_saved = train(bin_dir, off_art, data, work)
        with open(plain_saved, "rb") as a, open(off_saved, "rb") as b:
            same_model = a.read() == b.read()
        check(off_losses == plain_losses and len(off_losses) == STEPS and
              same_model,
              f"{model}: 20 losses bitwise equal to the device update's "
              f"({off_losses[-1]}), and the trained model byte for byte")

        # The device pool: @main's footprint holds the run; without offload
        # the same pool is too small.
        device = totals(off_report)["main"]
        plain_total = totals(plain_report)["main"]
        _, fits, _ = train(bin_dir, off_art, data, work, device_memory=device)
        refused = run([run_bin, plain_art, "--train", "--data", data,
                       "--steps", "2", "--threads", "1", "--device-memory",
                       str(device)], expect_ok=False)
        print(f"{model}: device footprint {device} bytes with the update on "
              f"the host, {plain_total} on the device "
              f"({device / plain_total:.3f})")
        check(device < plain_total and "peak step memory" in fits and
              refused.returncode == 1 and
              "the device pool of %d bytes" % device in refused.stderr,
              f"{model}: the run fits a device pool of {device} bytes "
              f"(@main's footprint), which the device update "
              f"({plain_total} bytes) does not fit")

        # The host pool and the copies.
        host = totals(off_report)["host_update"]
        pool = re.search(r"optimizer on the host: (\d+) bytes of gradients to "
                         r"host memory and (\d+) bytes of parameters back a "
                         r"step, [0-9.]+ ms \(not overlapped\); host pool "
                         r"holds (\d+) bytes, peak (\d+)", out)
        summary = re.search(r"keeps (\d+) bytes of parameters and (\d+) bytes "
                            r"of optimizer state in host memory, and peaks at "
                            r"\d+ bytes there; a step copies (\d+) bytes of "
                            r"gradients to it", off_report)
        check(pool is not None and summary is not None and
              int(pool.group(4)) == host and
              int(pool.group(1)) == int(summary.group(3)) and
              int(pool.group(2)) == int(summary.group(1)),
              f"{model}: the host pool peaks at @host_update's footprint "
              f"({host} bytes; runtime: {pool and pool.group(4)}), and a step "
              f"copies the gradients down and the parameters up "
              f"({pool and pool.group(1)} and {pool and pool.group(2)} bytes)")

    # Under --memory-budget, --offload=auto moves the update to the host
    # when recomputing and offloading activations cannot meet the budget:
    # halfway between the smallest footprints without and with it.
    compile_bin = os.path.join(bin_dir, "tessera-compile")
    base = [compile_bin, models["charlm"], "--mode=train",
            "--loss=cross_entropy", "--logits=logits", f"--batch-size={BATCH}",
            "--optimizer=adam", "--lr=3e-3", "-o", os.path.join(work, "x")]
    refused = run(base + ["--memory-budget=1"], expect_ok=False)
    hosted_error = re.search(r"error: the step needs at least (\d+) bytes",
                             refused.stderr)
    without = re.search(r"note: with the optimizer's update and state on the "
                        r"host \(ZeRO-Offload; (\d+) bytes without\)",
                        refused.stderr)
    explicit = run(base + ["--memory-budget=1", "--offload-optimizer"],
                   expect_ok=False)
    smallest = {"host": int(hosted_error.group(1)) if hosted_error else None,
                "device": int(without.group(1)) if without else None}
    check(None not in smallest.values() and
          smallest["host"] < smallest["device"] and
          refused.returncode == 1 and
          f"at least {smallest['host']} bytes" in explicit.stderr,
          f"charlm: an infeasible budget names the smallest footprint, "
          f"{smallest['host']} bytes with the update on the host (as "
          f"--offload-optimizer says), {smallest['device']} without")
    if None in smallest.values():
        return finish("offload_optimizer_test.py")
    budget = (smallest["host"] + smallest["device"]) // 2
    auto_art = os.path.join(work, "charlm-auto")
    report = run(base[:-2] + [f"--memory-budget={budget}", "--report", "-o",
                              auto_art]).stderr
    with open(os.path.join(auto_art, "manifest.json")) as f:
        hosted = any(p.get("on_host") for p in json.load(f)["programs"])
    auto_losses, _, _ = train(bin_dir, auto_art, data, work,
                              device_memory=budget)
    check("the optimizer's update and state move to the host" in report and
          hosted and auto_losses == base_losses["charlm"],
          f"charlm --memory-budget={budget}: the update moves to the host, the "
          f"run fits a device pool of that size, and its 20 losses are the "
          f"device update's")

    # Data parallelism: each rank reduces the gradients on the device, then
    # updates on the host its replica (ZeRO-0) or its shard (ZeRO 2 and 3:
    # it copies its shard of the gradients, half of them, down).
    for zero in (0, 2, 3):
        mesh = ("--mesh", "dp=2", f"--zero={zero}")
        names = [f"dp2-zero{zero}-{side}" for side in ("device", "host")]
        for name, offload in zip(names, (False, True)):
            report = compile_model(bin_dir, models["charlm"],
                                   os.path.join(work, name), offload, mesh)
        values = int(re.search(r"training \d+ parameters \((\d+) values\)",
                               report).group(1))
        dp_plain, _, _ = train(bin_dir, os.path.join(work, names[0]), data,
                               work, ranks=2)
        dp_host, out, _ = train(bin_dir, os.path.join(work, names[1]), data,
                                work, ranks=2)
        moved = re.search(r"optimizer on the host: (\d+) bytes of gradients",
                          out)
        expected = 4 * values // (2 if zero >= 2 else 1)  # f32 gradients
        check(dp_host == dp_plain and len(dp_host) == STEPS and
              moved is not None and int(moved.group(1)) == expected,
              f"charlm dp=2 ZeRO-{zero}: 20 losses bitwise equal to the "
              f"device update's ({dp_host[-1] if dp_host else None}), "
              f"{moved and moved.group(1)} bytes of gradients down a step "
              f"(expected {expected})")
    return finish("offload_optimizer_test.py")


if __name__ == "__main__":
    sys.exit(main())
