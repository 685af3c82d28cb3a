# Sourced by the diarizer's GPU scripts (bench/run_gpu_diar_check.sh, bench/run_gpu_diar_speed.sh), from the
# repository root: $out (the results folder, made with its logs/), $pkg (the unpacked package), $status (0 until a
# step fails), run() and machine_info().
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
