#!/usr/bin/env bash
# The bundled model's training on the GPU machine, one step of the recipe: synthesize the training data there
# (espeak-ng unpacked from the carried .debs/, see tools/data/README.md), then train (or resume from OUT_DIR)
# for a time budget. Carry: .debs build-data. Deterministic: the same arguments give the same data and seed.
#
#   [INIT_MODEL=models/steno-tdt-small-en] [DATA_SEED=1] \
#     tools/train/gpu_train.sh OUT_DIR TIME_BUDGET_S MAX_STEPS [TRAIN_UTTERANCES [TRAIN.PY FLAGS...]]
#
# Flags after the utterance count go to train.py unchanged (e.g. --batch-seconds 960 --max-batch 192).
# INIT_MODEL starts from a released model's weights (no checkpoint to carry). OUT_DIR/DONE appears when training
# has ended and its last checkpoint is written: a later call on the same warm machine waits for that file.
# SYNTH_DEBS names the folder of synthesizer .debs (default .debs; espeak-ng's alone suffice, see
# tools/data/unpack_synth_debs.sh). TRAIN_AFTER=FILE makes training wait, once the data is ready, until FILE
# exists: the data is synthesized on the CPUs while a benchmark on the same machine still has the GPU.
# MIX (make_dataset.py --mix, train and dev; default espeak:1) and CHANNEL_AUG=1 (--channel-aug) make the second
# edition's data (e.g. MIX=espeak:0.6,flite:0.2,festival:0.2 CHANNEL_AUG=1, with the full .debs of
# fetch_synth_debs.sh); CORPUS names the corpus (default build-data/corpus.txt; a .xz is read as it is).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1 budget=$2 max_steps=$3 count=${4:-45000}
shift $(( $# < 4 ? $# : 4 ))
tools/data/unpack_synth_debs.sh "${SYNTH_DEBS:-.debs}" /tmp/synth >/dev/null
export PATH="/tmp/synth/bin:$PATH" PYTHONUNBUFFERED=1
start=$(date +%s)
data=(--corpus "${CORPUS:-build-data/corpus.txt}" --mix "${MIX:-espeak:1}" --jobs "$(nproc)")
channel=()
[ "${CHANNEL_AUG:-0}" = 1 ] && channel=(--channel-aug)
python3 tools/data/make_dataset.py "${data[@]}" "${channel[@]}" --split train --count "$count" \
  --seed "${DATA_SEED:-1}" --out /tmp/data/train
python3 tools/data/make_dataset.py "${data[@]}" --split dev --count 300 --out /tmp/data/dev
echo "gpu_train: data ready in $(( $(date +%s) - start )) s"
if [ -n "${TRAIN_AFTER:-}" ]; then
  while [ ! -e "$TRAIN_AFTER" ]; do sleep 1; done
  echo "gpu_train: $TRAIN_AFTER exists, training starts $(( $(date +%s) - start )) s after the start"
fi
rm -f "$out/DONE"
# The tokenizer comes with INIT_MODEL's weights (and with a checkpoint when resuming); a fresh start names it.
init=(--tokenizer build-data/tokenizer/tokenizer.model)
[ -n "${INIT_MODEL:-}" ] && init=(--init-model "$INIT_MODEL")
python3 tools/train/train.py --config tools/train/configs/small.yaml "${init[@]}" \
  --train-manifest /tmp/data/train/manifest.jsonl --val-manifest /tmp/data/dev/manifest.jsonl \
  --resume --out "$out" --time-budget-s "$budget" --max-steps "$max_steps" --split-mb 15 "$@"
touch "$out/DONE"
