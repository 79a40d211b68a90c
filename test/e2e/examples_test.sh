#!/usr/bin/env bash
# End-to-end check of the bundled example models against onnxruntime.
#
# Generates gpt_block.onnx and cnn.onnx (python/tessera_examples/make_models.py)
# into a temporary directory, compiles each with tessera-compile
# (--mode=infer --target=cpu), runs it with tessera-run on its random input and
# compares the outputs with onnxruntime's (compare.py --rtol 1e-4).
# Exits 0 only if every model compiles, runs and matches; otherwise prints a
# FAIL line per model and exits 1 (2 for a usage/setup error such as a missing
# tool).
#
# Usage: test/e2e/examples_test.sh [--tessera-bin DIR] [--python PY] [--work DIR] [--keep]
#   --tessera-bin DIR  where tessera-compile and tessera-run live
#                      (default: $TESSERA_BIN, else <repo>/build/bin)
#   --python PY        Python with numpy/onnx/onnxruntime
#                      (default: $TESSERA_PYTHON, else <repo>/.venv/bin/python)
#   --work DIR         use (and keep) DIR instead of a fresh temporary directory
#   --keep             keep the temporary directory
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${TESSERA_BIN:-$root/build/bin}"
py="${TESSERA_PYTHON:-$root/.venv/bin/python}"
work=""
keep=0

usage() { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --tessera-bin) bin="$2"; shift 2 ;;
    --tessera-bin=*) bin="${1#*=}"; shift ;;
    --python) py="$2"; shift 2 ;;
    --python=*) py="${1#*=}"; shift ;;
    --work) work="$2"; keep=1; shift 2 ;;
    --work=*) work="${1#*=}"; keep=1; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "examples_test.sh: error: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

for tool in tessera-compile tessera-run; do
  if [ ! -x "$bin/$tool" ]; then
    echo "examples_test.sh: error: $bin/$tool not found (build Tessera first, or pass --tessera-bin)" >&2
    exit 2
  fi
done
if [ ! -x "$py" ]; then
  echo "examples_test.sh: error: python '$py' not found (run scripts/setup.sh, or pass --python)" >&2
  exit 2
fi

if [ -z "$work" ]; then
  work="$(mktemp -d "${TMPDIR:-/tmp}/tessera-examples.XXXXXX")"
  [ "$keep" -eq 1 ] || trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
echo "examples_test.sh: working in $work"

if ! "$py" "$root/python/tessera_examples/make_models.py" --out "$work"; then
  echo "FAIL: make_models.py could not generate the example models" >&2
  exit 1
fi

failed=()
for name in gpt_block cnn; do
  echo
  echo "=== $name ==="
  art="$work/$name.art"
  out="$work/${name}_out"
  rm -rf "$art" "$out"; mkdir -p "$out"
  if ! "$bin/tessera-compile" "$work/$name.onnx" --mode=infer --target=cpu -o "$art"; then
    echo "FAIL: $name: tessera-compile failed" >&2; failed+=("$name"); continue
  fi
  if ! "$bin/tessera-run" "$art" --inputs-dir "$work/${name}_inputs" --outputs-dir "$out"; then
    echo "FAIL: $name: tessera-run failed" >&2; failed+=("$name"); continue
  fi
  if ! "$py" "$root/python/tessera_examples/compare.py" "$work/$name.onnx" \
      --inputs-dir "$work/${name}_inputs" --outputs-dir "$out" --rtol 1e-4; then
    echo "FAIL: $name: outputs differ from onnxruntime" >&2; failed+=("$name"); continue
  fi
  echo "PASS: $name"
done

echo
if [ ${#failed[@]} -gt 0 ]; then
  echo "examples_test.sh: ${#failed[@]} of 2 example model(s) failed: ${failed[*]}"
  exit 1
fi
echo "examples_test.sh: all 2 example models match onnxruntime"
