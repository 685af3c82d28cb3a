#!/usr/bin/env bash
# The soak: `steno serve` (the ASR model and, where present, a diarizer) run for a set time under a mixed load, its
# memory, descriptors, threads and queue sampled every second.
#   bench/soak.sh [--duration-s 3600] [--warmup-s 300] [--good-workers 4] [--out bench/results/cpu-soak/soak.json]
#                 [--build-dir build] [--steno CMD] [--clips DIR] [--long-clip] [--diarizer DIR|'']
#                 [--accept-differing-text] [--note TEXT] [-- STENO_SERVE_ARGS...]
# 1. the clips (unless --clips gives a directory of them): the test speech (tests/data/testset/espeak) cut and joined
#    to 1.2 s, ~4 s, ~8 s, ~25 s and ~70 s, encoded as WAV, AIFF, Opus, Ogg Vorbis and MP3 with sox, opusenc, oggenc
#    and lame; with --long-clip also ~6 min of FLAC (past --long-audio-seconds' 300 s: the long-form modes; for a
#    GPU: on a CPU each of its requests takes minutes);
# 2. starts `steno serve --host 127.0.0.1 --port 0 --read-timeout-s 5 [--diarizer DIR] STENO_SERVE_ARGS` (the
#    diarizer by default models/steno-sortformer-small where it exists; --diarizer '' for none) and waits for
#    /v2/health/ready;
# 3. bench/soak_load.py: each clip's reference answer in every form, then --duration-s of good requests (every clip,
#    every response format, OpenAI and KServe routes, the diarizer's), the bad-input matrix, cancelled clients, slow
#    uploads and stalled heads, the server sampled every second; a progress line every 10 s;
# 4. stops the server with SIGTERM and requires exit code 0;
# 5. writes OUT (soak_load.py's result with the server's command line, its exit status, the commit, the machine and
#    the tail of its log) and OUT's .svg (the samples plotted).
# Passes when no good request failed or answered another body, every bad input got its 4xx, resident memory grew
# <= 5 % from the minute after the warm-up to the last minute, descriptors and threads stayed flat, and the server
# exited 0. Exit status 1 otherwise, 2 on bad usage. Needs steno (cmake --build BUILD --target steno), python3, and
# for the clips sox, opus-tools, vorbis-tools and lame (install-deps installs them with the test tools).
#
# On the GPU machine: make the clips here (--long-clip --duration-s 0 stops after them, in bench/soak-clips-long:
# a set of its own, so that a soak here, which remakes bench/soak-clips, leaves it alone), carry them and the
# package, and there: bench/soak.sh --steno "/tmp/steno/run.sh steno" --clips bench/soak-clips-long
#   --duration-s 1800 --out "$OUT/soak.json" -- --device cuda --model DIR
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
script=soak.sh
. "$src/bench/load_common.sh"
quote_args "$@"
duration_s=3600
warmup_s=300
good_workers=4
out=bench/results/cpu-soak/soak.json
build=build
steno=
clips=
long_clip=
diarizer=default
accept=()
note=""
serve_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; serve_args=("$@"); break ;;
    -h|--help) print_usage; exit 0 ;;
    --accept-differing-text) accept=(--accept-differing-text); shift ;;
    --duration-s) duration_s=$2; shift 2 ;;
    --warmup-s) warmup_s=$2; shift 2 ;;
    --good-workers) good_workers=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --steno) steno=$2; shift 2 ;;
    --clips) clips=$2; shift 2 ;;
    --long-clip) long_clip=1; shift ;;
    --diarizer) diarizer=$2; shift 2 ;;
    --note) note=$2; shift 2 ;;
    *) usage_error "unknown argument $1 (see --help)" ;;
  esac
done
cd "$src"
[ "$diarizer" = default ] && { diarizer=; [ -d models/steno-sortformer-small ] && diarizer=models/steno-sortformer-small; }

# ---- 1. the clips --------------------------------------------------------------------------------------------------
make_clips() {
  local dir=bench/soak-clips${long_clip:+-long} tool
  for tool in sox opusenc oggenc lame; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (sox, opus-tools, vorbis-tools, lame make the clips)"
  done
  rm -rf "$dir" && mkdir -p "$dir"
  mapfile -t speech < <(ls tests/data/testset/espeak/audio/*.flac)
  join() { sox "${@:2}" -r 16000 -c 1 -b 16 "$1"; }  # FILE INPUTS...: the inputs one after another
  # NAME TOOL INPUTS...: the inputs joined into work/NAME.wav, then encoded by TOOL into the clips (cp: as WAV).
  clip() {
    local name=$1 tool=$2
    join "$work/${name%.*}.wav" "${@:3}"
    case $tool in
      cp) cp "$work/${name%.*}.wav" "$dir/$name" ;;
      sox) sox "$work/${name%.*}.wav" "$dir/$name" ;;
      opusenc) opusenc --quiet "$work/${name%.*}.wav" "$dir/$name" ;;
      oggenc) oggenc --quiet "$work/${name%.*}.wav" -o "$dir/$name" ;;
      lame) lame --quiet "$work/${name%.*}.wav" "$dir/$name" ;;
    esac
    listing+=$(printf '%s (%.1f s) ' "$name" "$(soxi -D "$work/${name%.*}.wav")")
  }
  local listing=""
  clip c01.wav cp "${speech[0]}"
  clip c03.aiff sox "${speech[@]:1:3}"
  clip c05.opus opusenc "${speech[@]:4:5}"
  clip c15.ogg oggenc "${speech[@]:9:15}"
  clip c40.mp3 lame "${speech[@]}"
  if [ -n "$long_clip" ]; then
    clip long.flac sox "${speech[@]}" "${speech[@]}" "${speech[@]}" "${speech[@]}" "${speech[@]}"
  fi
  echo "$script: clips in $dir: $listing"
  clips=$dir
}

make_work_dir
if [ -z "$clips" ]; then make_clips; fi
[ "$duration_s" = 0 ] && { echo "$script: --duration-s 0: the clips only"; exit 0; }

# ---- 2. the server -------------------------------------------------------------------------------------------------
read -r -a steno_cmd <<< "${steno:-$build/apps/steno/steno}"
runnable "${steno_cmd[0]}" || fail "${steno_cmd[0]} is not built (cmake --build $build --target steno)"
raise_nofile
record_load_before
read_timeout_s=5  # the stalled heads are answered within it
server_cmd=("${steno_cmd[@]}" serve --host 127.0.0.1 --port 0 --read-timeout-s "$read_timeout_s")
[ -n "$diarizer" ] && server_cmd+=(--diarizer "$diarizer")
server_cmd+=("${serve_args[@]}")
start_server 180 "${server_cmd[@]}"
wait_ready 120
models=$(http_get /v1/models)
# The models by task: /v2/models/NAME's platform says which is the diarizer.
asr_model= diar_model=
for m in $(python3 -c 'import json, sys; print(" ".join(d["id"] for d in json.loads(sys.argv[1])["data"]))' \
           "$models"); do
  case $(http_get "/v2/models/$m") in
    *steno_sortformer*) [ -n "$diar_model" ] || diar_model=$m ;;
    *) [ -n "$asr_model" ] || asr_model=$m ;;
  esac
done
[ -n "$asr_model" ] || fail "no transcription model among the served ones: $models"
echo "$script: models: asr $asr_model, diarizer ${diar_model:-none}"

# ---- 3. the load ---------------------------------------------------------------------------------------------------
mkdir -p "$(dirname "$out")"
load_rc=0
python3 bench/soak_load.py --port "$port" --pid "$pid" --clips "$clips" --asr-model "$asr_model" \
  --diarizer-model "$diar_model" --duration-s "$duration_s" --warmup-s "$warmup_s" \
  --good-workers "$good_workers" --read-timeout-s "$read_timeout_s" "${accept[@]}" --out "$out" || load_rc=$?
[ -s "$out" ] || { tail -n 50 "$log" >&2; fail "soak_load.py wrote no result (exit code $load_rc)"; }

# ---- 4. stop, 5. the result ----------------------------------------------------------------------------------------
stop_server
record_load_after
commit=${STENO_COMMIT:-$(git_commit)}
SOAK_OUT=$out SOAK_SERVER_CMD="${server_cmd[*]}" SOAK_SERVER_RC=$server_rc SOAK_STOP_S=$stop_s SOAK_COMMIT=$commit \
SOAK_NOTE=$note SOAK_SCRIPT="bench/$script$args" SOAK_LOG=$log SOAK_LOAD_BEFORE=$load_before \
SOAK_LOAD_AFTER=$load_after python3 - <<'EOF'
import json, os, platform
out = os.environ["SOAK_OUT"]
result = json.load(open(out))
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
result = {"script": os.environ["SOAK_SCRIPT"], "commit": os.environ["SOAK_COMMIT"], "note": os.environ["SOAK_NOTE"],
          "machine": {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release()},
          "load_average": {"before": os.environ["SOAK_LOAD_BEFORE"], "after": os.environ["SOAK_LOAD_AFTER"]},
          "server": {"command": os.environ["SOAK_SERVER_CMD"], "exit_code": int(os.environ["SOAK_SERVER_RC"]),
                     "stop_s": float(os.environ["SOAK_STOP_S"]),
                     "log_tail": open(os.environ["SOAK_LOG"], errors="replace").read().splitlines()[-40:]},
          **result}
json.dump(result, open(out, "w"), indent=1)
EOF
echo "$script: result in $out and ${out%.json}.svg"
[ "$load_rc" -eq 0 ] || fail "the soak's verdict failed (see $out: verdict.reasons, first_failures)"
report_pass
