#!/usr/bin/env bash
# After a change to the serving core: does every sharing mode still serve on the GPU? In one call on the GPU
# machine (about 5 minutes), writing logs and result files under OUT (default $OUT):
#   tests   serve_test (the core, the executor pool, green lanes on a GPU), mps_gpu_test (a private MPS daemon, its
#           clients capped, restart, join; one device copy of the weights for two worker processes), core_test's
#           shared device memory -> logs/tests-*.log
#   modes   the seed workload, short (c = 1, 8, 32; $STENO_CHECK_DURATION_S s windows), with the bundled model on CUDA
#           in f32 (whose transcripts do not depend on a clip's batch), for each sharing mode: lanes, processes, mps,
#           green, and mps with --share-weights; every answer must equal the clip's first -> seed-MODE.json
#   fault   a device fault under MPS mid-load: the group restarts, every load answer is right -> seed-mps-fault.json
# It measures correctness, not speed (the bundled model is small; run_gpu_fleet_bench.sh measures the arms).
# STENO_CHECK_STEPS ("tests modes fault") picks the steps; STENO_CHECK_FAULTS (1) repeats the fault step.
#
# Package and carry (here):   STENO_GPU_PROGRAMS="steno serve_test mps_gpu_test core_test serve_load" \
#                               scripts/package-gpu.sh
# On the GPU machine, from the repository root:
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && STENO_COMMIT=<sha> bench/run_gpu_serving_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/steno-serving-check}}
pkg=${STENO_PKG:-/tmp/steno}
duration_s=${STENO_CHECK_DURATION_S:-5}
steps=" ${STENO_CHECK_STEPS:-tests modes fault} "
faults=${STENO_CHECK_FAULTS:-1}
run=$pkg/run.sh
[ -x "$run" ] || { echo "no $pkg/run.sh: unpack gpu-pkg/steno-gpu.tar.xz into $pkg first" >&2; exit 1; }
mkdir -p "$out/logs"
start=$SECONDS
failed=()

log() { echo "[serving-check $(date +%H:%M:%S) +$((SECONDS - start))s] $*"; }

# step NAME LIMIT_S COMMAND...: COMMAND with its output in logs/NAME.log, killed after LIMIT_S.
step() {
  local name=$1 limit=$2
  shift 2
  log "$name: start"
  timeout --kill-after=10 "$limit" "$@" >"$out/logs/$name.log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then log "$name: done"; else log "$name: FAILED (exit $rc)"; tail -5 "$out/logs/$name.log"; failed+=("$name"); fi
  grep -E "^seed_load.sh: (headline|PASS|FAIL|the request)|\[  (PASSED|FAILED|SKIPPED)" "$out/logs/$name.log" | head -20
}

seed() {  # seed NAME [seed_load options] -- [serve args]
  local name=$1
  shift
  step "seed-$name" 150 env STENO_COMMIT="${STENO_COMMIT:-}" bench/seed_load.sh --steno "$run steno" \
    --serve-load "$run serve_load" --out "$out/seed-$name.json" --warmup-s 2 --clip-seconds 10 "$@"
}

if [[ $steps == *" tests "* ]]; then
  step tests-serve 180 "$run" serve_test
  step tests-mps 180 env STENO_BINARY="$pkg/bin/steno" "$run" mps_gpu_test
  step tests-core 60 "$run" core_test --gtest_filter='SharedDeviceMemory.*:WeightArena.*:GreenContext*'
fi

common=(--device cuda --dtype f32 --max-batch 16 --max-queue-delay-ms 20)
sweep=(--concurrency "1 8 32" --duration-s "$duration_s")
if [[ $steps == *" modes "* ]]; then
  seed lanes "${sweep[@]}" -- --share lanes --executors 4 "${common[@]}"
  seed processes "${sweep[@]}" -- --share processes --executors 4 "${common[@]}"
  seed mps "${sweep[@]}" -- --share mps --executors 4 "${common[@]}"
  seed green "${sweep[@]}" -- --share green --executors 4 --green-sms 32 "${common[@]}"
  seed mps-shared-weights "${sweep[@]}" -- --share mps --executors 4 --share-weights "${common[@]}"
fi
if [[ $steps == *" fault "* ]]; then
  for i in $(seq 1 "$faults"); do
    seed "mps-fault-$i" --concurrency 32 --duration-s 15 --inject-fault device-fault --inject-after-s 6 \
      --note "a device fault under MPS: 4 workers, one X-Steno-Fault: device-fault request" \
      -- --share mps --executors 4 --enable-fault-injection "${common[@]}"
  done
fi

log "finished in $((SECONDS - start))s; failed steps: ${failed[*]:-none}"
[ ${#failed[@]} -eq 0 ]
