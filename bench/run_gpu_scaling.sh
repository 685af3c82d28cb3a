#!/usr/bin/env bash
# Scaling over the GPUs of one host (docs/deployment.md): does one server driving every GPU give N times one GPU,
# and does it beat N single-GPU servers behind a balancer at equal load? The `seed` sweep (bench/seed_load.sh) in
# each arm of $STENO_SCALING_ARMS, writing OUT/h200-scaling-ARM.json (default OUT: $OUT):
#   one          one GPU, one server: --device cuda:FIRST
#   all-lanes    one server on every GPU of the list: --device cuda:LIST (lanes + batching on each)
#   all-mps      the same with MPS worker processes on each GPU (--share mps)
#   round-robin  N servers side by side, one GPU each, behind serve_load's round robin (seed_load.sh --servers N)
#   fault        all-mps with one X-Steno-Fault: device-fault request mid-sweep at the top concurrency: every load
#                answer must still be right; the result's fleet metrics say what was restarted and replayed
# The report is made on the development machine (gnuplot): steno bench report --out DIR one=... all-lanes=...
#
# The per-GPU configuration is $STENO_SCALING_PER_GPU ("--lanes 4 --max-batch 16 --max-queue-delay-ms 50"; the
# MPS arms use --executors 4 instead of --lanes). The multi-GPU arms sweep N times the one-GPU concurrencies
# ($STENO_SCALING_CONCURRENCY, the protocol's "1 4 8 16 20 24 32 64 100"), so each GPU sees the load it saw alone.
# $STENO_SCALING_DEVICES is the GPU list (default: every GPU nvidia-smi lists, "0,1,..."); "0,0" lists one GPU twice:
# the dry run a single-GPU machine allows (the round-robin servers then share that GPU). A run call's 10 minutes
# hold about one arm at the protocol's full sweep: spread the arms over calls (STENO_SCALING_ARMS).
#
# On the GPU machine, from the repository root, with the package carried
# (STENO_GPU_PROGRAMS="steno serve_load cuda_engine_bench" scripts/package-gpu.sh here):
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && STENO_COMMIT=<sha> bench/run_gpu_scaling.sh
# Environment: STENO_PKG (/tmp/steno), STENO_BENCH_WORK (/tmp/steno-bench: the 0.6b model), STENO_COMMIT,
# STENO_SCALING_DURATION_S (30), STENO_SCALING_DEADLINE (570 s), STENO_SCALING_DEVICE (cuda; cpu: a dry run of the
# script's logic with the bundled model on "cpu,cpu", arms one, all-lanes and round-robin; the programs from build/ or
# STENO_SCALING_STENO and STENO_SCALING_SERVE_LOAD).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/steno-scaling-out}}
pkg=${STENO_PKG:-/tmp/steno}
work=${STENO_BENCH_WORK:-/tmp/steno-bench}
device=${STENO_SCALING_DEVICE:-cuda}
arms=${STENO_SCALING_ARMS:-one all-lanes all-mps round-robin fault}
concurrency=${STENO_SCALING_CONCURRENCY:-1 4 8 16 20 24 32 64 100}
duration_s=${STENO_SCALING_DURATION_S:-30}
per_gpu=${STENO_SCALING_PER_GPU:---lanes 4 --max-batch 16 --max-queue-delay-ms 50}
deadline=${STENO_SCALING_DEADLINE:-570}
mkdir -p "$out/logs" "$work"
start=$SECONDS
failed=()
log() { echo "[scaling $(date +%H:%M:%S) +$((SECONDS - start))s] $*"; }

load_opts=()
if [ "$device" = cpu ]; then
  steno=("${STENO_SCALING_STENO:-build/apps/steno/steno}") client=("${STENO_SCALING_SERVE_LOAD:-build/bench/serve_load}")
  devices=${STENO_SCALING_DEVICES:-cpu,cpu}
  model=models/steno-tdt-small-en
  common=(--model "$model")
else
  run=$pkg/run.sh
  [ -x "$run" ] || { echo "no $pkg/run.sh: unpack gpu-pkg/steno-gpu.tar.xz into $pkg first" >&2; exit 1; }
  steno=("$run" steno) client=("$run" serve_load)
  devices=${STENO_SCALING_DEVICES:-$(nvidia-smi -L | awk '{printf "%s%d", NR > 1 ? "," : "", NR - 1}')}
  . bench/gpu_diar_common.sh "$out"  # machine.txt and the engine benchmarks' 0.6b model, made once per $work
  engine_bench_setup
  random_06b "$work"
  [ -f "$model06/config.json" ] || { echo "making the 0.6b model failed: $out/logs/" >&2; exit 1; }
  common=(--dtype bf16 --model "$model06")
  # Random weights: the greedy text of one clip flips with the batch's padding (bf16 reduction orders), so an answer
  # that differs from the reference counts as ok and is tallied apart (as in the protocol's seed sweeps).
  load_opts=(--accept-differing-text)
fi
IFS=, read -r -a list <<< "$devices"
n=${#list[@]}
[ "$n" -ge 2 ] || { echo "STENO_SCALING_DEVICES='$devices': scaling needs two or more entries" >&2; exit 2; }
kind=cuda; [ "$device" = cpu ] && kind=cpu
one_device=$kind; [ $kind = cuda ] && one_device=cuda:${list[0]}
all_devices=$devices; [ $kind = cuda ] && all_devices=cuda:$devices
# Server i of the round robin gets list[i]: seed_load.sh's {i} is the index, so the list must be 0..N-1 (or one
# device repeated, the dry run).
rr_device=$one_device
if [ $kind = cuda ] && [ "$(printf '%s\n' "${list[@]}" | sort -u | wc -l)" -gt 1 ]; then
  [ "$devices" = "$(seq -s, 0 $((n - 1)))" ] || { echo "round-robin needs STENO_SCALING_DEVICES 0,1,..,N-1 or one GPU repeated" >&2; exit 2; }
  rr_device="cuda:{i}"
fi
read -r -a per_gpu_args <<< "$per_gpu"
mps_args=("${per_gpu_args[@]}")
for i in "${!mps_args[@]}"; do [ "${mps_args[$i]}" = --lanes ] && mps_args[$i]=--executors; done
scaled=$(for c in $concurrency; do echo $((c * n)); done | xargs)

# seed NAME LIMIT_S [seed_load options] -- [serve args]: one sweep, within LIMIT_S and the deadline.
seed() {
  local name=$1 limit=$2 left
  shift 2
  left=$((deadline - (SECONDS - start)))
  [ $left -lt $limit ] && limit=$left
  if [ $limit -lt 30 ]; then log "$name: SKIPPED (no time left before the ${deadline}s deadline)"; failed+=("$name"); return; fi
  log "$name: start (limit ${limit}s)"
  timeout --kill-after=10 "$limit" env STENO_COMMIT="${STENO_COMMIT:-}" bench/seed_load.sh --steno "${steno[*]}" \
    --serve-load "${client[*]}" --out "$out/$name.json" --warmup-s 3 --duration-s "$duration_s" "${load_opts[@]}" "$@" \
    >"$out/logs/$name.log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then log "$name: done"; else log "$name: FAILED (exit $rc)"; tail -5 "$out/logs/$name.log"; failed+=("$name"); fi
  grep -E "^seed_load.sh: ([0-9]|headline|the request)" "$out/logs/$name.log" | head -20
}

log "$n devices ($devices), arms: $arms"
for arm in $arms; do
  case $arm in
    one) seed h200-scaling-one 400 --concurrency "$concurrency" --note "one device: $one_device $per_gpu" \
           -- --device "$one_device" "${per_gpu_args[@]}" "${common[@]}" ;;
    all-lanes) seed h200-scaling-all-lanes 450 --concurrency "$scaled" --note "one server, $n devices: $all_devices $per_gpu" \
           -- --device "$all_devices" "${per_gpu_args[@]}" "${common[@]}" ;;
    all-mps) seed h200-scaling-all-mps 450 --concurrency "$scaled" --note "one server, $n devices, MPS workers" \
           -- --device "$all_devices" --share mps "${mps_args[@]}" "${common[@]}" ;;
    round-robin) seed h200-scaling-round-robin 450 --concurrency "$scaled" --servers "$n" \
           --note "$n servers ($rr_device each) behind serve_load's round robin" \
           -- --device "$rr_device" "${per_gpu_args[@]}" "${common[@]}" ;;
    fault) top=${scaled##* }
           seed h200-scaling-fault 200 --concurrency "$top" --inject-fault device-fault --inject-after-s 10 \
             --note "a device fault on one of $n devices under MPS, at concurrency $top" \
             -- --device "$all_devices" --share mps --enable-fault-injection "${mps_args[@]}" "${common[@]}" ;;
    *) log "unknown arm $arm"; failed+=("$arm") ;;
  esac
done
if [ ${#failed[@]} -gt 0 ]; then log "FAILED: ${failed[*]}"; exit 1; fi
log "all arms done: $out"
