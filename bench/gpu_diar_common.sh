# Sourced by the GPU scripts (bench/run_gpu_diar_check.sh, run_gpu_diar_speed.sh, run_gpu_engine_arms.sh,
# run_gpu_gemm_candidates.sh, run_gpu_decoder_trace.sh, run_gpu_cuda_tests.sh), from the repository root: $out
# (the results folder, made with its logs/), $pkg (the unpacked package), $status (0 until a step fails), run(),
# machine_info(), engine_bench_setup() and random_06b().
out=${1:-${OUT:-/tmp/steno-diar-out}}
pkg=${STENO_PKG:-/tmp/steno}
mkdir -p "$out/logs"
status=0
run() {  # run NAME LIMIT_S PROGRAM ARGS...: output to logs/NAME.log, its summary lines echoed
  local name=$1 limit=$2
  shift 2
  echo "== $name"
  timeout --kill-after=10 "$limit" "$pkg/run.sh" "$@" >"$out/logs/$name.log" 2>&1 || { echo "$name FAILED"; status=1; }
  grep -E "PASSED|FAILED|measured|BM_|rror" "$out/logs/$name.log" | tail -20
}
machine_info() {  # machine_info FILE: the GPU, its driver and clocks, the cores, the time
  { nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; date -u; } >"$1" 2>&1
}
engine_bench_setup() {  # machine.txt in $out, and $work: the engine benchmarks' work folder ($STENO_BENCH_WORK)
  machine_info "$out/machine.txt"
  work=${STENO_BENCH_WORK:-/tmp/steno-bench}
  mkdir -p "$work"
}
random_06b() {  # random_06b WORK [DTYPE]: $model06, the random 0.6B-shaped bf16 model the engine benchmarks
  # share (seed 1, the joint calibrated to 0.4 tokens a frame on the workload's calibration clips with the encoder
  # in f32), made once per WORK; with DTYPE (bf16, fp8) calibrated with the encoder in that precision instead
  # ($WORK/p06b-DTYPE): the model an arm in that precision decodes at the target rate with
  [ -d "$1/workload" ] || run workload 60 cuda_engine_bench --export_workload="$1/workload" --export_only
  local cal=${2:-f32}
  model06=$1/p06b
  [ "$cal" = f32 ] || model06=$1/p06b-$cal
  [ -f "$model06/config.json" ] ||
    STENO_LOG_LEVEL=info run "model-0.6b-$cal" 240 steno model random --like configs/parakeet-tdt-0.6b-v2.json \
      --out "$model06" --seed 1 --dtype bf16 --token-rate 0.4 --calibrate-on "$1"/workload/calibration/*.wav \
      --device cuda --calibrate-dtype "$cal"
}
