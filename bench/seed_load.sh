#!/usr/bin/env bash
# The benchmark protocol's `seed` workload (docs/benchmarks.md): one 45 s clip re-sent, closed loop.
#   bench/seed_load.sh [--build-dir build] [--out bench/results/cpu-seed.json]
#                      [--concurrency "1 4 8 16 20 24 32 64 100"] [--duration-s 30] [--warmup-s 5] [--timeout-s 60]
#                      [--sla-mean-ms 650] [--sla-p99-ms 1000] [--steno CMD] [--serve-load CMD] [--note TEXT]
#                      [--inject-fault crash|hang|device-fault|oom --inject-after-s 10] [--protocol http|grpc]
#                      [--chaos 'CMD ARGS...' --inject-after-s 10]
#                      [--accept-differing-text] [--clip-seconds 45] [--servers N] [-- STENO_SERVE_ARGS...]
# 1. makes the clip: `serve_load --make-clip`, the espeak test clips (tests/data/testset/espeak/audio/*.flac) in
#    name order, decoded by steno's audio library, concatenated, repeated as needed, cut to exactly 45.0 s (the
#    protocol's; --clip-seconds for another length, e.g. a quick test on a CPU): a 16 kHz 16-bit PCM mono WAV;
# 2. starts `steno serve --host 127.0.0.1 --port 0 STENO_SERVE_ARGS` (the port is read from its log) and waits for
#    /v2/health/ready;
#    with --protocol grpc the server also gets --grpc-port (a free port) and the requests go over
#    KServe v2 gRPC (ModelInfer, the clip as one BYTES input) instead of the OpenAI endpoint;
# 3. runs `serve_load --closed-loop`: the clip sent alone first (its text becomes the reference every later answer
#    must equal), then for each concurrency c, c keep-alive connections re-sending it for --warmup-s + --duration-s;
#    the requests completing inside the --duration-s window count: requests/s, latency mean and nearest-rank
#    percentiles, whether the SLA (mean < 650 ms, p99 < 1000 ms) holds, the server's batches and mean batch size
#    from /metrics; a live line every second and a progress line per point; the headline: the highest
#    requests/s that meets the SLA; with --accept-differing-text (passed on to serve_load) an answer whose text
#    differs from the reference counts as ok, and is tallied apart as `differs` per point (for random-weight models,
#    whose greedy text flips with the batch's padding);
#    meanwhile, where nvidia-smi exists, the GPUs are sampled every 100 ms (utilization, SM clock, memory, power);
#    with --inject-fault (a server started with --enable-fault-injection and worker processes), one more request,
#    the clip with the header X-Steno-Fault: KIND, is sent with curl --inject-after-s seconds into the sweep: the
#    load's own requests must all still be answered right (supervision replays what the fault cost), and the
#    result records the faulty request's answer and the fleet's /metrics (restarts, replays, poisoned requests);
#    with --chaos, CMD ARGS --port PORT --server-pid PID --out FILE is run --inject-after-s seconds into the sweep
#    (bench/chaos_diarizer.py: the diarizer hurt while the seed load transcribes): it writes its events as JSON to
#    FILE, which the result holds as `chaos`, with the load's requests sent during each event (count, failures,
#    latency max and p99); its non-zero exit status fails the run;
#    with --servers N (HTTP only), N servers side by side, each `steno serve ... STENO_SERVE_ARGS` with every {i} in
#    the arguments replaced by its index 0..N-1 (e.g. --device cuda:{i}: one GPU each), behind serve_load's round
#    robin (--ports: connection c to server c mod N); the result gives each point's per_server shares and every
#    server's command (server 0's log as before); the one-server arrangement a multi-GPU server (--device cuda:all) is compared with;
# 4. stops the server(s) with SIGTERM and requires exit code 0;
# 5. writes OUT: serve_load's result (points with per-request rows, headline, settings), the GPU samples summed up
#    per point, the machine (CPU, cores, GPU, driver, CUDA version), the commit, the load average before and after,
#    the server's log and every command line, and the fleet's lines of /metrics after the sweep (fleet_metrics_after:
#    restarts, replays, batch cap, each worker's memory, MPS state, shared weights; empty with plain lanes).
# Exit status: serve_load's (non-zero when a request failed or answered another text than the reference, the latter
# unless --accept-differing-text), else 1 when the server did not start or did not exit 0 on SIGTERM; 2 for bad usage.
#
# Time: about (warm-up + duration + the drain) per point, plus the server's start: the default sweep of 9 points
# takes ~6 min. Needs: steno and serve_load (cmake --build BUILD --target steno serve_load), python3 (standard
# library only), bash; curl if present (else bash's /dev/tcp). Nothing beyond loopback; no wrk.
#
# On the GPU machine, with the package (STENO_GPU_PROGRAMS="steno serve_load" scripts/package-gpu.sh) carried:
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno &&
#   STENO_COMMIT=<commit> bench/seed_load.sh --steno "/tmp/steno/run.sh steno" \
#     --serve-load "/tmp/steno/run.sh serve_load" --out "$OUT/h200-seed.json" \
#     -- --device cuda --lanes 4 --max-batch 16 --max-queue-delay-ms 50 --model DIR
# STENO_COMMIT is recorded instead of git's HEAD (the device machine's copy of .git can be older than its tree).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
script=seed_load.sh
. "$src/bench/load_common.sh"  # the steps the load scripts share
quote_args "$@"
sweep_defaults
out=bench/results/cpu-seed.json
concurrency="1 4 8 16 20 24 32 64 100"
sla_mean_ms=650
clip_seconds=45
# own_option OPTION VALUE...: this script's own options, which parse_sweep_args tries first.
inject_fault=
inject_after_s=10
chaos=
protocol=http
servers=1
own_option() {
  case $1 in
    --concurrency) concurrency=$2 ;;
    --inject-fault) inject_fault=$2 ;;
    --inject-after-s) inject_after_s=$2 ;;
    --chaos) chaos=$2 ;;
    --protocol) protocol=$2 ;;
    --clip-seconds) clip_seconds=$2 ;;
    --servers) servers=$2 ;;
    *) return 1 ;;
  esac
}
parse_sweep_args "$@"
cd "$src"
need_sweep_programs
max_c=0
for c in $concurrency; do
  [[ $c =~ ^[1-9][0-9]*$ ]] || usage_error "--concurrency: '$c' is not a positive integer"
  if [ "$c" -gt "$max_c" ]; then max_c=$c; fi
done
[ "$max_c" -gt 0 ] || usage_error "--concurrency is empty"
[[ $protocol =~ ^(http|grpc)$ ]] || usage_error "--protocol: '$protocol' is not http or grpc"
[[ $servers =~ ^[1-9][0-9]?$ ]] || usage_error "--servers: '$servers' is not a count of servers (1..99)"
if [ "$servers" -gt 1 ]; then
  [ "$protocol" = http ] || usage_error "--servers applies to --protocol http"
  [[ -z $inject_fault && -z $chaos ]] || usage_error "--servers does not go with --inject-fault or --chaos (one server's)"
fi
[[ $clip_seconds =~ ^([1-9][0-9]{0,3}|0)(\.[0-9]+)?$ && ! $clip_seconds =~ ^0(\.0*)?$ ]] ||
  usage_error "--clip-seconds: '$clip_seconds' is not a length in seconds (above 0, below 10000)"
if [ "$protocol" = grpc ]; then  # a free port (steno's --grpc-port 0 means off)
  grpc_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  serve_args+=(--grpc-port "$grpc_port")
fi
if [ -n "$inject_fault" ]; then
  [[ $inject_fault =~ ^(crash|hang|device-fault|oom)$ ]] || usage_error "--inject-fault: '$inject_fault' is not crash, hang, device-fault or oom"
  command -v curl >/dev/null || usage_error "--inject-fault sends its request with curl, which is not installed"
fi
[[ -n $chaos || -n $inject_fault ]] && { [[ $inject_after_s =~ ^[0-9]+$ ]] ||
  usage_error "--inject-after-s: '$inject_after_s' is not a whole number of seconds"; }
points=$(wc -w <<< "$concurrency")
echo "seed_load.sh: $points points (concurrency $concurrency), each ${warmup_s} s warm-up + ${duration_s} s window" \
     "+ the drain: about $(sweep_estimate_s "$points") s"

raise_nofile
require_nofile $((max_c + 128)) "$max_c connections"
make_work_dir

# 1. The clip.
clip=$work/seed-${clip_seconds}s.wav
clip_cmd=("${client_cmd[@]}" --make-clip "$clip" --clip-seconds "$clip_seconds"
          --testset "$src/tests/data/testset/espeak")
"${clip_cmd[@]}" >"$work/clip.json" || fail "making the clip failed: ${clip_cmd[*]}"

record_load_before

# 2. The server(s): server 0 is the one the other steps talk to ({i} = 0), the others join the sweep's round robin.
serve_template=("${serve_args[@]}")
serve_args=("${serve_template[@]//\{i\}/0}")
serve_sweep
extra_pids=() extra_ports=() extra_cmds=
stop_extra_servers() {  # SIGTERM to each other server; extra_rc: the first non-zero exit status
  extra_rc=0
  local p rc
  for p in "${extra_pids[@]}"; do
    kill -TERM "$p" 2>/dev/null || true
    rc=0
    wait "$p" || rc=$?
    [ "$extra_rc" -ne 0 ] || extra_rc=$rc
  done
  extra_pids=()
}
trap 'stop_extra_servers; stop_background; rm -rf "$work"' EXIT
for i in $(seq 1 $((servers - 1))); do
  first=("$pid" "$port" "$log")
  log=$work/server$i.log
  start_server 180 "${steno_cmd[@]}" serve --host 127.0.0.1 --port 0 "${serve_template[@]//\{i\}/$i}"
  extra_pids+=("$pid") extra_ports+=("$port")
  extra_cmds+="${steno_cmd[*]} serve --host 127.0.0.1 --port 0 ${serve_template[*]//\{i\}/$i}"$'\n'
  wait_ready 120
  pid=${first[0]} port=${first[1]} log=${first[2]}
done

# 3. The sweep, with the GPUs sampled meanwhile.
ports=$port
for p in "${extra_ports[@]}"; do ports+=",$p"; done
target=(--port "$port")
[ "$servers" -gt 1 ] && target=(--ports "$ports")
sweep_cmd=("${client_cmd[@]}" --closed-loop "${target[@]}" --clip "$clip" --concurrency "$concurrency"
           --duration-s "$duration_s" --warmup-s "$warmup_s" --timeout-s "$timeout_s" --sla-mean-ms "$sla_mean_ms"
           --sla-p99-ms "$sla_p99_ms" --out "$work/sweep.json")
if [ -n "$accept_differing_text" ]; then sweep_cmd+=(--accept-differing-text); fi
if [ "$protocol" = grpc ]; then
  for _ in $(seq 300); do  # the line naming both ports comes once the gRPC server runs too, after HTTP is ready
    grep -q " and grpc://127\.0\.0\.1:$grpc_port" "$log" && break
    sleep 0.1
  done
  grep -q " and grpc://127\.0\.0\.1:$grpc_port" "$log" || fail "steno serve is not serving gRPC on $grpc_port; see $log"
  grpc_model=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["data"][0]["id"])' \
               "$work/models.json" 2>/dev/null) || fail "no model name from /v1/models"
  sweep_cmd+=(--grpc-port "$grpc_port" --model "$grpc_model")
fi
fault_pid=
if [ -n "$inject_fault" ]; then
  ( sleep "$inject_after_s"
    curl -sS --max-time "$timeout_s" -o "$work/fault_body.txt" -w '%{http_code}' -H "X-Steno-Fault: $inject_fault" \
      -F "file=@$clip" "http://127.0.0.1:$port/v1/audio/transcriptions" >"$work/fault_status.txt" 2>&1 ) &
  fault_pid=$!
fi
chaos_pid=
chaos_rc=0
if [ -n "$chaos" ]; then
  read -r -a chaos_cmd <<< "$chaos"
  chaos_cmd+=(--port "$port" --server-pid "$pid" --out "$work/chaos.json")
  ( sleep "$inject_after_s"; exec "${chaos_cmd[@]}" ) >"$work/chaos.log" 2>&1 &
  chaos_pid=$!
fi
run_sweep
if [ -n "$fault_pid" ]; then
  wait "$fault_pid" || true
  echo "$script: the request with X-Steno-Fault: $inject_fault was answered $(cat "$work/fault_status.txt")"
fi
if [ -n "$chaos_pid" ]; then
  wait "$chaos_pid" || chaos_rc=$?
  sed "s/^/$script: chaos: /" "$work/chaos.log"
  echo "$script: the chaos command exited with $chaos_rc: ${chaos_cmd[*]}"
fi
http_get /metrics >"$work/metrics_after.txt" 2>/dev/null || true  # the fleet's state after the sweep

# 4. SIGTERM; the server(s) must exit 0.
stop_extra_servers
stop_server
[ "$extra_rc" -eq 0 ] || server_rc=$extra_rc
record_load_after

# 5. The result file.
prepare_sweep_result
export LOAD_CLIP_CMD="${clip_cmd[*]}" LOAD_INJECT_FAULT=$inject_fault LOAD_INJECT_AFTER_S=$inject_after_s \
  LOAD_CHAOS_CMD="${chaos_cmd[*]:-}" LOAD_CHAOS_RC=$chaos_rc LOAD_OTHER_SERVERS=$extra_cmds
run_result_python py_result_helpers py_sweep_helpers <<'PY'
def chaos_result(sweep, events, log):
    """The chaos command's events, each with the load's requests sent while it lasted (and 2 s after): how many,
    how many failed, and their latency -- the transcriber's view of the diarizer's trouble."""
    out = dict(command=e["LOAD_CHAOS_CMD"], exit_code=int(e["LOAD_CHAOS_RC"]), log=log, events=[])
    point = (sweep.get("points") or [None])[0]
    for ev in (events or {}).get("events", []):
        ev = dict(ev)
        if point:
            opened = point["window_unix_s"][0]
            lo, hi = (ev["start_unix_s"] - opened) * 1000, (ev["end_unix_s"] + 2 - opened) * 1000
            sent = [r for r in point["per_request"] if lo <= r["sent_ms"] <= hi]
            lat = sorted(r["latency_ms"] for r in sent)
            ev["load_during"] = dict(
                requests=len(sent), failed=sum(1 for r in sent if r["result"] != "ok"),
                latency_ms=dict(max=lat[-1], p99=lat[min(len(lat) - 1, int(0.99 * len(lat)))],
                                mean=sum(lat) / len(lat)) if lat else None)
        out["events"].append(ev)
    return out

sweep = json.load(open(path("sweep.json")))
clip = read_json("clip.json")
if clip:
    clip["clip"] = os.path.basename(clip["clip"])  # a temporary file; the command makes it again
    clip["command"] = e["LOAD_CLIP_CMD"]

result = sweep_result(
    sweep,
    "benchmark protocol workload `seed`: one %s s clip re-sent, closed loop, at each concurrency; "
    "SLA mean < %s ms and p99 < %s ms; headline = highest requests/s that meets it" % (
        clip["seconds"] if clip else "?", sweep["settings"]["sla"]["mean_ms_below"],
        sweep["settings"]["sla"]["p99_ms_below"]),
    "concurrency", clip=clip)
def text(name, limit=2000):
    return open(path(name), errors="replace").read()[:limit] if os.path.exists(path(name)) else None
# The executors' state after the sweep (restarts, replays, batch cap, each worker's memory, MPS, shared weights):
# the lines of /metrics that only the fleet modes have.
fleet_metrics = [l for l in (text("metrics_after.txt", 10**6) or "").splitlines()
                 if l.startswith(("steno_worker", "steno_replayed", "steno_poisoned", "steno_batch_splits",
                                  "steno_batch_cap", "steno_mps", "steno_shared_weight"))]
result["fleet_metrics_after"] = fleet_metrics
if e.get("LOAD_INJECT_FAULT"):
    result["injected_fault"] = dict(
        kind=e["LOAD_INJECT_FAULT"], after_s=int(e["LOAD_INJECT_AFTER_S"]),
        http_status=(text("fault_status.txt") or "").strip(), body=text("fault_body.txt"),
        fleet_metrics=fleet_metrics)
if e.get("LOAD_OTHER_SERVERS"):  # --servers N: servers 1..N-1 beside server 0 (server_command)
    result["other_server_commands"] = e["LOAD_OTHER_SERVERS"].splitlines()
if e.get("LOAD_CHAOS_CMD"):
    result["chaos"] = chaos_result(sweep, read_json("chaos.json"), text("chaos.log", 20000))
write_sweep_result(result)

print("seed_load.sh: %-11s %8s %6s %7s %7s %11s %10s %9s %9s %5s %7s" % (
    "concurrency", "requests", "ok", "differs", "failed", "requests/s", "mean ms", "p99 ms", "max ms", "SLA", "batch"))
for p in sweep.get("points", []):
    m = p.get("server_metrics") or {}
    print("seed_load.sh: %-11d %8d %6d %7d %7d %11.2f %10.0f %9.0f %9.0f %5s %7s" % (
        p["concurrency"], p["requests"], p["ok"], p.get("differs", 0), p["failed"] + p["wrong"], p["requests_per_s"],
        p["latency_ms"]["mean"], p["latency_ms"]["p99"], p["latency_ms"]["max"], "met" if p["meets_sla"] else "no",
        "%.2f" % m["mean_batch_size"] if "mean_batch_size" in m else "-"))
h = sweep.get("headline")
print("seed_load.sh: headline: %s" % ("%.2f requests/s at concurrency %d (mean %.0f ms, p99 %.0f ms)" % (
    h["requests_per_s"], h["concurrency"], h["latency_ms"]["mean"], h["latency_ms"]["p99"]) if h else
    "none: no point meets the SLA"))
print("seed_load.sh: wrote %s" % e["LOAD_OUT"])
PY

[ "$chaos_rc" -eq 0 ] || fail "the chaos command's checks failed (exit code $chaos_rc); see $out"
sweep_verdict
