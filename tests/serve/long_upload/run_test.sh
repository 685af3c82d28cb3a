#!/usr/bin/env bash
# CTest's long_conversation_upload (tests/serve/long_upload/CMakeLists.txt), and the recorded one-hour run:
#   run_test.sh STENO_BINARY SOURCE_DIR PYTHON SECONDS MAX_PEAK_MB [RESULT_JSON]
# 1. makes a SECONDS-long synthetic two-speaker conversation (bench/make_long_conversation.py, espeak-ng voices)
#    as 16 kHz WAV, at test time (nothing large is committed);
# 2. starts the real `steno serve` (bundled model and diarizer) on a free loopback port with small upload limits:
#    --upload-buffer-mb 4 (so the upload spills to a temporary file), --max-upload-mb SECONDS/30+64,
#    --max-audio-seconds SECONDS+60, --long-audio-seconds 300 (the conversation runs in the long-form modes);
# 3. refusals, each a clear 413 naming the limit and its option, the server serving the next request: a body over
#    --max-upload-mb, and audio over --max-audio-seconds (silence, its header stating its length); then 20 s of
#    digital silence: no speaker, no word; a file corrupt in its middle: a clear 400;
# 4. uploads the conversation with response_format=diarized_json: the answer must hold words and speaker segments
#    of at least two speakers; the upload's temporary file must be gone once answered (no open file left); then
#    streamed (stream=true): the events are the transcript; a client leaving after the first event cancels the
#    rest (at most 4 pieces ran); a client that stops reading holds no other request up;
# 5. checks the server's peak memory (VmHWM of /proc/PID/status) under MAX_PEAK_MB; writes RESULT_JSON when given.
set -euo pipefail
[ $# -ge 5 ] || { echo "usage: $0 STENO_BINARY SOURCE_DIR PYTHON SECONDS MAX_PEAK_MB [RESULT_JSON]" >&2; exit 2; }
steno=$1 src=$2 python=$3 seconds=$4 max_peak_mb=$5 result=${6:-}

fail() { echo "long_conversation_upload: FAIL: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
command -v curl >/dev/null || fail "curl is not installed"
command -v espeak-ng >/dev/null || fail "espeak-ng is not installed (the conversation's voices)"
[ -x "$steno" ] || fail "$steno is not an executable (build the steno target)"

work=$(mktemp -d "${TMPDIR:-/tmp}/steno-long-upload.XXXXXX")
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# 1. The conversation.
start=$(now)
"$python" "$src/bench/make_long_conversation.py" "$seconds" "$work/conv.wav" "$work/conv.rttm" --speakers 2 >/dev/null ||
  fail "bench/make_long_conversation.py failed"
gen_s=$(since "$start")
wav_bytes=$(stat -c %s "$work/conv.wav")
echo "long_conversation_upload: ${seconds} s conversation, $wav_bytes bytes, made in $gen_s s"

# 2. The server.
max_upload_mb=$(( seconds / 30 + 64 ))
max_audio=$(( seconds + 60 ))
mkdir "$work/spool"
log="$work/server.log"
env -u STENO_MODEL -u STENO_API_KEY "$steno" serve --host 127.0.0.1 --port 0 --diarizer "$src/models/steno-sortformer-small" \
  --upload-buffer-mb 4 --upload-dir "$work/spool" --max-upload-mb "$max_upload_mb" --max-audio-seconds "$max_audio" \
  --long-audio-seconds 300 >"$log" 2>&1 &
pid=$!
show_log() { echo "--- steno serve's log:" >&2; tail -n 40 "$log" >&2; }
source "$src/tests/serve/wait_for_serve.sh"
wait_for_serve "$log" "$pid"
url="http://127.0.0.1:$port/v1/audio/transcriptions"
short="$src/tests/data/diar-testset/conv00.flac"

# One short transcription: the server answers it with words.
expect_words() {
  local out
  out=$(curl -sS -F "file=@$short" "$url") || fail "the short request failed ($1)"
  echo "$out" | grep -q '"text":"[a-z]' || { show_log; fail "the short request after $1 got no words: $out"; }
}
expect_words "start-up"
baseline_kb=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")

# 3a. A body over --max-upload-mb (random bytes: refused from its Content-Length before it is sent).
head -c $(( (max_upload_mb + 1) * 1024 * 1024 )) /dev/zero >"$work/big.bin"
code=$(curl -sS -o "$work/big.out" -w '%{http_code}' -F "file=@$work/big.bin" "$url")
[ "$code" = 413 ] || fail "an upload over --max-upload-mb got $code, not 413: $(cat "$work/big.out")"
grep -q "max-upload-mb" "$work/big.out" || fail "the 413 does not name --max-upload-mb: $(cat "$work/big.out")"
grep -q "exceeds the limit of $max_upload_mb MiB" "$work/big.out" || fail "the 413 does not state the limit: $(cat "$work/big.out")"
rm -f "$work/big.bin"
expect_words "the size refusal"

# 3b. Audio over --max-audio-seconds: silence whose WAV header states its length.
"$python" - "$work/long.wav" $(( max_audio + 30 )) <<'EOF'
import sys, wave
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(8000)
    w.writeframes(b"\0\0" * 8000 * int(sys.argv[2]))
EOF
code=$(curl -sS -o "$work/long.out" -w '%{http_code}' -F "file=@$work/long.wav" "$url")
[ "$code" = 413 ] || fail "audio over --max-audio-seconds got $code, not 413: $(cat "$work/long.out")"
grep -q "max-audio-seconds" "$work/long.out" || fail "the 413 does not name --max-audio-seconds: $(cat "$work/long.out")"
expect_words "the duration refusal"

# 3c. No speech: 20 s of digital silence has no speaker and no word (the server's VAD is on by default: the
# diarizer's answer is kept to speech and a silent piece is not transcribed; --vad off gives the models' own).
"$python" - "$work/silence.wav" <<'EOF'
import sys, wave
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
    w.writeframes(b"\0\0" * 16000 * 20)
EOF
out=$(curl -sS -F "file=@$work/silence.wav" "http://127.0.0.1:$port/v1/audio/diarizations")
[ "$out" = '{"duration":20.0,"speakers":[],"segments":[]}' ] || fail "silence was diarized as $out"
out=$(curl -sS -F "file=@$work/silence.wav" -F response_format=diarized_json "$url")
echo "$out" | grep -q '"segments":\[\]' && echo "$out" | grep -q '"text":""' ||
  fail "silence was transcribed with speakers as $out"
expect_words "silence"

# 3d. A file corrupt in the middle (4 KiB of a FLAC's frames overwritten): a clear 400 saying where decoding
# stopped, and the server serves the next request.
"$python" - "$short" "$work/corrupt.flac" <<'EOF'
import random, sys
b = bytearray(open(sys.argv[1], "rb").read())
r = random.Random(3)
for i in range(len(b) // 2, len(b) // 2 + 4096):
    b[i] = r.randrange(256)
open(sys.argv[2], "wb").write(bytes(b))
EOF
code=$(curl -sS -o "$work/corrupt.out" -w '%{http_code}' -F "file=@$work/corrupt.flac" "$url")
[ "$code" = 400 ] && grep -q "corrupt FLAC data: decoding failed after" "$work/corrupt.out" ||
  fail "a corrupt file got $code: $(cat "$work/corrupt.out")"
expect_words "the corrupt file"

# 4. The conversation, who said what.
start=$(now)
code=$(curl -sS -o "$work/answer.json" -w '%{http_code}' -F "file=@$work/conv.wav" -F response_format=diarized_json "$url")
request_s=$(since "$start")
[ "$code" = 200 ] || { show_log; fail "the conversation got $code: $(head -c 500 "$work/answer.json")"; }
read -r words segments speakers < <("$python" - "$work/answer.json" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))
print(len(a["text"].split()), len(a["segments"]), len({s["speaker"] for s in a["segments"]}))
EOF
)
echo "long_conversation_upload: answered in $request_s s: $words words, $segments turns, $speakers speakers"
[ "$words" -ge $(( seconds / 2 )) ] || fail "only $words words for $seconds s of conversation"
[ "$speakers" -ge 2 ] || fail "$speakers speaker(s) in a two-speaker conversation"
if ls -l "/proc/$pid/fd" 2>/dev/null | grep -q "$work/spool"; then fail "the upload's temporary file is still open"; fi
[ -z "$(ls -A "$work/spool")" ] || fail "the spool directory is not empty: $(ls -A "$work/spool")"
expect_words "the conversation"

# 4b. Streamed (stream=true): the words arrive as the pieces finish; the deltas joined and the closing
# transcript.text.done are the transcript the conversation got above.
model=$(curl -sS "http://127.0.0.1:$port/v1/models" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
curl -sSN -F "file=@$work/conv.wav" -F stream=true "$url" >"$work/events.txt" || fail "the streamed request failed"
"$python" - "$work/events.txt" "$work/answer.json" <<'EOF' || fail "the event stream is not the transcript"
import json, sys
events = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: ")]
text = json.load(open(sys.argv[2]))["text"]
assert events and events[-1]["type"] == "transcript.text.done", events[-1:]
deltas = "".join(e["delta"] for e in events if e["type"] == "transcript.text.delta")
assert deltas == events[-1]["text"] == text, (deltas[:200], events[-1]["text"][:200], text[:200])
print(f"long_conversation_upload: streamed {len(events) - 1} word events, then the text")
EOF

# 4c. A client that goes away after the first words cancels the rest: of the conversation's pieces only those
# under way then run (one at a time on a CPU lane).
inferences() {
  curl -sS "http://127.0.0.1:$port/v2/models/$model/stats" |
    "$python" -c 'import json,sys; print(json.load(sys.stdin)["model_stats"][0]["inference_count"])'
}
cancelled() {
  curl -sS "http://127.0.0.1:$port/metrics" | awk '/^nv_inference_request_failure\{.*reason="CANCELED"/ {n += $2} END {print n + 0}'
}
before=$(inferences)
cancelled_before=$(cancelled)
curl -sSN -F "file=@$work/conv.wav" -F stream=true "$url" 2>/dev/null | head -n 1 >"$work/first.txt" || true
grep -q transcript.text.delta "$work/first.txt" || fail "no first event before the client left: $(cat "$work/first.txt")"
for _ in $(seq 100); do [ "$(cancelled)" -gt "$cancelled_before" ] && break; sleep 0.1; done
[ "$(cancelled)" -gt "$cancelled_before" ] || { show_log; fail "the request of a client that went away was not cancelled"; }
ran=$(( $(inferences) - before ))
echo "long_conversation_upload: the client left after its first words; $ran piece(s) ran, then the request was cancelled"
[ "$ran" -le 4 ] || fail "$ran pieces ran after the client left after the first"

# 4d. A client that stops reading its stream holds nothing up: other requests are answered meanwhile.
"$python" - "$port" "$work/conv.wav" <<'EOF' &
import socket, sys, time
port, path = int(sys.argv[1]), sys.argv[2]
b = "steno-boundary"
body = (f'--{b}\r\nContent-Disposition: form-data; name="stream"\r\n\r\ntrue\r\n'
        f'--{b}\r\nContent-Disposition: form-data; name="file"; filename="conv.wav"\r\n'
        f'Content-Type: audio/wav\r\n\r\n').encode() + open(path, "rb").read() + f'\r\n--{b}--\r\n'.encode()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
s.sendall(f"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary={b}\r\n"
          f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
time.sleep(8)  # never reads
s.close()
EOF
stalled=$!
sleep 1
expect_words "a client that stopped reading its stream"
wait "$stalled" || fail "the non-reading client failed"
expect_words "the non-reading client's departure"

# 5. Peak memory.
peak_kb=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
peak_mb=$(( peak_kb / 1024 ))
echo "long_conversation_upload: server peak memory (VmHWM) $peak_mb MiB (after start-up and a short request: $(( baseline_kb / 1024 )) MiB); limit $max_peak_mb MiB"
[ "$peak_mb" -lt "$max_peak_mb" ] || { show_log; fail "peak memory $peak_mb MiB is not under $max_peak_mb MiB"; }
if [ -n "$result" ]; then
  cat >"$result" <<EOF
{"test": "long_conversation_upload", "audio_seconds": $seconds, "wav_bytes": $wav_bytes, "request_seconds": $request_s,
 "words": $words, "turns": $segments, "speakers": $speakers,
 "peak_rss_mib": $peak_mb, "baseline_peak_rss_mib": $(( baseline_kb / 1024 )), "limit_mib": $max_peak_mb,
 "server": "steno serve --diarizer models/steno-sortformer-small --upload-buffer-mb 4 --max-upload-mb $max_upload_mb --max-audio-seconds $max_audio --long-audio-seconds 300",
 "request": "curl -F file=@conv.wav -F response_format=diarized_json /v1/audio/transcriptions",
 "machine": "$(nproc) CPU threads, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"}
EOF
fi
kill -TERM "$pid"
wait "$pid" || fail "steno serve exited with status $? after SIGTERM"
pid=
echo "long_conversation_upload: PASS"
