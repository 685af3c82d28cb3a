#!/usr/bin/env bash
# Every CUDA test program on the GPU machine, in one call, its logs brought back as one archive (a call brings back
# at most 8 files): ops_cuda_test, asr_cuda_test, engine_cuda_test (the bundled model's transcripts on the CUDA
# engine against the CPU's among them) and diar_cuda_test. Here, then in the `run` call (carry ["gpu-pkg"]):
#
#   STENO_GPU_PROGRAMS="steno ops_cuda_test asr_cuda_test engine_cuda_test diar_cuda_test" scripts/package-gpu.sh
#   tools/train/carry_slim.sh out-gpu          # `back` after the call
#   bench/run_gpu_cuda_tests.sh "$OUT"         # -> $OUT/cuda-tests.tar.xz (logs/, machine.txt, summary.txt)
#
# Exits non-zero when a program fails; summary.txt has each program's gtest verdict.
set -uo pipefail
cd "$(dirname "$0")/.."
dest=${1:?usage: bench/run_gpu_cuda_tests.sh OUT_DIR}
work=$(mktemp -d)
source bench/gpu_diar_common.sh "$work/cuda-tests"
mkdir -p "$pkg" && tar xf gpu-pkg/steno-gpu.tar.xz -C "$pkg"
machine_info "$out/machine.txt"
# The bundled LM does not fit this call beside the package (tools/train/carry_slim.sh out-gpu moves it out): its
# beam search test runs in bench/run_gpu_engine_targets.sh's call, which carries it (out-gpu-lm).
lm_filter=()
if [ ! -f models/steno-tdt-small-en/lm.arpa.gz ]; then
  lm_filter=(--gtest_filter='-*BeamSearchWithTheLm*')
  echo "engine_cuda_test: without the bundled LM here, its beam search test is left to the targets call" \
    >>"$out/summary.txt"
fi
for t in ops_cuda_test asr_cuda_test engine_cuda_test diar_cuda_test; do
  before=$status
  if [ "$t" = engine_cuda_test ]; then run "$t" 240 "$t" "${lm_filter[@]}"; else run "$t" 240 "$t"; fi
  verdict=ok
  [ "$status" = "$before" ] || verdict="FAILED (exit status)"
  echo "$t $verdict: $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/logs/$t.log" | tr '\n' ' ')" >>"$out/summary.txt"
done
cat "$out/summary.txt"
mkdir -p "$dest" && tar cJf "$dest/cuda-tests.tar.xz" -C "$work" cuda-tests
exit "$status"
