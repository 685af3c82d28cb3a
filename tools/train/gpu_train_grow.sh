#!/usr/bin/env bash
# One training job on the GPU machine whose data grows while it trains: synthesize a first batch of utterances,
# start training on it, and synthesize the next batches on the spare cores beside it (niced); the trainer takes
# each finished batch in at the end of an epoch (train.py --more-manifests), so it runs without a restart from the
# first batch to the deadline. The GPU never waits for the synthesizers after the first batch, and the model sees
# fresh sentences and voices instead of the same ones for many epochs. Ends at a fixed deadline with a checkpoint
# in OUT_DIR and OUT_DIR/DONE.
#
#   INIT_MODEL=models/steno-tdt-small-en [DATA_SEED=10] [MIX=espeak:0.6,flite:0.2,festival:0.2] [CHANNEL_AUG=1] \
#   [VOICE_AUG=0] [CORPUS=build-data/corpus.txt.xz] [SYNTH_DEBS=.debs] \
#     tools/train/gpu_train_grow.sh OUT_DIR DEADLINE_S MAX_STEPS BATCH_UTTERANCES [TRAIN.PY FLAGS...]
#
# DEADLINE_S counts from this script's start; batch k (/tmp/data/train$k) uses seed DATA_SEED+k; no batch starts
# with less than MIN_LEFT_S (default 300) seconds left; BESIDE_JOBS synthesis jobs run beside the trainer
# (default nproc - 2). Run it within one `run` call and end the call with tools/train/gpu_snapshot.sh (a call
# issued at once on the warm machine goes on with /tmp/data and OUT_DIR), or detached (setsid nohup) with later
# calls taking snapshots. Without INIT_MODEL the first start is fresh from build-data/tokenizer/tokenizer.model.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/../.."
out=$1 deadline=$2 max_steps=$3 per_batch=$4
shift 4
start=$(date +%s)
left() { echo $(( deadline - ($(date +%s) - start) )); }
log() { echo "grow: [$(( $(date +%s) - start )) s] $*"; }

tools/data/unpack_synth_debs.sh "${SYNTH_DEBS:-.debs}" /tmp/synth >/dev/null
# The loss lattice as one CUDA kernel (seconds to build with the machine's nvcc; train.py checks it against the
# PyTorch lattice and falls back to that if it does not build or does not match). STENO_TDT_LATTICE= turns it off.
if [ -z "${STENO_TDT_LATTICE+set}" ]; then
  STENO_TDT_LATTICE=$(tools/train/build_tdt_lattice.sh /tmp/tdt_lattice 2>/tmp/tdt_lattice.log) || STENO_TDT_LATTICE=
  export STENO_TDT_LATTICE
fi
export PATH="/tmp/synth/bin:$PATH" PYTHONUNBUFFERED=1
data=(--corpus "${CORPUS:-build-data/corpus.txt.xz}" --mix "${MIX:-espeak:0.6,flite:0.2,festival:0.2}")
[ "${CHANNEL_AUG:-1}" = 1 ] && train_only=(--channel-aug) || train_only=()
[ "${VOICE_AUG:-0}" = 1 ] && train_only+=(--voice-aug)  # pitch targets and a wider speed: more voices from few
seed0=${DATA_SEED:-10}
# Synthesis jobs beside the trainer: all but two cores by default. Steps beside them measured ~1.8x slower on the
# H200 machine with 14 jobs and the PyTorch lattice, ~1.2x with 12 jobs and the CUDA one: fewer jobs trade data
# growth for steps.
beside_jobs=${BESIDE_JOBS:-$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))}
synth_batch() {  # k jobs: the batch k of training utterances into /tmp/data/train$k
  python3 tools/data/make_dataset.py "${data[@]}" "${train_only[@]}" --jobs "$2" --split train \
    --count "$per_batch" --seed $(( seed0 + $1 )) --out "/tmp/data/train$1" --absolute-paths
}

# A later call on the same warm machine finds the data of an earlier one and goes on with it (and with the
# checkpoint in OUT_DIR): only the next batches are synthesized.
k=1
if [ -s /tmp/data/train0/manifest.jsonl ] && [ -s /tmp/data/dev/manifest.jsonl ]; then
  while [ -s "/tmp/data/train$k/manifest.jsonl" ]; do k=$(( k + 1 )); done
  log "reusing /tmp/data: batches 0..$(( k - 1 )); next batch $k"
else
  synth_batch 0 "$(nproc)"
  python3 tools/data/make_dataset.py "${data[@]}" --jobs "$(nproc)" --split dev --count 300 --out /tmp/data/dev
  log "first batch ready"
fi

# The batches beside the trainer, one after another while there is time to use one.
(
  renice -n 19 "$BASHPID" >/dev/null
  while [ "$(left)" -gt "${MIN_LEFT_S:-300}" ]; do
    synth_batch "$k" "$beside_jobs" > "/tmp/data/synth$k.log" 2>&1 || break
    log "batch $k ready: the trainer takes it in at its next epoch"
    k=$(( k + 1 ))
  done
) &
synth_pid=$!

init=(--tokenizer build-data/tokenizer/tokenizer.model)
[ -n "${INIT_MODEL:-}" ] && init=(--init-model "$INIT_MODEL")
rm -f "$out/DONE"
batches='/tmp/data/train[0-9]*/manifest.jsonl'  # every finished batch: those there now, and those to come
have=()
for m in $batches; do have+=(--train-manifest "$m"); done
log "training on $(( ${#have[@]} / 2 )) batch(es), $(left) s left"
python3 tools/train/train.py --config tools/train/configs/small.yaml "${init[@]}" "${have[@]}" \
  --more-manifests "$batches" --val-manifest /tmp/data/dev/manifest.jsonl \
  --resume --out "$out" --time-budget-s "$(( $(left) - 5 ))" --max-steps "$max_steps" --split-mb 15 "$@" || true
# A batch still being made is stopped with its worker processes (killing the subshell alone would orphan them).
kill "$synth_pid" 2>/dev/null || true
pkill -f "tools/data/make_dataset.py" || true
log "done"
touch "$out/DONE"
