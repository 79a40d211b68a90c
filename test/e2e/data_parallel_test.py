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
3. Checkpoints: the single run and a dp=2 ZeRO-2 run, each checkpointed at
   step 10 and resumed from there, give steps 11-20 bit for bit (the %.9g
   float32 losses are equal strings), and end in the same state bit for
   bit: their step-20 checkpoints hold the same bytes for every parameter
   and every optimizer state tensor (read back through the checkpoint's
   manifest, padding dropped; the state moved since step 10), and
   --save-onnx writes the same file. A dp=4 ZeRO-3 checkpoint resumed on 2
   ranks with ZeRO-1 gives the single run's losses to 1e-5.
4. Failures: killing (SIGKILL) rank 1 of a 2-rank run mid-training ends the
   job within 60 s with a message naming rank 1; stopping it (SIGSTOP) with
   --comm-timeout 5 ends it within 60 s naming rank 1 and the collective;
   tessera-run refuses, with a non-zero exit, its error message and the
   checkpoint's files unchanged, a truncated checkpoint shard (naming the
   file), a checkpoint of another model (a 2-layer LM: the fingerprint
   differs, and the message names the second layer's tensors as the
   artifact's alone), and one of another global batch (the same model at global
   batch 32 on 2 ranks: the data position does not fit).

Usage: data_parallel_test.py BUILD_DIR REPO_ROOT [--work DIR]
"""

import argparse
import concurrent.futures
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import onnx

from checks import check, finish

for key, value in (("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                   ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
                   ("OMPI_MCA_rmaps_base_oversubscribe", "1")):
    os.environ.setdefault(key, value)

BATCH, STEPS, RTOL = 16, 20, 1e-5


def mpirun(ranks):
    """The launcher of `ranks` processes. They host OpenMPI, whose own
    allocations LeakSanitizer reports as leaks: in an ASan build they run
    without leak checking; every other tool this test runs keeps it."""
    asan = ":".join(filter(None, (os.environ.get("ASAN_OPTIONS"), "detect_leaks=0")))
    return ["env", f"ASAN_OPTIONS={asan}", "mpirun", "-np", str(ranks)]


def compile_artifact(bin_dir, model, out, *flags):
    """A training step of `model` with Adam; global batch BATCH unless
    `flags` give --batch-size."""
    batch = [] if any(f.startswith("--batch-size") for f in flags) else [f"--batch-size={BATCH}"]
    cmd = [os.path.join(bin_dir, "tessera-compile"), model, "--mode=train",
           "--loss=cross_entropy", "--logits=logits", "--optimizer=adam",
           "--lr=3e-3", *batch, "-o", out, *flags]
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


def checkpoint_tensors(path):
    """name -> (dtype, global shape, bytes) of every tensor of the checkpoint
    at `path`, read back as docs/checkpoints.md lays it out: the manifest's
    pieces of a tensor, in rank order, concatenated, the padding of flat
    shards dropped."""
    with open(os.path.join(path, "manifest.json")) as f:
        manifest = json.load(f)
    tensors = {}
    for t in manifest["tensors"]:
        data = b""
        for piece in t["pieces"]:
            with open(os.path.join(path, piece["file"]), "rb") as f:
                f.seek(piece["offset"])
                data += f.read(piece["bytes"])
        size = t["pieces"][0]["bytes"] // t["local_elements"] if t["local_elements"] else 0
        tensors[t["name"]] = (t["dtype"], tuple(t["shape"]),
                              data[:math.prod(t["shape"]) * size])
    return tensors


def state_names(art):
    """The params and optimizer state of an artifact: what a checkpoint holds."""
    with open(os.path.join(art, "manifest.json")) as f:
        return {i["name"] for program in json.load(f)["programs"]
                for i in program["inputs"]
                if i.get("role") in ("param", "state")}


def check_same_state(what, art, ckpt, resumed_ckpt, start_ckpt, onnx_files):
    """The uninterrupted run's final checkpoint and the resumed run's hold
    the same bytes for every param and state of `art`; that state moved
    since `start_ckpt` (so the comparison is not of two untouched copies);
    and the two --save-onnx files are equal."""
    full, resumed = checkpoint_tensors(ckpt), checkpoint_tensors(resumed_ckpt)
    start = checkpoint_tensors(start_ckpt)
    names = state_names(art)
    differ = sorted(n for n in names & full.keys() & resumed.keys()
                    if full[n] != resumed[n])
    unmoved = sorted(n for n in names & full.keys() & start.keys()
                     if full[n] == start[n])
    complete = full.keys() == names and resumed.keys() == names
    check(complete and not differ and not unmoved,
          f"{what}: the step-20 checkpoints of the uninterrupted and the resumed "
          f"run hold the same bytes for all {len(names)} params and state "
          f"tensors (differing: {differ[:3]}; unchanged since step 10: {unmoved}; "
          f"names as in the artifact: {complete})")
    a, b = (open(p, "rb").read() for p in onnx_files)
    check(a == b, f"{what}: --save-onnx after the resumed run writes the file "
          f"of the uninterrupted run ({len(a)} and {len(b)} bytes)")


def files_of(directory):
    return {n: open(os.path.join(directory, n), "rb").read()
            for n in os.listdir(directory)}


def check_refused(what, cmd, ckpt, expected):
    """`cmd` (a --resume of `ckpt`) exits non-zero with an error line that
    contains every string of `expected`, and leaves `ckpt` unchanged."""
    before = files_of(ckpt)
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    errors = [l for l in run.stderr.splitlines()
              if "error:" in l and all(e in l for e in expected)]
    check(run.returncode != 0 and errors and files_of(ckpt) == before,
          f"{what} is refused (exit {run.returncode}) and nothing is "
          f"overwritten: {errors[:1] or run.stderr.strip().splitlines()[-1:]}")


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


def signal_rank(cmd, logs, rank, sig):
    """Starts `cmd` (a long mpirun of tessera-run with --log-dir `logs`),
    sends `sig` to `rank` after step 3, and returns (seconds until every
    process ended or None, return code, output)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    deadline = time.time() + 120
    rank0 = os.path.join(logs, "rank-0.log")
    while time.time() < deadline:
        if os.path.exists(rank0) and "step 3/" in open(rank0).read():
            break
        time.sleep(0.1)
    pid = rank_pids(proc.pid).get(rank)
    if pid is None:
        proc.kill()
        return None, None, f"rank {rank} not found among mpirun's children"
    os.kill(pid, sig)
    start = time.time()
    try:
        output, _ = proc.communicate(timeout=90)
        elapsed = time.time() - start
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        elapsed = None
    if sig == signal.SIGSTOP:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return elapsed, proc.returncode, output


def failing_run(bin_dir, art, work, sig, *flags):
    """A long 2-rank run with `sig` sent to rank 1 after step 3
    (signal_rank)."""
    logs = os.path.join(work, f"logs-{sig}")
    cmd = mpirun(2) + [os.path.join(bin_dir, "tessera-run"), art,
           "--train", "--data", DATA, "--steps", "1000000", "--threads", "1",
           "--log-dir", logs, *flags]
    return signal_rank(cmd, logs, 1, sig)


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
    # Refused checkpoints: the same model at another global batch, and
    # another model.
    jobs["dp2batch32"] = ("--mesh", "dp=2", "--batch-size=32")
    models = dict.fromkeys(jobs, model)
    subprocess.run([sys.executable, gen, "--out", os.path.join(work, "lm2"),
                    "--seq", "32", "--batch", str(BATCH), "--layers", "2",
                    "--no-verify"], check=True, stdout=subprocess.DEVNULL)
    jobs["other-model"] = ()
    models["other-model"] = os.path.join(work, "lm2", "charlm.onnx")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        arts = dict(zip(jobs, pool.map(
            lambda name: compile_artifact(bin_dir, models[name], os.path.join(work, name),
                                          *jobs[name]), jobs)))

    single_log = os.path.join(work, "single.json")
    single_ckpt = os.path.join(work, "single-ckpt")
    train(bin_dir, arts["single"], 0, single_log, "--checkpoint-dir", single_ckpt,
          "--checkpoint-every", "10", "--save-onnx", os.path.join(work, "single.onnx"))
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
            # Then each rank's own step peak (--memory-report).
            check(len(reports) == ranks and all(
                      re.fullmatch(r"memory rank \d+ of \d+: " + re.escape(want)
                                   + r", step peak \d+ bytes", r)
                      for r in reports),
                  f"mpirun -np {ranks} ZeRO-{zero}: every rank holds {want}"
                  + ("" if reports and want in reports[0]
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

    # 3: checkpoint at step 10, resume, compare the losses and the final
    # state; then change the dp size.
    ckpt = os.path.join(work, "ckpt")
    full_log = os.path.join(work, "full.json")
    train(bin_dir, arts["dp2z2"], 2, full_log, "--checkpoint-dir", ckpt,
          "--checkpoint-every", "10", "--save-onnx", os.path.join(work, "full.onnx"))
    for what, art, ranks, full_log, ckpt_dir in (
            ("single process", arts["single"], 0, single_log, single_ckpt),
            ("dp=2 ZeRO-2", arts["dp2z2"], 2, full_log, ckpt)):
        tag = f"resumed{ranks}"
        resumed_log = os.path.join(work, tag + ".json")
        resumed_ckpt = os.path.join(work, tag + "-ckpt")
        start = os.path.join(ckpt_dir, "step-00000010")
        train(bin_dir, art, ranks, resumed_log, "--resume", start,
              "--checkpoint-dir", resumed_ckpt,
              "--save-onnx", os.path.join(work, tag + ".onnx"))
        full, resumed = losses(full_log), losses(resumed_log)
        check(sorted(resumed) == list(range(11, STEPS + 1)) and
              all(resumed[s] == full[s] for s in resumed),
              f"{what}: steps 11-20 after resuming the step-10 checkpoint are "
              "bitwise those of the uninterrupted run")
        onnx_files = [os.path.join(work, ("single" if ranks == 0 else "full") + ".onnx"),
                      os.path.join(work, tag + ".onnx")]
        check_same_state(what, art, os.path.join(ckpt_dir, "step-00000020"),
                         os.path.join(resumed_ckpt, "step-00000020"), start,
                         onnx_files)

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

    run_tool = os.path.join(bin_dir, "tessera-run")

    def resume_cmd(art, ranks, checkpoint):
        cmd = [run_tool, art, "--train", "--data", DATA, "--steps", "20",
               "--resume", checkpoint]
        return mpirun(ranks) + cmd if ranks else cmd

    step10 = os.path.join(ckpt, "step-00000010")
    truncated = os.path.join(work, "truncated")
    shutil.copytree(step10, truncated)
    shard = os.path.join(truncated, "shard-00001-of-00002.bin")
    with open(shard, "r+b") as f:
        f.truncate(os.path.getsize(shard) - 100)
    check_refused("a truncated shard", resume_cmd(arts["dp2z2"], 2, truncated),
                  truncated, ["shard-00001-of-00002.bin", "truncated"])
    check_refused("a checkpoint of another model (2 layers)",
                  resume_cmd(arts["other-model"], 0, step10), step10,
                  ["--resume:", "was written for another model or optimizer",
                   "tensors only in the artifact: ", "h1.", "fingerprint"])
    check_refused("a checkpoint of global batch 16 on 2 ranks of global batch 32",
                  resume_cmd(arts["dp2batch32"], 2, step10), step10,
                  ["--resume:", "global batch size 32",
                   "resume with the same global batch"])

    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return finish("data_parallel_test.py")


if __name__ == "__main__":
    sys.exit(main())
