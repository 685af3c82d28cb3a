#!/usr/bin/env bash
# Bring a running training job's latest checkpoint back from the GPU machine as a steno model directory (15 MB
# in f16 for 8 layers) instead of the 46 MB checkpoint: every `run` call that
# watches a detached job (gpu_train_grow.sh, gpu_train.sh) ends with this, so a machine that goes back between
# two calls loses at most one call's training. The checkpoint parts are copied first and exported from the copy;
# a copy caught between two saves (parts of different steps) fails to load and is taken again.
#
#   tools/train/gpu_snapshot.sh CKPT_DIR DEST [CHECK_MANIFEST] [TRAIN_LOG]
#
# DEST gets model/ (config.json, model.safetensors, tokenizer.model), metrics.jsonl, the trainer's train.log and
# TRAIN_LOG as job.log (the job's own output: the grow script's lines, the synthesis; never under the trainer's name).
# A returned file may have 16 MiB: a larger model.safetensors (10 layers: 17.97 MB) comes back as
# model.safetensors.part-aa, -ab, ..., which `cat DEST/model/model.safetensors.part-* > model.safetensors` joins.
set -uo pipefail
cd "$(dirname "$0")/../.."
ckpt=$1 dest=$2 manifest=${3:-} train_log=${4:-}
name=${SNAPSHOT_NAME:-steno-tdt-small-en}
mkdir -p "$dest"
[ -n "$train_log" ] && cp "$train_log" "$dest/job.log" 2>/dev/null
cp "$ckpt"/metrics.jsonl "$ckpt"/train.log "$dest/" 2>/dev/null
check=()
[ -n "$manifest" ] && check=(--check-manifest "$manifest" --check-n 8)
for attempt in 1 2 3; do
  ls "$ckpt"/last.pt* > /dev/null 2>&1 || { echo "snapshot: no checkpoint in $ckpt" >&2; exit 1; }
  rm -rf /tmp/snapshot && mkdir -p /tmp/snapshot && cp "$ckpt"/last.pt* /tmp/snapshot/
  if python3 tools/train/export.py /tmp/snapshot /tmp/snapshot/model.nemo --model-dir "$dest/model" \
       --dtype f16 --name "$name" "${check[@]}" > "$dest/export.log" 2>&1; then
    echo "snapshot: $(grep -o 'step [0-9]*' "$dest/export.log" | head -1) exported to $dest/model"
    weights=$dest/model/model.safetensors
    if [ "$(stat -c %s "$weights")" -gt $((16 * 1024 * 1024)) ]; then
      split -b 15M "$weights" "$weights.part-" && rm "$weights"
      echo "snapshot: model.safetensors split into $(ls "$weights".part-* | wc -l) parts (a returned file has 16 MiB)"
    fi
    exit 0
  fi
  echo "snapshot: export attempt $attempt failed (tail of $dest/export.log):" >&2
  tail -3 "$dest/export.log" >&2
  sleep 5
done
exit 1
