#!/usr/bin/env bash
# Test fixture: converts the committed NeMo Sortformer reference (tests/data/sortformer-tiny: a real .nemo and
# NeMo's own outputs) with tools/convert_nemo.py, once with NeMo's default post-processing and once with the
# CALLHOME v1 parameters, and NeMo's golden.npz (offline) and our NeMo-run streaming golden.npz into golden sets.
set -euo pipefail
python=$1 src=$2 out=$3
mkdir -p "$out"
ref="$src/tests/data/sortformer-tiny"
"$python" "$src/tools/convert_nemo.py" "$ref/model.nemo" "$out/sortformer-tiny"
"$python" "$src/tools/convert_nemo.py" "$ref/model.nemo" "$out/sortformer-tiny-callhome" \
  --postprocessing "$src/tests/diar/sortformer_diar_4spk-v1_callhome-part1.yaml"
"$python" "$src/tools/nemo_golden_to_safetensors.py" "$ref/golden.npz" "$out/golden-sortformer-tiny"
# NeMo's streaming outputs for the same model (tools/sortformer_streaming_golden.py), audio from the wavs above.
"$python" "$src/tools/nemo_golden_to_safetensors.py" "$src/tests/data/sortformer-tiny-streaming/golden.npz" \
  "$out/golden-sortformer-tiny-streaming" --wav-dir "$ref"
