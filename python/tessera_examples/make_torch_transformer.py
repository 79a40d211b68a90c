#!/usr/bin/env python3
"""Export a small causal transformer language model from PyTorch to ONNX, the
way a user's model arrives: ``nn.TransformerEncoder`` with a causal mask held
as a buffer of -inf, weights constant-folded by the exporter (MatMul weights
appear as transposed initializers named ``onnx::MatMul_*``), dynamic batch.

Files written to DIR:

``torch_lm.onnx``
    Input ``tokens`` int64 [batch, seq] (batch dynamic), output ``logits``
    float32 [batch, seq, vocab], opset 17::

        h = Embedding(tokens) + pos                     pos [seq, d_model]
        h = TransformerEncoder(h, mask=causal_mask)     pre-LayerNorm, GELU,
                                                        dropout 0, `layers`
        logits = Linear(LayerNorm(h))                   no bias

    ``causal_mask`` is a registered buffer: 0 on and below the diagonal,
    -inf above; the exporter folds it into an initializer named like
    ``onnx::Add_*`` of shape [1, seq, seq]. It must never be trained (weight decay would turn -inf into
    NaN; Adam would make its zeros attention biases).
``vocab.json``, ``tokens.bin``, ``valid.bin``
    The character corpus, as ``make_charlm.py`` writes it.
``torch_lm.json``
    The configuration and the names of the exported initializers.

Needs PyTorch, so it runs under Debian's ``/usr/bin/python3`` (python3-torch,
python3-onnx), not the repo's venv.

Usage::

    /usr/bin/python3 make_torch_transformer.py --out DIR [--seq 32]
        [--layers 2] [--d-model 64] [--heads 4] [--corpus PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import onnx
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from charlm_data import (DEFAULT_CORPUS, build_vocab, encode,  # noqa: E402
                         read_corpus, split, write_corpus)

SEED = 1234


class TorchLM(nn.Module):
    def __init__(self, vocab: int, seq: int, d_model: int, heads: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(seq, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0,
                                           activation="gelu", batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.register_buffer(
            "causal_mask", torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens) + self.pos
        h = self.blocks(h, mask=self.causal_mask)
        return self.head(self.norm(h))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, metavar="DIR")
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, metavar="PATH")
    args = ap.parse_args(argv)

    text = read_corpus(args.corpus)
    vocab = build_vocab(text)
    train, valid = split(encode(text, vocab))
    torch.manual_seed(SEED)
    model = TorchLM(len(vocab), args.seq, args.d_model, args.heads, args.layers).eval()
    # nn.TransformerEncoder deep-copies one layer, and the exporter merges
    # initializers with equal contents: distinct small noise keeps every
    # layer's weights (and every LayerNorm's ones and zeros) its own, as
    # after any training.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 1e-3)

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "torch_lm.onnx")
    example = torch.zeros((2, args.seq), dtype=torch.int64)
    torch.onnx.export(model, (example,), path, input_names=["tokens"],
                      output_names=["logits"],
                      dynamic_axes={"tokens": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, do_constant_folding=True)
    exported = onnx.load(path)
    onnx.checker.check_model(exported, full_check=True)

    write_corpus(args.out, vocab, train, valid)
    initializers = [t.name for t in exported.graph.initializer]
    config = {"seq": args.seq, "layers": args.layers, "d_model": args.d_model,
              "heads": args.heads, "vocab": len(vocab), "seed": SEED,
              "torch": torch.__version__, "initializers": initializers}
    with open(os.path.join(args.out, "torch_lm.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    print(f"wrote {path} ({len(exported.graph.node)} nodes, {len(initializers)} initializers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
