#!/usr/bin/env bash
# Where the GPU TDT decoder's step time goes, in one command on the GPU machine: gemm_candidates_bench (cuBLASLt's
# candidate algorithms timed one by one on the decoder's GEMM shapes), then Nsight Compute's own time of each
# kernel of a stretch of eager decoding steps at 32 x 45 s on the 0.6b shapes (random weights, calibrated as
# bench/run_gpu_engine_bench.sh does). Results go to $OUT (or the first argument) as one archive, results.tar.gz:
# gemm-candidates.json, ncu-decoder-b32.csv, machine.txt, logs/.
#
# Built here and carried by
#   STENO_GPU_PROGRAMS="steno cuda_engine_bench gemm_candidates_bench" STENO_GPU_TESTDATA=none scripts/package-gpu.sh
# and run there from the repository root:
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && bench/run_gpu_gemm_candidates.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_diar_common.sh
engine_bench_setup

run gemm 200 gemm_candidates_bench --benchmark_out="$out/gemm-candidates.json" --benchmark_out_format=json

random_06b "$work"
# The eager loop launches the step's kernels one by one: past the benchmark's preparation (front end, encoder)
# and into its warm-up decode, 64 consecutive kernels are several whole steps.
ncu=${NCU:-/usr/local/cuda/bin/ncu}
echo "== ncu"
timeout 200 "$ncu" --target-processes all --kernel-name-base demangled --launch-skip 3000 --launch-count 64 \
  --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size --csv --page raw \
  "$pkg/run.sh" cuda_engine_bench --model="$model06" --model_name=0.6b --dtype=bf16 \
  --benchmark_filter='^decoder/eager/b32x45s' --benchmark_min_time=0.01 --benchmark_repetitions=1 \
  >"$out/ncu-decoder-b32.csv" 2>"$out/logs/ncu.log" || { echo "ncu FAILED"; tail -5 "$out/logs/ncu.log"; status=1; }
(cd "$out" && tar -czf results.tar.gz --remove-files -- *.json *.txt *.csv logs 2>/dev/null)
exit $status
