#!/usr/bin/env bash
# Hardening on the GPU machine (issue: fuzzing, soak, chaos), in steps that fit the device tool's calls:
#   bench/run_gpu_hardening.sh chaos [OUT]        the diarizer (under MPS) hurt while the seed load transcribes
#                                                 (bench/seed_load.sh --chaos bench/chaos_diarizer.py), the
#                                                 transcriber under the same daemon and in lanes beside it:
#                                                 OUT/chaos-ARM.json; first the device-group tests (fleet_test's
#                                                 DeviceGroupsOnOneGpu: one GPU listed twice, each sharing mode)
#   bench/run_gpu_hardening.sh soak-start SECONDS  bench/soak.sh for SECONDS in a session of its own (setsid: it
#                                                 outlives the call that starts it), into $SOAK_DIR
#   bench/run_gpu_hardening.sh soak-wait [OUT] [SECONDS]  waits for it (up to SECONDS, default 540: a call's limit
#                                                 less a margin); once it has ended, copies its result to OUT
# OUT defaults to $OUT. Both models are the bundled ones on CUDA in f32, whose transcripts do not depend on a
# clip's batch, so every answer can be held to the first one's.
#
# Package and clips (here), then carry gpu-pkg and bench/soak-clips-long:
#   STENO_GPU_PROGRAMS="steno fleet_test serve_load" scripts/package-gpu.sh
#   bench/soak.sh --long-clip --duration-s 0
# There, from the repository root, first: mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno
set -uo pipefail
cd "$(dirname "$0")/.."
pkg=${STENO_PKG:-/tmp/steno}
run=$pkg/run.sh
soak_dir=${SOAK_DIR:-/tmp/steno-soak}
[ -x "$run" ] || { echo "no $pkg/run.sh: unpack gpu-pkg/steno-gpu.tar.xz into $pkg first" >&2; exit 1; }
diarizer=models/steno-sortformer-small
models=(--device cuda --dtype f32 --diarizer "$diarizer")

case ${1:-} in
  chaos)
    out=${2:-$OUT}
    mkdir -p "$out"
    [ "${STENO_CHAOS_DEVICE_GROUPS:-1}" = 1 ] && STENO_BINARY=$pkg/bin/steno timeout 300 "$run" fleet_test \
      --gtest_filter='*DeviceGroupsOnOneGpu*' \
      >"$out/device-groups.log" 2>&1
    echo "device groups: exit $?; $(grep -E '^\[  (PASSED|FAILED) ' "$out/device-groups.log" | tr '\n' ' ')"
    # Two arms. mps-both: the transcriber's 3 workers and the diarizer's 2 under one MPS daemon -- a device fault
    # in any client faults every client of the daemon, so the transcriber's workers restart too and its requests
    # are replayed (the cost of sharing a daemon, measured). asr-lanes: the transcriber in lanes (a CUDA context of
    # its own, beside the daemon's), the diarizer under MPS -- the fault stays among the diarizer's clients.
    # The diarizer: one request a batch, so that a kill can land mid-batch. A queue of 32 each: the load's 10 s clip
    # is one piece, so at c = 16 the transcriber's never fills, and the 400-request burst overflows the diarizer's
    # (a queue of 128 did not: the H200 drained it as fast as the burst arrived). STENO_CHAOS_ARMS picks the arms.
    for arm in ${STENO_CHAOS_ARMS:-mps-both asr-lanes}; do
      case $arm in
        mps-both) asr=(--share mps --executors 3) ;;
        asr-lanes) asr=(--share lanes --executors 3) ;;
      esac
      timeout 240 env STENO_COMMIT="${STENO_COMMIT:-}" bench/seed_load.sh --steno "$run steno" \
        --serve-load "$run serve_load" --out "$out/chaos-$arm.json" --concurrency 16 --warmup-s 5 --duration-s 75 --clip-seconds 10 \
        --chaos "python3 bench/chaos_diarizer.py --gap-s 6" --inject-after-s 8 \
        --note "chaos on the diarizer (bench/chaos_diarizer.py) while the seed load transcribes: $arm" \
        -- "${models[@]}" "${asr[@]}" --max-batch 16 --max-queue-delay-ms 20 --max-queue-size 32 \
        --diarizer-share mps --diarizer-lanes 2 --diarizer-max-batch 1 --enable-fault-injection \
        >"$out/chaos-$arm.log" 2>&1
      echo "chaos $arm: exit $?"
      grep -E "^seed_load.sh: (chaos|[0-9]|headline|PASS|FAIL)" "$out/chaos-$arm.log"
    done
    ;;
  soak-start)
    seconds=${2:?soak-start SECONDS}
    rm -rf "$soak_dir" && mkdir -p "$soak_dir"
    setsid bash -c "bench/soak.sh --steno '$run steno' --clips bench/soak-clips-long --duration-s $seconds \
      --warmup-s 180 --good-workers 16 --out '$soak_dir/soak.json' \
      --note 'the GPU soak: both bundled models on the H200 in f32, lanes' \
      -- --device cuda --dtype f32 --executors 2 --max-batch 16 --diarizer-lanes 2 >'$soak_dir/soak.log' 2>&1; \
      echo \$? >'$soak_dir/rc'" </dev/null >/dev/null 2>&1 &
    sleep 60
    tail -n 5 "$soak_dir/soak.log"
    ;;
  soak-wait)
    out=${2:-$OUT}
    for _ in $(seq $(( ${3:-540} / 10 ))); do
      [ -e "$soak_dir/rc" ] && break
      sleep 10
    done
    tail -n 3 "$soak_dir/soak.log"
    if [ -e "$soak_dir/rc" ]; then
      cp "$soak_dir"/soak.json "$soak_dir"/soak.svg "$soak_dir"/soak.log "$out/" 2>/dev/null
      echo "soak: exit $(cat "$soak_dir/rc")"
    else
      echo "soak: still running"
    fi
    ;;
  *) sed -n '2,16p' "$0"; exit 2 ;;
esac
