#!/usr/bin/env bash
# The engine benchmark (docs/benchmarks.md) on the GPU machine, in one command (about 5 minutes on an H200):
#   1. the `0.6b` model: `steno model random --like configs/parakeet-tdt-0.6b-v2.json`, bf16, its joint calibrated
#      to 0.4 tokens per encoder frame (random_model.h, calibrate_joint) on the benchmark's own speech: its first
#      8 clips of 45 s and 16 of 10 s (a random model's rate depends on the clip length), on the GPU in f32
#      (STENO_BENCH_CALIBRATE_DEVICE=cpu for the CPU: minutes instead of seconds);
#   2. cuda_engine_bench on `0.6b` and on `tiny` (the bundled model), bf16: Google Benchmark JSON;
#   3. tools/bench/torch_engine_bench.py, the PyTorch reference on the same models, audio and batch shapes;
#   4. bench/compare_engine_results.py: the side-by-side Markdown table (steno, torch, NeMo anchor, targets).
# Results go to $OUT (or the first argument) under the names they are committed with in bench/results/:
#   h200-engine.md, h200-cuda-engine-{0.6b,tiny}.json, h200-torch-engine-{0.6b,tiny}.json, h200-engine-machine.txt,
#   h200-model-0.6b.txt; logs/ holds each step's output.
#
# On the GPU machine, from the repository root (the carried working tree, with gpu-pkg/ carried too), built by
#   STENO_GPU_PROGRAMS="steno ops_cuda_test asr_cuda_test engine_cuda_test cuda_engine_bench" scripts/package-gpu.sh
# here:
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && bench/run_gpu_engine_bench.sh
#
# Each step has a time limit (a step that fails or runs over is reported and the next one runs), most important
# first, and the whole run keeps within STENO_BENCH_DEADLINE seconds (570: a run call's 600 s limit), cutting
# the last steps short if need be but always writing the comparison of what finished.
# Environment: STENO_PKG (/tmp/steno), STENO_BENCH_WORK (/tmp/steno-bench: models and the shared workload),
# STENO_BENCH_CALIBRATE_DEVICE (cuda), PYTHON (python3), STENO_COMMIT (recorded instead of git's HEAD: pass
# it, since the device machine's copy of .git can be older than the tree it runs), STENO_BENCH_QUICK=1 (fewer
# repetitions: a dry run of the whole chain), STENO_BENCH_MODELS ("0.6b tiny": which models),
# STENO_BENCH_TORCH_DEVICE (cuda; cpu for a dry run of the script's logic on a machine without a GPU), STENO_BENCH_TORCH_ARGS (extra
# torch_engine_bench.py arguments, e.g. "--no-mix --shapes b1x45s --dtype f32" for such a dry run).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/steno-bench-out}}
pkg=${STENO_PKG:-/tmp/steno}
work=${STENO_BENCH_WORK:-/tmp/steno-bench}
python=${PYTHON:-python3}
torch_device=${STENO_BENCH_TORCH_DEVICE:-cuda}
models=" ${STENO_BENCH_MODELS:-0.6b tiny} "
read -r -a torch_extra <<< "${STENO_BENCH_TORCH_ARGS:-}"
prefix=h200-
deadline=${STENO_BENCH_DEADLINE:-570}
mkdir -p "$out/logs" "$work"
start=$SECONDS
failed=()

log() { echo "[engine-bench $(date +%H:%M:%S) +$((SECONDS - start))s] $*"; }

# step NAME LIMIT_S COMMAND...: runs COMMAND with output to logs/NAME.log (progress lines echoed), within LIMIT_S
# and within the deadline less 20 s kept for the comparison (NAME compare: within the deadline).
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((deadline - (SECONDS - start) - 20))
  [ "$name" = compare ] && left=$((left + 20))
  [ $left -lt $limit ] && limit=$left
  if [ $limit -lt 5 ]; then
    log "$name: SKIPPED (no time left before the ${deadline}s deadline)"
    failed+=("$name")
    return 1
  fi
  log "$name: start (limit ${limit}s)"
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$out/logs/$name.log" |
    grep --line-buffered -E \
      '^\[torch-bench|joint calib|^Running|rror|warn|^end_to_end/b[0-9]+x[0-9]+s/real_time(_median)? '
  local rc=${PIPESTATUS[0]}
  if [ $rc -eq 0 ]; then
    log "$name: done in $((SECONDS - t0))s"
  else
    local why="exit $rc"
    [ $rc -eq 124 ] && why="time limit"
    log "$name: FAILED ($why) after $((SECONDS - t0))s; see logs/$name.log"
    tail -5 "$out/logs/$name.log" | sed 's/^/    /'
    failed+=("$name")
  fi
  return $rc
}

run=$pkg/run.sh
[ -x "$run" ] || { echo "no $pkg/run.sh: unpack gpu-pkg/steno-gpu.tar.xz into $pkg first" >&2; exit 1; }

if [ "${STENO_BENCH_QUICK:-0}" = 1 ]; then
  reps=(--benchmark_repetitions=1 --benchmark_min_time=0.05)
  torch_reps=(--repeats 1 --mix-repeats 1 "${torch_extra[@]}")
else
  reps=(--benchmark_repetitions=3 --benchmark_min_time=0.2)
  torch_reps=(--repeats 5 --mix-repeats 2 "${torch_extra[@]}")
fi

{
  echo "date: $(date -u +%FT%TZ)"
  echo "steno commit: ${STENO_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
  echo "command: bench/run_gpu_engine_bench.sh (STENO_BENCH_QUICK=${STENO_BENCH_QUICK:-0})"
  echo "host: $(hostname), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv 2>&1
  nvidia-smi 2>&1 | grep -m1 'CUDA Version'
  "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
} > "$out/${prefix}engine-machine.txt"
sed 's/^/    /' "$out/${prefix}engine-machine.txt"

# The audio both benchmarks run (speech stream + shapes + mix lengths) and the calibration clips.
step workload 60 "$run" cuda_engine_bench --export_workload="$work/workload" --export_only

# The 0.6b model (kept in $work: a second run on the same machine reuses it).
model06=$work/p06b
made=1
if [[ $models != *" 0.6b "* ]]; then
  log "0.6b: skipped (STENO_BENCH_MODELS)"
elif [ -f "$model06/made.log" ]; then
  log "model-0.6b: reusing $model06"
  made=0
else
  step model-0.6b 240 env STENO_LOG_LEVEL=info "$run" steno model random --like configs/parakeet-tdt-0.6b-v2.json \
    --out "$model06" --seed 1 --dtype bf16 --token-rate 0.4 --calibrate-on "$work"/workload/calibration/*.wav \
    --device "${STENO_BENCH_CALIBRATE_DEVICE:-cuda}"
  made=$?
  [ $made -eq 0 ] && cp "$out/logs/model-0.6b.log" "$model06/made.log"
fi
if [ $made -eq 0 ]; then
  cp "$model06/made.log" "$out/${prefix}model-0.6b.txt"
  step steno-0.6b 170 "$run" cuda_engine_bench --model="$model06" --model_name=0.6b --dtype=bf16 "${reps[@]}" \
    --benchmark_out="$out/${prefix}cuda-engine-0.6b.json" --benchmark_out_format=json
  step torch-0.6b 200 "$python" tools/bench/torch_engine_bench.py --model "$model06" --model-name 0.6b \
    --workload "$work/workload" --out "$out/${prefix}torch-engine-0.6b.json" --dtype bf16 --device "$torch_device" \
    "${torch_reps[@]}"
fi

tiny=models/steno-tdt-small-en
if [[ $models == *" tiny "* ]]; then
  step steno-tiny 100 "$run" cuda_engine_bench --model="$tiny" --model_name=tiny --dtype=bf16 "${reps[@]}" \
    --benchmark_out="$out/${prefix}cuda-engine-tiny.json" --benchmark_out_format=json
  step torch-tiny 100 "$python" tools/bench/torch_engine_bench.py --model "$tiny" --model-name tiny \
    --workload "$work/workload" --out "$out/${prefix}torch-engine-tiny.json" --dtype bf16 --device "$torch_device" \
    "${torch_reps[@]}"
fi

step compare 30 "$python" bench/compare_engine_results.py "$out" --prefix "$prefix" --out "$out/${prefix}engine.md"
cat "$out/${prefix}engine.md" 2>/dev/null
log "finished in $((SECONDS - start))s; failed steps: ${failed[*]:-none}"
[ ${#failed[@]} -eq 0 ]
