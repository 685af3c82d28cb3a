#!/usr/bin/env bash
# Two runs of bench/run_gpu_fleet_bench.sh at once on a host of two GPUs, one per GPU (CUDA_VISIBLE_DEVICES = that
# GPU's UUID, which MPS clients take where ordinals would be remapped), so that a 30-minute lease measures twice the
# arms. Each run writes under OUT/gpu0 or OUT/gpu1 (its console output in OUT/gpu0.log, OUT/gpu1.log); the 0.6b
# model is made once first. The six arms of docs/benchmarks.md in three calls (bench/results/h200-arms/):
#   bench/run_gpu_fleet_side_by_side.sh arms mps arms single
#   bench/run_gpu_fleet_side_by_side.sh arms mps+batch arms green+batch
#   bench/run_gpu_fleet_side_by_side.sh arms processes arms lanes+batch
# Usage: run_gpu_fleet_side_by_side.sh GPU0_STEPS GPU0_ARMS GPU1_STEPS GPU1_ARMS, with the package unpacked in
# STENO_PKG (/tmp/steno) as run_gpu_fleet_bench.sh's header says; STENO_COMMIT as there; OUT ($OUT) the results.
# A run call brings back at most 8 files from $OUT, so the results and logs are packed at the end into
# OUT/side-by-side.tar.gz (unpack with tar xzf; STENO_PACK=0 leaves them as they are), beside gpu0.log, gpu1.log and
# gpus.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 4 ] || { echo "usage: $0 GPU0_STEPS GPU0_ARMS GPU1_STEPS GPU1_ARMS" >&2; exit 2; }
out=${OUT:?set OUT to the results directory}
deadline=${STENO_FLEET_DEADLINE:-580}
start=$SECONDS
mapfile -t uuids < <(nvidia-smi --query-gpu=uuid --format=csv,noheader)
[ ${#uuids[@]} -ge 2 ] || { echo "$0: needs two GPUs, nvidia-smi lists ${#uuids[@]}" >&2; exit 1; }
nvidia-smi -L > "$out/gpus.txt"
STENO_FLEET_STEPS=none bench/run_gpu_fleet_bench.sh "$out/prep" > "$out/prep.log" 2>&1 ||
  { cat "$out/prep.log" >&2; exit 1; }

side() {  # side GPU STEPS ARMS
  CUDA_VISIBLE_DEVICES=${uuids[$1]} STENO_FLEET_STEPS="$2" STENO_FLEET_ARMS="$3" \
    STENO_FLEET_DEADLINE=$((deadline - (SECONDS - start))) bench/run_gpu_fleet_bench.sh "$out/gpu$1" \
    > "$out/gpu$1.log" 2>&1
  local rc=$?
  echo "== GPU $1 ($2: $3) exit $rc after $((SECONDS - start)) s"
  grep -E "FAILED|finished|headline" "$out/gpu$1.log"
  return $rc
}
side 0 "$1" "$2" & first=$!
side 1 "$3" "$4" & second=$!
rc=0
wait $first || rc=1
wait $second || rc=1
if [ "${STENO_PACK:-1}" = 1 ]; then
  tar czf "$out/side-by-side.tar.gz" -C "$out" gpu0 gpu1 prep && rm -rf "$out/gpu0" "$out/gpu1" "$out/prep"
fi
exit $rc
