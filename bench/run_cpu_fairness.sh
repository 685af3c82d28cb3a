#!/usr/bin/env bash
# Fairness on the CPU: do 10-second requests at a steady rate keep their latency while a 1-hour recording runs?
#   bench/run_cpu_fairness.sh [OUT_DIR] [RATE] [LONG_SECONDS]     (defaults: bench/results/cpu-fairness, 4, 3600)
# Needs build/apps/steno/steno and build/bench/serve_load (Release), espeak-ng, python3 with numpy.
# 1. A LONG_SECONDS two-speaker synthetic conversation (bench/make_long_conversation.py).
# 2. Three arms, each a fresh `steno serve` (bundled model, its defaults: one lane with the machine's threads):
#    alone        10 s clips arriving at RATE/s (Poisson, serve_load --open-loop --workload fixed), nothing else;
#    pieces       the same while the hour is transcribed: uploaded with curl, one request after another (an hour
#                 takes ~15 s here, shorter than the window), so that one always runs; it runs as pieces
#                 (--piece-seconds, default 10) queued behind the short requests;
#    whole        the same with --piece-seconds 0: each hour runs as one request, in the long-form mode.
#    Every arm runs with --vad off, so that the hour is all transcribed (with the VAD it is mostly silence, cut
#    away). The result says how much of the window (30 s after a 5 s warm-up) an hour was running.
# 3. OUT_DIR/{alone,pieces,whole}.json (serve_load's results), OUT_DIR/long-*.jsonl (each hour's request: start,
#    end, status, words) and OUT_DIR/summary.json: p99 and mean of each arm, their ratios to `alone`, and the
#    share of each window during which an hour was running.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/bench/results/cpu-fairness}
rate=${2:-4}
long_seconds=${3:-3600}
python=${STENO_PYTHON:-/usr/bin/python3}  # with numpy (Debian's python3-numpy)
steno=$src/build/apps/steno/steno
load=$src/build/bench/serve_load
script=run_cpu_fairness.sh
fail() { echo "$script: FAIL: $*" >&2; exit 1; }
[ -x "$steno" ] && [ -x "$load" ] || fail "build steno and serve_load first (cmake --build build)"
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/steno-fairness.XXXXXX")
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
show_log() { tail -n 30 "$work/server.log" >&2; }
source "$src/tests/serve/wait_for_serve.sh"

"$python" "$src/bench/make_long_conversation.py" "$long_seconds" "$work/long.wav" "$work/long.rttm" --speakers 2 >/dev/null
echo "$script: a $long_seconds s conversation made"

run_arm() {  # run_arm NAME WITH_LONG SERVE_ARGS...
  local name=$1 with_long=$2
  shift 2
  env -u STENO_MODEL "$steno" serve --host 127.0.0.1 --port 0 --max-audio-seconds $((long_seconds + 60)) --vad off "$@" \
    >"$work/server.log" 2>&1 &
  pid=$!
  wait_for_serve "$work/server.log" "$pid"
  local loop_pid=
  rm -f "$work/stop" "$out/long-$name.jsonl"
  if [ "$with_long" = 1 ]; then
    # One hour after another until the window is over; each line: its start and end (Unix s), status, words.
    (while [ ! -e "$work/stop" ]; do
       t0=$(date +%s.%N)
       code=$(curl -sS -o "$work/long-answer.json" -w '%{http_code}' -F file=@"$work/long.wav" \
         -F response_format=json "http://127.0.0.1:$port/v1/audio/transcriptions")
       t1=$(date +%s.%N)
       words=$("$python" -c 'import json,sys; print(len(json.load(open(sys.argv[1])).get("text", "").split()))' \
         "$work/long-answer.json" 2>/dev/null || echo 0)
       echo "{\"start_unix\": $t0, \"end_unix\": $t1, \"http_code\": $code, \"words\": $words}" >>"$out/long-$name.jsonl"
     done) &
    loop_pid=$!
    sleep 1
  fi
  "$load" --open-loop --port "$port" --workload fixed --clip-seconds 10 --mix-clips 10 --rates "$rate" \
    --duration-s 30 --warmup-s 5 --sla-p99-ms 100000 --out "$out/$name.json" >/dev/null 2>"$work/load.log" ||
    { tail -n 20 "$work/load.log" >&2; fail "serve_load failed in arm $name"; }
  if [ -n "$loop_pid" ]; then
    touch "$work/stop"
    wait "$loop_pid" || fail "the long uploads failed in arm $name"
  fi
  kill -TERM "$pid"; wait "$pid" || true; pid=
  echo "$script: arm $name done"
}

run_arm alone 0
run_arm pieces 1
run_arm whole 1 --piece-seconds 0

"$python" - "$out" "$rate" "$long_seconds" <<'PY'
import json, sys
out, rate, long_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def point(name):
    p = json.load(open(f"{out}/{name}.json"))["points"][0]
    lat = p["latency_ms"]
    return {"p99_ms": lat["p99"], "mean_ms": lat["mean"], "ok": p["ok"], "window_unix": p.get("window_unix_s")}
def long_runs(name, window):
    runs = [json.loads(l) for l in open(f"{out}/long-{name}.jsonl") if l.strip()]
    covered = sum(max(0.0, min(r["end_unix"], window[1]) - max(r["start_unix"], window[0])) for r in runs)
    return {"runs": runs, "all_ok": all(r["http_code"] == 200 and r["words"] > 0 for r in runs),
            "seconds_each": [round(r["end_unix"] - r["start_unix"], 2) for r in runs],
            "window_fraction_with_an_hour_running": covered / (window[1] - window[0])}
alone = point("alone")
summary = {"rate_per_s": rate, "clip_seconds": 10, "long_seconds": long_s, "alone": alone}
for arm in ("pieces", "whole"):
    p = point(arm)
    p["long"] = long_runs(arm, p["window_unix"])
    p["p99_ratio_to_alone"] = p["p99_ms"] / alone["p99_ms"]
    p["mean_ratio_to_alone"] = p["mean_ms"] / alone["mean_ms"]
    summary[arm] = p
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
print(json.dumps(summary, indent=2))
PY
