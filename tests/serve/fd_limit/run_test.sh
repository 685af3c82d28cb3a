#!/usr/bin/env bash
# steno serve out of file descriptors: it must neither spin on accept() nor flood its log, and it must serve again
# as soon as descriptors free up. The server runs under `ulimit -n 64` (hard, so it cannot raise it); this shell
# opens 150 idle connections to it, which exhausts the server's descriptors with connections still waiting in the
# kernel's backlog, holds them for 3 s, closes them, then asks /v2/health/ready.
#   run_test.sh STENO_BINARY
set -euo pipefail
steno=$1
log=$(mktemp)
fail() { echo "FAIL: $*" >&2; echo "--- server log (last 20 lines):" >&2; tail -n 20 "$log" >&2; exit 1; }

( ulimit -n 64; exec env -u STENO_MODEL -u STENO_API_KEY "$steno" serve --host 127.0.0.1 --port 0 ) >"$log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; rm -f "$log"' EXIT
port=
for _ in $(seq 600); do
  port=$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$log" | head -n 1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || fail "steno serve did not print its port"
curl -fsS -o /dev/null "http://127.0.0.1:$port/v2/health/live" || fail "not live before the test"

fds=()
for _ in $(seq 150); do
  exec {fd}<>"/dev/tcp/127.0.0.1/$port" || fail "could not connect (this shell's own descriptor limit?)"
  fds+=("$fd")
done
cpu_before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
sleep 3
cpu_after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
warnings=$(grep -c "accept failed" "$log" || true)
for fd in "${fds[@]}"; do exec {fd}>&-; done

ticks=$(( cpu_after - cpu_before ))   # clock ticks (1/100 s) of CPU the server used while out of descriptors
echo "out of descriptors for 3 s: ${warnings} 'accept failed' log lines, ${ticks} ticks of CPU"
[ "$warnings" -ge 1 ] || fail "the server never ran out of descriptors: the test did not test anything"
[ "$warnings" -le 10 ] || fail "${warnings} 'accept failed' lines in 3 s: the log is flooded"
[ "$ticks" -le 100 ] || fail "the server used ${ticks} ticks of CPU in 3 s with nothing to do: accept() spins"

ok=
for _ in $(seq 50); do
  if curl -fsS -o /dev/null "http://127.0.0.1:$port/v2/health/ready"; then ok=1; break; fi
  sleep 0.1
done
[ -n "$ok" ] || fail "not serving again after the connections closed"
kill -TERM $pid
wait $pid || fail "steno serve exited with $? on SIGTERM"
echo "PASS"
