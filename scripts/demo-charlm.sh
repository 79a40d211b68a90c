#!/usr/bin/env bash
# The demo's run (scripts/demo.sh calls it after setup and build): train the
# bundled GPT-style character language model, report its validation loss,
# draw the loss curves, and sample text from the trained model.
#
#   make_charlm.py        charlm.onnx (1 layer, d_model 64, 4 heads, seq 32,
#                         batch 16), tokens.bin and valid.bin (the licence
#                         texts of /usr/share/common-licenses) and vocab.json
#   tessera-compile       the Adam training step and, with --eval, the
#                         evaluation program
#   tessera-run --train   760 steps; the validation loss on valid.bin every
#                         190 steps; trained.onnx
#   tessera.plot          loss.svg: training and validation loss by tokens
#   tessera-compile       trained.onnx for inference
#   tessera-run --sample  300 characters after a prompt
#
# Usage: scripts/demo-charlm.sh BUILD_DIR OUT_DIR [--steps N]
# Exits non-zero if any step fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 2 ]; then
  echo "usage: scripts/demo-charlm.sh BUILD_DIR OUT_DIR [--steps N]" >&2
  exit 2
fi
bin="$(cd "$1" && pwd)/bin"
out="$2"
steps=760
if [ $# -ge 3 ]; then
  if [ "$3" != "--steps" ] || [ $# -ne 4 ]; then
    echo "demo-charlm.sh: error: unknown arguments '${*:3}'" >&2
    exit 2
  fi
  steps="$4"
fi
python="$root/.venv/bin/python"
mkdir -p "$out"

step() { printf '\n==> %s\n' "$*"; }

step "the model and its data (python/tessera_examples/make_charlm.py)"
"$python" "$root/python/tessera_examples/make_charlm.py" --out "$out" \
  --seq 32 --batch 16 --layers 1 --no-verify

step "compile the training step and the evaluation program"
"$bin/tessera-compile" "$out/charlm.onnx" --mode=train --loss=cross_entropy \
  --logits=logits --batch-size=16 --optimizer=adam --lr=3e-3 --eval \
  -o "$out/step"

step "train $steps steps, the validation loss every $((steps / 4))"
"$bin/tessera-run" "$out/step" --train --data "$out/tokens.bin" \
  --steps "$steps" --eval-data "$out/valid.bin" --eval-every $((steps / 4)) \
  --log-every $((steps / 8)) --log-json "$out/log.jsonl" \
  --save-onnx "$out/trained.onnx"

step "draw the loss curves"
PYTHONPATH="$root/python" "$python" -m tessera.plot "$out/log.jsonl" \
  -o "$out/loss.svg" --x tokens --labels "character LM" \
  --title "character LM, 1 layer: training and validation loss"

step "sample from the trained model"
"$bin/tessera-compile" "$out/trained.onnx" --mode=infer -o "$out/generate"
"$bin/tessera-run" "$out/generate" --sample 300 --vocab "$out/vocab.json" \
  --prompt "The Licensor shall" --temperature 0.8 --seed 1
