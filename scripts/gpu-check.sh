#!/usr/bin/env bash
# Runs every GPU test of Tessera on a machine with an NVIDIA GPU: the CUDA
# target against the CPU target (test/e2e/gpu_test.py: inference, gradients
# and 20 training steps of the bundled models) and the runtime's device
# tests (streams, events, memory, a one-rank NCCL all-reduce); then the GPU
# benchmark (bench/gpu.py: the GEMM path against torch.matmul, memory-bound
# kernels, training steps and the MFU of a GPT-2-small-shaped step), printed
# as tables.
#
# On a machine without a GPU (nvidia-smi lists none) it says so and exits 0
# without building or running anything: CI, which has no GPU, runs the same
# tests, which skip there (ctest reports them as skipped, not passed).
#
# A GPU machine without the toolchain (no LLVM/MLIR to build Tessera) runs
# what a machine with it prepared: --prepare DIR compiles every test and
# benchmark artifact into DIR (no GPU needed) and copies tessera-run, the
# runtime, its plugins and the libraries they load there; --run DIR, on the
# GPU machine, runs them with that machine's python3 (numpy, onnx,
# onnxruntime, PyTorch). The GPT-2-shaped artifact travels without its
# params' values (bench/gpu.py thin_artifact), so DIR stays small.
#
# Usage: scripts/gpu-check.sh                (builds with scripts/build.sh)
#        scripts/gpu-check.sh --prepare DIR  (after scripts/build.sh)
#        scripts/gpu-check.sh --run DIR
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
  echo "usage: scripts/gpu-check.sh [--prepare DIR | --run DIR]" >&2
  exit 2
}

have_gpu() {
  nvidia-smi -L 2>/dev/null | grep -q "^GPU"
}

# The venv's python where it has PyTorch, else python3 (a GPU machine's).
torch_python() {
  if [[ -x .venv/bin/python ]] && .venv/bin/python -c "import torch" 2>/dev/null; then
    echo .venv/bin/python
  else
    echo python3
  fi
}

prepare() {
  local dir="$1"
  for tool in build/bin/tessera-compile build/bin/tessera-run; do
    [[ -x "$tool" ]] || { echo "gpu-check.sh: $tool not found: run scripts/build.sh first" >&2; exit 1; }
  done
  mkdir -p "$dir/bin" || exit 1
  .venv/bin/python test/e2e/gpu_test.py --build build --python .venv/bin/python \
    --prepare "$dir/test" || exit 1
  .venv/bin/python bench/gpu.py --prepare "$dir/bench" || exit 1
  cp build/bin/tessera-run build/runtime/test/tessera-comm-tests "$dir/bin/" || exit 1
  local lib
  lib="$(mktemp -d)" || exit 1
  cp -P build/lib/libtessera_runtime.so* build/lib/libtessera_comm_*.so "$lib/" || exit 1
  # The shared libraries they load that are neither the C and C++ runtimes
  # (which a newer system has) nor CUDA's (the GPU machine's own): oneDNN,
  # MPI, protobuf and their own, packed with xz (oneDNN alone is 40 MB).
  ldd "$dir"/bin/* "$lib"/*.so | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+)\.so' |
    grep -v -E '/usr/local/cuda|/lib(cuda|cudart|nccl|cublas|cublasLt|cudnn)\.so' |
    grep -v "^$lib/" | sort -u |
    while read -r so; do cp -L "$so" "$lib/" || exit 1; done || exit 1
  tar -C "$lib" -cJf "$dir/lib.tar.xz" . || exit 1
  rm -rf "$lib"
  echo "gpu-check.sh: prepared $dir ($(du -sh "$dir" | cut -f1)); on the GPU machine run: scripts/gpu-check.sh --run $dir"
}

run_prepared() {
  local dir python nvidia
  dir="$(realpath "$1")"
  python="$(torch_python)"
  mkdir -p "$dir/lib" && tar -C "$dir/lib" -xJf "$dir/lib.tar.xz" || exit 1
  # cuBLASLt, cuDNN, NCCL and the CUDA runtime where PyTorch's wheels put
  # them (nvidia/**/lib), then the toolkit's, for the runtime's dlopen and
  # the NCCL plugin.
  nvidia="$("$python" -c 'import glob, os, nvidia
root = list(nvidia.__path__)[0]
print(":".join(sorted({os.path.dirname(p) for p in glob.glob(os.path.join(root, "**", "lib", "lib*.so*"), recursive=True)})))' 2>/dev/null)"
  [[ -d /usr/local/cuda/lib64 ]] && nvidia="${nvidia:+$nvidia:}/usr/local/cuda/lib64"
  export LD_LIBRARY_PATH="$dir/lib${nvidia:+:$nvidia}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export TESSERA_RUNTIME_LIB="$dir/lib/libtessera_runtime.so"
  local status=0
  "$python" test/e2e/gpu_test.py --bin "$dir/bin" --python "$python" --run "$dir/test" || status=1
  "$dir/bin/tessera-comm-tests" --gtest_filter='CommDevice.*' || status=1
  "$python" bench/gpu.py --bin "$dir/bin" --run "$dir/bench" || status=1
  return $status
}

mode="" dir=""
case "${1:-}" in
  "") ;;
  --prepare|--run) [[ $# -eq 2 ]] || usage; mode="$1"; dir="${2%/}" ;;
  *) usage ;;
esac

if [[ "$mode" == --prepare ]]; then
  prepare "$dir"
  exit 0
fi
if ! have_gpu; then
  echo "gpu-check.sh: no GPU on this machine (nvidia-smi lists none): nothing to run"
  exit 0
fi
nvidia-smi -L
if [[ "$mode" == --run ]]; then
  [[ -f "$dir/lib.tar.xz" ]] || { echo "gpu-check.sh: $dir holds no prepared run (scripts/gpu-check.sh --prepare $dir)" >&2; exit 1; }
  run_prepared "$dir"
  exit $?
fi
bash scripts/build.sh || exit 1
status=0
ctest --test-dir build -L gpu --output-on-failure || status=1
ctest --test-dir build -R '^runtime\.CommDevice\.' --output-on-failure || status=1
# The benchmark's second phase needs PyTorch (the baseline).
bench="$(mktemp -d)"
trap 'rm -rf "$bench"' EXIT
.venv/bin/python bench/gpu.py --prepare "$bench" &&
  "$(torch_python)" bench/gpu.py --run "$bench" || status=1
exit $status
