#!/usr/bin/env python3
"""Pipeline parallelism training the bundled language model: step time and
bubble per schedule, against one process in the same run, beside the
textbook and the cost model's bubble, and each stage's peak memory.

The model is python/tessera_examples/make_charlm.py (default: 4 layers,
d_model 256, 8 heads, sequence 64, global batch 16, Adam). Each
configuration is compiled with ``tessera-compile --mode=train --mesh pp=P
--schedule=S --micro-batches=M`` and trained for ``--steps`` steps with
``tessera-run --train --memory-report`` under ``mpirun -np P``; the step
time is rank 0's median after the first two steps.

The measured bubble is the fraction of a stage's step not spent on its
share of the work: 1 - (T1 / P) / T, with T1 the single process's step and
T the pipeline's (so it also counts the messages and the cost of splitting
the batch into micro-batches). The traced bubble comes from ``tessera-run
--trace``: per rank, the part of its last step's program call that none of
its schedule's actions (the cells' calls, kind "action") covers, averaged
over the ranks: waits for messages and the time between actions. The
textbook bubble of GPipe and 1F1B with equal stages is (P - 1) / (M + P -
1) (Narayanan et al., SC'21), the reference the other schedules improve
on; the predicted one is the simulation of the compiled schedule with the
cost model's time for each cell (the manifest's ``predicted_bubble``,
averaged over the stages). Peak memory is each stage's allocator peak for
one step (``memory rank R``), activations in flight included; the
activations column is the most bytes of its forward cells' results a stage
holds at once (the manifest's ``predicted_peak_activation_bytes``, from
the memory timeline whose total the allocator peak equals).

    .venv/bin/python bench/pipeline.py [--steps 12] [--layers 4]
        [--d-model 256] [--heads 8] [--seq 64] [--batch 16] [--threads 1]

Ranks share the machine's cores: on a 2-core machine, only pp=2 runs its
stages in parallel. Compare configurations by the ratio columns, within one
run.
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIGS = [
    ("1 process", 1, None, 1),
    ("pp2 gpipe M1", 2, "gpipe", 1),
    ("pp2 gpipe M2", 2, "gpipe", 2),
    ("pp2 gpipe M4", 2, "gpipe", 4),
    ("pp2 gpipe M8", 2, "gpipe", 8),
    ("pp2 1f1b M4", 2, "1f1b", 4),
    ("pp2 1f1b M8", 2, "1f1b", 8),
    ("pp2 interleaved M4", 2, "interleaved", 4),
    ("pp2 interleaved M8", 2, "interleaved", 8),
    ("pp2 zb-h1 M4", 2, "zb-h1", 4),
    ("pp2 zb-h1 M8", 2, "zb-h1", 8),
    ("pp2 zb-v M4", 2, "zb-v", 4),
    ("pp2 zb-v M8", 2, "zb-v", 8),
    ("pp2 v-half M8", 2, "v-half", 8),
    ("pp2 pipedream M4", 2, "pipedream", 4),
    ("pp2 pipedream M8", 2, "pipedream", 8),
    ("pp4 1f1b M8", 4, "1f1b", 8),
    ("pp4 zb-v M8", 4, "zb-v", 8),
]


def traced_bubble(trace_prefix, ranks):
    """The mean over ranks of the part of the last program call that no
    action of the schedule covers."""
    bubbles = []
    for r in range(ranks):
        events = json.loads(pathlib.Path(
            f"{trace_prefix}.rank{r}.json").read_text())["traceEvents"]
        calls = [e for e in events if e["cat"] == "program"]
        if not calls:
            return None
        last = calls[-1]
        start, end = last["ts"], last["ts"] + last["dur"]
        busy = sum(e["dur"] for e in events if e["cat"] == "action"
                   and start <= e["ts"] < end)
        bubbles.append(1 - busy / last["dur"])
    return statistics.mean(bubbles)


def run(cmd, **kw):
    done = subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, **kw)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} exited {done.returncode}:\n"
                 f"{done.stdout}{done.stderr}")
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.steps < 3:
        ap.error("--steps must be at least 3 (the first two are not timed)")
    bin_dir = pathlib.Path(args.build) / "bin"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        run([sys.executable, ROOT / "python/tessera_examples/make_charlm.py",
             "--out", tmp, "--layers", args.layers, "--d-model", args.d_model,
             "--heads", args.heads, "--seq", args.seq, "--batch", args.batch,
             "--no-verify"])
        config = json.loads((tmp / "charlm.json").read_text())
        model = tmp / "charlm.onnx"
        flags = ["--mode=train", "--loss=cross_entropy", "--logits=logits",
                 "--optimizer=adam", "--lr=3e-3", f"--batch-size={args.batch}"]
        rows = []
        for name, p, schedule, m in CONFIGS:
            art = tmp / re.sub(r"\W+", "_", name)
            extra = [] if schedule is None else [
                f"--mesh=pp={p}", f"--schedule={schedule}",
                f"--micro-batches={m}"]
            run([bin_dir / "tessera-compile", model, *flags, *extra, "-o",
                 art], env=env)
            manifest = json.loads((art / "manifest.json").read_text())
            predicted = [prog["pipeline"]["predicted_bubble"]
                         for prog in manifest["programs"] if "pipeline" in prog]
            activations = [
                prog["pipeline"]["predicted_peak_activation_bytes"]
                for prog in manifest["programs"] if "pipeline" in prog]
            log = tmp / (art.name + ".json")
            cmd = [bin_dir / "tessera-run", art, "--train", "--data",
                   tmp / "tokens.bin", "--steps", args.steps, "--threads",
                   args.threads, "--log-json", log, "--memory-report"]
            if p > 1:
                cmd = ["mpirun", "-np", p, *cmd]
            out = run(cmd, env=env).stdout
            peaks = {int(r): int(b) for r, b in re.findall(
                r"memory rank (\d+) of \d+: .*?step peak (\d+) bytes", out)}
            seconds = [json.loads(line)["seconds"]
                       for line in log.read_text().splitlines()]
            traced = None
            if p > 1:
                # A separate, short run: the trace's hooks cost time.
                trace = tmp / (art.name + ".trace")
                run(["mpirun", "-np", p, bin_dir / "tessera-run", art,
                     "--train", "--data", tmp / "tokens.bin", "--steps", 3,
                     "--threads", args.threads, "--trace", trace], env=env)
                traced = traced_bubble(trace, p)
            rows.append((name, p, m, statistics.median(seconds[2:]),
                         statistics.mean(predicted) if predicted else 0.0,
                         [peaks.get(r, 0) for r in range(p)], traced,
                         activations))
        base = rows[0]
        print(f"training the bundled LM ({args.layers} layers, d_model "
              f"{args.d_model}, {args.heads} heads, sequence {args.seq}, "
              f"{config['parameters']} parameters, global batch "
              f"{args.batch}, Adam); {args.steps} steps, rank 0's median "
              f"step after the first two, {args.threads} thread(s) per rank")
        print("| config | ranks | micro-batches | step ms | step / 1 process "
              "| measured bubble | traced bubble | 1F1B textbook "
              "(P-1)/(M+P-1) | predicted | peak step B per stage "
              "| activations B per stage |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
        for name, p, m, step, predicted, peaks, traced, acts in rows:
            if p == 1:
                bubble = textbook = tr = "-"
            else:
                bubble = f"{1 - (base[3] / p) / step:.2f}"
                textbook = f"{(p - 1) / (m + p - 1):.2f}"
                tr = "-" if traced is None else f"{traced:.2f}"
            print(f"| {name} | {p} | {m} | {1e3 * step:.1f} | "
                  f"{step / base[3]:.2f} | {bubble} | {tr} | {textbook} | "
                  f"{predicted:.2f} | {' / '.join(map(str, peaks))} | "
                  f"{' / '.join(map(str, acts)) or '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
