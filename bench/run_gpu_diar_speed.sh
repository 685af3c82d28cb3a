#!/usr/bin/env bash
# The diarizer's speed work on the GPU machine, in one command: the CUDA tests its kernels touch (attention and
# the flash kernels, convolutions, the diarizer and ASR engines against the CPU), then diar_bench at the v2 shapes
# (random weights from configs/sortformer-4spk-v2.json, bf16) from pinned and from pageable host audio, with the
# flash attention kernels on (the default), on for the Transformer only and off ($STENO_FLASH_ATTENTION), the
# time by op, and the 0.6b ASR encoder with relative-position attention on its flash kernel and on the GEMM path. Optional: per-kernel times of the first kernels of a
# 32 x 60 s pass through Nsight Compute (STENO_NCU=1). Results go to $OUT (or the first argument) as one archive,
# results.tar.gz (the machine returns a limited number of files): h200-diar-speed-*.json,
# h200-asr-encoder-*.json, machine.txt, ncu-diar-32x60.csv and logs/.
#
# Built here and carried by
#   STENO_GPU_PROGRAMS="ops_cuda_test diar_cuda_test diar_bench asr_cuda_test engine_cuda_test steno cuda_engine_bench" \
#     scripts/package-gpu.sh
# and run there from the repository root:
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && bench/run_gpu_diar_speed.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_diar_common.sh
machine_info "$out/machine.txt"

if [ "${STENO_SKIP_TESTS:-0}" != 1 ]; then
  run ops 200 ops_cuda_test --gtest_filter='*Attention*:*Conv*:*Stem*'
  run diar 200 diar_cuda_test
  run asr 200 asr_cuda_test
  run engine 200 engine_cuda_test
  # The engines again with relative-position attention on its GEMM path (the default is its flash kernel).
  export STENO_FLASH_ATTENTION=1
  run diar-flash1 200 diar_cuda_test
  run engine-flash1 200 engine_cuda_test
  unset STENO_FLASH_ATTENTION
fi

like=configs/sortformer-4spk-v2.json
bench() {  # bench NAME FLASH EXTRA...: diar_bench bf16, 5 repetitions, JSON to h200-diar-speed-NAME.json
  local name=$1 flash=$2
  shift 2
  export STENO_FLASH_ATTENTION=$flash
  run "bench-$name" 150 diar_bench --like=$like --device=cuda \
    --dtype=bf16 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/h200-diar-speed-$name.json" --benchmark_out_format=json "$@"
}
# STENO_FLASH_ATTENTION: 0 no flash kernels, 1 the Transformer's only, all (the default): the Conformer's too.
bench pinned all --pinned-audio --benchmark_filter='BM_Diarize/'
bench pageable all --benchmark_filter='BM_Diarize/'
bench flash1-pinned 1 --pinned-audio --benchmark_filter='BM_Diarize/'
bench flash0-pinned 0 --pinned-audio --benchmark_filter='BM_Diarize/'
bench ops all --pinned-audio --benchmark_filter='BM_DiarizeOps' --benchmark_repetitions=1
bench ops-flash0 0 --pinned-audio --benchmark_filter='BM_DiarizeOps' --benchmark_repetitions=1

# The 0.6b ASR encoder (random weights, uncalibrated: the encoder's time does not depend on the joint).
model06=/tmp/steno-p06b
[ -f "$model06/config.json" ] ||
  run model-0.6b 200 steno model random --like configs/parakeet-tdt-0.6b-v2.json --out "$model06" --seed 1 --dtype bf16
for flash in all 1; do
  export STENO_FLASH_ATTENTION=$flash
  run "asr-encoder-flash$flash" 120 cuda_engine_bench \
    --model="$model06" --model_name=0.6b --dtype=bf16 --benchmark_filter='^encoder(_ops)?/b32x45s' \
    --benchmark_repetitions=3 --benchmark_out="$out/h200-asr-encoder-flash$flash.json" --benchmark_out_format=json
done

export STENO_FLASH_ATTENTION=all
if [ "${STENO_NCU:-0}" = 1 ]; then
  ncu=${NCU:-/usr/local/cuda/bin/ncu}
  echo "== ncu"
  timeout 200 "$ncu" --target-processes all --kernel-name-base demangled --launch-count 160 --clock-control none \
    --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size --csv --page raw \
    "$pkg/run.sh" diar_bench --like=$like --device=cuda --dtype=bf16 --pinned-audio \
    --benchmark_filter='BM_Diarize/clips:32/seconds:60' --benchmark_min_time=0.01 --benchmark_repetitions=1 \
    >"$out/ncu-diar-32x60.csv" 2>"$out/logs/ncu.log" || { echo "ncu FAILED"; tail -5 "$out/logs/ncu.log"; }
fi
# The machine returns a limited number of files: everything in one archive.
(cd "$out" && tar -czf results.tar.gz --remove-files -- *.json *.txt *.csv logs 2>/dev/null)
exit $status
