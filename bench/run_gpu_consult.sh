#!/usr/bin/env bash
# The consultation service on one H200: (a) one hour of two-speaker audio, speaker-attributed, through the
# server; (b) the two-service arm: ASR `seed` traffic and diarization of 1-minute clips, each alone and both
# sharing the GPU in one server.
#   bench/run_gpu_consult.sh [OUT] [--asr-concurrency "64 100 128 160"] [--diar-concurrency "128 192 256"]
#                            [--shared "32:64 48:96 64:96 64:128 96:128"] [--duration-s 10] [--warmup-s 3]
#                            [--steps "hour lanes mps green"]
# Carried: the package (STENO_GPU_PROGRAMS="steno serve_load" STENO_GPU_TESTDATA=none scripts/package-gpu.sh) and
# a two-speaker conversation as gpu-pkg/conv/audio/conv.flac (bench/make_long_conversation.py 300 ..., flac);
# run there from the repository root after `mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno`.
#
# (a) The hour: serve_load --make-clip repeats the conversation to 3600 s (a 16 kHz WAV, 115 MB). Two servers,
#     each answering POST /v1/audio/transcriptions response_format=diarized_json for it, timed end to end by curl
#     (upload, decoding, VAD, the ASR's pieces, the streaming diarizer, the join): the bundled models (trained: real
#     words and speakers; with the VAD, the default, and with --vad off), then the 0.6B-shaped ASR (random weights,
#     bf16) with the v2-shaped diarizer (random) -- the server of (b). Peak GPU memory from nvidia-smi, sampled every 100 ms while each server runs.
# (b) One server holds both: ASR 4 lanes x batch 16 (50 ms delay; the seed arm's), diarizer 2 lanes x batch 64.
#     asr-alone: serve_load --closed-loop with the 45 s seed clip (SLO mean < 650 ms, p99 < 1000 ms) at each
#     --asr-concurrency, the diarizer idle; diar-alone: 1-minute clips to /v1/audio/diarizations at each
#     --diar-concurrency, the ASR idle; shared: for each A:D of --shared, both loops at once (A and D
#     connections). Sharing efficiency of a shared point = its ASR requests/s / the best ASR alone + its
#     diarization requests/s / the best diarization alone, when both meet the SLO; the best is the headline.
#     mps: the case study's recipes in one server, both under one MPS daemon: ASR 4 clients x 25 %, diarizer 8 x
#     12 %; the same shared pairs, scored against the same alone figures.
#     green: steno's green contexts, SMs given to each: ASR 4 lanes x 24 SMs, diarizer 2 lanes x 16 (128 of the
#     H200's 132, disjoint); the same shared pairs.
# --steps picks the parts: hour (a, with the bundled models and the diarizer alone), lanes (a with the 0.6B shapes,
# the alone sweeps and steno's lanes), mps, green. A run without lanes scores its pairs against asr-alone.json and
# diar-alone.json already in OUT (copied from an earlier run's results).
# Results: OUT (default $OUT) as one archive, results.tar.gz: hour-*.json, asr-alone.json, diar-alone.json,
# shared-A-D-{asr,diar}.json, summary.json, logs.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/steno-consult}
if [ $# -gt 0 ] && [[ $1 != --* ]]; then out=$1; shift; fi
asr_c="64 100 128 160" diar_c="128 192 256" shared="32:64 48:96 64:96 64:128 96:128" duration=10 warmup=3
steps="hour lanes mps green"
while [ $# -gt 0 ]; do
  case $1 in
    --asr-concurrency) asr_c=$2; shift 2 ;;
    --diar-concurrency) diar_c=$2; shift 2 ;;
    --shared) shared=$2; shift 2 ;;
    --duration-s) duration=$2; shift 2 ;;
    --warmup-s) warmup=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "run_gpu_consult.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
pkg=${STENO_PKG:-/tmp/steno}
run() { "$pkg/run.sh" "$@"; }
work=$(mktemp -d)
mkdir -p "$out/logs"
status=0
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; date -u; } \
  >"$out/machine.txt" 2>&1

run serve_load --make-clip "$work/hour.wav" --clip-seconds 3600 --testset gpu-pkg/conv >"$out/logs/make-hour.log" 2>&1 ||
  { tail "$out/logs/make-hour.log"; exit 1; }
run serve_load --make-clip "$work/clip45.wav" --clip-seconds 45 >/dev/null 2>&1 || exit 1
run serve_load --make-clip "$work/clip60.wav" --clip-seconds 60 >/dev/null 2>&1 || exit 1
run steno model random --like configs/parakeet-tdt-0.6b-v2.json --out "$work/p06b" --seed 1 --dtype bf16 \
  >"$out/logs/model-asr.log" 2>&1 || { tail "$out/logs/model-asr.log"; exit 1; }
run steno model random --like configs/sortformer-4spk-v2.json --out "$work/diar-v2" --seed 1 --dtype bf16 \
  >"$out/logs/model-diar.log" 2>&1 || { tail "$out/logs/model-diar.log"; exit 1; }

step() { [[ " $steps " == *" $1 "* ]]; }

# The diarizer's share of (a): the v2-shaped diarizer alone streaming the hour, at the server's operating point
# (30.4 s: 27.2 s chunks) and with 80 s chunks (chunk_len 1000); wall time (model load included) by measure_run.py.
step hour && for chunk in 340 1000; do
  timeout --kill-after=10 120 python3 bench/measure_run.py "$out/hour-diarize-v2-chunk$chunk.json" -- \
    "$pkg/run.sh" steno diarize --device cuda --dtype bf16 --diarizer "$work/diar-v2" --streaming 30.4s \
    --streaming-param chunk_len=$chunk -f json "$work/hour.wav" >/dev/null 2>"$out/logs/hour-diarize-v2-$chunk.log" ||
    { echo "diarize chunk $chunk FAILED"; status=1; }
done

server= sampler= port=
start_server() {  # start_server NAME ARGS...: the server and a GPU memory sampler; sets port
  local name=$1
  shift
  # run.sh execs steno, so $! is the server itself (a function run in the background would be a subshell whose
  # SIGTERM leaves the server running: it did, until 2026-12-02, and later servers' memory samples included it).
  "$pkg/run.sh" steno serve --port 0 --device cuda --max-audio-seconds 4000 "$@" 2>"$out/logs/serve-$name.log" \
    >/dev/null &
  server=$!
  (while sleep 0.1; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits; done) \
    >"$out/logs/gpu-memory-$name.txt" 2>/dev/null &
  sampler=$!
  port=
  for _ in $(seq 1200); do
    port=$(grep -o 'on http://127.0.0.1:[0-9]*' "$out/logs/serve-$name.log" | head -1 | sed 's/.*://')
    [ -n "$port" ] && break
    kill -0 $server 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "server $name did not start"; tail "$out/logs/serve-$name.log"; return 1; }
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null && break; sleep 0.1; done
}
stop_server() {
  kill -TERM $server 2>/dev/null
  wait $server
  kill $sampler 2>/dev/null
  wait $sampler 2>/dev/null
}
load() {  # load SERVE_LOAD_ARGS...: a closed-loop sweep against the server running now
  run serve_load --closed-loop --port "$port" --duration-s "$duration" --warmup-s "$warmup" --accept-differing-text "$@"
}
pairs() {  # pairs ARM: for each A:D of --shared, ASR and diarization loops at once against the server running now
  local arm=$1 pair a d asr_pid
  for pair in $shared; do
    a=${pair%%:*} d=${pair##*:}
    load --clip "$work/clip45.wav" --concurrency "$a" --out "$out/$arm-$a-$d-asr.json" \
      2>"$out/logs/$arm-$a-$d-asr.log" >/dev/null &
    asr_pid=$!
    load --route diarizations --clip "$work/clip60.wav" --concurrency "$d" --out "$out/$arm-$a-$d-diar.json" \
      2>"$out/logs/$arm-$a-$d-diar.log" >/dev/null
    wait $asr_pid
    echo "$arm $a:$d done"
  done
}
hour() {  # hour NAME: the hour, speaker-attributed, three times (the first warms the server up)
  local name=$1 i
  for i in 1 2 3; do
    curl -sS --max-time 120 -o "$work/hour-answer.json" -w '{"http_code": %{http_code}, "total_s": %{time_total}, "upload_s": %{time_pretransfer}}\n' \
      -F file=@"$work/hour.wav" -F response_format=diarized_json "http://127.0.0.1:$port/v1/audio/transcriptions" \
      >>"$out/hour-$name-runs.jsonl"
  done
  # Where the three runs' time went: each model's KServe statistics (queue, compute; cumulative).
  curl -sS "http://127.0.0.1:$port/v2/models/stats" >"$out/hour-$name-stats.json"
  python3 - "$work/hour-answer.json" "$out/hour-$name-runs.jsonl" "$out/logs/gpu-memory-$name.txt" \
    "$out/hour-$name.json" "$name" <<'PY'
import json, sys
answer, runs_path, mem_path, out, name = sys.argv[1:]
a = json.load(open(answer))
runs = [json.loads(l) for l in open(runs_path) if l.strip()]
mem = [int(l) for l in open(mem_path) if l.strip().isdigit()]
json.dump({"models": name, "audio_seconds": a.get("duration"), "runs": runs,
           "seconds_after_warmup": [r["total_s"] for r in runs[1:]],
           "words": len(a.get("text", "").split()), "segments": len(a.get("segments", [])),
           "speakers": sorted({s["speaker"] for s in a.get("segments", [])}),
           # the GPU's memory in use less what it held as the server started (another process's, if any)
           "peak_gpu_memory_mib": max(mem) - mem[0] if mem else None,
           "gpu_memory_samples": len(mem)}, open(out, "w"), indent=1)
print(open(out).read())
PY
}

# (a) The bundled models, with the VAD (the default) and without (the whole hour transcribed: the VAD's time apart).
step hour && for vad in auto off; do
  if start_server "bundled-vad-$vad" --dtype bf16 --diarizer models/steno-sortformer-small --lanes 2 \
       --diarizer-lanes 1 --vad "$vad"; then
    hour "bundled-vad-$vad" || status=1
    stop_server
  else status=1; fi
done

# (a) and (b): the 0.6B-shaped ASR and the v2-shaped diarizer in one server.
step lanes && if start_server big --dtype bf16 --model "$work/p06b" --lanes 4 --max-batch 16 --max-queue-delay-ms 50 \
     --diarizer "$work/diar-v2" --diarizer-lanes 2 --diarizer-max-batch 64; then
  hour big || status=1
  load --clip "$work/clip45.wav" --concurrency "$asr_c" --out "$out/asr-alone.json" 2>"$out/logs/asr-alone.log" |
    tail -1
  load --route diarizations --clip "$work/clip60.wav" --concurrency "$diar_c" --out "$out/diar-alone.json" \
    2>"$out/logs/diar-alone.log" | tail -1
  pairs shared
  stop_server
else status=1; fi

# (b) The case study's two recipes on one GPU: the ASR as 4 MPS clients at 25 %, the diarizer as 8 at 12 %, under
# one daemon; the same shared pairs.
step mps && if start_server mps --dtype bf16 --model "$work/p06b" --share mps --lanes 4 --max-batch 16 --max-queue-delay-ms 50 \
     --diarizer "$work/diar-v2" --diarizer-share mps --diarizer-lanes 8 --diarizer-max-batch 8; then
  pairs mps
  stop_server
else status=1; fi

# (b) steno's green contexts: each model's lanes on SMs of their own (the diarizer's carved from what the ASR's left).
step green && if start_server green --dtype bf16 --model "$work/p06b" --share green --lanes 4 --green-sms 24 \
     --max-batch 16 --max-queue-delay-ms 50 --diarizer "$work/diar-v2" --diarizer-share green --diarizer-lanes 2 \
     --diarizer-green-sms 16 --diarizer-max-batch 64; then
  pairs green
  stop_server
else status=1; fi

python3 - "$out" "$shared" <<'PY'
import json, os, sys
out, shared = sys.argv[1], sys.argv[2].split()
def points(path):
    if not os.path.exists(path): return []
    return json.load(open(path)).get("points", [])
def best(path):
    ok = [p for p in points(path) if p.get("meets_sla")]
    return max(ok, key=lambda p: p["requests_per_s"]) if ok else None
def brief(p):
    return None if p is None else {k: p.get(k) for k in ("concurrency", "requests_per_s", "latency_ms", "meets_sla")}
asr, diar = best(f"{out}/asr-alone.json"), best(f"{out}/diar-alone.json")
summary = {"asr_alone_best": brief(asr), "diar_alone_best": brief(diar)}
for arm in ("shared", "mps", "green"):  # steno's lanes; the case study's MPS recipes; steno's green contexts
    summary[arm] = []
    for pair in shared:
        a, d = pair.split(":")
        pa, pd = points(f"{out}/{arm}-{a}-{d}-asr.json"), points(f"{out}/{arm}-{a}-{d}-diar.json")
        if not pa or not pd: continue
        pa, pd = pa[0], pd[0]
        both = bool(pa.get("meets_sla") and pd.get("meets_sla"))
        eff = (pa["requests_per_s"] / asr["requests_per_s"] + pd["requests_per_s"] / diar["requests_per_s"]) if asr and diar else None
        summary[arm].append({"asr": brief(pa), "diar": brief(pd), "both_meet_slo": both, "sharing_efficiency": eff})
    ok = [s for s in summary[arm] if s["both_meet_slo"] and s["sharing_efficiency"] is not None]
    summary[f"headline_{arm}"] = max(ok, key=lambda s: s["sharing_efficiency"]) if ok else None
for f in sorted(os.listdir(out)):
    if f.startswith("hour-") and f.endswith(".json"): summary[f[:-5]] = json.load(open(f"{out}/{f}"))
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print(json.dumps({k: summary[k] for k in ("asr_alone_best", "diar_alone_best", "headline_shared", "headline_mps",
                                         "headline_green")},
                 indent=1))
for k, v in summary.items():  # the hour's figures in the console too
    if k.endswith("-stats"):
        print(k, [(m.get("name"), m.get("inference_count"), m.get("execution_count"),
                   {s: round(m.get("inference_stats", {}).get(s, {}).get("ns", 0) / 1e9, 3)
                    for s in ("success", "queue", "compute_infer")}) for m in v.get("model_stats", [])])
    elif k.startswith("hour-"):
        print(k, {f: v.get(f) for f in ("seconds_after_warmup", "peak_gpu_memory_mib", "words", "speakers",
                                        "wall_seconds", "peak_gpu_mb", "exit_code")})
PY
(cd "$out" && tar -czf results.tar.gz --remove-files -- *.json *.jsonl *.txt logs 2>/dev/null)
rm -rf "$work"
exit "$status"
