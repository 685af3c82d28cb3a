#!/usr/bin/env bash
# Test fixture: what tools/convert_nemo.py makes of the committed NeMo references, one model directory per case
# that `steno model import` must reproduce byte for byte (tests/nemo/import_test.cc): the ASR model with each
# front end, from its nemo_version and in f16; the Sortformer with NeMo's default post-processing, with the CALLHOME
# parameters (as tests/diar/prepare_sortformer_tiny.sh) and in bf16.
set -euo pipefail
python=$1 src=$2 out=$3
rm -rf "$out"
mkdir -p "$out"
convert() { "$python" "$src/tools/convert_nemo.py" "$@" >/dev/null; }
asr="$src/tests/data/nemo-tiny/model.nemo"
diar="$src/tests/data/sortformer-tiny/model.nemo"
convert "$asr" "$out/nemo-tiny-24" --frontend-version 2.4
convert "$asr" "$out/nemo-tiny-25" --frontend-version 2.5
convert "$asr" "$out/nemo-tiny-auto"
convert "$asr" "$out/nemo-tiny-f16" --dtype f16
convert "$diar" "$out/sortformer-tiny"
convert "$diar" "$out/sortformer-tiny-callhome" \
  --postprocessing "$src/tests/diar/sortformer_diar_4spk-v1_callhome-part1.yaml"
convert "$diar" "$out/sortformer-tiny-bf16" --dtype bf16
