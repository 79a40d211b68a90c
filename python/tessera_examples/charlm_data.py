"""Data helpers shared by the character language model example.

Used by ``make_charlm.py`` (which writes the corpus files), by
``bench/train.py`` and by ``test/e2e/charlm_train_test.sh``. Needs only numpy,
so that it runs both in the repo's venv and under Debian's ``/usr/bin/python3``.

Files of a charlm directory (written by ``make_charlm.py``):

``vocab.json``
    JSON list of the distinct characters of the corpus, sorted; the id of a
    character is its index in the list.
``tokens.bin`` / ``valid.bin``
    The first 90% / last 10% of the corpus as little-endian uint16 ids.

Batches follow ``tessera-run --train --data FILE.bin`` exactly: a stream of
n tokens is cut into ``N = (n - 1) // T`` windows; window w feeds the input
tokens ``[w*T, w*T + T)`` and the labels ``[w*T + 1, w*T + T + 1)`` (the
next-token window). Step s (0-based; tessera-run prints it as step s + 1)
uses the windows ``(s*B + j) mod N`` for the batch rows j = 0..B-1.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

DEFAULT_CORPUS = "/usr/share/common-licenses"
VALID_FRACTION = 0.1


def corpus_files(path: str) -> list[str]:
    """The files that make the corpus: PATH itself, or the regular files
    directly under the directory PATH, sorted by name. Symbolic links are
    skipped (in /usr/share/common-licenses GPL -> GPL-3 and the like would
    only repeat a text)."""
    if os.path.isfile(path):
        return [path]
    files = []
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if os.path.isfile(full) and not os.path.islink(full):
            files.append(full)
    if not files:
        raise ValueError(f"{path}: no corpus files")
    return files


def read_corpus(path: str = DEFAULT_CORPUS) -> str:
    """The corpus text: the bytes of every corpus file, concatenated in name
    order and decoded as latin-1 (so every byte is one character)."""
    data = b"".join(open(f, "rb").read() for f in corpus_files(path))
    return data.decode("latin-1")


def build_vocab(text: str) -> list[str]:
    return sorted(set(text))


def encode(text: str, vocab: list[str]) -> np.ndarray:
    index = {c: i for i, c in enumerate(vocab)}
    return np.array([index[c] for c in text], dtype="<u2")


def split(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(train, valid): the first 90% and the last 10% of the ids."""
    cut = len(ids) - int(round(len(ids) * VALID_FRACTION))
    return ids[:cut], ids[cut:]


def write_corpus(directory: str, vocab: list[str], train: np.ndarray,
                 valid: np.ndarray) -> None:
    """Writes ``vocab.json``, ``tokens.bin`` and ``valid.bin`` to
    ``directory`` (the files of a charlm directory, above)."""
    with open(os.path.join(directory, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=True)
        f.write("\n")
    train.tofile(os.path.join(directory, "tokens.bin"))
    valid.tofile(os.path.join(directory, "valid.bin"))


def load_vocab(directory: str) -> list[str]:
    with open(os.path.join(directory, "vocab.json"), encoding="utf-8") as f:
        return json.load(f)


def load_tokens(path: str) -> np.ndarray:
    return np.fromfile(path, dtype="<u2")


def num_windows(tokens: np.ndarray, seq: int) -> int:
    return (len(tokens) - 1) // seq


def batch(tokens: np.ndarray, step: int, batch_size: int, seq: int):
    """(inputs, labels), both int64 [batch_size, seq], of 0-based step `step`,
    exactly as tessera-run feeds a token stream."""
    n = num_windows(tokens, seq)
    if n < 1:
        raise ValueError(f"{len(tokens)} tokens are too few for one window of {seq}")
    first = (step * batch_size) % n
    x = np.empty((batch_size, seq), dtype=np.int64)
    y = np.empty((batch_size, seq), dtype=np.int64)
    for j in range(batch_size):
        w = (first + j % n) % n
        x[j] = tokens[w * seq : w * seq + seq]
        y[j] = tokens[w * seq + 1 : w * seq + seq + 1]
    return x, y


def cross_entropy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean cross-entropy (nats) of logits [..., V] against int labels [...],
    computed in float64 with a log-softmax."""
    z = logits.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(logp, labels[..., None].astype(np.int64), axis=-1)
    return float(-picked.mean())


def uniform_loss(vocab_size: int) -> float:
    """ln(V): the cross-entropy of a model that predicts every id equally."""
    return math.log(vocab_size)
