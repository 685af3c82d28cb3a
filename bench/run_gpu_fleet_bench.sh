#!/usr/bin/env bash
# The fleet's GPU runs (GPU sharing: worker processes, MPS, green contexts) on the GPU machine, step by step (each
# within a time limit, the whole within a deadline), writing under OUT (default $OUT) the names they are committed
# with in bench/results/h200-fleet/:
#   tests        the fleet's GPU tests: mps_gpu_test (a private MPS daemon, clients capped to their share,
#                restart, join), GreenContextCuda.* (SM partitions), GreenRunnersGpu.* (green lanes transcribe like a
#                plain lane), core_test GreenContext*:Nvml* -> logs/tests-*.log
#   fault        a device fault under MPS: the seed load at c = 32 on 4 MPS workers, one request with
#                X-Steno-Fault: device-fault sent mid-sweep; every load answer must be right, the group restarted
#                -> h200-fleet-mps-device-fault.json
#   pressure     memory pressure: 4 MPS workers whose pinned device memory limit ($STENO_FLEET_PINNED, 3G) is too
#                small for the largest batch (32 x 45 s), the seed load at c = 64; no request may fail (batches split,
#                the cap shrinks) -> h200-fleet-mps-memory-pressure.json
#   weights      one device copy of the weights (--share-weights): core_test SharedDeviceMemory.* and mps_gpu_test
#                SharedWeightsFleet.* (logs/tests-weights-*.log), then the seed load at c = 64 for 20 s on 4 MPS workers
#                with batching, without and with --share-weights: each worker's device memory is in the results'
#                fleet_metrics_after -> h200-fleet-mps-batch-{private,shared}-weights.json
#   arms         the seed sweep of each arm of $STENO_FLEET_ARMS ("processes mps mps+batch green+batch"; also `single`,
#                `lanes+batch`, and `mps+batch+spread`, `lanes+batch+spread`, `green+batch+spread` with
#                --spread-batches) at $STENO_FLEET_CONCURRENCY ("1 4 8 16 20 24 32 64 100") with
#                $STENO_FLEET_DURATION_S (30) s windows -> h200-seed-ARM.json; the report is made on the development
#                machine (gnuplot): steno bench report --out bench/results/h200-arms single=...
# STENO_FLEET_STEPS ("tests fault pressure weights arms") picks the steps; a run call's 10 minutes hold tests + fault +
# pressure (about 4 min) and then about 1 arm at the protocol's full sweep (5.6 min each): spread the arms over calls.
# On a host of several GPUs, instances side by side each get CUDA_VISIBLE_DEVICES=<one GPU's UUID> (UUIDs, since MPS
# remaps ordinals) and their own OUT; the servers, the MPS daemon and the GPU sampling then keep to that GPU. Make
# the 0.6b model first (STENO_FLEET_STEPS=none), so that they do not both make it: run_gpu_fleet_side_by_side.sh.
#
# On the GPU machine, from the repository root, with the package carried
# (STENO_GPU_PROGRAMS="steno serve_load cuda_engine_bench ops_cuda_test serve_test core_test mps_gpu_test"
# scripts/package-gpu.sh here):
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && STENO_COMMIT=<sha> bench/run_gpu_fleet_bench.sh
# Environment: STENO_PKG (/tmp/steno), STENO_BENCH_WORK (/tmp/steno-bench: the 0.6b model, shared with
# run_gpu_engine_bench.sh), STENO_COMMIT, STENO_FLEET_DEADLINE (570 s), STENO_FLEET_WORKERS (4), STENO_FLEET_DEVICE
# (cuda; cpu for a dry run of the script's logic with the bundled model: STENO_FLEET_STEPS=arms
# STENO_FLEET_ARMS=processes, since MPS and green need a GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/steno-fleet-out}}
pkg=${STENO_PKG:-/tmp/steno}
work=${STENO_BENCH_WORK:-/tmp/steno-bench}
steps=" ${STENO_FLEET_STEPS:-tests fault pressure weights arms} "
arms=${STENO_FLEET_ARMS:-processes mps mps+batch green+batch}
concurrency=${STENO_FLEET_CONCURRENCY:-1 4 8 16 20 24 32 64 100}
duration_s=${STENO_FLEET_DURATION_S:-30}
workers=${STENO_FLEET_WORKERS:-4}
pinned=${STENO_FLEET_PINNED:-3G}
deadline=${STENO_FLEET_DEADLINE:-570}
mkdir -p "$out/logs" "$work"
start=$SECONDS
failed=()
run=$pkg/run.sh
[ -x "$run" ] || { echo "no $pkg/run.sh: unpack gpu-pkg/steno-gpu.tar.xz into $pkg first" >&2; exit 1; }

log() { echo "[fleet-bench $(date +%H:%M:%S) +$((SECONDS - start))s] $*"; }

# step NAME LIMIT_S COMMAND...: COMMAND with its output in logs/NAME.log, within LIMIT_S and the deadline.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((deadline - (SECONDS - start)))
  [ $left -lt $limit ] && limit=$left
  if [ $limit -lt 10 ]; then
    log "$name: SKIPPED (no time left before the ${deadline}s deadline)"
    failed+=("$name")
    return 1
  fi
  log "$name: start (limit ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" >"$out/logs/$name.log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then log "$name: done"; else log "$name: FAILED (exit $rc)"; tail -5 "$out/logs/$name.log"; failed+=("$name"); fi
  grep -E "^seed_load.sh: ([0-9]|headline|the request)|\[  (PASSED|FAILED)" "$out/logs/$name.log" | head -20
  return $rc
}

# The 0.6b model, as run_gpu_engine_bench.sh makes it (reused when that made it already); the bundled one on a CPU.
device=${STENO_FLEET_DEVICE:-cuda}
model=$work/p06b
serve_common=(--device cuda --dtype bf16 --model "$model")
if [ "$device" = cpu ]; then
  model=models/steno-tdt-small-en
  serve_common=(--device cpu --model "$model")
elif [ ! -f "$model/made.log" ]; then
  step workload 60 "$run" cuda_engine_bench --export_workload="$work/workload" --export_only
  step model-0.6b 120 env STENO_LOG_LEVEL=info "$run" steno model random --like configs/parakeet-tdt-0.6b-v2.json \
    --out "$model" --seed 1 --dtype bf16 --token-rate 0.4 --calibrate-on "$work"/workload/calibration/*.wav \
    --device cuda && cp "$out/logs/model-0.6b.log" "$model/made.log"
fi

seed() {  # seed NAME LIMIT [seed_load options] -- [serve args]
  local name=$1 limit=$2
  shift 2
  step "$name" "$limit" env STENO_COMMIT="${STENO_COMMIT:-}" bench/seed_load.sh --steno "$run steno" \
    --serve-load "$run serve_load" --out "$out/$name.json" --warmup-s 3 "$@"
}

if [[ $steps == *" tests "* ]]; then
  step tests-mps 120 "$run" mps_gpu_test
  step tests-green-ops 60 "$run" ops_cuda_test --gtest_filter='GreenContextCuda.*'
  step tests-green-serve 120 "$run" serve_test --gtest_filter='GreenRunners*:LaneOutOfMemory.*'
  step tests-core 60 "$run" core_test --gtest_filter='GreenContext*:Nvml*'
fi
if [[ $steps == *" fault "* ]]; then
  seed h200-fleet-mps-device-fault 150 --concurrency 32 --duration-s 20 --inject-fault device-fault \
    --inject-after-s 8 --note "a device fault under MPS: $workers workers, one X-Steno-Fault: device-fault request" \
    -- --share mps --executors "$workers" --enable-fault-injection --max-batch 16 --max-queue-delay-ms 50 \
    "${serve_common[@]}"
fi
if [[ $steps == *" pressure "* ]]; then
  seed h200-fleet-mps-memory-pressure 150 --concurrency 64 --duration-s 30 \
    --note "memory pressure: $workers MPS workers, pinned device memory limit $pinned each, batches up to 32" \
    -- --share mps --executors "$workers" --mps-pinned-mem-limit "$pinned" --max-batch 32 --max-queue-delay-ms 50 \
    "${serve_common[@]}"
fi
if [[ $steps == *" weights "* ]]; then
  step tests-weights-core 60 "$run" core_test --gtest_filter='SharedDeviceMemory.*:WeightArena.*'
  step tests-weights-fleet 120 env STENO_BINARY="$pkg/bin/steno" "$run" mps_gpu_test \
    --gtest_filter='SharedWeightsFleet.*'
  for weights in private shared; do
    flag=(); [ $weights = shared ] && flag=(--share-weights)
    seed "h200-fleet-mps-batch-$weights-weights" 120 --concurrency 64 --duration-s 20 \
      --note "$weights weights: $workers MPS workers, batches up to 16 within 50 ms; device memory per worker in fleet_metrics_after" \
      -- --share mps --executors "$workers" --max-batch 16 --max-queue-delay-ms 50 "${flag[@]}" "${serve_common[@]}"
  done
fi
if [[ $steps == *" arms "* ]]; then
  for arm in $arms; do
    case $arm in
      processes) args=(--share processes --executors "$workers" --max-batch 1) ;;
      mps) args=(--share mps --executors "$workers" --max-batch 1) ;;
      mps+batch) args=(--share mps --executors "$workers" --max-batch 16 --max-queue-delay-ms 50) ;;
      green+batch) args=(--share green --executors "$workers" --green-sms 32 --max-batch 16 --max-queue-delay-ms 50) ;;
      lanes+batch) args=(--lanes "$workers" --max-batch 16 --max-queue-delay-ms 50) ;;
      mps+batch+spread)
        args=(--share mps --executors "$workers" --max-batch 16 --max-queue-delay-ms 50 --spread-batches) ;;
      lanes+batch+spread) args=(--lanes "$workers" --max-batch 16 --max-queue-delay-ms 50 --spread-batches) ;;
      green+batch+spread)
        args=(--share green --executors "$workers" --green-sms 32 --max-batch 16 --max-queue-delay-ms 50 --spread-batches) ;;
      single) args=(--lanes 1 --max-batch 1) ;;
      *) log "unknown arm $arm"; failed+=("$arm"); continue ;;
    esac
    seed "h200-seed-${arm//+/-}" 400 --concurrency "$concurrency" --duration-s "$duration_s" \
      --note "arm $arm: ${args[*]}" -- "${args[@]}" "${serve_common[@]}"
  done
fi
log "finished in $((SECONDS - start))s; failed steps: ${failed[*]:-none}"
[ ${#failed[@]} -eq 0 ]
