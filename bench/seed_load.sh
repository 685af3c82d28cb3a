#!/usr/bin/env bash
# The benchmark protocol's `seed` workload (docs/benchmark-protocol.md): one 45 s clip re-sent, closed loop.
#   bench/seed_load.sh [--build-dir build] [--out bench/results/cpu-seed.json]
#                      [--concurrency "1 4 8 16 20 24 32 64 100"] [--duration-s 30] [--warmup-s 5] [--timeout-s 60]
#                      [--sla-mean-ms 650] [--sla-p99-ms 1000] [--steno CMD] [--serve-load CMD] [--note TEXT]
#                      [-- STENO_SERVE_ARGS...]
# 1. makes the clip: `serve_load --make-clip`, the espeak test clips (tests/data/testset/espeak/audio/*.flac) in
#    name order, decoded by steno's audio library, concatenated, repeated as needed, cut to exactly 45.0 s: a 16 kHz
#    16-bit PCM mono WAV;
# 2. starts `steno serve --host 127.0.0.1 --port 0 STENO_SERVE_ARGS` (the port is read from its log) and waits for
#    /v2/health/ready;
# 3. runs `serve_load --closed-loop`: the clip sent alone first (its text becomes the reference every later answer
#    must equal), then for each concurrency c, c keep-alive connections re-sending it for --warmup-s + --duration-s;
#    the requests completing inside the --duration-s window count: requests/s, latency mean and nearest-rank
#    percentiles, whether the SLA (mean < 650 ms, p99 < 1000 ms) holds, the server's batches and mean batch size
#    from /metrics; a progress line per point; the headline: the highest requests/s that meets the SLA;
#    meanwhile, where nvidia-smi exists, the GPUs are sampled every 100 ms (utilization, SM clock, memory, power);
# 4. stops the server with SIGTERM and requires exit code 0;
# 5. writes OUT: serve_load's result (points with per-request rows, headline, settings), the GPU samples summed up
#    per point, the machine (CPU, cores, GPU, driver, CUDA version), the commit, the load average before and after,
#    the server's log and every command line.
# Exit status: serve_load's (non-zero when a request failed or answered another text than the reference), else 1
# when the server did not start or did not exit 0 on SIGTERM; 2 for bad usage.
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
args=""  # the command line as given, for the result file
for a in "$@"; do
  if [[ $a =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then args+=" $a"; else args+=" '${a//\'/\'\\\'\'}'"; fi
done
build=build
out=bench/results/cpu-seed.json
concurrency="1 4 8 16 20 24 32 64 100"
duration_s=30
warmup_s=5
timeout_s=60
sla_mean_ms=650
sla_p99_ms=1000
clip_seconds=45
steno=
serve_load=
note=""
serve_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --duration-s) duration_s=$2; shift 2 ;;
    --warmup-s) warmup_s=$2; shift 2 ;;
    --timeout-s) timeout_s=$2; shift 2 ;;
    --sla-mean-ms) sla_mean_ms=$2; shift 2 ;;
    --sla-p99-ms) sla_p99_ms=$2; shift 2 ;;
    --steno) steno=$2; shift 2 ;;
    --serve-load) serve_load=$2; shift 2 ;;
    --note) note=$2; shift 2 ;;
    --) shift; serve_args=("$@"); break ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "seed_load.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
cd "$src"
read -r -a steno_cmd <<< "${steno:-$build/apps/steno/steno}"
read -r -a client_cmd <<< "${serve_load:-$build/bench/serve_load}"

fail() { echo "seed_load.sh: FAIL: $*" >&2; exit 1; }
runnable() { [ -x "$1" ] || command -v "$1" >/dev/null 2>&1; }
runnable "${steno_cmd[0]}" || fail "${steno_cmd[0]} is not built (cmake --build $build --target steno)"
runnable "${client_cmd[0]}" || fail "${client_cmd[0]} is not built (cmake --build $build --target serve_load)"
command -v python3 >/dev/null || fail "python3 is not installed"
max_c=0
for c in $concurrency; do
  [[ $c =~ ^[1-9][0-9]*$ ]] || { echo "seed_load.sh: --concurrency: '$c' is not a positive integer" >&2; exit 2; }
  if [ "$c" -gt "$max_c" ]; then max_c=$c; fi
done
[ "$max_c" -gt 0 ] || { echo "seed_load.sh: --concurrency is empty" >&2; exit 2; }
points=$(wc -w <<< "$concurrency")
estimate=$(awk -v n="$points" -v w="$warmup_s" -v d="$duration_s" 'BEGIN { print int(n * (w + d + 1)) }')
echo "seed_load.sh: $points points (concurrency $concurrency), each ${warmup_s} s warm-up + ${duration_s} s window" \
     "+ the drain: about $estimate s"

# File descriptors: one per connection, in the server and in the client.
soft_before=$(ulimit -Sn)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
nofile=$(ulimit -Sn)
if [ "$nofile" != unlimited ] && [ "$nofile" -lt $((max_c + 128)) ]; then
  fail "RLIMIT_NOFILE is $nofile even at the hard limit: too low for $max_c connections"
fi

work=$(mktemp -d)
log=$work/server.log
pid=
smi=
stop_background() {
  if [ -n "$smi" ]; then kill "$smi" 2>/dev/null || true; wait "$smi" 2>/dev/null || true; smi=; fi
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; fi
}
trap 'stop_background; rm -rf "$work"' EXIT

port=
# http_get PATH: the body of GET PATH on the server; fails unless it answers 200 within 5 s.
http_get() {
  if command -v curl >/dev/null; then curl -fsS --max-time 5 "http://127.0.0.1:$port$1"; return; fi
  local response
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$1" "$port" >&3
  response=$(timeout 5 cat <&3; echo .)  # the '.' keeps the trailing newlines that $(...) would strip
  exec 3<&-
  [[ $response == "HTTP/1.1 200"* ]] || return 1
  response=${response%.}
  printf '%s' "${response#*$'\r\n\r\n'}"
}

# 1. The clip.
clip=$work/seed-${clip_seconds}s.wav
clip_cmd=("${client_cmd[@]}" --make-clip "$clip" --clip-seconds "$clip_seconds"
          --testset "$src/tests/data/testset/espeak")
"${clip_cmd[@]}" >"$work/clip.json" || fail "making the clip failed: ${clip_cmd[*]}"

load_before=$(cat /proc/loadavg)
uptime_before=$(uptime)
echo "seed_load.sh: before: $uptime_before"

# 2. The server.
server_cmd=("${steno_cmd[@]}" serve --host 127.0.0.1 --port 0 "${serve_args[@]}")
env -u STENO_MODEL -u STENO_API_KEY "${server_cmd[@]}" >"$log" 2>&1 &
pid=$!
for _ in $(seq 1800); do  # 180 s: a GPU server loads its model first
  port=$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$log" | head -n 1)
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "steno serve exited before it listened"; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$log" >&2; fail "steno serve did not print its port within 180 s"; }
ready=
for _ in $(seq 1200); do  # 120 s
  if http_get /v2/health/ready >/dev/null 2>&1; then ready=1; break; fi
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "steno serve exited before it was ready"; }
  sleep 0.1
done
[ -n "$ready" ] || { cat "$log" >&2; fail "/v2/health/ready did not answer 200 within 120 s"; }
echo "seed_load.sh: steno serve (pid $pid) ready on 127.0.0.1:$port"
http_get /v1/models >"$work/models.json" 2>/dev/null || true
model=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["data"][0]["id"])' "$work/models.json" \
        2>/dev/null || true)
if [ -n "$model" ]; then http_get "/v2/models/$model/config" >"$work/model_config.json" 2>/dev/null || true; fi

# 3. The sweep, with the GPUs sampled meanwhile.
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv \
    >"$work/gpu_machine.txt" 2>&1 || true
  nvidia-smi 2>&1 | grep -m1 'CUDA Version' >>"$work/gpu_machine.txt" || true
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,clocks.sm,memory.used,power.draw \
    --format=csv,noheader,nounits -lms 100 >"$work/gpu_samples.csv" 2>/dev/null &
  smi=$!
fi
sweep_cmd=("${client_cmd[@]}" --closed-loop --port "$port" --clip "$clip" --concurrency "$concurrency"
           --duration-s "$duration_s" --warmup-s "$warmup_s" --timeout-s "$timeout_s" --sla-mean-ms "$sla_mean_ms"
           --sla-p99-ms "$sla_p99_ms" --out "$work/sweep.json")
sweep_rc=0
"${sweep_cmd[@]}" >"$work/sweep.stdout" || sweep_rc=$?
if [ -n "$smi" ]; then
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits \
    >"$work/gpu_processes.csv" 2>/dev/null || true
  kill "$smi" 2>/dev/null || true
  wait "$smi" 2>/dev/null || true
  smi=
fi
load_between=$(cat /proc/loadavg)
echo "seed_load.sh: serve_load exit code $sweep_rc; $(uptime)"
[ -s "$work/sweep.json" ] || { tail -n 50 "$log" >&2; fail "serve_load wrote no result (exit code $sweep_rc)"; }

# 4. SIGTERM; the server must exit 0.
stop_start=$(date +%s.%N)
kill -TERM "$pid"
server_rc=0
wait "$pid" || server_rc=$?
pid=
stop_s=$(awk -v a="$stop_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
echo "seed_load.sh: steno serve exited with $server_rc after SIGTERM ($stop_s s)"
load_after=$(cat /proc/loadavg)
uptime_after=$(uptime)

# 5. The result file.
commit=${STENO_COMMIT:-}
if [ -z "$commit" ]; then
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  git diff --quiet HEAD 2>/dev/null || commit="$commit+uncommitted"
fi
mkdir -p "$(dirname "$out")"
export SL_WORK=$work SL_OUT=$out SL_COMMIT=$commit SL_NOTE=$note SL_PORT=$port SL_SERVER_CMD="${server_cmd[*]}" \
  SL_CLIP_CMD="${clip_cmd[*]}" SL_SWEEP_CMD="${sweep_cmd[*]}" SL_SWEEP_RC=$sweep_rc SL_SERVER_RC=$server_rc \
  SL_STOP_S=$stop_s SL_NOFILE=$nofile SL_NOFILE_BEFORE=$soft_before SL_LOAD_BEFORE=$load_before \
  SL_LOAD_BETWEEN=$load_between SL_LOAD_AFTER=$load_after SL_UPTIME_BEFORE=$uptime_before \
  SL_UPTIME_AFTER=$uptime_after SL_SCRIPT="bench/seed_load.sh$args"
python3 - <<'PY'
import datetime, json, os, platform, socket

e = os.environ
work = e["SL_WORK"]

def path(name):
    return os.path.join(work, name)

def loadavg(s):
    f = s.split()
    return {"1min": float(f[0]), "5min": float(f[1]), "15min": float(f[2]), "runnable_total": f[3]}

def num(s):
    return int(s) if s.isdigit() else s

def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()

def read_json(name):
    try:
        return json.load(open(path(name)))
    except Exception:
        return None

def gpu_machine():
    if not os.path.exists(path("gpu_machine.txt")):
        return None
    return open(path("gpu_machine.txt"), errors="replace").read().strip().splitlines()

def gpu_samples(points):
    """nvidia-smi's 100 ms samples, summed up per point's window and per GPU."""
    if not os.path.exists(path("gpu_samples.csv")):
        return None
    rows = []
    for line in open(path("gpu_samples.csv"), errors="replace"):
        f = [x.strip() for x in line.split(",")]
        if len(f) != 6:
            continue
        try:
            t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()  # nvidia-smi: local time
            rows.append((t, int(f[1]), float(f[2]), float(f[3]), float(f[4]), float(f[5])))
        except ValueError:
            continue
    per_point = []
    for p in points:
        start, end = p["window_unix_s"]
        gpus = {}
        for t, gpu, util, sm, mem, power in rows:
            if start <= t < end:
                gpus.setdefault(gpu, []).append((util, sm, mem, power))
        summary = {}
        for gpu, s in sorted(gpus.items()):
            col = lambda i: [x[i] for x in s]
            mean = lambda v: round(sum(v) / len(v), 3)
            summary[str(gpu)] = {"samples": len(s), "utilization_pct": {"mean": mean(col(0)), "max": max(col(0))},
                                 "sm_clock_mhz": {"mean": mean(col(1)), "min": min(col(1))},
                                 "memory_used_mib": {"max": max(col(2))},
                                 "power_w": {"mean": mean(col(3)), "max": max(col(3))}}
        per_point.append({"concurrency": p["concurrency"], "gpus": summary})
    processes = []
    if os.path.exists(path("gpu_processes.csv")):
        for line in open(path("gpu_processes.csv"), errors="replace"):
            f = [x.strip() for x in line.split(",")]
            if len(f) == 3:
                processes.append({"pid": f[0], "process": f[1], "memory_used_mib": f[2]})
    return {"tool": "nvidia-smi --query-gpu=timestamp,index,utilization.gpu,clocks.sm,memory.used,power.draw "
                    "-lms 100 (NVML), during the sweep; summed up over each point's window",
            "samples": len(rows), "per_point": per_point,
            "processes_at_sweep_end": processes}

def server_log():
    lines = open(path("server.log"), errors="replace").read().splitlines()
    if len(lines) <= 200:
        return lines
    return lines[:100] + ["... (%d lines left out) ..." % (len(lines) - 200)] + lines[-100:]

sweep = json.load(open(path("sweep.json")))
config = read_json("model_config.json")
model_config = {k: config.get(k) for k in ("name", "dynamic_batching", "instance_group", "parameters")} \
    if isinstance(config, dict) else None
clip = read_json("clip.json")
if clip:
    clip["clip"] = os.path.basename(clip["clip"])  # a temporary file; the command makes it again
    clip["command"] = e["SL_CLIP_CMD"]

result = {
    "what": "benchmark protocol workload `seed`: one %s s clip re-sent, closed loop, at each concurrency; "
            "SLA mean < %s ms and p99 < %s ms; headline = highest requests/s that meets it" % (
                clip["seconds"] if clip else "?", sweep["settings"]["sla"]["mean_ms_below"],
                sweep["settings"]["sla"]["p99_ms_below"]),
    "date_utc": sweep.get("date_utc"),
    "command": e["SL_SCRIPT"].strip(),
    "commit": e["SL_COMMIT"],
    "headline": sweep.get("headline"),
    "machine": {
        "host": socket.gethostname(), "cpu": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release(),
        "gpu": gpu_machine(), "note": e["SL_NOTE"],
        "rlimit_nofile": {"soft_before": num(e["SL_NOFILE_BEFORE"]), "soft": num(e["SL_NOFILE"])},
    },
    "load_average": {
        "before": loadavg(e["SL_LOAD_BEFORE"]), "after_sweep": loadavg(e["SL_LOAD_BETWEEN"]),
        "after": loadavg(e["SL_LOAD_AFTER"]),
        "uptime_before": e["SL_UPTIME_BEFORE"].strip(), "uptime_after": e["SL_UPTIME_AFTER"].strip(),
    },
    "clip": clip,
    "server": {
        "command": e["SL_SERVER_CMD"], "port": int(e["SL_PORT"]), "model_config": model_config,
        "sigterm_exit_code": int(e["SL_SERVER_RC"]), "sigterm_stop_s": float(e["SL_STOP_S"]), "log": server_log(),
    },
    "gpu_samples": gpu_samples(sweep.get("points", [])),
    "sweep": dict(sweep, client_command=e["SL_SWEEP_CMD"], exit_code=int(e["SL_SWEEP_RC"])),
}
# Per-request rows one to a line: a sweep holds tens of thousands.
rows = []
for p in result["sweep"].get("points", []):
    rows.append(p.get("per_request", []))
    p["per_request"] = "@ROWS%d@" % (len(rows) - 1)
text = json.dumps(result, indent=2)
for i, r in enumerate(rows):
    body = ",\n          ".join(json.dumps(x, separators=(", ", ": ")) for x in r)
    text = text.replace('"@ROWS%d@"' % i, "[\n          " + body + "\n        ]" if r else "[]")
with open(e["SL_OUT"], "w") as f:
    f.write(text + "\n")

print("seed_load.sh: %-11s %8s %6s %7s %11s %10s %9s %9s %5s %7s" % (
    "concurrency", "requests", "ok", "failed", "requests/s", "mean ms", "p99 ms", "max ms", "SLA", "batch"))
for p in sweep.get("points", []):
    m = p.get("server_metrics") or {}
    print("seed_load.sh: %-11d %8d %6d %7d %11.2f %10.0f %9.0f %9.0f %5s %7s" % (
        p["concurrency"], p["requests"], p["ok"], p["failed"] + p["wrong"], p["requests_per_s"],
        p["latency_ms"]["mean"], p["latency_ms"]["p99"], p["latency_ms"]["max"], "met" if p["meets_sla"] else "no",
        "%.2f" % m["mean_batch_size"] if "mean_batch_size" in m else "-"))
h = sweep.get("headline")
print("seed_load.sh: headline: %s" % ("%.2f requests/s at concurrency %d (mean %.0f ms, p99 %.0f ms)" % (
    h["requests_per_s"], h["concurrency"], h["latency_ms"]["mean"], h["latency_ms"]["p99"]) if h else
    "none: no point meets the SLA"))
print("seed_load.sh: wrote %s" % e["SL_OUT"])
PY

[ "$sweep_rc" -eq 0 ] || fail "serve_load: requests failed or answered another text (exit code $sweep_rc); see $out"
[ "$server_rc" -eq 0 ] || fail "steno serve exited with $server_rc after SIGTERM"
echo "seed_load.sh: PASS"
