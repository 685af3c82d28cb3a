#!/usr/bin/env bash
# The README's first command: installs dependencies, builds steno, and transcribes a sample.
#
# Until the bundled model lands (issue "Bundled model"), the sample is transcribed with nemo-tiny: a real NeMo
# .nemo checkpoint with RANDOM weights, converted by tools/convert_nemo.py. Its output is gibberish by design;
# what the quick start shows is the whole path (NeMo checkpoint -> steno model -> audio -> tokens -> text).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh steno
model=build/models/nemo-tiny
if [ ! -f "$model/config.json" ]; then
  /usr/bin/python3 tools/convert_nemo.py tests/data/nemo-tiny/model.nemo "$model" >/dev/null
fi
echo "== steno transcribe (model: nemo-tiny, RANDOM weights: expect gibberish, not English) =="
build/apps/steno/steno transcribe --model "$model" tests/data/nemo-tiny/clip1_4.3s.wav tests/data/nemo-tiny/clip2_9.0s.wav
