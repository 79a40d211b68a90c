#!/usr/bin/env bash
# Installs everything Tessera needs on a fresh Debian bookworm machine. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

debs=(
  cmake ninja-build ccache pkg-config libclang-rt-22-dev
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22 clang-format-22
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  libopenmpi-dev openmpi-bin libopenblas-dev libgtest-dev zlib1g-dev
  # the runtime's JSON reading and writing (header-only)
  nlohmann-json3-dev
  # the rematerialization MILP's solver
  coinor-libcbc-dev
  # bf16 GEMM on CPU (OpenBLAS has none): dnnl_gemm_bf16bf16f32
  libdnnl-dev
  python3 python3-venv python3-numpy
  # lit's per-test timeout (test/lit.cfg.py) needs psutil in /usr/bin/python3
  python3-psutil
  # bench/train.py: PyTorch eager baseline on Debian's own Python
  python3-torch python3-onnx
)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
fi
if ! cmp -s "$here/python/requirements.txt" "$venv/.requirements-installed"; then
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$here/python/requirements.txt"
  cp "$here/python/requirements.txt" "$venv/.requirements-installed"
fi
