#!/usr/bin/env bash
# The README's first command: installs dependencies, builds steno, and transcribes two bundled samples with the
# bundled model (models/steno-tdt-small-en, trained on synthetic espeak-ng speech; held-out voices it never heard).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh steno
samples=tests/data/testset/espeak/audio
echo "== steno transcribe (bundled model) =="
build/apps/steno/steno transcribe "$samples/test-0000009.flac" "$samples/test-0000025.flac"
echo "== what was said =="
grep -E 'test-00000(09|25)' tests/data/testset/espeak/manifest.jsonl | sed -E 's/.*"text": "([^"]*)".*/\1/'
