#!/bin/sh
# Regenerate the committed test set tests/data/testset/{espeak,flite,festival} (see its README.md). Needs espeak-ng,
# flite, festival with its three English voices, and flac (Debian: apt-get install espeak-ng flite flac festival
# festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts) and the corpus of build_corpus.py.
#
#   tools/data/make_testset.sh [CORPUS]        # default build-data/corpus.txt
#
# TESTSET_DEST, TESTSET_SEED, TESTSET_COUNT make another set of the same voices, splits and filters elsewhere,
# e.g. the validation set that chooses between training checkpoints (tools/train/eval_heldout.py; its clips whose
# sentence is in the test set are left out there): TESTSET_DEST=build-data/valset TESTSET_SEED=2 TESTSET_COUNT=160.
# Only the committed set gets the reference transcripts.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CORPUS=${1:-$ROOT/build-data/corpus.txt}
DEST=${TESTSET_DEST:-$ROOT/tests/data/testset}
COUNT=${TESTSET_COUNT:-80}
PY=${PYTHON:-/usr/bin/python3}
COMMON="--corpus $CORPUS --seed ${TESTSET_SEED:-1} --format flac --in-vocab --min-words 3 --balance-sources
        --sources fortune,wn-ex,wn-def,gen --jobs 2"
rm -rf "$DEST/espeak" "$DEST/flite" "$DEST/festival"
$PY "$ROOT/tools/data/make_dataset.py" $COMMON --split test --count "$COUNT" --max-words 7 --out "$DEST/espeak"
$PY "$ROOT/tools/data/make_dataset.py" $COMMON --split flite-test --count "$COUNT" --min-words 2 --max-words 4 \
  --out "$DEST/flite"
$PY "$ROOT/tools/data/make_dataset.py" $COMMON --split festival-test --count "$COUNT" --max-words 7 \
  --out "$DEST/festival"
du -sb "$DEST/espeak/audio" "$DEST/flite/audio" "$DEST/festival/audio"
[ -z "${TESTSET_DEST:-}" ] || exit 0
# The PyTorch reference's transcripts with the bundled model, which tests/engine/bundled_model_test.cc holds the
# C++ engine's to (python3-torch, numpy, sentencepiece).
for set in espeak flite festival; do
  $PY "$ROOT/tools/transcribe_ref.py" "$ROOT/models/steno-tdt-small-en" "$DEST/$set/manifest.jsonl" \
    "$DEST/$set/reference_transcripts.tsv"
done
du -sb "$DEST"
