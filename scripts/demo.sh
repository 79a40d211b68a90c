#!/usr/bin/env bash
# The README's main demo: set up the machine, build Tessera, generate the
# bundled GPT-style decoder block, compile it for CPU, run it, and print its
# outputs beside onnxruntime's.
#
#   scripts/setup.sh   Debian packages + the pinned Python venv (.venv)
#   scripts/build.sh   CMake + Ninja into build/ (tools in build/bin/)
#   make_models.py     build/examples/{gpt_block,cnn}.onnx + random inputs
#   tessera-compile    build/examples/gpt_block.onnx -> build/examples/gpt_block.art/
#   tessera-run        build/examples/gpt_block_inputs/ -> build/examples/gpt_block_out/
#   compare.py         Tessera vs onnxruntime, side by side (rtol 1e-4)
#
# Exits non-zero if any step fails or the outputs differ from onnxruntime's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

step() { printf '\n==> %s\n' "$*"; }

step "setup (scripts/setup.sh)"
bash scripts/setup.sh

step "build (scripts/build.sh)"
bash scripts/build.sh

py="$root/.venv/bin/python"
bin="$root/build/bin"
ex="$root/build/examples"
for tool in tessera-compile tessera-run; do
  if [ ! -x "$bin/$tool" ]; then
    echo "demo.sh: error: $bin/$tool not found; the build did not produce it" >&2
    exit 1
  fi
done

step "generate example models into build/examples"
mkdir -p "$ex"
"$py" python/tessera_examples/make_models.py --out "$ex"

step "compile gpt_block.onnx for CPU"
rm -rf "$ex/gpt_block.art" "$ex/gpt_block_out"
(set -x; "$bin/tessera-compile" "$ex/gpt_block.onnx" --mode=infer --target=cpu -o "$ex/gpt_block.art")
ls -l "$ex/gpt_block.art"

step "run it"
mkdir -p "$ex/gpt_block_out"
(set -x; "$bin/tessera-run" "$ex/gpt_block.art" --inputs-dir "$ex/gpt_block_inputs" --outputs-dir "$ex/gpt_block_out")

step "Tessera vs onnxruntime"
"$py" python/tessera_examples/compare.py "$ex/gpt_block.onnx" \
  --inputs-dir "$ex/gpt_block_inputs" --outputs-dir "$ex/gpt_block_out" --rtol 1e-4
