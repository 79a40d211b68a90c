#!/usr/bin/env bash
# The README's demo run (scripts/demo-charlm.sh) with 80 steps in a
# temporary directory: it exits 0, reports the validation loss after steps
# 20, 40, 60 and 80, draws loss.svg with the validation curve, writes
# trained.onnx, and prints 300 sampled characters after the prompt.
#
# Usage: test/e2e/demo_test.sh BUILD_DIR REPO_ROOT
set -euo pipefail
build="$1"
root="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
out="$work/demo.log"
if ! bash "$root/scripts/demo-charlm.sh" "$build" "$work/demo" --steps 80 \
  >"$out" 2>&1; then
  cat "$out"
  echo "FAIL scripts/demo-charlm.sh exited non-zero"
  exit 1
fi
status=0
expect() {
  if grep -q -- "$1" "$out"; then
    echo "PASS $2"
  else
    echo "FAIL $2 (no '$1' in the output)"
    status=1
  fi
}
for s in 20 40 60 80; do
  expect "eval after step $s: loss [0-9.]* (47 batches, 741 windows" \
    "the validation loss after step $s"
done
expect "eval loss last [0-9.]*, lowest [0-9.]* after step" \
  "the summary's validation loss"
expect "character LM 80 points, character LM (validation) 4 points" \
  "loss.svg has the training and the validation curve"
expect "^The Licensor shall" "the sample continues the prompt"
expect "sampled 300 tokens after a prompt of 18 at temperature 0.8, seed 1" \
  "300 characters sampled"
for f in trained.onnx loss.svg; do
  if [ -s "$work/demo/$f" ]; then
    echo "PASS wrote $f"
  else
    echo "FAIL no $f"
    status=1
  fi
done
[ "$status" -eq 0 ] || cat "$out"
exit "$status"
