#!/usr/bin/env bash
# CTest's openai_node_client (tests/serve/openai_node/CMakeLists.txt):
#   run_test.sh STENO_BINARY SOURCE_DIR WORK_DIR TESTSET_DIR DIAR_TESTSET_DIR DIARIZER_DIR
# 1. installs the openai npm package pinned by package-lock.json into WORK_DIR (in the build tree) with `npm ci`,
#    skipped while WORK_DIR/node_modules was installed from these package.json/package-lock.json;
# 2. starts the real `steno serve` on a free loopback port (--port 0) with the bundled model and the bundled
#    diarizer (for diarized_json), waits for /v2/health/ready;
# 3. runs transcriptions.test.mjs (copied next to node_modules, where `import 'openai'` resolves) with `node --test`;
# 4. stops the server with SIGTERM and checks that it exits 0.
# Node.js >= 20 and npm are required (openai v6 supports Node.js 20 and later): without them the test fails.
set -euo pipefail
[ $# -eq 6 ] ||
  { echo "usage: $0 STENO_BINARY SOURCE_DIR WORK_DIR TESTSET_DIR DIAR_TESTSET_DIR DIARIZER_DIR" >&2; exit 2; }
steno=$1 src=$2 work=$3 testset=$4 diar_testset=$5 diarizer=$6

fail() { echo "openai_node_client: FAIL: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

command -v node >/dev/null ||
  fail "node is not installed. This test drives steno with the openai npm package, which needs Node.js 20 or later" \
       "(Debian bookworm's nodejs package is 18, which it does not support: install Node.js 20+, e.g. NodeSource's)"
command -v npm >/dev/null || fail "npm is not installed (it comes with Node.js 20+); it installs the openai package"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] ||
  fail "Node.js $(node --version) is too old: the openai npm package v6 supports Node.js 20 and later"
command -v curl >/dev/null || fail "curl is not installed (scripts/install-deps.sh installs it)"
[ -x "$steno" ] || fail "$steno is not an executable (build the steno target)"

# 1. The pinned openai package. npm ci empties node_modules first, so the stamp exists only after a complete install.
start=$(now)
mkdir -p "$work"
cp "$src/package.json" "$src/package-lock.json" "$src/transcriptions.test.mjs" "$work/"
stamp="$work/node_modules/.steno-installed-from"
want=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" = "$want" ]; then
  echo "openai_node_client: node_modules matches package-lock.json; npm ci skipped"
else
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error) ||
    fail "npm ci failed in $work (is the npm registry reachable?)"
  echo "$want" >"$stamp"
  echo "openai_node_client: npm ci: $(since "$start") ($(node -p 'require("'"$work"'/node_modules/openai/package.json").version' 2>/dev/null || echo '?'))"
fi

# 2. The real server: loopback, any free port, the bundled model (no --model; $STENO_MODEL would override it) and
#    the bundled diarizer beside it.
start=$(now)
log="$work/server.log"
env -u STENO_MODEL -u STENO_API_KEY "$steno" serve --host 127.0.0.1 --port 0 \
  --diarizer "$diarizer" >"$log" 2>&1 &
pid=$!
stop_server() {
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
}
trap stop_server EXIT
show_log() { echo "--- steno serve's log ($log):" >&2; cat "$log" >&2; }

source "$src/../wait_for_serve.sh"
wait_for_serve "$log" "$pid"
echo "openai_node_client: steno serve ready on 127.0.0.1:$port after $(since "$start")"

# 3. The Node test, against the server.
start=$(now)
node_rc=0
STENO_BASE_URL="http://127.0.0.1:$port/v1" STENO_TESTSET="$testset" STENO_DIAR_TESTSET="$diar_testset" \
  node --test --test-reporter=spec "$work/transcriptions.test.mjs" || node_rc=$?
echo "openai_node_client: node --test: $(since "$start"), exit code $node_rc"

# 4. SIGTERM: the server drains and exits 0.
kill -TERM "$pid" 2>/dev/null || true
server_rc=0
wait "$pid" || server_rc=$?
trap - EXIT
if [ "$server_rc" -ne 0 ] || ! grep -q 'SIGTERM received' "$log" || ! grep -q 'steno: stopped' "$log"; then
  show_log
  fail "steno serve did not stop cleanly on SIGTERM (exit code $server_rc)"
fi
[ "$node_rc" -eq 0 ] || { show_log; fail "the openai client tests failed (node --test exit code $node_rc)"; }
echo "openai_node_client: passed; steno serve exited 0 on SIGTERM"
