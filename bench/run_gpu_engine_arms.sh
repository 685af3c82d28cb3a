#!/usr/bin/env bash
# Two arms of the CUDA engine side by side on the GPU machine, in one command: the CUDA tests the engines touch,
# then cuda_engine_bench on the 0.6b shapes (random weights, bf16, the joint calibrated to 0.4 tokens per frame
# as bench/run_gpu_engine_bench.sh does) with an environment variable set to each arm's value, alternating, twice
# each, so that a drift of the machine shows as a difference between the repeats of one arm rather than between
# the arms. Results go to $OUT (or the first argument) as one archive, results.tar.gz:
# $STENO_ARMS_NAME-<arm>-{1,2}.json, machine.txt, logs/.
#
#   STENO_ARMS_VAR      the variable (e.g. STENO_FUSED_OPS, STENO_TDT_LOOP; STENO_BENCH_DTYPE with "bf16 fp8"
#                       compares compute dtypes, each arm on the model calibrated in its own precision;
#                       STENO_BENCH_PROGRAM with two program names in the package's bin/ compares two builds,
#                       e.g. "cuda_engine_bench_before cuda_engine_bench")
#   STENO_ARMS          the two values, "OFF ON" (the first is the baseline)
#   STENO_ARMS_NAME     the result files' prefix
#   STENO_ARMS_FILTER   the benchmarks (a --benchmark_filter regex)
#   STENO_SKIP_TESTS=1  only the benchmark (STENO_SKIP_OPS_TESTS=1: without ops_cuda_test)
#
# Built here and carried by
#   STENO_GPU_PROGRAMS="steno ops_cuda_test asr_cuda_test engine_cuda_test cuda_engine_bench" \
#     STENO_GPU_TESTDATA="nemo-tiny-24 nemo-tiny-25 golden-nemo24 golden-nemo25" scripts/package-gpu.sh
# and run there from the repository root:
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno
#   STENO_ARMS_VAR=... STENO_ARMS=... STENO_ARMS_FILTER=... bench/run_gpu_engine_arms.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_diar_common.sh
var=${STENO_ARMS_VAR:?the variable that selects the arm}
read -r -a arms <<<"${STENO_ARMS:?the two values, baseline first}"
name=${STENO_ARMS_NAME:-arms}
filter=${STENO_ARMS_FILTER:?the benchmarks}
engine_bench_setup

if [ "${STENO_SKIP_TESTS:-0}" != 1 ]; then
  [ "${STENO_SKIP_OPS_TESTS:-0}" = 1 ] ||
    run ops 200 ops_cuda_test --gtest_filter='*Fused*:*Norm*:*Conv*:*Activation*:*Elementwise*:*CudaGraph*:*LengthsGraph*'
  run asr 200 asr_cuda_test
  run engine 200 engine_cuda_test
  export "$var=${arms[0]}"
  run "engine-${arms[0]}" 200 engine_cuda_test
  unset "$var"
fi

random_06b "$work"
for round in 1 2; do
  for arm in "${arms[@]}"; do
    # Arms of two precisions: each its own model, calibrated in that precision (random_06b says why).
    [ "$var" = STENO_BENCH_DTYPE ] && random_06b "$work" "$arm"
    export "$var=$arm"
    run "bench-$arm-$round" 200 "${STENO_BENCH_PROGRAM:-cuda_engine_bench}" --model="$model06" --model_name=0.6b \
      --dtype="${STENO_BENCH_DTYPE:-bf16}" --benchmark_filter="$filter" --benchmark_repetitions=3 --benchmark_min_time=0.2 \
      --benchmark_out="$out/$name-$arm-$round.json" --benchmark_out_format=json
    unset "$var"
  done
done
(cd "$out" && tar -czf results.tar.gz --remove-files -- *.json *.txt logs 2>/dev/null)
exit $status
