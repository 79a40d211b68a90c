#!/usr/bin/env bash
# Sets up a fresh machine, builds Tessera and runs the whole test suite:
# lit tests of every pass and tool, runtime unit tests, the ONNX backend
# conformance run and the end-to-end example checks against onnxruntime.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure
