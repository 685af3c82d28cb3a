# The steps the load scripts share (bench/seed_load.sh, bench/mix_load.sh, bench/serve_load.sh), sourced by them:
#   script=NAME.sh; . "$src/bench/load_common.sh"
# Each function is one step over the scripts' own variables: `script` (the name in every message), `src` (the
# checkout), the options (build, out, note, ...) and what earlier steps set (work, log, pid, port, ...); each says
# which it reads and sets. Messages go out as "NAME.sh: ...".

# ---- the command line ----------------------------------------------------------------------------------------------

# quote_args ARGS...: args = the command line as given (quoted where needed), for the result file.
quote_args() {
  local a
  args=""
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then args+=" $a"; else args+=" '${a//\'/\'\\\'\'}'"; fi
  done
}

# print_usage: the script's header comment (the lines after #!, up to the first that is not a comment).
print_usage() {
  awk 'NR > 1 { if (!/^#/) exit; print }' "$0"
}

# usage_error MESSAGE: MESSAGE on stderr, exit status 2.
usage_error() {
  echo "$script: $*" >&2
  exit 2
}

# fail MESSAGE: "FAIL: MESSAGE" on stderr, exit status 1.
fail() {
  echo "$script: FAIL: $*" >&2
  exit 1
}

# sweep_defaults: the defaults of the options seed_load.sh and mix_load.sh share (the protocol's window, warm-up,
# timeout and p99 bound; BUILD's programs; no note, no STENO_SERVE_ARGS; exact texts, not --accept-differing-text).
sweep_defaults() {
  build=build
  duration_s=30
  warmup_s=5
  timeout_s=60
  sla_p99_ms=1000
  steno=
  serve_load=
  note=""
  serve_args=()
  accept_differing_text=
}

# parse_sweep_args ARGS...: seed_load.sh's or mix_load.sh's command line: the script's own options through its
# own_option (OPTION VALUE...: sets the option's variable; false for any other option), the shared ones through
# sweep_option, the shared flag --accept-differing-text (no value: accept_differing_text=1, for the script to pass on
# to serve_load), STENO_SERVE_ARGS after `--` into serve_args, --help; exit status 2 for anything else.
parse_sweep_args() {
  while [ $# -gt 0 ]; do
    case $1 in
      --) shift; serve_args=("$@"); break ;;
      -h|--help) print_usage; exit 0 ;;
      --accept-differing-text) accept_differing_text=1; shift ;;
      *) own_option "$@" || sweep_option "$@" || usage_error "unknown argument $1 (see --help)"; shift 2 ;;
    esac
  done
}

# sweep_option OPTION VALUE...: sets the variable of an option seed_load.sh and mix_load.sh share; false for any other.
sweep_option() {
  case $1 in
    --build-dir) build=$2 ;;
    --out) out=$2 ;;
    --duration-s) duration_s=$2 ;;
    --warmup-s) warmup_s=$2 ;;
    --timeout-s) timeout_s=$2 ;;
    --sla-mean-ms) sla_mean_ms=$2 ;;
    --sla-p99-ms) sla_p99_ms=$2 ;;
    --steno) steno=$2 ;;
    --serve-load) serve_load=$2 ;;
    --note) note=$2 ;;
    *) return 1 ;;
  esac
}

# need_sweep_programs: steno_cmd and client_cmd, the commands --steno and --serve-load give (else BUILD's steno and
# serve_load), each runnable, and python3; fails otherwise.
need_sweep_programs() {
  read -r -a steno_cmd <<< "${steno:-$build/apps/steno/steno}"
  read -r -a client_cmd <<< "${serve_load:-$build/bench/serve_load}"
  runnable "${steno_cmd[0]}" || fail "${steno_cmd[0]} is not built (cmake --build $build --target steno)"
  runnable "${client_cmd[0]}" || fail "${client_cmd[0]} is not built (cmake --build $build --target serve_load)"
  command -v python3 >/dev/null || fail "python3 is not installed"
}

runnable() { [ -x "$1" ] || command -v "$1" >/dev/null 2>&1; }

# sweep_estimate_s POINTS: about how long POINTS points of warmup_s + duration_s take, the drain included.
sweep_estimate_s() {
  awk -v n="$1" -v w="$warmup_s" -v d="$duration_s" 'BEGIN { print int(n * (w + d + 1)) }'
}

# ---- the machine ---------------------------------------------------------------------------------------------------

# raise_nofile: the soft RLIMIT_NOFILE raised to the hard one (one descriptor per connection, in the server and in
# the client); soft_before and nofile, the soft limit before and after.
raise_nofile() {
  soft_before=$(ulimit -Sn)
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  nofile=$(ulimit -Sn)
}

# require_nofile NEEDED WHAT: fails unless nofile is at least NEEDED, saying it is too low for WHAT.
require_nofile() {
  if [ "$nofile" != unlimited ] && [ "$nofile" -lt "$1" ]; then
    fail "RLIMIT_NOFILE is $nofile even at the hard limit: too low for $2"
  fi
}

# record_load_before: load_before (/proc/loadavg) and uptime_before, the latter also said on stdout.
record_load_before() {
  load_before=$(cat /proc/loadavg)
  uptime_before=$(uptime)
  echo "$script: before: $uptime_before"
}

# record_load_after: load_after and uptime_after, once the server stopped.
record_load_after() {
  load_after=$(cat /proc/loadavg)
  uptime_after=$(uptime)
}

# git_commit: HEAD's short hash, "+uncommitted" when the tree differs from it ("unknown" outside git).
git_commit() {
  local commit
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  git diff --quiet HEAD 2>/dev/null || commit="$commit+uncommitted"
  echo "$commit"
}

# ---- the server ----------------------------------------------------------------------------------------------------

# make_work_dir: work (a temporary directory) and log (the server's log in it); on exit the background jobs (the
# server, the GPU sampler) are stopped and work removed.
make_work_dir() {
  work=$(mktemp -d)
  log=$work/server.log
  pid=
  smi=
  trap 'stop_background; rm -rf "$work"' EXIT
}

stop_background() {
  stop_sampler
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; fi
}

# stop_job PID: the background job PID killed and waited for.
stop_job() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# start_server SECONDS COMMAND...: `steno serve --port 0 ...` started in the background, without STENO_MODEL and
# STENO_API_KEY, its output in log; pid, and port, read from its log; fails when it exits first or prints no port
# within SECONDS.
start_server() {
  local seconds=$1
  shift
  env -u STENO_MODEL -u STENO_API_KEY "$@" >"$log" 2>&1 &
  pid=$!
  port=
  for _ in $(seq $((seconds * 10))); do
    port=$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$log" | head -n 1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "steno serve exited before it listened"; }
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$log" >&2; fail "steno serve did not print its port within $seconds s"; }
}

# wait_ready SECONDS [PROBE...]: waits until PROBE (by default GET /v2/health/ready with http_get) succeeds, trying
# every 0.1 s; fails when the server exits first or SECONDS pass.
wait_ready() {
  local seconds=$1 ready=
  shift
  [ $# -gt 0 ] || set -- http_get /v2/health/ready
  for _ in $(seq $((seconds * 10))); do
    if "$@" >/dev/null 2>&1; then ready=1; break; fi
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "steno serve exited before it was ready"; }
    sleep 0.1
  done
  [ -n "$ready" ] || { cat "$log" >&2; fail "/v2/health/ready did not answer 200 within $seconds s"; }
  echo "$script: steno serve (pid $pid) ready on 127.0.0.1:$port"
}

# http_get PATH: the body of GET PATH on the server; fails unless it answers 200 within 5 s. curl if present, else
# bash's /dev/tcp.
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

# serve_sweep: seed_load.sh's and mix_load.sh's server: server_cmd = `STENO serve --host 127.0.0.1 --port 0
# STENO_SERVE_ARGS` (serve_args) started (180 s to listen: a GPU server loads its model first) and ready (120 s);
# /v1/models and the first model's /v2/models/NAME/config into work (models.json, model_config.json) where it answers.
serve_sweep() {
  server_cmd=("${steno_cmd[@]}" serve --host 127.0.0.1 --port 0 "${serve_args[@]}")
  start_server 180 "${server_cmd[@]}"
  wait_ready 120
  http_get /v1/models >"$work/models.json" 2>/dev/null || true
  local model
  model=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["data"][0]["id"])' "$work/models.json" \
          2>/dev/null || true)
  if [ -n "$model" ]; then http_get "/v2/models/$model/config" >"$work/model_config.json" 2>/dev/null || true; fi
}

# client_finished RC FILE [LOG_LINES]: after serve_load exited with RC: load_between, the exit code and uptime on
# stdout; fails when it wrote no FILE, showing the server's log (its last LOG_LINES lines, or all of it).
client_finished() {
  load_between=$(cat /proc/loadavg)
  echo "$script: serve_load exit code $1; $(uptime)"
  [ -s "$2" ] && return
  if [ $# -ge 3 ]; then tail -n "$3" "$log" >&2; else cat "$log" >&2; fi
  fail "serve_load wrote no result (exit code $1)"
}

# stop_server: SIGTERM to the server, waited for: server_rc (its exit status) and stop_s (how long it took), said on
# stdout.
stop_server() {
  local stop_start
  stop_start=$(date +%s.%N)
  kill -TERM "$pid"
  server_rc=0
  wait "$pid" || server_rc=$?
  pid=
  stop_s=$(awk -v a="$stop_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
  echo "$script: steno serve exited with $server_rc after SIGTERM ($stop_s s)"
}

# report_pass: fails unless the server exited 0 on SIGTERM, else says PASS (the script's last step).
report_pass() {
  [ "$server_rc" -eq 0 ] || fail "steno serve exited with $server_rc after SIGTERM"
  echo "$script: PASS"
}

# ---- the GPUs ------------------------------------------------------------------------------------------------------

# start_gpu_sampling: where nvidia-smi exists, the GPUs (name, driver, memory, SM clock and power limits, CUDA
# version) into work/gpu_machine.txt, then a sample every 100 ms (utilization, SM clock, memory, power) into
# work/gpu_samples.csv from the background job smi. Only the GPUs CUDA_VISIBLE_DEVICES names when it is set (an
# ordinal list or UUIDs, which nvidia-smi -i takes too): another run may be busy on the host's other GPUs.
start_gpu_sampling() {
  command -v nvidia-smi >/dev/null || return 0
  smi_only=()
  [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && smi_only=(-i "$CUDA_VISIBLE_DEVICES")
  nvidia-smi "${smi_only[@]}" --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv \
    >"$work/gpu_machine.txt" 2>&1 || true
  nvidia-smi 2>&1 | grep -m1 'CUDA Version' >>"$work/gpu_machine.txt" || true
  nvidia-smi "${smi_only[@]}" --query-gpu=timestamp,index,utilization.gpu,clocks.sm,memory.used,power.draw \
    --format=csv,noheader,nounits -lms 100 >"$work/gpu_samples.csv" 2>/dev/null &
  smi=$!
}

# stop_gpu_sampling: the processes on the GPUs into work/gpu_processes.csv, then the sampling stopped.
stop_gpu_sampling() {
  [ -n "$smi" ] || return 0
  nvidia-smi "${smi_only[@]}" --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits \
    >"$work/gpu_processes.csv" 2>/dev/null || true
  stop_sampler
}

stop_sampler() {
  if [ -n "$smi" ]; then stop_job "$smi"; smi=; fi
}

# ---- seed_load.sh's and mix_load.sh's sweep and result -------------------------------------------------------------

# run_sweep: sweep_cmd (serve_load --closed-loop or --open-loop, --out work/sweep.json) run with the GPUs sampled
# meanwhile; sweep_rc, its exit status; fails when it wrote no result.
run_sweep() {
  start_gpu_sampling
  sweep_rc=0
  "${sweep_cmd[@]}" >"$work/sweep.stdout" || sweep_rc=$?
  stop_gpu_sampling
  client_finished "$sweep_rc" "$work/sweep.json" 50
}

# export_result_env: what every load script's result holds, in the environment of its Python (LOAD_*): commit,
# machine, load averages, the server and how it stopped, the script's command line.
export_result_env() {
  export LOAD_WORK=$work LOAD_OUT=$out LOAD_COMMIT=$commit LOAD_NOTE=$note LOAD_PORT=$port \
    LOAD_SERVER_CMD="${server_cmd[*]}" LOAD_SERVER_RC=$server_rc LOAD_STOP_S=$stop_s LOAD_NOFILE=$nofile \
    LOAD_NOFILE_BEFORE=$soft_before LOAD_AVG_BEFORE=$load_before LOAD_AVG_BETWEEN=$load_between \
    LOAD_AVG_AFTER=$load_after LOAD_UPTIME_BEFORE=$uptime_before LOAD_UPTIME_AFTER=$uptime_after \
    LOAD_SCRIPT="bench/$script$args"
}

# prepare_sweep_result: OUT's directory made; commit (STENO_COMMIT if set: the device machine's copy of .git can be
# older than its tree; else git's) and the result's environment, the sweep's command and exit status included.
prepare_sweep_result() {
  mkdir -p "$(dirname "$out")"
  commit=${STENO_COMMIT:-$(git_commit)}
  export_result_env
  export LOAD_SWEEP_CMD="${sweep_cmd[*]}" LOAD_SWEEP_RC=$sweep_rc
}

# sweep_verdict: fails when serve_load did (a request failed or answered another text) or the server did not exit 0
# on SIGTERM; else PASS.
sweep_verdict() {
  [ "$sweep_rc" -eq 0 ] || fail "serve_load: requests failed or answered another text (exit code $sweep_rc); see $out"
  report_pass
}

# ---- the result file's Python (standard library only) --------------------------------------------------------------

# run_result_python HELPERS...: python3 runs the HELPERS' code (py_result_helpers, py_sweep_helpers), then the
# script's own from stdin.
run_result_python() {
  local helpers
  { for helpers in "$@"; do "$helpers"; done; cat; } | python3 -
}

# py_result_helpers: every result's parts: the opening fields, the machine, the load averages, the server.
py_result_helpers() {
  cat <<'PY'
import json, os, platform, socket

e = os.environ
work = e["LOAD_WORK"]

def path(name):
    return os.path.join(work, name)

def read_json(name):
    try:
        return json.load(open(path(name)))
    except Exception:
        return None

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

def run_fields(what, date_utc):
    """The result's opening fields: what ran, when, the script's command line, the commit."""
    return {"what": what, "date_utc": date_utc, "command": e["LOAD_SCRIPT"].strip(), "commit": e["LOAD_COMMIT"]}

def machine(**extra):
    """Host, CPU, cores, kernel, then `extra` (the GPUs), the note and the file descriptor limits."""
    return dict({"host": socket.gethostname(), "cpu": cpu_model(), "cores": os.cpu_count(),
                 "kernel": platform.release()}, **extra, note=e["LOAD_NOTE"],
                rlimit_nofile={"soft_before": num(e["LOAD_NOFILE_BEFORE"]), "soft": num(e["LOAD_NOFILE"])})

def load_average(between):
    """/proc/loadavg before, after the load run (as `between`) and after the server stopped; uptime before and after."""
    return {"before": loadavg(e["LOAD_AVG_BEFORE"]), between: loadavg(e["LOAD_AVG_BETWEEN"]),
            "after": loadavg(e["LOAD_AVG_AFTER"]),
            "uptime_before": e["LOAD_UPTIME_BEFORE"].strip(), "uptime_after": e["LOAD_UPTIME_AFTER"].strip()}

def model_config():
    config = read_json("model_config.json")
    return {k: config.get(k) for k in ("name", "dynamic_batching", "instance_group", "parameters")} \
        if isinstance(config, dict) else None

def server_log(keep=None):
    """The server's log lines; past `keep` lines, the first and last keep / 2 only."""
    lines = open(path("server.log"), errors="replace").read().splitlines()
    if keep is None or len(lines) <= keep:
        return lines
    return lines[:keep // 2] + ["... (%d lines left out) ..." % (len(lines) - keep)] + lines[-(keep // 2):]

def server(log, **extra):
    """The server's command and port, `extra`, its model's configuration, how it stopped on SIGTERM, `log`."""
    return dict({"command": e["LOAD_SERVER_CMD"], "port": int(e["LOAD_PORT"])}, **extra,
                model_config=model_config(), sigterm_exit_code=int(e["LOAD_SERVER_RC"]),
                sigterm_stop_s=float(e["LOAD_STOP_S"]), log=log)
PY
}

# py_sweep_helpers: seed_load.sh's and mix_load.sh's result: the GPUs and their samples per point, the whole result,
# and writing it.
py_sweep_helpers() {
  cat <<'PY'
import datetime

def gpu_machine():
    if not os.path.exists(path("gpu_machine.txt")):
        return None
    return open(path("gpu_machine.txt"), errors="replace").read().strip().splitlines()

def gpu_samples(points, point_key):
    """nvidia-smi's 100 ms samples, summed up per point's window (named by its `point_key`) and per GPU."""
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
        per_point.append({point_key: p[point_key], "gpus": summary})
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

def sweep_result(sweep, what, point_key, **extra):
    """The result: opening fields, headline, machine, load averages, `extra` (the clip), the server (its log cut to
    200 lines), the GPU samples per point and serve_load's result with its command line and exit status."""
    return dict(run_fields(what, sweep.get("date_utc")), headline=sweep.get("headline"),
                machine=machine(gpu=gpu_machine()), load_average=load_average("after_sweep"), **extra,
                server=server(server_log(200)), gpu_samples=gpu_samples(sweep.get("points", []), point_key),
                sweep=dict(sweep, client_command=e["LOAD_SWEEP_CMD"], exit_code=int(e["LOAD_SWEEP_RC"])))

def write_sweep_result(result):
    """OUT, with per-request rows one to a line: a sweep holds tens of thousands."""
    rows = []
    for p in result["sweep"].get("points", []):
        rows.append(p.get("per_request", []))
        p["per_request"] = "@ROWS%d@" % (len(rows) - 1)
    text = json.dumps(result, indent=2)
    for i, r in enumerate(rows):
        body = ",\n          ".join(json.dumps(x, separators=(", ", ": ")) for x in r)
        text = text.replace('"@ROWS%d@"' % i, "[\n          " + body + "\n        ]" if r else "[]")
    with open(e["LOAD_OUT"], "w") as f:
        f.write(text + "\n")
PY
}
