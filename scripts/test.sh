#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test (C++ and Python tooling).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
# Tests side by side share the cores: OpenMP teams wait passively at barriers (tests/CMakeLists.txt says why).
OMP_WAIT_POLICY=PASSIVE ctest --test-dir build --output-on-failure --parallel "$(nproc)"
# Every parser's fuzz target replays its corpus and fuzzes briefly (fuzz/smoke.sh: ~5 min on 2 cores; 0 skips it).
seconds=${STENO_FUZZ_SMOKE_SECONDS:-15}
[ "$seconds" = 0 ] || fuzz/smoke.sh "$seconds"
