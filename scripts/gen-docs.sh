#!/usr/bin/env bash
# Regenerates docs/generated/ from the TableGen sources with mlir-tblgen:
#
#   TsrOps.md          -gen-op-doc             include/tessera/Dialect/Tsr/IR/TsrOps.td
#   TsrAttrs.md        -gen-attrdef-doc        include/tessera/Dialect/Tsr/IR/TsrAttrs.td
#   TsrInterfaces.md   -gen-op-interface-docs  include/tessera/Dialect/Tsr/IR/TsrInterfaces.td
#   TsrtDialect.md     -gen-dialect-doc        include/tessera/Dialect/Tsrt/IR/TsrtOps.td
#   OnnxDialect.md     -gen-dialect-doc        include/tessera/Dialect/Onnx/IR/OnnxOps.td
#   <Dir>Passes.md     -gen-pass-doc           every include/tessera/**/<Dir>/Passes.td
#
# and docs/onnx-conformance.md from test/conformance/expected.txt (the outcome
# of every ONNX backend node test, which the onnx-conformance test checks
# against a real run) with test/conformance/run_node_tests.py --report-from.
#
# Usage: scripts/gen-docs.sh [--check]
#   --check   regenerate into a temporary directory and fail (exit 1, with a
#             diff) if a committed generated doc is out of date; writes nothing.
# Environment: MLIR_TBLGEN (default /usr/lib/llvm-22/bin/mlir-tblgen);
#   TESSERA_PYTHON, a Python with numpy and onnx (default .venv/bin/python,
#   made by scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

tblgen="${MLIR_TBLGEN:-/usr/lib/llvm-22/bin/mlir-tblgen}"
if [ ! -x "$tblgen" ]; then
  echo "gen-docs.sh: error: $tblgen not found (install mlir-22-tools or set MLIR_TBLGEN)" >&2
  exit 1
fi
python="${TESSERA_PYTHON:-.venv/bin/python}"
if ! "$python" -c "import numpy, onnx" 2>/dev/null; then
  echo "gen-docs.sh: error: $python cannot import numpy and onnx (run scripts/setup.sh or set TESSERA_PYTHON)" >&2
  exit 1
fi

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  *) echo "gen-docs.sh: error: unknown argument '$1' (usage: scripts/gen-docs.sh [--check])" >&2; exit 1 ;;
esac

out=docs/generated
if [ "$check" = 1 ]; then
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
else
  rm -rf "$out"
  mkdir -p "$out"
fi

gen() { # gen BACKEND TD OUT.md [OPTION...]
  "$tblgen" "$1" -I include -I /usr/lib/llvm-22/include "$2" -o "$out/$3" "${@:4}"
}

gen -gen-op-doc include/tessera/Dialect/Tsr/IR/TsrOps.td TsrOps.md
gen -gen-attrdef-doc include/tessera/Dialect/Tsr/IR/TsrAttrs.td TsrAttrs.md
gen -gen-op-interface-docs include/tessera/Dialect/Tsr/IR/TsrInterfaces.td TsrInterfaces.md
# TsrtOps.td includes the gpu dialect's definitions (the async token).
gen -gen-dialect-doc include/tessera/Dialect/Tsrt/IR/TsrtOps.td TsrtDialect.md \
  -dialect=tsrt
gen -gen-dialect-doc include/tessera/Dialect/Onnx/IR/OnnxOps.td OnnxDialect.md
while IFS= read -r td; do
  gen -gen-pass-doc "$td" "$(basename "$(dirname "$td")")Passes.md"
done < <(find include/tessera -name Passes.td | sort)

conformance="$out/onnx-conformance.md"
[ "$check" = 1 ] || conformance=docs/onnx-conformance.md
"$python" test/conformance/run_node_tests.py --report-from test/conformance/expected.txt \
  --out "$conformance" > /dev/null

if [ "$check" = 1 ]; then
  stale=0
  diff -ru --exclude=onnx-conformance.md docs/generated "$out" || stale=1
  diff -u docs/onnx-conformance.md "$conformance" || stale=1
  if [ "$stale" = 1 ]; then
    echo "gen-docs.sh: generated docs are out of date (diff above): run scripts/gen-docs.sh and commit the result" >&2
    exit 1
  fi
  echo "gen-docs.sh: docs/generated/ and docs/onnx-conformance.md are up to date"
else
  ls "$out" "$conformance"
fi
