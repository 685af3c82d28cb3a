#!/usr/bin/env bash
# CTest's deploy_manifests (tests/deploy/CMakeLists.txt):
#   run_test.sh STENO_BINARY SOURCE_DIR WORK_DIR TESTSET_DIR
# 1. renders deploy/base and every deploy/overlays/* with `kubectl kustomize`, plus two overlays written by
#    `steno plan --emit k8s` now: the case study's (which must equal the committed deploy/overlays/case-study)
#    and another traffic's;
# 2. validates every rendered object against its schema and checks what steno needs of it (check_manifests.mjs,
#    with the npm packages pinned by package-lock.json, installed into WORK_DIR by `npm ci`);
# 3. starts the real `steno serve` with each render's settings file (on 127.0.0.1, the CPU), asks it the probes'
#    routes, and stops it with SIGTERM, which must drain and exit 0;
# 4. with the CPU overlay's settings, sends a few real transcriptions, has Debian's Prometheus scrape /metrics as
#    the PodMonitor does (bearer key), and runs every autoscaler's query through Prometheus's HTTP API: each must
#    return exactly one number.
# Needs kubectl (kustomize v4 or later), Node.js >= 20 and npm, prometheus, curl, xz and python3: without one the
# test fails, naming it.
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 STENO_BINARY SOURCE_DIR WORK_DIR TESTSET_DIR" >&2; exit 2; }
steno=$1 src=$2 work=$3 testset=$4
here="$src/tests/deploy"

fail() { echo "deploy_manifests: FAIL: $*" >&2; exit 1; }
say() { echo "deploy_manifests: $*"; }

# --- tools -------------------------------------------------------------------------------------------------------
command -v kubectl >/dev/null ||
  fail "kubectl is not installed: it renders deploy/ (kubectl kustomize). Debian 12's kubernetes-client (1.20) is" \
       "too old (kustomize v2); kubectl 1.21 or later is needed"
kustomize_version=$(kubectl version --client 2>/dev/null | sed -n 's/^Kustomize Version: v\([0-9]*\).*/\1/p')
[ -n "$kustomize_version" ] && [ "$kustomize_version" -ge 4 ] ||
  fail "kubectl's kustomize is v${kustomize_version:-?} ($(kubectl version --client 2>&1 | head -1)); deploy/ needs" \
       "kustomize v4 or later (kubectl 1.21+): directories in resources, patches with targets"
command -v node >/dev/null || fail "node is not installed (Node.js 20 or later runs the schema validation)"
[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ] || fail "Node.js $(node --version) is older than 20"
command -v npm >/dev/null || fail "npm is not installed (it installs the schema packages)"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/install-deps.sh installs Debian's)"
for t in curl xz python3; do command -v "$t" >/dev/null || fail "$t is not installed (scripts/install-deps.sh)"; done
[ -x "$steno" ] || fail "$steno is not an executable (build the steno target)"

# --- the pinned schema packages (npm ci empties node_modules first: the stamp exists only after a whole install)
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$work/"
stamp="$work/node_modules/.steno-installed-from"
want=$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci failed in $work (is the npm registry reachable?)"
  echo "$want" >"$stamp"
fi

# --- 1. renders ----------------------------------------------------------------------------------------------------
rm -rf "$work/deploy" "$work/rendered" "$work/out" "$work/case-study"
cp -r "$src/deploy" "$work/deploy"

# The case study's overlay, made again from the committed result file, run from a directory where the file has
# its committed relative path (the path is part of the output): it must equal the committed one.
# (A working tree trimmed for a GPU run may lack bench/results: then the committed file is read from git.)
result=bench/results/h200-seed/h200-seed-lanes-batch.json
mkdir -p "$work/case-study/$(dirname "$result")"
if [ -f "$src/$result.xz" ]; then xz -dc "$src/$result.xz"; else git -C "$src" show "HEAD:$result.xz" | xz -dc; fi \
  >"$work/case-study/$result" || fail "cannot read $result.xz (committed with the case study's numbers)"
(cd "$work/case-study" && "$steno" plan --emit k8s --result "$result" \
  --per-week 2400000 --requests-per-item 25) >"$work/case-study/kustomization.yaml" ||
  fail "steno plan --emit k8s failed for the case study"
diff -u "$src/deploy/overlays/case-study/kustomization.yaml" "$work/case-study/kustomization.yaml" ||
  fail "deploy/overlays/case-study/kustomization.yaml is not what steno plan --emit k8s prints now: regenerate it" \
       "(docs/deployment.md)"
# Another traffic figure, so that an overlay the committed files never held is rendered and checked too.
mkdir -p "$work/deploy/overlays/plan-l40s"
"$steno" plan --emit k8s --capacity-rps 92.1 --compute-ms 229.2 --per-week 2400000 --requests-per-item 25 \
  --min-replicas 2 >"$work/deploy/overlays/plan-l40s/kustomization.yaml" || fail "steno plan --emit k8s failed"

# What each render must be. A new overlay must be added here: an unknown one fails rather than going unchecked.
declare -A profile=([base]=gpu [keda]=gpu+keda [hpa]=gpu+hpa [cpu]=cpu [gpu-sharing]=gpu-sharing
                    [kserve]=kserve+keda [case-study]=gpu+keda [plan-l40s]=gpu+keda)
mkdir -p "$work/rendered"
args=()
for dir in "$work/deploy/base" "$work/deploy/overlays"/*/; do
  name=$(basename "$dir")
  [ -n "${profile[$name]:-}" ] || fail "deploy/overlays/$name has no profile in tests/deploy/run_test.sh"
  kubectl kustomize "$dir" >"$work/rendered/$name.yaml" 2>"$work/rendered/$name.err" ||
    { cat "$work/rendered/$name.err" >&2; fail "kubectl kustomize $name failed"; }
  args+=("$name=${profile[$name]}:$work/rendered/$name.yaml")
done
say "rendered ${#args[@]} kustomizations with kustomize v$kustomize_version"

# --- 2. schemas and steno's needs ------------------------------------------------------------------------------------
node "$here/check_manifests.mjs" "$work" "$work/out" "${args[@]}" || fail "the rendered manifests do not pass (above)"
facts="$work/out/facts.json"
fact() { node -e "const f=require('$facts'); $1"; }

# --- 3. each render's settings, served ---------------------------------------------------------------------------------
key=deploy-test-key
log= pid=
show_log() { [ -n "$log" ] && { echo "--- steno serve's log ($log):" >&2; cat "$log" >&2; }; }
stop_server() { [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && kill -TERM "$pid" 2>/dev/null && wait "$pid" || true; }
prom_pid=
cleanup() { stop_server; [ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null || true; }
trap cleanup EXIT
source "$src/tests/serve/wait_for_serve.sh"

# start_steno CONFIG [FLAGS...]: the settings file as the pod gets it; only where it listens is changed (loopback,
# free ports), plus what a GPU setting needs to run on this CPU.
start_steno() {
  local config=$1; shift
  log="$work/out/serve-$(basename "$config" .json).log"
  STENO_API_KEY=$key "$steno" serve --config "$config" --host 127.0.0.1 --port 0 --grpc-port 0 "$@" >"$log" 2>&1 &
  pid=$!
  wait_for_serve "$log" "$pid"
}
stop_steno() {
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  pid=
  [ "$rc" -eq 0 ] && grep -q 'steno: stopped' "$log" || { show_log; fail "steno serve did not drain and exit 0 on SIGTERM (exit $rc)"; }
}

declare -A served=()
for name in $(fact "console.log(f.renders.join(' '))"); do
  config="$work/out/configs/$name.json"
  sum=$(sha256sum <"$config" | cut -d' ' -f1)
  [ -n "${served[$sum]:-}" ] && { say "$name: same settings as ${served[$sum]}"; continue; }
  served[$sum]=$name
  device=$(node -p "require('$config').device")
  flags=()
  [ "$device" = cpu ] || flags=(--device cpu --dtype f32)  # no GPU here: the same settings on the CPU
  start_steno "$config" "${flags[@]}"
  for route in $(fact "console.log([...new Set(f.probes.filter(p => p.render === '$name').map(p => p.path))].join(' '))"); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port$route")
    [ "$code" = 200 ] || { show_log; fail "$name: probe route $route answered $code"; }
  done
  stop_steno
  say "$name: steno serve started with its steno.json${flags:+ (${flags[*]})}, probes answered 200, SIGTERM drained"
done

# --- 4. the queries against a real scrape ------------------------------------------------------------------------------
start_steno "$work/out/configs/cpu.json"
metrics=$(curl -s -H "Authorization: Bearer $key" "http://127.0.0.1:$port/metrics")
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/metrics")
[ "$code" = 401 ] || fail "/metrics answered $code without the key: the PodMonitor's bearer token would not matter"
for m in $(fact "console.log(f.metrics.join(' '))"); do
  grep -q "^# TYPE $m counter$" <<<"$metrics" || fail "the queries use $m, which steno's /metrics has not as a counter"
done

echo -n "$key" >"$work/out/api-key"
prom_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/out/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  # As the PodMonitor has it: job "steno", /metrics on the HTTP port, the API key as a bearer token.
  - job_name: steno
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials_file: $work/out/api-key
    static_configs:
      - targets: ["127.0.0.1:$port"]
EOF
prometheus --config.file="$work/out/prometheus.yml" --storage.tsdb.path="$work/out/prometheus-data" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/out/prometheus.log" 2>&1 &
prom_pid=$!
api="http://127.0.0.1:$prom_port/api/v1/query"
# query EXPR: the instant query's JSON.
query() { curl -s -G --data-urlencode "query=$1" "$api"; }
up=
for _ in $(seq 300); do
  [ "$(query 'up{job="steno"}' | node -e 'const r=JSON.parse(require("fs").readFileSync(0)).data?.result; console.log(r?.[0]?.value?.[1] ?? "")' 2>/dev/null)" = 1 ] && { up=1; break; }
  kill -0 "$prom_pid" 2>/dev/null || { cat "$work/out/prometheus.log" >&2; fail "prometheus exited"; }
  sleep 0.1
done
[ -n "$up" ] || { cat "$work/out/prometheus.log" >&2; fail "prometheus did not scrape steno (up{job=\"steno\"} != 1) within 30 s"; }

# A few real transcriptions (the bundled model), so that the counters move between scrapes.
n=0
for clip in "$testset"/audio/test-000000{0,1,2,3}.flac; do
  text=$(curl -s -f -H "Authorization: Bearer $key" -F "file=@$clip" -F model=whisper-1 -F response_format=text \
    "http://127.0.0.1:$port/v1/audio/transcriptions") || { show_log; fail "transcribing $clip failed"; }
  [ -n "$text" ] || fail "an empty transcript of $clip"
  n=$((n + 1))
done
sleep 3  # three more scrapes after the requests

# Each autoscaler's query: exactly one sample, a finite number of microseconds (> 0: the requests queued for the
# batcher's delay at least; below a minute).
count=$(fact "console.log(f.queries.length)")
for i in $(seq 0 $((count - 1))); do
  q=$(fact "console.log(f.queries[$i].query)")
  who=$(fact "console.log(f.queries[$i].render + ' (' + f.queries[$i].autoscaler + ')')")
  answer=$(query "$q")
  value=$(node -e '
    const a = JSON.parse(require("fs").readFileSync(0));
    if (a.status !== "success") { console.error(`status ${a.status}: ${a.error}`); process.exit(1); }
    if (a.data.resultType !== "vector") { console.error(`resultType ${a.data.resultType}`); process.exit(1); }
    if (a.data.result.length !== 1) { console.error(`${a.data.result.length} samples, not 1`); process.exit(1); }
    const v = Number(a.data.result[0].value[1]);
    if (!Number.isFinite(v) || !(v > 0) || v > 60e6) { console.error(`value ${a.data.result[0].value[1]}`); process.exit(1); }
    console.log(v);' <<<"$answer") || fail "$who: the query returned no single number: $q -> $answer"
  say "$who: $q = $value us"
done

kill "$prom_pid"; wait "$prom_pid" 2>/dev/null || true; prom_pid=
stop_steno
say "passed: ${#args[@]} renders valid, ${#served[@]} settings files served, $count queries each one number after $n transcriptions"
