#!/usr/bin/env bash
# Configures (once) and builds Tessera into build/ with CMake + Ninja.
#
# Idempotent: the CMake configure step runs only when build/build.ninja is
# missing (afterwards Ninja re-runs CMake by itself whenever a CMakeLists.txt
# changes); the Ninja build is incremental. Tools land in build/bin/.
#
# Usage: scripts/build.sh [extra ninja arguments, e.g. a target name]
# Environment: JOBS (parallel jobs, default 2).
# Expects the toolchain that scripts/setup.sh installs (clang-22, lld, ccache,
# ninja, LLVM/MLIR 22).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ ! -f build/build.ninja ]; then
  echo "build.sh: configuring build/ (cmake -G Ninja)"
  cmake -G Ninja -S . -B build \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
fi

echo "build.sh: building (ninja -C build -j${JOBS:-2})"
ninja -C build -j"${JOBS:-2}" "$@"
