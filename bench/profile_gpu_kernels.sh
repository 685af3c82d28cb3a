#!/usr/bin/env bash
# Per-kernel GPU durations of one cuda_engine_bench benchmark through Nsight Compute (ncu, which the GPU machine's
# CUDA toolkit has; nsys it has not): the first --count kernels launched (default 260: at 32 x 45 s with the 0.6b
# model, the front end, the subsampling and about two encoder layers), each with its duration, grid and block, in
# launch order; then the time per kernel name, summed. How the engine benchmark found the encoder's slow kernels:
# the subsampling's direct conv at 29.5 ms, attention's products on sm75 "align1" kernels.
#   bench/profile_gpu_kernels.sh --model DIR [--filter '^encoder/b32x45s'] [--count 260] [--skip 0]
#                                [--dtype bf16|fp8] [--out FILE.csv]
# --skip: kernels launched before the first profiled one (fp8: the model's 240 weight quantizations at load).
#   bench/profile_gpu_kernels.sh --summarize FILE.csv     (the tables again from a saved CSV; no GPU needed)
# On the GPU machine with the package unpacked in $STENO_PKG (/tmp/steno) and the 0.6b model made as
# bench/run_gpu_engine_bench.sh makes it (/tmp/steno-bench/p06b). ncu replays every kernel it profiles: expect
# about 20 s for 260 kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=${STENO_PKG:-/tmp/steno}
ncu=${NCU:-/usr/local/cuda/bin/ncu}
filter='^encoder/b32x45s'
count=260
skip=0
dtype=bf16
model=
out=/tmp/steno-kernels.csv
summarize=
while [ $# -gt 0 ]; do
  case $1 in
    --model) model=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --summarize) summarize=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "profile_gpu_kernels.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [ -z "$summarize" ]; then
  [ -n "$model" ] || { echo "profile_gpu_kernels.sh: --model DIR is required" >&2; exit 2; }
  [ -x "$ncu" ] || { echo "profile_gpu_kernels.sh: no Nsight Compute at $ncu (set NCU)" >&2; exit 1; }
  "$ncu" --target-processes all --kernel-name-base demangled --launch-skip "$skip" --launch-count "$count" \
    --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size --csv --page raw \
    "$pkg/run.sh" cuda_engine_bench --model="$model" --dtype="$dtype" --benchmark_filter="$filter" \
    --benchmark_min_time=0.01 --benchmark_repetitions=1 >"$out" 2>"$out.log"
  summarize=$out
fi

python3 - "$summarize" <<'PY'
import collections, csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
hdr = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if hdr is None:
    sys.exit("no kernel rows in %s (did the benchmark filter match?)" % sys.argv[1])
h = rows[hdr]
name, ns, grid, block = (h.index(c) for c in ("Kernel Name", "gpu__time_duration.sum", "launch__grid_size",
                                               "launch__block_size"))
kernels = [(float(r[ns].replace(",", "")), r[grid], r[block], r[name]) for r in rows[hdr + 2:]]
print("launch order: µs, grid, block, kernel")
for t, g, b, k in kernels:
    print("%10.1f %9s %4s  %s" % (t / 1e3, g, b, k[:140]))
total = collections.defaultdict(lambda: [0.0, 0])
for t, _, _, k in kernels:
    total[k.split("(")[0][:100]][0] += t
    total[k.split("(")[0][:100]][1] += 1
print("\nby kernel: ms, calls, kernel (of %.1f ms in %d kernels)" % (sum(t for t, *_ in kernels) / 1e6, len(kernels)))
for k, (t, n) in sorted(total.items(), key=lambda kv: -kv[1][0]):
    print("%9.2f %5d  %s" % (t / 1e6, n, k))
PY
