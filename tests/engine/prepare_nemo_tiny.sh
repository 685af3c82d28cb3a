#!/usr/bin/env bash
# Test fixture: converts the committed NeMo reference (tests/data/nemo-tiny, a real .nemo and NeMo's own outputs)
# with tools/convert_nemo.py into one steno model per front-end variant, and NeMo's .npz outputs into golden sets.
set -euo pipefail
python=$1 src=$2 out=$3
mkdir -p "$out"
for v in 24 25; do
  "$python" "$src/tools/convert_nemo.py" "$src/tests/data/nemo-tiny/model.nemo" "$out/nemo-tiny-$v" \
    --frontend-version "${v:0:1}.${v:1:1}"
  "$python" "$src/tools/nemo_golden_to_safetensors.py" "$src/tests/data/nemo-tiny/golden_nemo$v.npz" "$out/golden-nemo$v"
done
