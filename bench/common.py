"""What the training benchmarks share: finding the Tessera tools and reading
the per-step log `tessera-run --train --log-json` writes."""
from __future__ import annotations

import json
import os


def gpt_step_flops(d_model: int, seq: int, vocab: int, layers: int,
                   batch: int) -> float:
    """Matmul FLOPs of one training step of make_torch_gpt.py's GPT: forward
    per token 2*(12 d^2) per layer for the projections and MLP, 2*2*T*d per
    layer for attention's two batched matmuls, 2*d*V for the head; backward
    twice the forward (PaLM's MFU count, appendix B)."""
    forward_per_token = layers * (24 * d_model * d_model + 4 * seq * d_model) \
        + 2 * d_model * vocab
    return 3.0 * forward_per_token * batch * seq


class BenchError(Exception):
    """A setup or run failure the benchmark reports and exits on."""


def tessera_tools(bin_dir: str, hint: str = "") -> tuple[str, str]:
    """The paths of tessera-compile and tessera-run in `bin_dir`."""
    tools = tuple(os.path.join(bin_dir, name) for name in ("tessera-compile", "tessera-run"))
    for tool in tools:
        if not os.access(tool, os.X_OK):
            raise BenchError(f"{tool} not found (build Tessera first, pass --tessera-bin{hint})")
    return tools


def read_step_log(path: str, steps: int) -> tuple[list[float], list[float]]:
    """The losses and step times of a --log-json file of `steps` steps."""
    losses, seconds = [], []
    with open(path) as f:
        for line in f:
            if line.strip():
                record = json.loads(line)
                losses.append(float(record["loss"]))
                seconds.append(float(record["seconds"]))
    if len(losses) != steps:
        raise BenchError(f"{path}: {len(losses)} steps logged, expected {steps}")
    return losses, seconds
