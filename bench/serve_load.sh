#!/usr/bin/env bash
# The recorded CPU load run (bundled model): every request in flight at once, then health throughput with wrk:
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
script=serve_load.sh
. "$src/bench/load_common.sh"  # the steps the load scripts share
quote_args "$@"
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
    -h|--help) print_usage; exit 0 ;;
    *) usage_error "unknown argument $1 (see --help)" ;;
  esac
done
cd "$src"
steno=$build/apps/steno/steno
client=$build/bench/serve_load
wrk_txt=${out%.json}-wrk.txt

[ -x "$steno" ] || fail "$steno is not built (ninja -C $build steno)"
[ -x "$client" ] || fail "$client is not built (ninja -C $build serve_load)"
command -v curl >/dev/null || fail "curl is not installed"
command -v python3 >/dev/null || fail "python3 is not installed"
command -v wrk >/dev/null || fail "wrk is not installed (apt-get install wrk)"

raise_nofile
echo "serve_load.sh: RLIMIT_NOFILE soft $soft_before -> $nofile (hard $(ulimit -Hn))"
require_nofile $((requests + 128)) \
  "$requests connections; raise it (ulimit -Hn, limits.conf, the container's nofile) or pass fewer --requests"
somaxconn=$(cat /proc/sys/net/core/somaxconn 2>/dev/null || echo 0)
[ "$somaxconn" -ge "$requests" ] ||
  echo "serve_load.sh: WARNING: net.core.somaxconn is $somaxconn, below $requests: connects may be retried or dropped"
queue=$((requests > 1024 ? requests : 1024))

make_work_dir
record_load_before

# 1. The server.
server_cmd=("$steno" serve --host 127.0.0.1 --port 0 --max-queue-size "$queue")
start_server 120 "${server_cmd[@]}"
wait_ready 60 curl -fsS -o /dev/null "http://127.0.0.1:$port/v2/health/ready"
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
stop_job "$prober"
client_finished "$load_rc" "$work/serve_load.json"

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
stop_server
record_load_after
echo "serve_load.sh: after: $uptime_after"

# 5. The result file.
commit=$(git_commit)
export_result_env
export LOAD_WRK=$wrk_txt LOAD_REQUESTS=$requests LOAD_QUEUE=$queue \
  LOAD_CLIENT_CMD="$client --port $port --requests $requests" LOAD_RUN_RC=$load_rc LOAD_WRK_RC=$wrk_rc \
  LOAD_SOMAXCONN=$somaxconn LOAD_WRK_VERSION="$(wrk -v 2>&1 | head -n 1 || true)"
run_result_python py_result_helpers <<'PY'
import re

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
    for line in open(path("probes.txt")):
        f = line.split()
        if len(f) == 2:
            codes.append(f[0]); times.append(round(float(f[1]) * 1e3, 3))
    times.sort()
    rank = lambda p: times[max(1, -(-len(times) * p // 100)) - 1] if times else None
    return {"what": "curl GET /v2/health/ready every 0.5 s while serve_load ran (timeout 5 s)",
            "probes": len(codes), "status_200": codes.count("200"),
            "latency_ms": {"p50": rank(50), "p90": rank(90), "max": times[-1] if times else None}}

load = json.load(open(path("serve_load.json")))
per_request = load.pop("per_request")
wrk_text = open(e["LOAD_WRK"]).read()

result = dict(
    run_fields("CPU load run: %s concurrent OpenAI transcription requests (bundled model, CPU), each checked against "
               "reference_transcripts.tsv; /v2/health/ready throughput with wrk" % e["LOAD_REQUESTS"],
               load.get("date_utc")),
    machine=dict(machine(), somaxconn=int(e["LOAD_SOMAXCONN"])),
    load_average=load_average("after_load_run"),
    server=server(server_log(), settings_why={
        "--max-queue-size %s" % e["LOAD_QUEUE"]: "max(1024, requests): the batcher answers 429 past this many "
                                                 "queued requests; every request must be queued at once",
        "ulimit -n %s" % e["LOAD_NOFILE"]: "one file descriptor per connection; the HTTP front end has no "
                                           "connection cap of its own",
    }),
    load_run=dict(load, client_command=e["LOAD_CLIENT_CMD"], exit_code=int(e["LOAD_RUN_RC"])),
    health_during_load_run=probes(),
    health={
        "tool": e["LOAD_WRK_VERSION"], "endpoint": "GET /v2/health/ready",
        "raw_output": os.path.basename(e["LOAD_WRK"]), "exit_code": int(e["LOAD_WRK_RC"]), "runs": parse_wrk(wrk_text),
    },
)
text = json.dumps(dict(result, per_request="@PER_REQUEST@"), indent=2)
rows = ",\n    ".join(json.dumps(r, separators=(", ", ": ")) for r in per_request)
text = text.replace('"@PER_REQUEST@"', "[\n    " + rows + "\n  ]")
with open(e["LOAD_OUT"], "w") as f:
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
print("serve_load.sh: wrote %s and %s" % (e["LOAD_OUT"], e["LOAD_WRK"]))
PY

[ "$load_rc" -eq 0 ] || fail "serve_load: requests lost, wrong or answered twice (exit code $load_rc); see $out"
[ "$wrk_rc" -eq 0 ] || fail "wrk failed (exit code $wrk_rc); see $wrk_txt"
report_pass
