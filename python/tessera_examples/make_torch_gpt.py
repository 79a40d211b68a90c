#!/usr/bin/env python3
"""Export a GPT-style language model from PyTorch to ONNX, written the way
GPT-2 and LLaMA implementations write it (not with nn.TransformerEncoder):
``nn.Linear`` projections (MatMul + Add after export, weights transposed into
``onnx::MatMul_*`` initializers), heads split with ``view``/``transpose``,
causal softmax attention with an additive mask buffer of -inf, GELU MLP,
pre-LayerNorm residual blocks, token and learned position embeddings, an
untied LM head, dynamic batch.

Files written to DIR:

``torch_gpt.onnx``
    Input ``tokens`` int64 [batch, seq] (batch dynamic), output ``logits``
    float32 [batch, seq, vocab], opset 17::

        h = Embedding(tokens) + pos
        per layer:  h = h + proj(attention(q(ln1(h)), k(ln1(h)), v(ln1(h))))
                    h = h + fc2(gelu(fc1(ln2(h))))
        logits = head(ln_f(h))                          no bias

``torch_gpt.json``
    The configuration and the names of the exported initializers.

Needs PyTorch, so it runs under Debian's ``/usr/bin/python3`` (python3-torch,
python3-onnx), not the repo's venv.

Usage::

    /usr/bin/python3 make_torch_gpt.py --out DIR [--vocab 96] [--seq 16]
        [--layers 2] [--d-model 64] [--heads 4]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import onnx
import torch
from torch import nn

SEED = 4321


class Block(nn.Module):
    def __init__(self, d_model: int, heads: int, seq: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d_model)
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, 4 * d_model)
        self.fc2 = nn.Linear(4 * d_model, d_model)
        self.act = nn.GELU()
        self.register_buffer(
            "mask", torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        dh = c // self.heads
        h = self.ln1(x)
        q = self.q(h).view(b, t, self.heads, dh).transpose(1, 2)
        k = self.k(h).view(b, t, self.heads, dh).transpose(1, 2)
        v = self.v(h).view(b, t, self.heads, dh).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh)) + self.mask
        y = torch.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab: int, seq: int, d_model: int, heads: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(seq, d_model) * 0.02)
        self.blocks = nn.ModuleList(Block(d_model, heads, seq) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens) + self.pos
        for block in self.blocks:
            h = block(h)
        return self.head(self.ln_f(h))


def build_model(vocab: int, seq: int, d_model: int, heads: int, layers: int) -> GPT:
    """The model main() exports, weights included (seeded): bench/gpt2.py
    trains this same model in PyTorch beside the exported one in Tessera."""
    torch.manual_seed(SEED)
    model = GPT(vocab, seq, d_model, heads, layers).eval()
    # The exporter merges initializers with equal contents: small noise keeps
    # every LayerNorm's ones and zeros its own, as after any training.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 1e-3)
    return model


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, metavar="DIR")
    ap.add_argument("--vocab", type=int, default=96)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    args = ap.parse_args(argv)

    model = build_model(args.vocab, args.seq, args.d_model, args.heads, args.layers)

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "torch_gpt.onnx")
    example = torch.zeros((2, args.seq), dtype=torch.int64)
    torch.onnx.export(model, (example,), path, input_names=["tokens"],
                      output_names=["logits"],
                      dynamic_axes={"tokens": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, do_constant_folding=True)
    exported = onnx.load(path)
    onnx.checker.check_model(exported, full_check=True)
    initializers = [t.name for t in exported.graph.initializer]
    config = {"vocab": args.vocab, "seq": args.seq, "layers": args.layers,
              "d_model": args.d_model, "heads": args.heads, "seed": SEED,
              "torch": torch.__version__, "initializers": initializers}
    with open(os.path.join(args.out, "torch_gpt.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    print(f"wrote {path} ({len(exported.graph.node)} nodes, {len(initializers)} initializers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
