#!/usr/bin/env bash
# Configures (once) and builds Tessera with CMake + Ninja.
#
# Idempotent: the CMake configure step runs only when the build directory has
# no build.ninja yet (afterwards Ninja re-runs CMake by itself whenever a
# CMakeLists.txt changes); the Ninja build is incremental. Tools land in
# <build dir>/bin/.
#
# Usage: scripts/build.sh [--sanitizers] [extra ninja arguments, e.g. a target]
#   --sanitizers  build the ASan+UBSan configuration into build-asan/
#                 (-DTESSERA_ENABLE_SANITIZERS=ON) instead of build/
# Environment: JOBS (parallel jobs, default 2).
# Where /usr/local/cuda exists the configure requires the NCCL plugin
# (-DTESSERA_REQUIRE_NCCL=ON): a toolkit that is there but unusable fails it.
# Expects the toolchain that scripts/setup.sh installs (clang-22, lld, ccache,
# ninja, LLVM/MLIR 22).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir=build
sanitizers=OFF
if [ "${1:-}" = "--sanitizers" ]; then
  dir=build-asan
  sanitizers=ON
  shift
fi

require_nccl=OFF
[ -d /usr/local/cuda ] && require_nccl=ON

if [ ! -f "$dir/build.ninja" ]; then
  echo "build.sh: configuring $dir/ (cmake -G Ninja, sanitizers $sanitizers, NCCL plugin required $require_nccl)"
  cmake -G Ninja -S . -B "$dir" \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DTESSERA_ENABLE_SANITIZERS="$sanitizers" \
    -DTESSERA_REQUIRE_NCCL="$require_nccl"
fi

# The libraries reuse one precompiled header (lib/PrecompiledHeaders.h):
# ccache caches compiles that use it only with this sloppiness.
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
echo "build.sh: building (ninja -C $dir -j${JOBS:-2})"
ninja -C "$dir" -j"${JOBS:-2}" "$@"
