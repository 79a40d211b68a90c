"""Checks the lr and grad_norm metrics a training step of the small MLP
(y = relu(x @ w + b), w = arange(12) as 4x3, b = [1, 2, 3], softmax
cross-entropy, SGD) logs, against a float64 NumPy run of the same steps:
the cosine schedule's learning rate (1e-6 of the base rate: the step computes it
in float64 and reports float32) and the global gradient norm before
clipping (relative 1e-4: float32 through a handful of steps).

usage: check_step_metrics.py DATA.npz LOG.jsonl LR WARMUP TOTAL CLIP
"""
import json
import math
import sys

import numpy as np

data, log, lr, warmup, total, clip = sys.argv[1:]
lr, warmup, total, clip = float(lr), int(warmup), int(total), float(clip)
arrays = np.load(data)
x, t = arrays["x"].astype(np.float64), arrays["t"]
w = np.arange(12, dtype=np.float64).reshape(4, 3)
b = np.array([1.0, 2.0, 3.0])
batch = 4
records = [json.loads(line) for line in open(log)]
worst_lr = worst_norm = 0.0
for step, record in enumerate(records, start=1):
    # Cosine with warm-up (tsr-optimizer).
    if step < warmup:
        rate = lr * step / warmup
    else:
        p = min(max((step - warmup) / (total - warmup), 0.0), 1.0)
        rate = lr * 0.5 * (1 + math.cos(math.pi * p))
    rows = [(( step - 1) * batch + i) % len(x) for i in range(batch)]
    xb, tb = x[rows], t[rows]
    z = xb @ w + b
    y = np.maximum(z, 0)
    e = np.exp(y - y.max(axis=1, keepdims=True))
    s = e / e.sum(axis=1, keepdims=True)
    dy = s.copy()
    dy[np.arange(batch), tb] -= 1
    dz = dy / batch * (z > 0)
    gw, gb = xb.T @ dz, dz.sum(axis=0)
    norm = math.sqrt((gw ** 2).sum() + (gb ** 2).sum())
    scale = min(1.0, clip / (norm + 1e-6)) if clip > 0 else 1.0
    w -= rate * scale * gw
    b -= rate * scale * gb
    got = record["metrics"]
    worst_lr = max(worst_lr, abs(got["lr"] - rate) / lr)
    worst_norm = max(worst_norm, abs(got["grad_norm"] - norm) / norm)
ok = worst_lr <= 1e-6 and worst_norm <= 1e-4 and len(records) == total
print(f"{'ok' if ok else 'FAIL'}: {len(records)} steps, lr within "
      f"{worst_lr:.1e}, grad_norm within {worst_norm:.1e} of NumPy")
sys.exit(0 if ok else 1)
