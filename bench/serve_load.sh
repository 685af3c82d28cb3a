#!/usr/bin/env bash
# Issue 5's recorded load run (CPU, bundled model):
#   bench/serve_load.sh [--build-dir build] [--requests 1000] [--out bench/results/cpu-serve-load.json]
#                       [--wrk-duration 10] [--wrk-connections "1 16 128"] [--note "machine state"]
# 1. starts `steno serve` with the bundled model on a free loopback port (--port 0; the port is read from its log)
#    and waits for /v2/health/ready;
# 2. runs serve_load: --requests connections, one OpenAI transcription request on each, all in flight at once,
#    every answer checked against tests/data/testset/espeak/reference_transcripts.tsv, the server's batch sizes
#    scraped from /metrics before and after; meanwhile curl probes /v2/health/ready every 0.5 s;
# 3. measures /v2/health/ready's throughput with wrk, --wrk-duration seconds at each of --wrk-connections;
# 4. stops the server with SIGTERM and requires exit code 0;
# 5. writes OUT (serve_load's result, wrk's figures, the load average before, between and after, the machine, the
#    commit, the command lines) and OUT without .json + "-wrk.txt" (wrk's raw output).
# Exit status: serve_load's (non-zero when a request was lost, wrong or answered twice), else 1 when wrk or the
# server's shutdown failed.
#
# The server's settings, and why (everything else is steno serve's default, recorded in the result):
#   --host 127.0.0.1 --port 0  loopback, any free port.
#   --max-queue-size Q         Q = max(1024, requests): the batcher refuses requests past this many queued (429);
#                              the default, 1024, already holds 1,000, but the bound must follow --requests.
#   ulimit -n (hard)           the HTTP front end has no connection cap of its own; each connection is a file
#                              descriptor, so the process's RLIMIT_NOFILE is the real limit (the soft limit is raised
#                              to the hard one for the server and serve_load, and the run stops when it is too low).
#   Listen backlog             SOMAXCONN (the server listens with max_listen_connections); recorded, and the run warns
#                              when net.core.somaxconn is below --requests.
#   read_timeout_s (30 s)      applies to receiving a request, not to waiting for its answer: left at the default.
# Needs: the steno and serve_load targets built (ninja -C BUILD steno serve_load), curl, python3, and wrk
# (Debian's `wrk` package: apt-get install wrk).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
args=""  # the command line as given, for the result file
for a in "$@"; do
  if [[ $a =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then args+=" $a"; else args+=" '${a//\'/\'\\\'\'}'"; fi
done
build=build
requests=1000
out=bench/results/cpu-serve-load.json
wrk_duration=10
wrk_connections="1 16 128"
note=""
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --wrk-duration) wrk_duration=$2; shift 2 ;;
    --wrk-connections) wrk_connections=$2; shift 2 ;;
    --note) note=$2; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "serve_load.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
cd "$src"
steno=$build/apps/steno/steno
client=$build/bench/serve_load
wrk_txt=${out%.json}-wrk.txt

fail() { echo "serve_load.sh: FAIL: $*" >&2; exit 1; }
[ -x "$steno" ] || fail "$steno is not built (ninja -C $build steno)"
[ -x "$client" ] || fail "$client is not built (ninja -C $build serve_load)"
command -v curl >/dev/null || fail "curl is not installed"
command -v python3 >/dev/null || fail "python3 is not installed"
command -v wrk >/dev/null || fail "wrk is not installed (apt-get install wrk)"

# File descriptors: one per connection, in the server and in the client.
soft_before=$(ulimit -Sn)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
nofile=$(ulimit -Sn)
echo "serve_load.sh: RLIMIT_NOFILE soft $soft_before -> $nofile (hard $(ulimit -Hn))"
if [ "$nofile" != unlimited ] && [ "$nofile" -lt $((requests + 128)) ]; then
  fail "RLIMIT_NOFILE is $nofile even at the hard limit: too low for $requests connections; raise it (ulimit -Hn," \
       "limits.conf, the container's nofile) or pass fewer --requests"
fi
somaxconn=$(cat /proc/sys/net/core/somaxconn 2>/dev/null || echo 0)
[ "$somaxconn" -ge "$requests" ] ||
  echo "serve_load.sh: WARNING: net.core.somaxconn is $somaxconn, below $requests: connects may be retried or dropped"
queue=$((requests > 1024 ? requests : 1024))

work=$(mktemp -d)
log=$work/server.log
pid=
stop_server() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; fi
}
trap 'stop_server; rm -rf "$work"' EXIT

load_before=$(cat /proc/loadavg)
uptime_before=$(uptime)
echo "serve_load.sh: before: $uptime_before"

# 1. The server.
server_cmd=("$steno" serve --host 127.0.0.1 --port 0 --max-queue-size "$queue")
env -u STENO_MODEL -u STENO_API_KEY "${server_cmd[@]}" >"$log" 2>&1 &
pid=$!
port=
for _ in $(seq 1200); do  # 120 s
  port=$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$log" | head -n 1)
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "steno serve exited before it listened"; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$log" >&2; fail "steno serve did not print its port within 120 s"; }
ready=
for _ in $(seq 600); do  # 60 s
  if curl -fsS -o /dev/null "http://127.0.0.1:$port/v2/health/ready" 2>/dev/null; then ready=1; break; fi
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "steno serve exited before it was ready"; }
  sleep 0.1
done
[ -n "$ready" ] || { cat "$log" >&2; fail "/v2/health/ready did not answer 200 within 60 s"; }
echo "serve_load.sh: steno serve (pid $pid) ready on 127.0.0.1:$port"
curl -fsS "http://127.0.0.1:$port/v2/models/steno-tdt-small-en/config" >"$work/model_config.json" || true

# 2. The load run, with /v2/health/ready probed every 0.5 s meanwhile (a readiness probe must not stall under load).
probe() {
  while :; do
    curl -s -o /dev/null --max-time 5 -w '%{http_code} %{time_total}\n' "http://127.0.0.1:$port/v2/health/ready" || true
    sleep 0.5
  done
}
probe >"$work/probes.txt" 2>/dev/null &
prober=$!
load_rc=0
"$client" --port "$port" --requests "$requests" --out "$work/serve_load.json" >"$work/serve_load.stdout" ||
  load_rc=$?
kill "$prober" 2>/dev/null || true
wait "$prober" 2>/dev/null || true
load_between=$(cat /proc/loadavg)
echo "serve_load.sh: serve_load exit code $load_rc; $(uptime)"
[ -s "$work/serve_load.json" ] || { cat "$log" >&2; fail "serve_load wrote no result (exit code $load_rc)"; }

# 3. Health-endpoint throughput.
: >"$wrk_txt"
wrk_rc=0
for c in $wrk_connections; do
  t=$((c < 2 ? 1 : 2))
  cmd=(wrk -t"$t" -c"$c" -d"${wrk_duration}s" --latency "http://127.0.0.1:$port/v2/health/ready")
  { echo "### ${cmd[*]}"; echo "### load average before: $(cat /proc/loadavg)"; } >>"$wrk_txt"
  "${cmd[@]}" >>"$wrk_txt" 2>&1 || wrk_rc=$?
  echo >>"$wrk_txt"
done
echo "serve_load.sh: wrk done (exit code $wrk_rc); raw output in $wrk_txt"

# 4. SIGTERM; the server must exit 0.
stop_start=$(date +%s.%N)
kill -TERM "$pid"
server_rc=0
wait "$pid" || server_rc=$?
pid=
stop_s=$(awk -v a="$stop_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
echo "serve_load.sh: steno serve exited with $server_rc after SIGTERM ($stop_s s)"
load_after=$(cat /proc/loadavg)
uptime_after=$(uptime)
echo "serve_load.sh: after: $uptime_after"

# 5. The result file.
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+uncommitted"
export SL_WORK=$work SL_OUT=$out SL_WRK=$wrk_txt SL_COMMIT=$commit SL_NOTE=$note SL_REQUESTS=$requests \
  SL_QUEUE=$queue SL_PORT=$port SL_SERVER_CMD="${server_cmd[*]}" \
  SL_CLIENT_CMD="$client --port $port --requests $requests" \
  SL_LOAD_RC=$load_rc SL_WRK_RC=$wrk_rc SL_SERVER_RC=$server_rc SL_STOP_S=$stop_s SL_NOFILE=$nofile \
  SL_NOFILE_BEFORE=$soft_before SL_SOMAXCONN=$somaxconn SL_LOAD_BEFORE=$load_before SL_LOAD_BETWEEN=$load_between \
  SL_LOAD_AFTER=$load_after SL_UPTIME_BEFORE=$uptime_before SL_UPTIME_AFTER=$uptime_after \
  SL_WRK_VERSION="$(wrk -v 2>&1 | head -n 1 || true)" SL_SCRIPT="bench/serve_load.sh$args"
python3 - <<'PY'
import json, os, platform, re, socket

e = os.environ
work = e["SL_WORK"]

def loadavg(s):
    f = s.split()
    return {"1min": float(f[0]), "5min": float(f[1]), "15min": float(f[2]), "runnable_total": f[3]}

def ms(value, unit):
    return round(float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit], 6)

def parse_wrk(text):
    runs = []
    for block in text.split("### wrk ")[1:]:
        r = {"command": "wrk " + block.splitlines()[0]}
        m = re.search(r"-c(\d+)", r["command"]); r["connections"] = int(m.group(1))
        m = re.search(r"-t(\d+)", r["command"]); r["threads"] = int(m.group(1))
        m = re.search(r"load average before: (.*)", block); r["load_average_before"] = loadavg(m.group(1))
        m = re.search(r"(\d+) requests in ([\d.]+)(\w+), ([\d.]+\w+) read", block)
        if m:
            r["requests"] = int(m.group(1))
            r["duration_s"] = ms(m.group(2), m.group(3)) / 1e3
        m = re.search(r"Requests/sec:\s+([\d.]+)", block)
        r["requests_per_s"] = float(m.group(1)) if m else None
        m = re.search(r"Latency\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)", block)
        if m:
            r["latency_ms"] = {"mean": ms(m.group(1), m.group(2)), "stdev": ms(m.group(3), m.group(4)),
                               "max": ms(m.group(5), m.group(6))}
            for p in ("50", "75", "90", "99"):
                q = re.search(r"\s%s%%\s+([\d.]+)(us|ms|s)" % p, block)
                if q: r["latency_ms"]["p" + p] = ms(q.group(1), q.group(2))
        m = re.search(r"Non-2xx or 3xx responses: (\d+)", block)
        r["non_2xx"] = int(m.group(1)) if m else 0
        m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", block)
        r["socket_errors"] = ({k: int(v) for k, v in zip(("connect", "read", "write", "timeout"), m.groups())}
                              if m else {"connect": 0, "read": 0, "write": 0, "timeout": 0})
        runs.append(r)
    return runs

def probes():
    codes, times = [], []
    for line in open(os.path.join(work, "probes.txt")):
        f = line.split()
        if len(f) == 2:
            codes.append(f[0]); times.append(round(float(f[1]) * 1e3, 3))
    times.sort()
    rank = lambda p: times[max(1, -(-len(times) * p // 100)) - 1] if times else None
    return {"what": "curl GET /v2/health/ready every 0.5 s while serve_load ran (timeout 5 s)",
            "probes": len(codes), "status_200": codes.count("200"),
            "latency_ms": {"p50": rank(50), "p90": rank(90), "max": times[-1] if times else None}}

def num(s):
    return int(s) if s.isdigit() else s

def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()

load = json.load(open(os.path.join(work, "serve_load.json")))
per_request = load.pop("per_request")
try:
    config = json.load(open(os.path.join(work, "model_config.json")))
    model_config = {k: config.get(k) for k in ("name", "dynamic_batching", "instance_group", "parameters")}
except Exception:
    model_config = None
server_log = open(os.path.join(work, "server.log"), errors="replace").read().splitlines()
wrk_text = open(e["SL_WRK"]).read()

result = {
    "what": "issue 5: %s concurrent OpenAI transcription requests (bundled model, CPU), each checked against "
            "reference_transcripts.tsv; /v2/health/ready throughput with wrk" % e["SL_REQUESTS"],
    "date_utc": load.get("date_utc"),
    "command": e["SL_SCRIPT"].strip(),
    "commit": e["SL_COMMIT"],
    "machine": {
        "host": socket.gethostname(), "cpu": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release(),
        "note": e["SL_NOTE"],
        "rlimit_nofile": {"soft_before": num(e["SL_NOFILE_BEFORE"]), "soft": num(e["SL_NOFILE"])},
        "somaxconn": int(e["SL_SOMAXCONN"]),
    },
    "load_average": {
        "before": loadavg(e["SL_LOAD_BEFORE"]), "after_load_run": loadavg(e["SL_LOAD_BETWEEN"]),
        "after": loadavg(e["SL_LOAD_AFTER"]),
        "uptime_before": e["SL_UPTIME_BEFORE"].strip(), "uptime_after": e["SL_UPTIME_AFTER"].strip(),
    },
    "server": {
        "command": e["SL_SERVER_CMD"], "port": int(e["SL_PORT"]),
        "settings_why": {
            "--max-queue-size %s" % e["SL_QUEUE"]: "max(1024, requests): the batcher answers 429 past this many "
                                                   "queued requests; every request must be queued at once",
            "ulimit -n %s" % e["SL_NOFILE"]: "one file descriptor per connection; the HTTP front end has no "
                                             "connection cap of its own",
        },
        "model_config": model_config,
        "sigterm_exit_code": int(e["SL_SERVER_RC"]), "sigterm_stop_s": float(e["SL_STOP_S"]),
        "log": server_log,
    },
    "load_run": dict(load, client_command=e["SL_CLIENT_CMD"], exit_code=int(e["SL_LOAD_RC"])),
    "health_during_load_run": probes(),
    "health": {
        "tool": e["SL_WRK_VERSION"], "endpoint": "GET /v2/health/ready", "raw_output": os.path.basename(e["SL_WRK"]),
        "exit_code": int(e["SL_WRK_RC"]), "runs": parse_wrk(wrk_text),
    },
}
text = json.dumps(dict(result, per_request="@PER_REQUEST@"), indent=2)
rows = ",\n    ".join(json.dumps(r, separators=(", ", ": ")) for r in per_request)
text = text.replace('"@PER_REQUEST@"', "[\n    " + rows + "\n  ]")
with open(e["SL_OUT"], "w") as f:
    f.write(text + "\n")

lr = result["load_run"]
print("serve_load.sh: %d requests: %d ok, %d wrong, %d failed, %d duplicate answers; wall %.2f s, %.1f requests/s, "
      "latency mean %.0f ms p99 %.0f ms; mean batch size %s" % (
          lr["requests"], lr["ok"], lr["wrong"], lr["failed"], lr["duplicate_answers"], lr["wall_s"],
          lr["requests_per_s"], lr["latency_ms"]["mean"], lr["latency_ms"]["p99"],
          (lr.get("server_metrics") or {}).get("mean_batch_size")))
h = result["health_during_load_run"]
print("serve_load.sh: health probes during the load run: %d, %d answered 200, latency p50 %s ms, max %s ms" % (
    h["probes"], h["status_200"], h["latency_ms"]["p50"], h["latency_ms"]["max"]))
for r in result["health"]["runs"]:
    print("serve_load.sh: health, %d connections: %s requests/s" % (r["connections"], r["requests_per_s"]))
print("serve_load.sh: wrote %s and %s" % (e["SL_OUT"], e["SL_WRK"]))
PY

[ "$load_rc" -eq 0 ] || fail "serve_load: requests lost, wrong or answered twice (exit code $load_rc); see $out"
[ "$wrk_rc" -eq 0 ] || fail "wrk failed (exit code $wrk_rc); see $wrk_txt"
[ "$server_rc" -eq 0 ] || fail "steno serve exited with $server_rc after SIGTERM"
echo "serve_load.sh: PASS"
