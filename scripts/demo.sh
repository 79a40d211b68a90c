#!/usr/bin/env bash
# The README's main job: set up the machine, build Tessera, and train the
# bundled GPT-style character language model on CPU.
#
#   scripts/setup.sh          Debian packages + the pinned Python venv (.venv)
#   scripts/build.sh          CMake + Ninja into build/ (tools in build/bin/)
#   charlm_train_test.sh      in build/examples/charlm:
#     make_charlm.py          charlm.onnx (1 layer, d_model 64, 4 heads, seq 32,
#                             batch 16) and tokens.bin from the licence texts
#                             in /usr/share/common-licenses
#     tessera-compile         --mode=train --loss=cross_entropy --optimizer=adam
#     tessera-run --train     760 steps: the loss falls from ln(86) = 4.45 to
#                             about 1.6 nats; exports trained.onnx
#     onnxruntime             the exported weights give the loss Tessera
#                             reported for them
#
# Exits non-zero if any step fails or any check does not hold.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

step() { printf '\n==> %s\n' "$*"; }

step "setup (scripts/setup.sh)"
bash scripts/setup.sh

step "build (scripts/build.sh)"
bash scripts/build.sh

step "train the character language model (test/e2e/charlm_train_test.sh)"
mkdir -p build/examples
bash test/e2e/charlm_train_test.sh build . --work build/examples/charlm
