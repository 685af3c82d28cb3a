#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test (C++ and Python tooling).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure --parallel "$(nproc)"
