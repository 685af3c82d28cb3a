# Sourced by the shell tests that start a real `steno serve --port 0` (tests/serve/openai_node/run_test.sh,
# tests/serve/long_upload/run_test.sh). wait_for_serve LOG PID: waits until the server prints its port in LOG
# (120 s: loading models on a loaded CI machine) and /v2/health/ready answers 200 (60 s), and sets `port`; calls
# the caller's show_log and fail (which must exit) when PID exits first or a wait runs out.
wait_for_serve() {
  local log=$1 pid=$2 ready=
  port=
  for _ in $(seq 1200); do
    port=$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$log" | head -n 1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { show_log; fail "steno serve exited before it listened"; }
    sleep 0.1
  done
  [ -n "$port" ] || { show_log; fail "steno serve did not print its port within 120 s"; }
  for _ in $(seq 600); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/v2/health/ready" 2>/dev/null; then ready=1; break; fi
    kill -0 "$pid" 2>/dev/null || { show_log; fail "steno serve exited before it was ready"; }
    sleep 0.1
  done
  [ -n "$ready" ] || { show_log; fail "/v2/health/ready did not answer 200 within 60 s"; }
}
