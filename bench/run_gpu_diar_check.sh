#!/usr/bin/env bash
# The diarizer on the GPU machine, in one command: the CUDA tests of its ops and engine (f32 against the CPU
# within 1e-5 with identical RTTM, f16/bf16 within the ASR engine's tolerances; the v2 front end without
# normalisation), then diar_bench at the v2 shapes (random weights from configs/sortformer-4spk-v2.json) in bf16
# and f32. Results go to $OUT (or the first
# argument): h200-diar-bench-{bf16,f32}.json, h200-diar-machine.txt and logs/.
#
# Built here and carried by
#   STENO_GPU_PROGRAMS="ops_cuda_test asr_cuda_test diar_cuda_test diar_bench" \
#     STENO_GPU_TESTDATA=sortformer-tiny-callhome \
#     scripts/package-gpu.sh
# and run there from the repository root:
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && bench/run_gpu_diar_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_diar_common.sh
machine_info "$out/h200-diar-machine.txt"
run features 120 asr_cuda_test --gtest_filter="*CudaFeatures*"
run ops 120 ops_cuda_test --gtest_filter='*Sigmoid*:*SelfAttention*'
run engine 180 diar_cuda_test
for dt in bf16 f32; do
  run "bench-$dt" 240 diar_bench --like=configs/sortformer-4spk-v2.json --device=cuda --dtype=$dt \
    --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true --benchmark_out="$out/h200-diar-bench-$dt.json" \
    --benchmark_out_format=json
done
exit $status
