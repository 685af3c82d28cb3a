#!/usr/bin/env bash
# The benchmark protocol's `mix` workload (docs/benchmarks.md): clips of the mix's lengths, open loop,
# Poisson arrivals at a rate sweep.
#   bench/mix_load.sh [--build-dir build] [--out bench/results/cpu-mix.json] [--rates "1 2 5 10 20 50 100 200"]
#                     [--duration-s 30] [--warmup-s 5] [--timeout-s 60] [--sla-p99-ms 1000] [--sla-mean-ms MS]
#                     [--mix-clips 100] [--max-in-flight 2000] [--steno CMD] [--serve-load CMD] [--note TEXT]
#                     [--accept-differing-text] [-- STENO_SERVE_ARGS...]
# 1. starts `steno serve --host 127.0.0.1 --port 0 STENO_SERVE_ARGS` (the port is read from its log) and waits for
#    /v2/health/ready;
# 2. runs `serve_load --open-loop`: the clips are the mix's lengths (bench/mix_workload.h: 1,000 log-normal lengths
#    around a 5.8 s median, clipped to [1.3, 35] s, fixed seed; the lengths cuda_engine_bench's `offline` runs), the
#    first --mix-clips of them in the order drawn, cut from the espeak test clips (tests/data/testset/espeak/audio,
#    decoded and concatenated in name order) and sent as 16 kHz 16-bit PCM mono WAV; each clip is first sent alone
#    (its text becomes the reference every later answer to it must equal); then for each arrival rate r, requests
#    arrive at Poisson times (fixed seed) for --warmup-s + --duration-s, each sent at once whatever the earlier
#    answers (at most --max-in-flight under way; an arrival beyond fails as client_overload); the requests arriving
#    inside the --duration-s window count: ok / wrong / failed, latency from the scheduled arrival (mean and
#    nearest-rank percentiles), ok answers/s and audio seconds/s completed in the window, whether the SLO (p99 <
#    1000 ms and no errors; a mean bound only with --sla-mean-ms) holds, the server's batches from /metrics; a
#    progress line every second and one per point; the headline: the highest arrival rate that meets the SLO;
#    with --accept-differing-text (passed on to serve_load) an answer whose text differs from its clip's reference
#    counts as ok, and is tallied apart as `differs` per point: for random-weight models (the benchmark's 0.6b in
#    bf16), whose greedy text flips when a clip is batched with clips of other lengths (the padding changes
#    reduction orders), so that nearly every mix answer would otherwise be wrong;
#    meanwhile, where nvidia-smi exists, the GPUs are sampled every 100 ms (utilization, SM clock, memory, power);
# 3. stops the server with SIGTERM and requires exit code 0;
# 4. writes OUT: serve_load's result (references, points with per-request rows, headline, settings), the GPU
#    samples summed up per point, the machine (CPU, cores, GPU, driver, CUDA version), the commit, the load average
#    before and after, the server's log and every command line.
# Exit status: serve_load's (non-zero when a request failed or answered another text than its clip's reference, the
# latter unless --accept-differing-text), else 1 when the server did not start or did not exit 0 on SIGTERM; 2 for
# bad usage.
#
# Time: the references (--mix-clips clips sent one at a time) plus about (warm-up + duration + the drain) per point,
# plus the server's start. Needs: steno and serve_load (cmake --build BUILD --target steno serve_load), python3
# (standard library only), bash; curl if present (else bash's /dev/tcp). Nothing beyond loopback.
#
# On the GPU machine, with the package (STENO_GPU_PROGRAMS="steno serve_load" scripts/package-gpu.sh) carried:
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno &&
#   STENO_COMMIT=<commit> bench/mix_load.sh --steno "/tmp/steno/run.sh steno" \
#     --serve-load "/tmp/steno/run.sh serve_load" --out "$OUT/h200-mix.json" \
#     -- --device cuda --lanes 4 --max-batch 16 --max-queue-delay-ms 50 --model DIR
# STENO_COMMIT is recorded instead of git's HEAD (the device machine's copy of .git can be older than its tree).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
script=mix_load.sh
. "$src/bench/load_common.sh"  # the steps the load scripts share
quote_args "$@"
sweep_defaults
out=bench/results/cpu-mix.json
rates="1 2 5 10 20 50 100 200"
sla_mean_ms=
mix_clips=100
max_in_flight=2000
# own_option OPTION VALUE...: this script's own options, which parse_sweep_args tries first.
own_option() {
  case $1 in
    --rates) rates=$2 ;;
    --mix-clips) mix_clips=$2 ;;
    --max-in-flight) max_in_flight=$2 ;;
    *) return 1 ;;
  esac
}
parse_sweep_args "$@"
cd "$src"
need_sweep_programs
for r in ${rates//,/ }; do
  if ! [[ $r =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] || ! awk -v r="$r" 'BEGIN { exit !(r > 0) }'; then
    usage_error "--rates: '$r' is not a positive number"
  fi
done
[[ $max_in_flight =~ ^[1-9][0-9]*$ ]] || usage_error "--max-in-flight must be a positive integer"
points=$(wc -w <<< "${rates//,/ }")
[ "$points" -gt 0 ] || usage_error "--rates is empty"
echo "mix_load.sh: $points points (rates $rates /s), each ${warmup_s} s warm-up + ${duration_s} s window + the" \
     "drain: about $(sweep_estimate_s "$points") s, after the references ($mix_clips clips at most, one at a time)"

raise_nofile  # one descriptor per connection in flight
require_nofile $((max_in_flight + 128)) "--max-in-flight $max_in_flight"
make_work_dir
record_load_before

# 1. The server.
serve_sweep

# 2. The sweep, with the GPUs sampled meanwhile.
sweep_cmd=("${client_cmd[@]}" --open-loop --workload mix --port "$port" --rates "$rates"
           --duration-s "$duration_s" --warmup-s "$warmup_s" --timeout-s "$timeout_s" --sla-p99-ms "$sla_p99_ms"
           --mix-clips "$mix_clips" --max-in-flight "$max_in_flight" --testset "$src/tests/data/testset/espeak"
           --out "$work/sweep.json")
if [ -n "$sla_mean_ms" ]; then sweep_cmd+=(--sla-mean-ms "$sla_mean_ms"); fi
if [ -n "$accept_differing_text" ]; then sweep_cmd+=(--accept-differing-text); fi
run_sweep

# 3. SIGTERM; the server must exit 0.
stop_server
record_load_after

# 4. The result file.
prepare_sweep_result
run_result_python py_result_helpers py_sweep_helpers <<'PY'
sweep = json.load(open(path("sweep.json")))
settings = sweep.get("settings", {})
sla = settings.get("sla", {})
used = settings.get("clips", {}).get("used", {})

result = sweep_result(
    sweep,
    "benchmark protocol workload `mix`: %s clips of the mix's lengths (mean %.2f s) cycled, open loop, "
    "Poisson arrivals at each rate; SLO p99 < %s ms%s and no errors; headline = highest arrival rate that "
    "meets it" % (used.get("clips", "?"), used.get("mean_s", float("nan")), sla.get("p99_ms_below"),
                  "" if sla.get("mean_ms_below") is None else ", mean < %s ms" % sla["mean_ms_below"]),
    "rate_per_s")
write_sweep_result(result)

print("mix_load.sh: %-7s %8s %6s %7s %7s %9s %11s %8s %9s %9s %9s %5s %7s" % (
    "rate/s", "arrived", "ok", "differs", "failed", "offered/s", "requests/s", "audio/s", "mean ms", "p99 ms",
    "max ms", "SLO", "batch"))
for p in sweep.get("points", []):
    m = p.get("server_metrics") or {}
    print("mix_load.sh: %-7g %8d %6d %7d %7d %9.2f %11.2f %8.2f %9.0f %9.0f %9.0f %5s %7s" % (
        p["rate_per_s"], p["requests"], p["ok"], p.get("differs", 0), p["failed"] + p["wrong"], p["offered_per_s"],
        p["requests_per_s"], p["audio_seconds_per_s"], p["latency_ms"]["mean"], p["latency_ms"]["p99"],
        p["latency_ms"]["max"], "met" if p["meets_sla"] else "no",
        "%.2f" % m["mean_batch_size"] if "mean_batch_size" in m else "-"))
h = sweep.get("headline")
print("mix_load.sh: headline: %s" % ("arrival rate %g/s: %.2f ok requests/s, %.2f audio s/s (mean %.0f ms, p99 %.0f "
    "ms)" % (h["rate_per_s"], h["requests_per_s"], h["audio_seconds_per_s"], h["latency_ms"]["mean"],
             h["latency_ms"]["p99"]) if h else "none: no point meets the SLO"))
print("mix_load.sh: wrote %s" % e["LOAD_OUT"])
PY

sweep_verdict
