#!/usr/bin/env bash
# Runs every GPU test of Tessera on a machine with an NVIDIA GPU: the CUDA
# target against the CPU target (test/e2e/gpu_test.py: inference, gradients
# and 20 training steps of the bundled models) and the runtime's device
# tests (streams, events, memory, a one-rank NCCL all-reduce); then the GPU
# benchmark (bench/gpu.py: the GEMM path against torch.matmul, training
# steps), printed as a table.
#
# On a machine without a GPU (nvidia-smi lists none) it says so and exits 0
# without building or running anything: CI, which has no GPU, runs the same
# tests, which skip there (ctest reports them as skipped, not passed).
#
# Usage: scripts/gpu-check.sh   (builds with scripts/build.sh first)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
  echo "gpu-check.sh: no GPU on this machine (nvidia-smi lists none): nothing to run"
  exit 0
fi
nvidia-smi -L
bash scripts/build.sh || exit 1
status=0
ctest --test-dir build -L gpu --output-on-failure || status=1
ctest --test-dir build -R '^runtime\.CommDevice\.' --output-on-failure || status=1
# The benchmark's second phase needs PyTorch (the baseline): python3 where
# the venv has none.
bench="$(mktemp -d)"
trap 'rm -rf "$bench"' EXIT
torch_python=.venv/bin/python
"$torch_python" -c "import torch" 2>/dev/null || torch_python=python3
.venv/bin/python bench/gpu.py --prepare "$bench" &&
  "$torch_python" bench/gpu.py --run "$bench" || status=1
exit $status
