#!/usr/bin/env bash
# Streaming diarization of one hour of audio on the GPU machine: the v2 shapes with random weights
# (configs/sortformer-4spk-v2.json; speed and memory do not depend on the weights) in bf16, `steno diarize
# --streaming` at both published operating points (1.04 s and 30.4 s) on the hour and on 5 minutes, and the
# offline pass on the same 5 minutes for comparison (offline CUDA attention takes up to 4096 frames, 5.5 min); wall time, peak host memory and peak GPU memory by bench/measure_run.py. Also the diarizer's CUDA
# tests (streaming on the device against the CPU). Results go to $OUT (or the first argument):
# h200-diar-streaming-*.json, machine.txt, logs/.
#
# Built here and carried by
#   STENO_GPU_PROGRAMS="steno diar_cuda_test" STENO_GPU_TESTDATA="sortformer-tiny sortformer-tiny-callhome" scripts/package-gpu.sh
# and run there from the repository root:
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && bench/run_gpu_diar_streaming.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/steno-diar-streaming}}
pkg=${STENO_PKG:-/tmp/steno}
work=${STENO_WORK:-/tmp/diar-streaming}
mkdir -p "$out/logs" "$work"
status=0
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; date -u; } \
  >"$out/machine.txt" 2>&1

echo "== diar_cuda_test"
timeout 300 "$pkg/run.sh" diar_cuda_test >"$out/logs/diar_cuda_test.log" 2>&1 || { echo "diar_cuda_test FAILED"; status=1; }
grep -E "PASSED|FAILED|measured" "$out/logs/diar_cuda_test.log" | tail -20

"$pkg/run.sh" steno model random --like configs/sortformer-4spk-v2.json --dtype bf16 --out "$work/v2" \
  >"$out/logs/model.log" 2>&1 || { echo "model random FAILED"; cat "$out/logs/model.log"; exit 1; }
wavs=(tests/data/sortformer-tiny/conv0.wav tests/data/sortformer-tiny/conv1.wav tests/data/sortformer-tiny/conv2.wav)
python3 bench/make_long_audio.py 3600 "$work/hour.wav" "${wavs[@]}"
python3 bench/make_long_audio.py 300 "$work/five-minutes.wav" "${wavs[@]}"

measure() {  # measure NAME LIMIT_S ARGS...: steno diarize ARGS under measure_run.py
  local name=$1 limit=$2
  shift 2
  echo "== $name"
  timeout --kill-after=10 "$limit" python3 bench/measure_run.py "$out/h200-diar-streaming-$name.json" -- \
    "$pkg/run.sh" steno diarize --device cuda --dtype bf16 --diarizer "$work/v2" -f json "$@" \
    2>"$out/logs/$name.log" || { echo "$name FAILED"; tail -5 "$out/logs/$name.log"; status=1; }
}
measure hour-1.04s 400 --streaming 1.04s "$work/hour.wav"
measure hour-30.4s 200 --streaming 30.4s "$work/hour.wav"
measure five-minutes-offline 200 --offline "$work/five-minutes.wav"
measure five-minutes-1.04s 200 --streaming 1.04s "$work/five-minutes.wav"
exit $status
