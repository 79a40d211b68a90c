#!/usr/bin/env python3
"""Data-parallel training of the bundled character LM under mpirun (CPU).

The model: make_charlm.py with 1 layer, d_model 64, 4 heads, seq 32
(63168 parameters), global batch 16, Adam lr 3e-3, 20 steps on tokens.bin.
The oracle is the single-process run of the same global batch.

1. Losses: for N in 1, 2, 4 ranks and ZeRO 0, 1, 2, 3 (`--mesh dp=N
   --zero=K`), every step's loss (rank 0's --log-json, the mean over the
   global batch) equals the single run's to 1e-5 relative. The programs
   differ only in float32 summation order (each rank means its 16/N rows,
   then the ranks' means are averaged, gradients likewise), a few ulps per
   step that 20 Adam steps carry along: measured worst about 1e-6. Also 2 ranks
   with ZeRO-2 and 20 KiB buckets, so that several reduce-scatters are in
   flight during the backward pass; 2 ranks with ZeRO-3 and 2
   micro-batches each (gradient accumulation before the reduction); and 4
   ranks with ZeRO-2 and --ignore-index=3 (the space character), whose
   oracle is the single run ignoring the same label: each rank's mean
   counts a different number of labels, and the ranks are weighted by
   their counts.
2. Memory: every rank's --memory-report equals the ZeRO paper's per-rank
   bytes with fp32 Adam, Psi_i the elements of parameter i and
   c_i = ceil(Psi_i / N): parameters 4 sum(Psi_i) (ZeRO-3: 4 sum(c_i));
   gradients 4 sum(Psi_i) (ZeRO 2 and 3: 4 sum(c_i)); optimizer state
   8 sum(Psi_i) (ZeRO >= 1: 8 sum(c_i)) plus the 8-byte step counter. The
   sizes come from the ONNX initializers, read here independently.
3. Checkpoints: a dp=2 ZeRO-2 run checkpointed at step 10 and resumed gives
   steps 11-20 bit for bit (the %.9g float32 losses are equal strings); a
   dp=4 ZeRO-3 checkpoint resumed on 2 ranks with ZeRO-1 gives the single
   run's losses to 1e-5.
4. Failures: killing (SIGKILL) rank 1 of a 2-rank run mid-training ends the
   job within 60 s with a message naming rank 1; stopping it (SIGSTOP) with
   --comm-timeout 5 ends it within 60 s naming rank 1 and the collective; a
   truncated checkpoint shard is refused with an error naming the file, and
   the checkpoint's files are unchanged.

Usage: data_parallel_test.py BUILD_DIR REPO_ROOT [--work DIR]
"""

import argparse
import concurrent.futures
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import onnx

for key, value in (("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                   ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
                   ("OMPI_MCA_rmaps_base_oversubscribe", "1")):
    os.environ.setdefault(key, value)

BATCH, STEPS, RTOL = 16, 20, 1e-5
failures = []


def check(ok, message):
    print(("PASS " if ok else "FAIL ") + message, flush=True)
    if not ok:
        failures.append(message)


def mpirun(ranks):
    """The launcher of `ranks` processes. They host OpenMPI, whose own
    allocations LeakSanitizer reports as leaks: in an ASan build they run
    without leak checking; every other tool this test runs keeps it."""
    asan = ":".join(filter(None, (os.environ.get("ASAN_OPTIONS"), "detect_leaks=0")))
    return ["env", f"ASAN_OPTIONS={asan}", "mpirun", "-np", str(ranks)]


def compile_artifact(bin_dir, model, out, *flags):
    cmd = [os.path.join(bin_dir, "tessera-compile"), model, "--mode=train",
           "--loss=cross_entropy", "--logits=logits", "--optimizer=adam",
           "--lr=3e-3", f"--batch-size={BATCH}", "-o", out, *flags]
    subprocess.run(cmd, check=True)
    return out


def train(bin_dir, art, ranks, log, *flags, timeout=300):
    cmd = [os.path.join(bin_dir, "tessera-run"), art, "--train", "--data",
           DATA, "--steps", str(STEPS), "--threads", "1", "--log-json", log,
           *flags]
    if ranks:
        cmd = mpirun(ranks) + cmd
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        sys.stderr.write(run.stdout + run.stderr)
        raise RuntimeError(f"{' '.join(cmd)} exited {run.returncode}")
    return run.stdout


def losses(log):
    """Step -> the loss string exactly as logged (%.9g of a float32)."""
    with open(log) as f:
        return {e["step"]: e["loss"] for e in map(json.loads, f)}


def worst_relative(a, b, steps):
    return max(abs(a[s] - b[s]) / abs(b[s]) for s in steps)


def rank_pids(mpirun_pid):
    """rank -> pid of the tessera-run processes mpirun started."""
    out = subprocess.run(["pgrep", "-P", str(mpirun_pid)], capture_output=True,
                         text=True).stdout.split()
    pids = {}
    for pid in out:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
        except OSError:
            continue
        if b"OMPI_COMM_WORLD_RANK" in env:
            pids[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(pid)
    return pids


def failing_run(bin_dir, art, work, sig, *flags):
    """Starts a long 2-rank run, sends `sig` to rank 1 after step 3, and
    returns (seconds until every process ended, return code, output)."""
    logs = os.path.join(work, f"logs-{sig}")
    cmd = mpirun(2) + [os.path.join(bin_dir, "tessera-run"), art,
           "--train", "--data", DATA, "--steps", "1000000", "--threads", "1",
           "--log-dir", logs, *flags]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    deadline = time.time() + 120
    rank0 = os.path.join(logs, "rank-0.log")
    while time.time() < deadline:
        if os.path.exists(rank0) and "step 3/" in open(rank0).read():
            break
        time.sleep(0.1)
    pids = rank_pids(proc.pid)
    if 1 not in pids:
        proc.kill()
        return None, None, "rank 1 not found among mpirun's children"
    os.kill(pids[1], sig)
    start = time.time()
    try:
        output, _ = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        if sig == signal.SIGSTOP:
            os.kill(pids[1], signal.SIGKILL)
        output, _ = proc.communicate()
        return None, None, output
    elapsed = time.time() - start
    if sig == signal.SIGSTOP:
        try:
            os.kill(pids[1], signal.SIGKILL)
        except ProcessLookupError:
            pass
    return elapsed, proc.returncode, output


def formula_bytes(model_path, ranks, zero):
    params = [math.prod(t.dims) for t in onnx.load(model_path).graph.initializer
              if t.data_type == onnx.TensorProto.FLOAT]
    full = sum(params)
    shard = sum(-(-n // ranks) for n in params)
    return {"params": 4 * (shard if zero >= 3 else full),
            "gradients": 4 * (shard if zero >= 2 else full),
            "optimizer state": 8 * (shard if zero >= 1 else full) + 8}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("root")
    ap.add_argument("--work")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    work = args.work or tempfile.mkdtemp(prefix="tessera-dp-")
    os.makedirs(work, exist_ok=True)
    global DATA
    gen = os.path.join(args.root, "python", "tessera_examples", "make_charlm.py")
    subprocess.run([sys.executable, gen, "--out", os.path.join(work, "lm"),
                    "--seq", "32", "--batch", str(BATCH), "--layers", "1",
                    "--no-verify"], check=True, stdout=subprocess.DEVNULL)
    model = os.path.join(work, "lm", "charlm.onnx")
    DATA = os.path.join(work, "lm", "tokens.bin")

    # The single-process oracle and the 12 per-rank programs, compiled two
    # at a time.
    jobs = {"single": ()}
    for ranks in (1, 2, 4):
        for zero in range(4):
            jobs[f"dp{ranks}z{zero}"] = ("--mesh", f"dp={ranks}", f"--zero={zero}")
    # Small buckets: several reduce-scatters in flight during the backward.
    jobs["dp2z2small"] = ("--mesh", "dp=2", "--zero=2", "--bucket-mb=0.02")
    # Gradient accumulation inside each rank: 2 micro-batches of 4 rows.
    jobs["dp2z3micro"] = ("--mesh", "dp=2", "--zero=3", "--micro-batches=2")
    # Ignoring the space character's label (id 3): every rank counts a
    # different number of labels.
    jobs["single-ignore"] = ("--ignore-index=3",)
    jobs["dp4z2ignore"] = ("--ignore-index=3", "--mesh", "dp=4", "--zero=2")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        arts = dict(zip(jobs, pool.map(
            lambda name: compile_artifact(bin_dir, model, os.path.join(work, name),
                                          *jobs[name]), jobs)))

    single_log = os.path.join(work, "single.json")
    train(bin_dir, arts["single"], 0, single_log)
    single = {s: float(v) for s, v in losses(single_log).items()}
    steps = range(1, STEPS + 1)
    check(len(single) == STEPS and single[STEPS] < single[1],
          f"single run trains: loss {single[1]:.4f} -> {single[STEPS]:.4f}")

    # 1 and 2: losses and per-rank bytes.
    for ranks in (1, 2, 4):
        for zero in range(4):
            name = f"dp{ranks}z{zero}"
            log = os.path.join(work, name + ".json")
            out = train(bin_dir, arts[name], ranks, log, "--memory-report")
            got = {s: float(v) for s, v in losses(log).items()}
            worst = worst_relative(got, single, steps) if len(got) == STEPS else math.inf
            check(worst <= RTOL, f"mpirun -np {ranks} ZeRO-{zero}: 20 losses match "
                  f"the single run, worst relative difference {worst:.2e}")
            expected = formula_bytes(model, ranks, zero)
            reports = [l for l in out.splitlines() if l.startswith("memory rank")]
            want = (f"params {expected['params']} bytes, gradients "
                    f"{expected['gradients']} bytes, optimizer state "
                    f"{expected['optimizer state']} bytes")
            check(len(reports) == ranks and all(r.endswith(want) for r in reports),
                  f"mpirun -np {ranks} ZeRO-{zero}: every rank holds {want}"
                  + ("" if reports and reports[0].endswith(want)
                     else f" (got: {reports[:1]})"))

    log = os.path.join(work, "small.json")
    train(bin_dir, arts["dp2z2small"], 2, log)
    got = {s: float(v) for s, v in losses(log).items()}
    worst = worst_relative(got, single, steps) if len(got) == STEPS else math.inf
    with open(os.path.join(arts["dp2z2small"], "manifest.json")) as f:
        buckets = {c.get("bucket") for c in json.load(f)["collectives"]} - {None}
    check(worst <= RTOL and len(buckets) >= 5,
          f"mpirun -np 2 ZeRO-2 with {len(buckets)} buckets in flight: losses "
          f"match the single run, worst {worst:.2e}")

    log = os.path.join(work, "micro.json")
    train(bin_dir, arts["dp2z3micro"], 2, log)
    got = {s: float(v) for s, v in losses(log).items()}
    worst = worst_relative(got, single, steps) if len(got) == STEPS else math.inf
    check(worst <= RTOL, f"mpirun -np 2 ZeRO-3 with 2 micro-batches per rank: "
          f"losses match the single run, worst {worst:.2e}")

    log = os.path.join(work, "single-ignore.json")
    train(bin_dir, arts["single-ignore"], 0, log)
    oracle = {s: float(v) for s, v in losses(log).items()}
    log = os.path.join(work, "ignore.json")
    train(bin_dir, arts["dp4z2ignore"], 4, log)
    got = {s: float(v) for s, v in losses(log).items()}
    worst = worst_relative(got, oracle, steps) if len(got) == STEPS else math.inf
    check(worst <= RTOL, f"mpirun -np 4 ZeRO-2 ignoring label 3: losses match "
          f"the single run ignoring it, worst {worst:.2e}")

    # 3: checkpoint at step 10, resume; then change the dp size.
    ckpt = os.path.join(work, "ckpt")
    full_log = os.path.join(work, "full.json")
    train(bin_dir, arts["dp2z2"], 2, full_log, "--checkpoint-dir", ckpt,
          "--checkpoint-every", "10")
    resumed_log = os.path.join(work, "resumed.json")
    train(bin_dir, arts["dp2z2"], 2, resumed_log, "--resume",
          os.path.join(ckpt, "step-00000010"))
    full, resumed = losses(full_log), losses(resumed_log)
    check(sorted(resumed) == list(range(11, STEPS + 1)) and
          all(resumed[s] == full[s] for s in resumed),
          "dp=2 ZeRO-2: steps 11-20 after resuming the step-10 checkpoint are "
          "bitwise those of the uninterrupted run")

    ckpt4 = os.path.join(work, "ckpt4")
    train(bin_dir, arts["dp4z3"], 4, os.path.join(work, "dp4.json"),
          "--checkpoint-dir", ckpt4, "--checkpoint-every", "10")
    reshard_log = os.path.join(work, "reshard.json")
    train(bin_dir, arts["dp2z1"], 2, reshard_log, "--resume",
          os.path.join(ckpt4, "step-00000010"))
    reshard = {s: float(v) for s, v in losses(reshard_log).items()}
    worst = worst_relative(reshard, single, range(11, STEPS + 1)) \
        if sorted(reshard) == list(range(11, STEPS + 1)) else math.inf
    check(worst <= RTOL, f"a dp=4 ZeRO-3 checkpoint resumed on 2 ranks with "
          f"ZeRO-1: steps 11-20 match the single run, worst {worst:.2e}")

    # 4: failures.
    elapsed, code, output = failing_run(bin_dir, arts["dp2z3"], work, signal.SIGKILL)
    check(elapsed is not None and elapsed < 60 and code != 0 and
          "process rank 1" in output,
          f"SIGKILL of rank 1: every rank ended in {elapsed and round(elapsed, 1)} s, "
          f"exit {code}, mpirun names rank 1")
    elapsed, code, output = failing_run(bin_dir, arts["dp2z3"], work, signal.SIGSTOP,
                                        "--comm-timeout", "5")
    named = [l for l in output.splitlines() if "never arrived" in l]
    check(elapsed is not None and elapsed < 60 and code != 0 and
          any("rank 1 never arrived" in l and "#" in l for l in named),
          f"SIGSTOP of rank 1: every rank ended in {elapsed and round(elapsed, 1)} s, "
          f"exit {code}: {named[:1]}")

    truncated = os.path.join(work, "truncated")
    shutil.copytree(os.path.join(ckpt, "step-00000010"), truncated)
    shard = os.path.join(truncated, "shard-00001-of-00002.bin")
    with open(shard, "r+b") as f:
        f.truncate(os.path.getsize(shard) - 100)
    before = {n: open(os.path.join(truncated, n), "rb").read()
              for n in os.listdir(truncated)}
    run = subprocess.run(mpirun(2) + [os.path.join(bin_dir, "tessera-run"),
                          arts["dp2z2"], "--train", "--data", DATA, "--steps", "20",
                          "--resume", truncated],
                         capture_output=True, text=True, timeout=120)
    after = {n: open(os.path.join(truncated, n), "rb").read()
             for n in os.listdir(truncated)}
    errors = [l for l in run.stderr.splitlines() if "shard-00001-of-00002.bin" in l]
    check(run.returncode != 0 and errors and before == after,
          f"a truncated shard is refused (exit {run.returncode}) and nothing is "
          f"overwritten: {errors[:1]}")

    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print(f"data_parallel_test.py: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
