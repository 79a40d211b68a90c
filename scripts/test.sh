#!/usr/bin/env bash
# Sets up a fresh machine, builds Tessera and runs the whole test suite:
# lit tests of every pass and tool, runtime unit tests, the ONNX backend
# conformance run and the end-to-end example checks against onnxruntime.
# Then builds the ASan+UBSan configuration (build-asan/) and runs the suite
# again under the sanitizers, all but the tests labelled `no-asan` (the
# documented subset in docs/testing.md); TESSERA_SANITIZERS=0 skips that
# second round for a quicker local loop.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure
if [ "${TESSERA_SANITIZERS:-1}" != 0 ]; then
  echo
  echo "test.sh: the same suite under AddressSanitizer + UndefinedBehaviorSanitizer"
  bash scripts/build.sh --sanitizers
  ctest --test-dir build-asan --output-on-failure -LE no-asan
fi
