#!/usr/bin/env bash
# Where the persistent TDT decoder's steps spend their time, on the GPU machine: the CUDA decoder tests, then the
# decoder alone at the 0.6b shapes (random weights, bf16, as bench/run_gpu_engine_arms.sh makes them) in both of
# the persistent kernel's block roles (shared, dedicated) with the kernel's phase trace on ($STENO_TDT_TRACE:
# the first decode of each bucket and grid, summarized per phase in trace.txt), beside the graph-while loop.
# Results in $OUT (or the first argument): h200-decoder-trace.json, trace.txt, machine.txt, logs/.
#
# Built here and carried by
#   STENO_GPU_PROGRAMS="steno asr_cuda_test cuda_engine_bench" STENO_GPU_TESTDATA=none scripts/package-gpu.sh
# and run there from the repository root:
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && bench/run_gpu_decoder_trace.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_diar_common.sh
engine_bench_setup
[ "${STENO_SKIP_TESTS:-0}" = 1 ] || run asr 200 asr_cuda_test
random_06b "$work"
rm -f "$out/trace.txt"
filter=${STENO_TRACE_FILTER:-^decoder/(persistent|persistent-shared|persistent-dedicated|graph-while)/}
STENO_TDT_TRACE="$out/trace.txt" run bench 300 cuda_engine_bench --model="$model06" --model_name=0.6b \
  --dtype=bf16 --benchmark_filter="$filter" \
  --benchmark_repetitions=3 --benchmark_min_time=0.2 --benchmark_out="$out/h200-decoder-trace.json" \
  --benchmark_out_format=json
cat "$out/trace.txt"
exit $status
