#!/usr/bin/env bash
# Diarization alone through the server on the GPU machine: 1-minute clips to POST /v1/audio/diarizations, closed
# loop, against `steno serve --device cuda --diarizer DIR` with the v2 shapes (random weights from
# configs/sortformer-4spk-v2.json, bf16), the case study's SLA (mean < 650 ms, p99 < 1000 ms). What the
# consultation service's "diarization alone" figure is measured with.
#   bench/run_gpu_diar_serve.sh [OUT] [--concurrency "16 32 64 128 192 256"] [--lanes 2] [--max-batch 64]
#                               [--duration-s 10] [--warmup-s 3]
# Results go to OUT (default $OUT) as one archive, results.tar.gz: h200-diar-serve.json (serve_load's result),
# serve.log, model.log (the random model's making), machine.txt.
#
# Built here and carried by
#   STENO_GPU_PROGRAMS="steno serve_load" STENO_GPU_TESTDATA=none scripts/package-gpu.sh
# and run there from the repository root:
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && bench/run_gpu_diar_serve.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/steno-diar-serve}
if [ $# -gt 0 ] && [[ $1 != --* ]]; then out=$1; shift; fi
concurrency="16 32 64 128 192 256" lanes=2 max_batch=64 duration=10 warmup=3
while [ $# -gt 0 ]; do
  case $1 in
    --concurrency) concurrency=$2; shift 2 ;;
    --lanes) lanes=$2; shift 2 ;;
    --max-batch) max_batch=$2; shift 2 ;;
    --duration-s) duration=$2; shift 2 ;;
    --warmup-s) warmup=$2; shift 2 ;;
    *) echo "run_gpu_diar_serve.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
pkg=${STENO_PKG:-/tmp/steno}
work=$(mktemp -d)
mkdir -p "$out"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; date -u; } \
  >"$out/machine.txt" 2>&1

"$pkg/run.sh" serve_load --make-clip "$work/clip60.wav" --clip-seconds 60 || exit 1
"$pkg/run.sh" steno model random --like configs/sortformer-4spk-v2.json --out "$work/diar-v2" --seed 1 --dtype bf16 \
  >"$out/model.log" 2>&1 || { tail "$out/model.log"; exit 1; }

"$pkg/run.sh" steno serve --port 0 --device cuda --diarizer "$work/diar-v2" --diarizer-lanes "$lanes" \
  --diarizer-max-batch "$max_batch" 2>"$out/serve.log" &
server=$!
port=
for _ in $(seq 600); do
  port=$(grep -o 'on http://127.0.0.1:[0-9]*' "$out/serve.log" | head -1 | sed 's/.*://')
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "the server did not start"; tail "$out/serve.log"; kill $server; exit 1; }
for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null && break; sleep 0.1; done

"$pkg/run.sh" serve_load --closed-loop --route diarizations --port "$port" --clip "$work/clip60.wav" \
  --concurrency "$concurrency" --duration-s "$duration" --warmup-s "$warmup" --accept-differing-text \
  --out "$out/h200-diar-serve.json" 2>&1 | grep -E "point|headline|PASS|FAIL" | tail -20
status=${PIPESTATUS[0]}
kill -TERM $server
wait $server
(cd "$out" && tar -czf results.tar.gz --remove-files -- *.json *.txt *.log 2>/dev/null)
rm -rf "$work"
exit "$status"
