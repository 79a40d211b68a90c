#!/usr/bin/env bash
# The README's main job: set up the machine, build Tessera, then train the
# bundled GPT-style character language model on CPU, report its validation
# loss, draw its loss curves and sample text from it.
#
#   scripts/setup.sh          Debian packages + the pinned Python venv (.venv)
#   scripts/build.sh          CMake + Ninja into build/ (tools in build/bin/)
#   scripts/demo-charlm.sh    in build/examples/demo: 760 Adam steps with the
#                             validation loss every 190, loss.svg, and 300
#                             sampled characters (the script says each step)
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

step "train, evaluate and sample the character language model (scripts/demo-charlm.sh)"
bash scripts/demo-charlm.sh build build/examples/demo
printf '\nThe loss curves: build/examples/demo/loss.svg; the trained model: build/examples/demo/trained.onnx\n'
