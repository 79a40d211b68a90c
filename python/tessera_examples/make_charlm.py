#!/usr/bin/env python3
"""Generate Tessera's bundled training example: a small GPT-style character
language model, and its corpus as token streams.

Files written to DIR:

``charlm.onnx``
    Input ``tokens`` int64 [batch, seq], output ``logits`` float32
    [batch, seq, vocab] (opset 17, IR version 8 so that Debian's libonnx 1.12
    can read it, static shapes, fixed RNG seed)::

        h = Gather(wte, tokens) + wpe                      wte [V, D], wpe [T, D]
        repeat `layers` times (pre-LayerNorm decoder block, prefix h<i>.):
            h = h + Wo · Attn(LN1(h)) + bo                  `heads` heads, causal
            h = h + W2 · Gelu(W1 · LN2(h) + b1) + b2        MLP D -> 4D -> D
        logits = LN_f(h) · lm_head                           lm_head [D, V]

    Attention: MatMul+Add projections, Reshape/Transpose into heads, Q·K^T
    scaled by 1/sqrt(D/heads), an additive causal mask (-1e9 above the
    diagonal), Softmax, attention·V. Gelu is 0.5*x*(1+Erf(x/sqrt(2))).

    Every initializer is a trainable parameter (GPT-2 initialisation:
    weights and embeddings normal(0, 0.02), biases 0, LayerNorm scale 1 and
    bias 0). Everything else that is constant (the causal mask, the
    attention scale, 0.5, 1, sqrt(2), the Reshape shapes) is a ``Constant``
    node, because Tessera trains every float initializer that feeds a
    differentiable input. With these weights the logits start near zero, so
    the initial cross-entropy is close to ln(vocab).

``vocab.json``
    The sorted distinct characters of the corpus, as a JSON list: the id of a
    character is its index.
``tokens.bin``, ``valid.bin``
    The first 90% and the last 10% of the corpus as little-endian uint16 ids,
    the token streams ``tessera-run --train --data`` reads.
``charlm.json``
    The model's configuration (batch, seq, layers, d_model, heads, vocab,
    vocab_rows: the vocabulary rounded up by --pad-vocab,
    number of parameters) and the corpus it was built from.

The corpus defaults to the regular files (not the symbolic links) directly
under /usr/share/common-licenses, concatenated in name order, read as bytes
and decoded as latin-1; --corpus takes another file or directory.

The model is checked with ``onnx.checker`` (full check) and, unless
``--no-verify`` is given, run in onnxruntime on the first batch of
tokens.bin (in the order tessera-run feeds it) and on a batch of random
windows; the script prints the mean cross-entropy of each beside ln(vocab).

Usage::

    python make_charlm.py --out DIR [--seq 64] [--batch 16] [--layers 2]
                          [--d-model 64] [--heads 4] [--pad-vocab 1]
                          [--corpus PATH] [--no-verify]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from charlm_data import (DEFAULT_CORPUS, batch, build_vocab, corpus_files, cross_entropy,
                         encode, read_corpus, split, uniform_loss, write_corpus)
from make_models import GraphBuilder

SEED = 20240502
INIT_STD = 0.02  # GPT-2


class CharLMBuilder(GraphBuilder):
    """GraphBuilder with Constant nodes for the values that are not weights."""

    def constant(self, name: str, value) -> str:
        """Add a Constant node (not an initializer) and return its output."""
        out = self._name(name)
        tensor = numpy_helper.from_array(np.asarray(value), out)
        self.nodes.append(
            helper.make_node("Constant", [], [out], name=self._name("n_" + out), value=tensor)
        )
        return out

    def zeros(self, name: str, shape) -> str:
        return self.const(name, np.zeros(shape, dtype=np.float32))

    def ones(self, name: str, shape) -> str:
        return self.const(name, np.ones(shape, dtype=np.float32))


def make_charlm(rng: np.random.Generator, *, batch_size: int, seq: int, layers: int,
                d_model: int, heads: int, vocab: int) -> onnx.ModelProto:
    B, T, D, H, V = batch_size, seq, d_model, heads, vocab
    if D % H:
        raise ValueError(f"--d-model {D} is not a multiple of --heads {H}")
    Dh, F = D // H, 4 * D
    g = CharLMBuilder(rng)

    def layer_norm(x: str, prefix: str) -> str:
        scale = g.ones(prefix + ".weight", (D,))
        bias = g.zeros(prefix + ".bias", (D,))
        return g.op("LayerNormalization", [x, scale, bias], prefix, axis=-1, epsilon=1e-5)

    def linear(x: str, prefix: str, din: int, dout: int) -> str:
        w = g.weight(prefix + ".weight", (din, dout), INIT_STD)
        b = g.zeros(prefix + ".bias", (dout,))
        return g.op("Add", [g.op("MatMul", [x, w], prefix + ".mm"), b], prefix)

    # Constants shared by every block (Constant nodes, never trained). The
    # Reshape shapes copy the batch dimension (0), so the model compiles at
    # any batch size (e.g. a data-parallel rank's share).
    heads_shape = g.constant("heads_shape", np.array([0, T, H, Dh], dtype=np.int64))
    model_shape = g.constant("model_shape", np.array([0, T, D], dtype=np.int64))
    scale = g.constant("attn_scale", np.array(1.0 / math.sqrt(Dh), dtype=np.float32))
    mask = np.triu(np.full((T, T), -1e9, dtype=np.float32), k=1).reshape(1, 1, T, T)
    causal_mask = g.constant("causal_mask", mask)
    sqrt2 = g.constant("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    one = g.constant("one", np.array(1.0, dtype=np.float32))
    half = g.constant("half", np.array(0.5, dtype=np.float32))

    def split_heads(t: str, name: str, perm) -> str:
        r = g.op("Reshape", [t, heads_shape], name + ".split")
        return g.op("Transpose", [r], name + ".heads", perm=perm)

    # --- embeddings ------------------------------------------------------------
    wte = g.weight("wte", (V, D), INIT_STD)
    wpe = g.weight("wpe", (T, D), INIT_STD)
    h = g.op("Gather", [wte, "tokens"], "tok_emb", axis=0)  # [B,T,D]
    h = g.op("Add", [h, wpe], "emb")  # + [T,D], broadcast over the batch

    for i in range(layers):
        p = f"h{i}."
        # --- attention sub-block ---------------------------------------------
        ln1 = layer_norm(h, p + "ln1")
        q = split_heads(linear(ln1, p + "attn.q", D, D), p + "q", [0, 2, 1, 3])  # [B,H,T,Dh]
        k = split_heads(linear(ln1, p + "attn.k", D, D), p + "k", [0, 2, 3, 1])  # [B,H,Dh,T]
        v = split_heads(linear(ln1, p + "attn.v", D, D), p + "v", [0, 2, 1, 3])  # [B,H,T,Dh]
        scores = g.op("MatMul", [q, k], p + "scores")  # [B,H,T,T]
        scores = g.op("Mul", [scores, scale], p + "scores.scaled")
        scores = g.op("Add", [scores, causal_mask], p + "scores.masked")
        probs = g.op("Softmax", [scores], p + "probs", axis=-1)
        ctx = g.op("MatMul", [probs, v], p + "ctx")  # [B,H,T,Dh]
        ctx = g.op("Transpose", [ctx], p + "ctx.t", perm=[0, 2, 1, 3])  # [B,T,H,Dh]
        ctx = g.op("Reshape", [ctx, model_shape], p + "ctx.merged")  # [B,T,D]
        h = g.op("Add", [h, linear(ctx, p + "attn.out", D, D)], p + "resid1")

        # --- MLP sub-block -----------------------------------------------------
        ln2 = layer_norm(h, p + "ln2")
        u = linear(ln2, p + "mlp.fc1", D, F)
        erf = g.op("Erf", [g.op("Div", [u, sqrt2], p + "gelu.div")], p + "gelu.erf")
        gelu = g.op("Mul", [u, g.op("Add", [erf, one], p + "gelu.add")], p + "gelu.mul")
        gelu = g.op("Mul", [gelu, half], p + "gelu")  # 0.5*u*(1+erf(u/sqrt2))
        h = g.op("Add", [h, linear(gelu, p + "mlp.fc2", F, D)], p + "resid2")

    hf = layer_norm(h, "ln_f")
    lm_head = g.weight("lm_head", (D, V), INIT_STD)
    g.op("MatMul", [hf, lm_head], "logits")

    model = g.model(
        "charlm",
        [helper.make_tensor_value_info("tokens", TensorProto.INT64, [B, T])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [B, T, V])],
    )
    model.producer_name = "tessera_examples.make_charlm"
    return model


def verify_with_onnxruntime(path: str, train: np.ndarray, batch_size: int, seq: int,
                            vocab: int, rng: np.random.Generator) -> str:
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])

    def loss(x, y):
        (logits,) = sess.run(None, {"tokens": x})
        if logits.shape != (batch_size, seq, vocab) or not np.all(np.isfinite(logits)):
            raise RuntimeError(f"{path}: onnxruntime gave logits {logits.shape}, "
                               "or non-finite values")
        return cross_entropy(logits, y)

    first = loss(*batch(train, 0, batch_size, seq))
    starts = rng.integers(0, len(train) - seq - 1, size=batch_size)
    x = np.stack([train[s : s + seq] for s in starts]).astype(np.int64)
    y = np.stack([train[s + 1 : s + seq + 1] for s in starts]).astype(np.int64)
    random = loss(x, y)
    return (f"onnxruntime cross-entropy {first:.4f} (first batch of tokens.bin), "
            f"{random:.4f} (random windows); ln(vocab) = {uniform_loss(vocab):.4f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="Generate Tessera's character language model example: DIR/charlm.onnx, "
        "DIR/vocab.json, DIR/tokens.bin (first 90%% of the corpus), DIR/valid.bin (last 10%%) "
        "and DIR/charlm.json.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="The model uses opset 17, IR version 8, static shapes and a fixed RNG seed.",
    )
    ap.add_argument("--out", required=True, metavar="DIR", help="output directory (created)")
    ap.add_argument("--seq", type=int, default=64, help="tokens per window (default 64)")
    ap.add_argument("--batch", type=int, default=16, help="windows per batch (default 16)")
    ap.add_argument("--layers", type=int, default=2, help="decoder blocks (default 2)")
    ap.add_argument("--d-model", type=int, default=64, help="model width (default 64)")
    ap.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, metavar="PATH",
                    help="a text file, or a directory whose regular files are concatenated "
                    f"in name order (default {DEFAULT_CORPUS})")
    ap.add_argument("--pad-vocab", type=int, default=1, metavar="N",
                    help="round the embedding rows and LM head columns up to a multiple of N, "
                    "as Megatron-LM's --make-vocab-size-divisible-by does so that tensor "
                    "parallelism can split them (the extra ids never occur; default 1)")
    ap.add_argument("--no-verify", action="store_true",
                    help="skip the onnxruntime check (onnx.checker still runs)")
    args = ap.parse_args(argv)
    for flag in ("seq", "batch", "layers", "d_model", "heads", "pad_vocab"):
        if getattr(args, flag) < 1:
            ap.error(f"--{flag.replace('_', '-')} must be at least 1")

    text = read_corpus(args.corpus)
    vocab = build_vocab(text)
    if len(vocab) > 65536:
        ap.error(f"{args.corpus}: {len(vocab)} distinct characters do not fit uint16 ids")
    train, valid = split(encode(text, vocab))
    if (len(train) - 1) // args.seq < 1:
        ap.error(f"{args.corpus}: too small for one window of {args.seq} tokens")

    rng = np.random.default_rng(SEED)
    rows = -(-len(vocab) // args.pad_vocab) * args.pad_vocab
    model = make_charlm(rng, batch_size=args.batch, seq=args.seq, layers=args.layers,
                        d_model=args.d_model, heads=args.heads, vocab=rows)
    onnx.checker.check_model(model, full_check=True)

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "charlm.onnx")
    onnx.save(model, path)
    write_corpus(args.out, vocab, train, valid)
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    config = {
        "batch": args.batch, "seq": args.seq, "layers": args.layers,
        "d_model": args.d_model, "heads": args.heads, "vocab": len(vocab),
        "vocab_rows": rows,
        "parameters": params, "seed": SEED,
        "corpus": [os.path.abspath(f) for f in corpus_files(args.corpus)],
        "train_tokens": int(len(train)), "valid_tokens": int(len(valid)),
    }
    with open(os.path.join(args.out, "charlm.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")

    print(f"wrote {path} ({len(model.graph.node)} nodes, {params} parameters), vocab.json "
          f"({len(vocab)} characters), tokens.bin ({len(train)} tokens), valid.bin "
          f"({len(valid)} tokens)")
    if not args.no_verify:
        print(verify_with_onnxruntime(path, train, args.batch, args.seq, rows, rng))
    return 0


if __name__ == "__main__":
    sys.exit(main())
