#!/usr/bin/env bash
# The encoder's fused glue (steno/ops/fused.h) on the GPU machine, in one command: the CUDA tests its kernels and
# the engines touch, then cuda_engine_bench on the 0.6b shapes (random weights, bf16, the joint calibrated to
# 0.4 tokens per frame as bench/run_gpu_engine_bench.sh does) with the fused kernels ($STENO_FUSED_OPS=1, the
# default) and without them (0), side by side in one run, alternating, twice each: the audio upload (pageable and
# staged), features, encoder, the encoder's time by op, the decoder's graph-while loop, end to end, and the offline
# mix at batch 128. Results go to $OUT (or the first argument) as one archive, results.tar.gz:
# h200-fusions-{on,off}-{1,2}.json, machine.txt, logs/.
#
# Built here and carried by
#   STENO_GPU_PROGRAMS="steno ops_cuda_test asr_cuda_test engine_cuda_test cuda_engine_bench" \
#     STENO_GPU_TESTDATA="nemo-tiny-24 nemo-tiny-25 golden-nemo24 golden-nemo25" scripts/package-gpu.sh
# and run there from the repository root:
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && bench/run_gpu_engine_fusions.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_diar_common.sh
machine_info "$out/machine.txt"
work=${STENO_BENCH_WORK:-/tmp/steno-bench}
mkdir -p "$work"

if [ "${STENO_SKIP_TESTS:-0}" != 1 ]; then
  run ops 200 ops_cuda_test --gtest_filter='*Fused*:*Norm*:*Conv*:*Activation*:*Elementwise*:*CudaGraph*'
  run asr 200 asr_cuda_test
  run engine 200 engine_cuda_test
  STENO_FUSED_OPS=0 run engine-unfused 200 engine_cuda_test
fi

run workload 60 cuda_engine_bench --export_workload="$work/workload" --export_only
model06=$work/p06b
[ -f "$model06/config.json" ] ||
  STENO_LOG_LEVEL=info run model-0.6b 240 steno model random --like configs/parakeet-tdt-0.6b-v2.json \
    --out "$model06" --seed 1 --dtype bf16 --token-rate 0.4 --calibrate-on "$work"/workload/calibration/*.wav \
    --device cuda
filter='^(upload|features|encoder|encoder_ops|end_to_end)/|^decoder/graph-while/|^offline_mix/b128'
# The arms alternate, twice each, so that a drift of the machine over the run shows as a difference between the
# repeats of one arm rather than between the arms.
for round in 1 2; do
  for arm in off on; do
    flag=1
    [ $arm = off ] && flag=0
    STENO_FUSED_OPS=$flag run "bench-$arm-$round" 200 cuda_engine_bench --model="$model06" --model_name=0.6b \
      --dtype=bf16 --benchmark_filter="$filter" --benchmark_repetitions=3 --benchmark_min_time=0.2 \
      --benchmark_out="$out/h200-fusions-$arm-$round.json" --benchmark_out_format=json
  done
done
(cd "$out" && tar -czf results.tar.gz --remove-files -- *.json *.txt logs 2>/dev/null)
exit $status
