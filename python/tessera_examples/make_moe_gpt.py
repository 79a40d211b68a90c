#!/usr/bin/env python3
"""Export a mixture-of-experts GPT from PyTorch to ONNX.

The model is make_torch_gpt.py's pre-LayerNorm GPT with every block's MLP
replaced by a sparse MoE layer (Switch/GShard/Mixtral style): a router
``nn.Linear(d_model, experts, bias=False)``, top-k experts per token, each
expert a GELU MLP ``d_model -> 4·d_model -> d_model``, outputs summed
weighted by the routing probabilities (renormalized over the chosen
experts with ``--normalize``). Two ways to export the MoE layer, the two
ways MoE models arrive in ONNX:

``--style contrib`` (default)
    one ``com.microsoft`` ``MoE`` node per layer, as onnxruntime defines it
    (gelu there is the tanh approximation; the PyTorch module uses the same).
    onnxruntime runs the exported model on the CPU.
``--style gshard``
    GShard's dense formulation in ordinary ONNX ops, static shapes: softmax,
    TopK, OneHot masks, positions in each expert by CumSum, a capacity of
    ``--capacity`` tokens per expert and sequence (tokens past it are
    dropped: their MoE output is zero), dispatch and combine tensors
    [batch, seq, experts, capacity], Einsum into [experts, batch·capacity,
    d_model], batched expert MLPs, Einsum back.

Files written to DIR: ``moe_gpt.onnx`` (input ``tokens`` int64 [batch, seq],
batch dynamic for contrib and static ``--batch`` for gshard; output
``logits`` float32 [batch, seq, vocab]), ``moe_gpt.json`` (the
configuration and the initializer names), and the character corpus as
make_charlm.py writes it (``vocab.json``, ``tokens.bin``, ``valid.bin``;
the vocabulary size is the corpus's).

Needs PyTorch: run it under Debian's ``/usr/bin/python3``.

Usage::

    /usr/bin/python3 make_moe_gpt.py --out DIR [--style contrib|gshard]
        [--corpus PATH] [--seq 16] [--layers 2] [--d-model 64] [--heads 4]
        [--experts 4] [--top-k 2] [--normalize] [--capacity C] [--batch 8]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from charlm_data import (DEFAULT_CORPUS, build_vocab, encode,  # noqa: E402
                         read_corpus, split, write_corpus)
from torch import nn
from torch.nn import functional as F

SEED = 2468


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * x ** 3)))


class ContribMoE(torch.autograd.Function):
    """Eager: the top-k MoE computed densely; exported: com.microsoft MoE."""

    @staticmethod
    def forward(ctx, x, logits, w1, b1, w2, b2, k, normalize):
        probs = torch.softmax(logits, dim=-1)
        gates, chosen = torch.topk(probs, k, dim=-1)
        if normalize:
            gates = gates / gates.sum(-1, keepdim=True)
        flat = x.reshape(-1, x.shape[-1])
        out = torch.zeros_like(flat)
        for j in range(k):
            for e in range(w1.shape[0]):
                rows = chosen[:, j] == e
                h = gelu_tanh(flat[rows] @ w1[e].t() + b1[e])
                out[rows] += gates[rows, j:j + 1] * (h @ w2[e].t() + b2[e])
        return out.reshape(x.shape)

    @staticmethod
    def symbolic(g, x, logits, w1, b1, w2, b2, k, normalize):
        out = g.op("com.microsoft::MoE", x, logits, w1, b1, w2, b2, k_i=k,
                   activation_type_s="gelu",
                   normalize_routing_weights_i=int(normalize))
        out.setType(x.type())
        return out


class MoE(nn.Module):
    def __init__(self, d_model: int, experts: int, k: int, normalize: bool,
                 style: str, capacity: int):
        super().__init__()
        inter = 4 * d_model
        self.k, self.normalize, self.style = k, normalize, style
        self.capacity = capacity
        self.router = nn.Linear(d_model, experts, bias=False)
        # onnxruntime's layout: fc1 [experts, inter, d], fc2 [experts, d, inter].
        self.w1 = nn.Parameter(torch.randn(experts, inter, d_model) / math.sqrt(d_model))
        self.b1 = nn.Parameter(torch.randn(experts, inter) * 0.02)
        self.w2 = nn.Parameter(torch.randn(experts, d_model, inter) / math.sqrt(inter))
        self.b2 = nn.Parameter(torch.randn(experts, d_model) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.router(x)
        if self.style == "contrib":
            return ContribMoE.apply(x, logits.reshape(-1, logits.shape[-1]),
                                    self.w1, self.b1, self.w2, self.b2,
                                    self.k, self.normalize)
        return self.gshard(x, logits)

    def gshard(self, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        experts, cap = self.w1.shape[0], self.capacity
        probs = torch.softmax(logits, dim=-1)                    # [b, s, E]
        gates, chosen = torch.topk(probs, self.k, dim=-1)       # [b, s, k]
        if self.normalize:
            gates = gates / gates.sum(-1, keepdim=True)
        # Every first choice before any second one, per sequence.
        masks = F.one_hot(chosen, experts).to(x.dtype)          # [b, s, k, E]
        order = masks.transpose(1, 2).reshape(b, self.k * s, experts)
        position = torch.cumsum(order, dim=1) - order           # [b, k·s, E]
        position = position.reshape(b, self.k, s, experts).transpose(1, 2)
        keep = masks * (position < cap).to(x.dtype)             # [b, s, k, E]
        slot = F.one_hot((position * keep).sum(-1).long(), cap).to(x.dtype)
        dispatch = torch.einsum("bske,bskc->bsec", keep, slot)
        combine = torch.einsum("bsk,bske,bskc->bsec", gates, keep, slot)
        rows = torch.einsum("bsec,bsd->ebcd", dispatch, x).reshape(experts, b * cap, d)
        h = gelu_tanh(rows @ self.w1.transpose(1, 2) + self.b1.unsqueeze(1))
        out = (h @ self.w2.transpose(1, 2) + self.b2.unsqueeze(1)).reshape(experts, b, cap, d)
        return torch.einsum("bsec,ebcd->bsd", combine, out)


class Block(nn.Module):
    def __init__(self, d_model: int, heads: int, seq: int, moe: MoE):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.moe = moe
        self.register_buffer(
            "mask", torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        dh = c // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q = q.view(b, t, self.heads, dh).transpose(1, 2)
        k = k.view(b, t, self.heads, dh).transpose(1, 2)
        v = v.view(b, t, self.heads, dh).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh)) + self.mask
        y = (torch.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.moe(self.ln2(x))


class MoEGPT(nn.Module):
    def __init__(self, args):
        super().__init__()
        d = args.d_model
        self.embed = nn.Embedding(args.vocab, d)
        self.pos = nn.Parameter(torch.randn(args.seq, d) * 0.02)
        self.blocks = nn.ModuleList(
            Block(d, args.heads, args.seq,
                  MoE(d, args.experts, args.top_k, args.normalize, args.style,
                      args.capacity))
            for _ in range(args.layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, args.vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens) + self.pos
        for block in self.blocks:
            h = block(h)
        return self.head(self.ln_f(h))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, metavar="DIR")
    ap.add_argument("--style", choices=["contrib", "gshard"], default="contrib")
    ap.add_argument("--corpus", default=DEFAULT_CORPUS,
                    help="a text file or a directory of them")
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--experts", type=int, default=4)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--normalize", action="store_true")
    ap.add_argument("--capacity", type=int, default=0,
                    help="gshard: tokens per expert and sequence "
                         "(default: seq, nothing dropped)")
    ap.add_argument("--batch", type=int, default=8,
                    help="gshard: the static batch size")
    args = ap.parse_args(argv)
    if not 1 <= args.top_k <= args.experts:
        ap.error("--top-k must be in [1, --experts]")
    if args.capacity <= 0:
        args.capacity = args.seq

    text = read_corpus(args.corpus)
    vocab = build_vocab(text)
    train, valid = split(encode(text, vocab))
    args.vocab = len(vocab)
    torch.manual_seed(SEED)
    model = MoEGPT(args).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 1e-3)

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "moe_gpt.onnx")
    contrib = args.style == "contrib"
    example = torch.zeros((2 if contrib else args.batch, args.seq), dtype=torch.int64)
    opsets = {"com.microsoft": 1} if contrib else None
    dynamic = ({"tokens": {0: "batch"}, "logits": {0: "batch"}} if contrib else None)
    torch.onnx.export(model, (example,), path, input_names=["tokens"],
                      output_names=["logits"], dynamic_axes=dynamic,
                      opset_version=17, do_constant_folding=True,
                      custom_opsets=opsets)
    exported = onnx.load(path)
    onnx.checker.check_model(exported)
    write_corpus(args.out, vocab, train, valid)
    initializers = [t.name for t in exported.graph.initializer]
    config = {k: v for k, v in vars(args).items() if k not in ("out", "corpus")}
    config.update(seed=SEED, torch=torch.__version__, initializers=initializers)
    with open(os.path.join(args.out, "moe_gpt.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    print(f"wrote {path} ({len(exported.graph.node)} nodes, "
          f"{len(initializers)} initializers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
