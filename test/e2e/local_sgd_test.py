#!/usr/bin/env python3
"""Local SGD on the data-parallel axis (--local-steps=H).

1. The step against NumPy. A least-squares model whose gradient depends on
   the parameters, so that ranks that update apart drift apart: loss =
   mean((x·W + b − y)²), W [8, 4], b [4], 48 samples, global batch 8.
   NumPy (float64) replays local SGD: every rank takes its rows of the
   batch, computes its gradient at its own parameters and applies its own
   update (SGD with momentum 0.9; Adam), and after every step that H
   divides, and after the run's last, the ranks' parameters and optimizer
   state become their mean. Runs: dp=2 H=3 with momentum and with Adam,
   dp=4 H=3 with momentum, dp=2 H=1 with momentum, each 7 steps (7 is no
   multiple of 3: the last step's average comes from the runtime's sync
   input). Checked against the replay: every step's logged loss (the mean
   of the ranks' own losses), the trained W and b (--save-onnx), and the
   checkpoint of step 6 (parameters and optimizer state, averaged).
   Tolerance 1e-5 relative: the program sums in float32 (a few ulps of
   values of order 1); averaging at the wrong step, or not averaging the
   optimizer state, errs by 1e-3 or more (the test checks that a replay
   that never averages, and one that averages only the parameters, differ
   from the reference by more than 100 times the tolerance).
2. Bytes: the manifest's `local_sgd` records H, the bytes of one average
   (a ring all-reduce of the parameters and the optimizer state,
   2(N−1)/N·4 bytes per float32 element) and what all-reducing the
   gradients sends every step (2(N−1)/N·4 per parameter element), both
   computed here from the ONNX initializers; the step program has exactly
   one all-reduce per bucket of the average besides the loss's.
3. Convergence: the character LM (1 layer, d_model 64, seq 32, global batch
   16) trained 760 steps with SGD (lr 0.3) under `mpirun -np 4`, with
   all-reduced gradients and with --local-steps=4: the mean loss of the
   last 76 steps (the same batches for both) within 5% of the all-reduce
   run's, both below the unigram entropy of the tokens.
4. Checkpoints: dp=2, Adam, H=5, 20 steps checkpointed at 10, and the same
   resumed from step 10: the same losses for steps 11-20 as logged
   strings, and the same bytes for every parameter and state at step 20.
5. Refusals: tessera-compile without a dp axis, with tp, ZeRO 1,
   --grad-compression, dynamic loss scaling, --mode=grad, --target=cuda
   and a negative H;
   tessera-run with a --checkpoint-every or --save-every that H does not
   divide (the ranks' parameters differ then), each with its message and
   a non-zero exit, nothing written.

Usage: local_sgd_test.py BUILD_DIR REPO_ROOT [--work DIR]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from checks import check, finish
from data_parallel_test import (check_same_state, checkpoint_tensors, losses,
                                mpirun)
from grad_compression_test import (expect_refused, manifest, run,
                                   unigram_entropy)

RTOL = 1e-5
IN, OUT, SAMPLES, GLOBAL, STEPS = 8, 4, 48, 8, 7
MOMENTUM, SGD_LR, ADAM_LR = 0.9, 0.05, 0.01
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8


# 1. The step against NumPy.

def make_regression(path, rng):
    """loss = mean((x·W + b − y)²) over the batch and the outputs."""
    w = (rng.standard_normal((IN, OUT)) * 0.5).astype(np.float32)
    b = (rng.standard_normal(OUT) * 0.5).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["pred"]),
        helper.make_node("Sub", ["pred", "y"], ["err"]),
        helper.make_node("Mul", ["err", "err"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "regression",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", IN]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", OUT])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]),
              path)
    return w, b


class Optimizer:
    """One rank's parameters and optimizer state, updated as tsr-optimizer
    does (SGD: buf = μ·buf + g, p −= lr·buf; Adam with bias correction)."""

    def __init__(self, kind, params):
        self.kind = kind
        self.params = {k: v.copy() for k, v in params.items()}
        self.state = {}
        for k, v in params.items():
            if kind == "sgd":
                self.state[f"sgd.momentum.{k}"] = np.zeros_like(v)
            else:
                self.state[f"adam.m.{k}"] = np.zeros_like(v)
                self.state[f"adam.v.{k}"] = np.zeros_like(v)

    def update(self, grads, t):
        for k, g in grads.items():
            if self.kind == "sgd":
                buf = MOMENTUM * self.state[f"sgd.momentum.{k}"] + g
                self.state[f"sgd.momentum.{k}"] = buf
                self.params[k] = self.params[k] - SGD_LR * buf
            else:
                m = BETA1 * self.state[f"adam.m.{k}"] + (1 - BETA1) * g
                v = BETA2 * self.state[f"adam.v.{k}"] + (1 - BETA2) * g * g
                self.state[f"adam.m.{k}"], self.state[f"adam.v.{k}"] = m, v
                step = (m / (1 - BETA1 ** t)) / (np.sqrt(v / (1 - BETA2 ** t)) + EPS)
                self.params[k] = self.params[k] - ADAM_LR * step


def replay(x, y, w, b, ranks, period, kind, average="all"):
    """Local SGD in float64: per step the logged loss, the ranks' mean
    parameters and state after every step, and after the run. `average`:
    "all" (the program's rule), "params" (the optimizer state kept per
    rank) or "none" (never averaged), the last two for the test's
    sensitivity check."""
    x, y = x.astype(np.float64), y.astype(np.float64)
    start = {"W": w.astype(np.float64), "b": b.astype(np.float64)}
    opts = [Optimizer(kind, start) for _ in range(ranks)]
    rows = GLOBAL // ranks
    step_losses, after = [], []
    for s in range(STEPS):
        batch = [(s * GLOBAL + i) % SAMPLES for i in range(GLOBAL)]
        local = []
        for r, opt in enumerate(opts):
            mine = batch[r * rows:(r + 1) * rows]
            err = x[mine] @ opt.params["W"] + opt.params["b"] - y[mine]
            local.append(np.mean(err * err))
            scale = 2.0 / err.size
            opt.update({"W": scale * x[mine].T @ err,
                        "b": scale * err.sum(axis=0)}, s + 1)
        step_losses.append(np.mean(local))
        if average != "none" and ((s + 1) % period == 0 or s + 1 == STEPS):
            kinds = ("params", "state") if average == "all" else ("params",)
            for kind_name in kinds:
                for k in getattr(opts[0], kind_name):
                    mean = np.mean([getattr(o, kind_name)[k] for o in opts], axis=0)
                    for o in opts:
                        getattr(o, kind_name)[k] = mean.copy()
        after.append({**{k: np.mean([o.params[k] for o in opts], axis=0)
                         for k in start},
                      **{k: np.mean([o.state[k] for o in opts], axis=0)
                         for k in opts[0].state}})
    return step_losses, after


def relative(got, want):
    return float(np.max(np.abs(np.asarray(got, np.float64) - want))
                 / max(np.max(np.abs(want)), 1e-30))


def operator_checks(bin_dir, work):
    rng = np.random.default_rng(11)
    model = os.path.join(work, "regression.onnx")
    w0, b0 = make_regression(model, rng)
    x = rng.standard_normal((SAMPLES, IN)).astype(np.float32)
    y = rng.standard_normal((SAMPLES, OUT)).astype(np.float32)
    data = os.path.join(work, "regression.npz")
    np.savez(data, x=x, y=y)
    cases = [(2, 3, "sgd"), (2, 3, "adam"), (4, 3, "sgd"), (2, 1, "sgd")]
    for ranks, period, kind in cases:
        name = f"reg-dp{ranks}-h{period}-{kind}"
        flags = ([f"--optimizer=sgd", f"--lr={SGD_LR}", f"--momentum={MOMENTUM}"]
                 if kind == "sgd" else ["--optimizer=adam", f"--lr={ADAM_LR}"])
        art = os.path.join(work, name)
        run([os.path.join(bin_dir, "tessera-compile"), model, "--mode=train",
             f"--batch-size={GLOBAL}", "--mesh", f"dp={ranks}",
             f"--local-steps={period}", *flags, "-o", art])
        log = os.path.join(work, name + ".json")
        ckpt = os.path.join(work, name + "-ckpt")
        onnx_out = os.path.join(work, name + ".onnx")
        every = period * (6 // period)
        run(mpirun(ranks) + [os.path.join(bin_dir, "tessera-run"), art, "--train",
                             "--data", data, "--steps", str(STEPS), "--threads", "1",
                             "--log-json", log, "--checkpoint-dir", ckpt,
                             "--checkpoint-every", str(every),
                             "--save-onnx", onnx_out])
        want, after = replay(x, y, w0, b0, ranks, period, kind)
        got = [float(l) for _, l in sorted(losses(log).items())]
        worst = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(got, want))
        check(len(got) == STEPS and worst <= RTOL,
              f"{name}: {len(got)} losses equal NumPy's local SGD "
              f"(worst {worst:.1e}, bound {RTOL:g})")
        # A replay that never averages, or keeps the optimizer state per
        # rank, must be told apart (H=1 averages everything every step).
        if period > 1:
            for wrong in ("none", "params"):
                other, other_after = replay(x, y, w0, b0, ranks, period, kind, wrong)
                gap = max(relative(other_after[-1][k], after[-1][k]) for k in ("W", "b"))
                gap = max(gap, max(abs(a - b) / abs(b) for a, b in zip(other, want)))
                check(gap > 100 * RTOL,
                      f"{name}: averaging '{wrong}' instead would miss by "
                      f"{gap:.1e} (> 100x the tolerance): the test can tell")
        trained = {t.name: numpy_helper.to_array(t)
                   for t in onnx.load(onnx_out).graph.initializer}
        err = max(relative(trained[k], after[-1][k]) for k in ("W", "b"))
        check(err <= RTOL, f"{name}: the trained W and b (after step {STEPS}'s "
              f"average) equal NumPy's (worst {err:.1e})")
        tensors = checkpoint_tensors(os.path.join(ckpt, f"step-{every:08d}"))
        errs = {}
        for k, want_value in after[every - 1].items():
            dtype, shape, raw = tensors.get(k, (None, None, b""))
            value = np.frombuffer(raw, np.float32).reshape(shape or (0,))
            errs[k] = (relative(value, want_value)
                       if value.shape == want_value.shape else float("inf"))
        check(errs and max(errs.values()) <= RTOL,
              f"{name}: the checkpoint of step {every} holds the averaged "
              f"{', '.join(sorted(errs))} (worst {max(errs.values()):.1e})")
        if (ranks, period) in ((2, 3), (4, 3)):
            bytes_checks(art, model, ranks, period, 2 if kind == "adam" else 1,
                         list(after[-1]))
    return model


# 2. Bytes.

def bytes_checks(art, model, ranks, period, state_per_param, names):
    sizes = [int(np.prod(i.dims)) for i in onnx.load(model).graph.initializer]
    ring = 2 * (ranks - 1) / ranks * 4
    average = ring * sum(sizes) * (1 + state_per_param)
    gradient = ring * sum(sizes)
    m = manifest(art)
    stats = m.get("local_sgd", {})
    check(stats.get("steps") == period
          and abs(stats.get("average_bytes", -1) - average) <= 1
          and abs(stats.get("gradient_bytes", -1) - gradient) <= 1,
          f"manifest, dp={ranks} H={period}: one average sends "
          f"{stats.get('average_bytes')} bytes per rank (formula {average:.0f}: "
          f"parameters and {state_per_param} state per parameter), all-reducing "
          f"the gradients {stats.get('gradient_bytes')} per step "
          f"(formula {gradient:.0f})")
    kinds = [(c["kind"], sorted(c["serves"])) for c in m["collectives"]]
    averaged = sorted(names)
    check(kinds == [("all_reduce", ["loss"]), ("all_reduce", averaged)],
          f"manifest, dp={ranks} H={period}: the loss's all-reduce and one "
          f"bucket of the average ({', '.join(averaged)}), no gradient "
          f"collective ({kinds})")


# 3. Convergence on the character LM.

LM_BATCH, LONG_STEPS, SHORT_STEPS = 16, 760, 20


def lm_checks(bin_dir, root, work, quick):
    gen = os.path.join(root, "python", "tessera_examples", "make_charlm.py")
    run([sys.executable, gen, "--out", os.path.join(work, "lm"), "--seq", "32",
         "--batch", str(LM_BATCH), "--layers", "1", "--no-verify"])
    model = os.path.join(work, "lm", "charlm.onnx")
    data = os.path.join(work, "lm", "tokens.bin")

    def compile_lm(name, *flags):
        art = os.path.join(work, name)
        run([os.path.join(bin_dir, "tessera-compile"), model, "--mode=train",
             "--loss=cross_entropy", "--logits=logits",
             f"--batch-size={LM_BATCH}", "-o", art, *flags])
        return art

    def train(art, ranks, steps, log, *flags):
        run(mpirun(ranks) + [os.path.join(bin_dir, "tessera-run"), art, "--train",
                             "--data", data, "--steps", str(steps),
                             "--threads", "1", "--log-json", log, *flags])
        return [float(l) for _, l in sorted(losses(log).items())]

    sgd = ("--optimizer=sgd", "--lr=0.3")
    arts = {name: compile_lm(name, "--mesh", "dp=4", *sgd, *flags)
            for name, flags in (("allreduce4", ()),
                                ("local4", ("--local-steps=4",)))}
    if quick:
        print(f"--quick: the {LONG_STEPS}-step convergence runs are left out")
    else:
        tails = {name: float(np.mean(train(art, 4, LONG_STEPS, os.path.join(
            work, name + ".json"))[-LONG_STEPS // 10:]))
            for name, art in arts.items()}
        unigram = unigram_entropy(data)
        ratio = tails["local4"] / tails["allreduce4"]
        check(abs(ratio - 1) <= 0.05 and max(tails.values()) < unigram,
              f"mpirun -np 4, SGD, {LONG_STEPS} steps: --local-steps=4 ends at a "
              f"mean loss of {tails['local4']:.4f} over the last {LONG_STEPS // 10} "
              f"steps against {tails['allreduce4']:.4f} with all-reduced gradients "
              f"({(ratio - 1) * 100:+.1f}%, bound 5%), both below the tokens' "
              f"unigram entropy {unigram:.4f}")

    # 4. A checkpoint resumes bit for bit.
    art = compile_lm("local2-adam", "--mesh", "dp=2", "--optimizer=adam",
                     "--lr=3e-3", "--local-steps=5")
    full_ckpt = os.path.join(work, "full-ckpt")
    full_onnx = os.path.join(work, "full.onnx")
    train(art, 2, SHORT_STEPS, os.path.join(work, "full.json"),
          "--checkpoint-dir", full_ckpt, "--checkpoint-every", "10",
          "--save-onnx", full_onnx)
    res_ckpt = os.path.join(work, "resumed-ckpt")
    res_onnx = os.path.join(work, "resumed.onnx")
    train(art, 2, SHORT_STEPS, os.path.join(work, "resumed.json"),
          "--resume", os.path.join(full_ckpt, "step-00000010"),
          "--checkpoint-dir", res_ckpt, "--save-onnx", res_onnx)
    full = losses(os.path.join(work, "full.json"))
    resumed = losses(os.path.join(work, "resumed.json"))
    check(len(resumed) == 10
          and all(full.get(s) == resumed.get(s) for s in range(11, SHORT_STEPS + 1)),
          "dp=2 Adam --local-steps=5 resumed from step 10: steps 11-20 log "
          "the uninterrupted run's losses bit for bit")
    check_same_state("dp=2 --local-steps=5", art,
                     os.path.join(full_ckpt, f"step-{SHORT_STEPS:08d}"),
                     os.path.join(res_ckpt, f"step-{SHORT_STEPS:08d}"),
                     os.path.join(full_ckpt, "step-00000010"),
                     (full_onnx, res_onnx))
    return model, data, art


# 5. Refusals.

def refusal_checks(bin_dir, model, data, art, work):
    base = [os.path.join(bin_dir, "tessera-compile"), model, "--mode=train",
            "--loss=cross_entropy", "--logits=logits", f"--batch-size={LM_BATCH}",
            "-o", os.path.join(work, "refused")]
    cases = [
        (["--local-steps=4"], "needs --mesh dp=N"),
        (["--mesh", "dp=2,tp=2", "--local-steps=4"], "alone so far"),
        (["--mesh", "dp=2", "--zero=1", "--local-steps=4"], "needs --zero=0"),
        (["--mesh", "dp=2", "--grad-compression=topk:0.01", "--local-steps=4"],
         "does not go with --grad-compression"),
        (["--mesh", "dp=2", "--precision=fp16", "--local-steps=4"],
         "dynamic loss scaling"),
        (["--mesh", "dp=2", "--local-steps=-1"], "is negative"),
        (["--mesh", "dp=2", "--target=cuda", "--local-steps=4"],
         "not supported with --target=cuda yet"),
    ]
    expect_refused(base, cases, os.path.join(work, "refused"))
    expect_refused([a for a in base if a != "--mode=train"],
                   [(["--mode=grad", "--mesh", "dp=2", "--local-steps=4"],
                     "needs --mode=train")],
                   os.path.join(work, "refused"))
    for flag in ("--checkpoint-every", "--save-every"):
        out = os.path.join(work, "refused-run")
        extra = (["--checkpoint-dir", out] if flag == "--checkpoint-every"
                 else ["--save-onnx", out + ".onnx"])
        result = subprocess.run(
            mpirun(2) + [os.path.join(bin_dir, "tessera-run"), art, "--train",
                         "--data", data, "--steps", "10", "--threads", "1",
                         flag, "7", *extra],
            capture_output=True, text=True, timeout=300)
        check(result.returncode != 0
              and "is not a multiple of the artifact's local SGD period 5"
              in result.stderr
              and not os.path.exists(out) and not os.path.exists(out + ".onnx"),
              f"tessera-run {flag} 7 with --local-steps=5 refused (exit "
              f"{result.returncode}): "
              f"{[l for l in result.stderr.splitlines() if 'multiple' in l][:1]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("root")
    ap.add_argument("--work")
    ap.add_argument("--quick", action="store_true",
                    help=f"leave out the {LONG_STEPS}-step convergence runs "
                    "(the sanitizer round)")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    work = args.work or tempfile.mkdtemp(prefix="tessera-local-sgd-")
    os.makedirs(work, exist_ok=True)
    operator_checks(bin_dir, work)
    model, data, art = lm_checks(bin_dir, args.root, work, args.quick)
    refusal_checks(bin_dir, model, data, art, work)
    return finish("local_sgd_test.py")


if __name__ == "__main__":
    sys.exit(main())
