#!/usr/bin/env bash
# Sets up a fresh machine, builds Tessera and runs the whole test suite:
# lit tests of every pass and tool, runtime unit tests, the ONNX backend
# conformance run and the end-to-end example checks against onnxruntime.
# Then builds the ASan+UBSan configuration (build-asan/) and runs the suite
# again under the sanitizers, all but the tests labelled `no-asan`, the
# longest multi-step tests with --quick (the documented subset in
# docs/testing.md); TESSERA_SANITIZERS=0 skips that second round for a
# quicker local loop. Both rounds run JOBS tests at a time (default 2, the
# cores of the CI machine); setup and builds print how long they took, and
# ctest its rounds ("Total Test time").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${JOBS:-2}
# Idle OpenMP threads (oneDNN's GEMMs) sleep instead of spinning: with two
# tests at a time on 2 cores, spinning threads took the cores from the other
# test (the character LM's step 6x slower, docs/testing.md).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
phase() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test.sh: $name took $((SECONDS - start)) s"
}
phase setup bash scripts/setup.sh
phase build bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"$jobs"
if [ "${TESSERA_SANITIZERS:-1}" != 0 ]; then
  echo
  echo "test.sh: the same suite under AddressSanitizer + UndefinedBehaviorSanitizer"
  phase "the sanitizer build" bash scripts/build.sh --sanitizers
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE no-asan
fi
