#!/usr/bin/env bash
# Configures and builds steno (Release, Ninja) into build/. Arguments name the targets to build (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja ${STENO_CMAKE_ARGS:-} >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build --parallel "$(nproc)" "${targets[@]}"
