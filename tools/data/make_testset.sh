#!/bin/sh
# Regenerate the committed test set tests/data/testset/{espeak,flite,festival,mbrola,pico,rhvoice} (see its
# README.md). Needs espeak-ng, flite, festival with its three English voices, mbrola with its four English voices,
# pico2wave, RHVoice with its English voices, and flac (Debian: apt-get install espeak-ng flite flac festival
# festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts; from contrib and non-free: mbrola mbrola-us1 mbrola-us2
# mbrola-us3 mbrola-en1 libttspico-utils rhvoice rhvoice-english) and the corpus of build_corpus.py.
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
SETS="espeak flite festival mbrola pico rhvoice"
for set in $SETS; do rm -rf "${DEST:?}/$set"; done
$PY "$ROOT/tools/data/make_dataset.py" $COMMON --split test --count "$COUNT" --max-words 7 --out "$DEST/espeak"
$PY "$ROOT/tools/data/make_dataset.py" $COMMON --split flite-test --count "$COUNT" --min-words 2 --max-words 4 \
  --out "$DEST/flite"
$PY "$ROOT/tools/data/make_dataset.py" $COMMON --split festival-test --count "$COUNT" --max-words 7 \
  --out "$DEST/festival"
$PY "$ROOT/tools/data/make_dataset.py" $COMMON --split mbrola-test --count "$COUNT" --max-words 7 --out "$DEST/mbrola"
$PY "$ROOT/tools/data/make_dataset.py" $COMMON --split pico-test --count "$COUNT" --max-words 7 --out "$DEST/pico"
$PY "$ROOT/tools/data/make_dataset.py" $COMMON --split rhvoice-test --count "$COUNT" --max-words 7 \
  --out "$DEST/rhvoice"
for set in $SETS; do du -sb "$DEST/$set/audio"; done
[ -z "${TESTSET_DEST:-}" ] || exit 0
# The PyTorch reference's transcripts with the bundled model, which tests/engine/bundled_model_test.cc holds the
# C++ engine's to (python3-torch, numpy, sentencepiece): greedy, and the model's default decoding (its config.json's
# decoding section): beam search with 4 hypotheses, the bundled token LM at its chosen weights and its lexicon.
for set in $SETS; do
  $PY "$ROOT/tools/transcribe_ref.py" "$ROOT/models/steno-tdt-small-en" "$DEST/$set/manifest.jsonl" \
    "$DEST/$set/reference_transcripts.tsv"
  $PY "$ROOT/tools/transcribe_ref.py" "$ROOT/models/steno-tdt-small-en" "$DEST/$set/manifest.jsonl" \
    "$DEST/$set/reference_beam_lm_transcripts.tsv" --lm "$ROOT/models/steno-tdt-small-en/lm.arpa.gz" \
    --beam 4 --alpha 0.4 --beta 0.6 --lexicon "$ROOT/models/steno-tdt-small-en/words.txt.gz" \
    --unknown-word-penalty 2
done
du -sb "$DEST"
