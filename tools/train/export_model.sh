#!/bin/sh
# Export a training checkpoint as the bundled steno model: OUT/NAME.nemo, then models/NAME (f16) via
# tools/convert_nemo.py, checked by decoding clips of MANIFEST with both (tools/train/export.py).
#
#   tools/train/export_model.sh CKPT NAME [MANIFEST] [CHECK_N]
#   CKPT: last.pt, the NAME of last.pt.000... parts, or train.py's --out folder
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 2 ] || { sed -n '2,6p' "$0" >&2; exit 2; }
CKPT=$1 NAME=$2 MANIFEST=${3:-} N=${4:-16}
PY=${PYTHON:-/usr/bin/python3}
set -- "$PY" "$ROOT/tools/train/export.py" "$CKPT" "$ROOT/out/$NAME.nemo" --model-dir "$ROOT/models/$NAME" \
  --dtype f16 --name "$NAME"
[ -n "$MANIFEST" ] && set -- "$@" --check-manifest "$MANIFEST" --check-n "$N"
exec "$@"
