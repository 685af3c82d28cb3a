#!/usr/bin/env bash
# The bundled diarizer's training on the GPU machine in one call: unpack espeak-ng from the carried .debs/
# (tools/data/README.md; flite's 13 MB library is left out to keep the call's carry small), synthesize the speaker
# pool, train for a time budget (or resume from a carried checkpoint), export the model (f16) and the checkpoint's
# weights to OUT_DIR.
#
#   tools/train/gpu_train_diar.sh OUT_DIR TIME_BUDGET_S [TRAIN_DIAR.PY FLAGS...]
#
# Carry: .debs (and a checkpoint folder given with --out, if resuming).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1 budget=$2
shift 2
mkdir -p "$out"
tools/data/unpack_synth_debs.sh "${SYNTH_DEBS:-.debs}" /tmp/synth >/dev/null
export PATH="/tmp/synth/bin:$PATH" PYTHONUNBUFFERED=1
ckpt=${CKPT_DIR:-/tmp/diar-ckpt}
python3 tools/train/train_diar.py --config tools/train/configs/diar-small.yaml --out "$ckpt" \
  --pool /tmp/diar-pool --synthesizers espeak --jobs "$(( $(nproc) - 1 ))" --resume \
  --time-budget-s "$budget" --optim-state none "$@"
python3 tools/train/train_diar.py --config tools/train/configs/diar-small.yaml --out "$ckpt" \
  --export "$out/steno-sortformer-small" --export-dtype f16
cp "$ckpt/train.log" "$out/"
