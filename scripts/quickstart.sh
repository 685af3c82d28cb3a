#!/usr/bin/env bash
# The README's first command: installs dependencies, builds steno, and transcribes three bundled samples with the
# bundled model (models/steno-tdt-small-en, trained on synthetic speech of espeak-ng, flite and festival; the
# samples are spoken by held-out voices it never heard: two by espeak-ng, one by festival).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh steno
espeak=tests/data/testset/espeak festival=tests/data/testset/festival
echo "== steno transcribe (bundled model) =="
build/apps/steno/steno transcribe "$espeak/audio/test-0000021.flac" "$espeak/audio/test-0000025.flac" \
  "$festival/audio/festival-test-0000009.flac"
echo "== what was said =="
{ grep -E 'test-00000(21|25)' "$espeak/manifest.jsonl"; grep 'test-0000009' "$festival/manifest.jsonl"; } |
  sed -E 's/.*"text": "([^"]*)".*/\1/'
