"""What the training benchmarks share: finding the Tessera tools and reading
the per-step log `tessera-run --train --log-json` writes."""
from __future__ import annotations

import json
import os


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
