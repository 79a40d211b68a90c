#!/usr/bin/env python3
"""Training-step benchmark: Tessera beside PyTorch eager, same machine, same run.

Generates the bundled character language model (python/tessera_examples/
make_charlm.py: a small GPT-style decoder over the licence texts in
/usr/share/common-licenses), then trains it twice for the same number of
steps on the same batches with Adam at the same learning rate:

- Tessera: `tessera-compile --mode=train --loss=cross_entropy
  --optimizer=adam` (timed, wall clock), then `tessera-run --train --data
  tokens.bin --log-json`, whose "seconds" field times each whole step (batch
  fill, forward, backward, optimizer update).
- PyTorch eager: an nn.Module with the same math, its weights loaded from
  charlm.onnx by initializer name, so both start from identical weights;
  torch.optim.Adam with the same betas and epsilon; each step is timed from
  the batch copy to the end of optimizer.step() (loss.item() included).

Both see exactly the batches tessera-run feeds (windows (s*B + j) mod N of
tokens.bin, python/tessera_examples/charlm_data.py). The table gives the
median ms/step over the steps after the first 3 (warm-up), the ratio, the
first and last loss of each, and the largest relative difference of the
first 5 losses (same math, same weights: they should agree closely; later
losses drift apart as float rounding compounds).

Threads: Tessera's GEMMs are OpenBLAS calls, run with OPENBLAS_NUM_THREADS
= --threads. PyTorch gets torch.set_num_threads(--threads) (OpenMP) and, by
default, a single-threaded OpenBLAS (OPENBLAS_NUM_THREADS=1, set before torch
is imported), so that OpenMP and OpenBLAS threads never oversubscribe the
cores (see /work/shared/design/TOOLCHAIN.md: that made a PyTorch step 20x
slower); --torch-blas-threads changes it.

Run with Debian's python (python3-torch, python3-numpy, python3-onnx):

    /usr/bin/python3 bench/train.py [--steps 100] [--threads 2] [--layers 2] ...

The model is generated with the repo's venv (--python, default
.venv/bin/python), which has current onnx and onnxruntime. --no-tessera runs
the PyTorch half alone. Needs a built tree (scripts/build.sh).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "python", "tessera_examples")
WARMUP = 3  # steps left out of the median
COMPARE = 5  # leading losses compared between Tessera and PyTorch


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description="Training-step time of the character LM example: Tessera vs PyTorch eager.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run with /usr/bin/python3 (Debian's python3-torch). See bench/README.md.")
    ap.add_argument("--steps", type=int, default=100, help="training steps (default 100)")
    ap.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    ap.add_argument("--torch-blas-threads", type=int, default=1,
                    help="OPENBLAS_NUM_THREADS of the PyTorch process (default 1)")
    ap.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate (default 3e-3)")
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"),
                    help="python that runs make_charlm.py (default: the repo's .venv)")
    ap.add_argument("--tessera-bin", default=os.path.join(ROOT, "build", "bin"),
                    help="where tessera-compile and tessera-run live (default build/bin)")
    ap.add_argument("--work", help="work directory (kept); default a temporary one")
    ap.add_argument("--no-tessera", action="store_true", help="run the PyTorch half only")
    args = ap.parse_args(argv)
    if args.steps <= WARMUP:
        ap.error(f"--steps must be more than {WARMUP} (the warm-up steps)")
    return args


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    # Before torch (and its OpenBLAS) is loaded.
    os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.torch_blas_threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(ARGS.threads))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from onnx import numpy_helper  # noqa: E402

sys.path.insert(0, EXAMPLES)
import charlm_data  # noqa: E402
import common  # noqa: E402  (bench/common.py, beside this file)


def fail(message: str):
    sys.exit(f"train.py: error: {message}")


def run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        fail(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc.stdout


# --------------------------------------------------------------------------- #
# PyTorch model: the math of make_charlm.py, op for op
# --------------------------------------------------------------------------- #
class CharLM(torch.nn.Module):
    def __init__(self, weights: dict[str, np.ndarray], *, batch: int, seq: int, layers: int,
                 d_model: int, heads: int):
        super().__init__()
        self.B, self.T, self.D, self.H = batch, seq, d_model, heads
        self.Dh = d_model // heads
        self.layers = layers
        # ONNX initializer names contain dots, which nn.ParameterDict refuses.
        self.names = sorted(weights)
        self.params = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.from_numpy(weights[n].copy())) for n in self.names])
        self.index = {n: i for i, n in enumerate(self.names)}
        mask = torch.triu(torch.full((seq, seq), -1e9, dtype=torch.float32), diagonal=1)
        self.register_buffer("mask", mask.reshape(1, 1, seq, seq))
        self.scale = 1.0 / (self.Dh ** 0.5)

    def w(self, name: str) -> torch.Tensor:
        return self.params[self.index[name]]

    def linear(self, x, prefix):
        return x @ self.w(prefix + ".weight") + self.w(prefix + ".bias")

    def layer_norm(self, x, prefix):
        return F.layer_norm(x, (self.D,), self.w(prefix + ".weight"), self.w(prefix + ".bias"),
                            eps=1e-5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        B, T, D, H, Dh = self.B, self.T, self.D, self.H, self.Dh
        h = self.w("wte")[tokens] + self.w("wpe")
        for i in range(self.layers):
            p = f"h{i}."
            x = self.layer_norm(h, p + "ln1")
            q = self.linear(x, p + "attn.q").reshape(B, T, H, Dh).permute(0, 2, 1, 3)
            k = self.linear(x, p + "attn.k").reshape(B, T, H, Dh).permute(0, 2, 3, 1)
            v = self.linear(x, p + "attn.v").reshape(B, T, H, Dh).permute(0, 2, 1, 3)
            probs = torch.softmax((q @ k) * self.scale + self.mask, dim=-1)
            ctx = (probs @ v).permute(0, 2, 1, 3).reshape(B, T, D)
            h = h + self.linear(ctx, p + "attn.out")
            u = self.linear(self.layer_norm(h, p + "ln2"), p + "mlp.fc1")
            h = h + self.linear(F.gelu(u), p + "mlp.fc2")  # exact (erf) GELU
        return self.layer_norm(h, "ln_f") @ self.w("lm_head")


def load_weights(path: str) -> dict[str, np.ndarray]:
    model = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def train_torch(args, model_path: str, tokens: np.ndarray):
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    model = CharLM(load_weights(model_path), batch=args.batch, seq=args.seq,
                   layers=args.layers, d_model=args.d_model, heads=args.heads)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8)
    losses, seconds = [], []
    for step in range(args.steps):
        x, y = charlm_data.batch(tokens, step, args.batch, args.seq)
        start = time.perf_counter()
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        logits = model(xt)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yt.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()
        seconds.append(time.perf_counter() - start)
        losses.append(value)
        if not np.isfinite(value):
            fail(f"PyTorch step {step + 1}: the loss is {value}")
    return losses, seconds


# --------------------------------------------------------------------------- #
# Tessera
# --------------------------------------------------------------------------- #
def train_tessera(args, work: str, model_path: str, tokens_path: str):
    try:
        compile_bin, run_bin = common.tessera_tools(args.tessera_bin, ", or --no-tessera")
    except common.BenchError as error:
        fail(str(error))
    art = os.path.join(work, "charlm.art")
    log = os.path.join(work, "tessera_log.json")
    start = time.perf_counter()
    run([compile_bin, model_path, "--mode=train", "--loss=cross_entropy", "--logits=logits",
         "--labels=targets", "--batch-size", str(args.batch), "--optimizer=adam",
         f"--lr={args.lr}", "-o", art])
    compile_s = time.perf_counter() - start
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads),
               OMP_NUM_THREADS=str(args.threads))
    run([run_bin, art, "--train", "--data", tokens_path, "--steps", str(args.steps),
         "--batch-size", str(args.batch), "--log-json", log], env=env)
    try:
        losses, seconds = common.read_step_log(log, args.steps)
    except common.BenchError as error:
        fail(str(error))
    return losses, seconds, compile_s


def median_ms(seconds):
    return statistics.median(seconds[WARMUP:]) * 1e3


def main(args) -> int:
    load = os.getloadavg()[0]
    if load > 1.0:
        print(f"train.py: warning: the machine is busy (1-minute load average {load:.2f}); "
              "timings will be noisy, PyTorch's OpenMP threads most of all", file=sys.stderr)
    work = args.work or tempfile.mkdtemp(prefix="tessera-bench-train.")
    os.makedirs(work, exist_ok=True)
    run([args.python, os.path.join(EXAMPLES, "make_charlm.py"), "--out", work,
         "--seq", str(args.seq), "--batch", str(args.batch), "--layers", str(args.layers),
         "--d-model", str(args.d_model), "--heads", str(args.heads)])
    model_path = os.path.join(work, "charlm.onnx")
    tokens_path = os.path.join(work, "tokens.bin")
    tokens = charlm_data.load_tokens(tokens_path)
    vocab = len(charlm_data.load_vocab(work))
    with open(os.path.join(work, "charlm.json")) as f:
        params = json.load(f)["parameters"]

    tessera = None
    if not args.no_tessera:
        tessera = train_tessera(args, work, model_path, tokens_path)
    t_losses, t_seconds = train_torch(args, model_path, tokens)

    print(f"charlm: {args.layers} layers, d_model {args.d_model}, {args.heads} heads, "
          f"vocab {vocab}, {params} parameters; batch {args.batch} x seq {args.seq}; "
          f"Adam lr {args.lr}; {args.steps} steps, {args.threads} threads; "
          f"ln(vocab) = {charlm_data.uniform_loss(vocab):.4f}")
    print(f"ms/step: median of steps {WARMUP + 1}..{args.steps}; PyTorch {torch.__version__} "
          f"eager, {torch.get_num_threads()} OpenMP threads, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS')}")
    print()
    print("| | Tessera | PyTorch eager |")
    print("|---|---:|---:|")
    if tessera:
        x_losses, x_seconds, compile_s = tessera
        x_ms, p_ms = median_ms(x_seconds), median_ms(t_seconds)
        print(f"| compile s (tessera-compile, wall) | {compile_s:.2f} | - |")
        print(f"| ms/step | {x_ms:.2f} | {p_ms:.2f} |")
        print(f"| Tessera/PyTorch (ms/step) | {x_ms / p_ms:.2f} | |")
        print(f"| first loss | {x_losses[0]:.4f} | {t_losses[0]:.4f} |")
        print(f"| last loss (step {args.steps}) | {x_losses[-1]:.4f} | {t_losses[-1]:.4f} |")
        n = min(COMPARE, args.steps)
        rel = max(abs(a - b) / abs(b) for a, b in zip(x_losses[:n], t_losses[:n]))
        print()
        print(f"max relative difference of the first {n} losses: {rel:.2e}")
    else:
        print(f"| ms/step | not run (--no-tessera) | {median_ms(t_seconds):.2f} |")
        print(f"| first loss | | {t_losses[0]:.4f} |")
        print(f"| last loss (step {args.steps}) | | {t_losses[-1]:.4f} |")
    if args.work:
        print(f"work directory: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGS))
