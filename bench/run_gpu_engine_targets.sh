#!/usr/bin/env bash
# The engine's speed targets (docs/benchmarks.md) in one call on the GPU machine, each judged by
# bench/engine_targets.py:
#   1. bf16 and fp8 arms, alternating, twice each (bench/run_gpu_engine_arms.sh: random 0.6b shapes, each arm's
#      model calibrated in its own precision to 0.4 tokens a frame): end to end at every shape, the offline mix at
#      every batch size and lane count, the encoder and the decoders at 32 x 45 s -> targets.md, targets.json;
#   2. engine_cuda_test: the bundled model's fp8 word error rate against bf16's (BundledCudaFp8), the NeMo
#      reference models' encoder error in each precision, the CUDA f32 transcripts against the CPU's;
#   3. what explains a miss: Nsight Compute's time of each encoder kernel at 32 x 45 s in bf16 and in fp8
#      (bench/profile_gpu_kernels.sh), and the persistent decoder's phase trace at 32 x 45 s ($STENO_TDT_TRACE).
# The other CUDA test programs are bench/run_gpu_cuda_tests.sh's call (the two packages do not fit one call).
#
# Built here, then the call (carry ["gpu-pkg/steno-gpu-targets.tar.xz"]; STENO_GPU_PACKAGE names the package,
# default gpu-pkg/steno-gpu.tar.xz):
#   STENO_GPU_PROGRAMS="steno cuda_engine_bench engine_cuda_test" \
#     STENO_GPU_TESTDATA="nemo-tiny-24 nemo-tiny-25 golden-nemo24 golden-nemo25" \
#     scripts/package-gpu.sh gpu-pkg/steno-gpu-targets.tar.xz
#   tools/train/carry_slim.sh out-gpu-lm                   # `back` after the call (the LM: engine_cuda_test's beam test)
#   STENO_GPU_PACKAGE=gpu-pkg/steno-gpu-targets.tar.xz STENO_COMMIT=<commit> bench/run_gpu_engine_targets.sh "$OUT"
# Results in OUT: targets.md and targets.json (also printed), results.tar.xz (the arms' JSON, the profiles, the
# trace, machine.txt, logs/). Steps run most important first, each within a time limit, so that a step that
# hangs costs only its own figures; the exit status is non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
dest=${1:?usage: bench/run_gpu_engine_targets.sh OUT_DIR}
name=${STENO_TARGETS_NAME:-h200-targets}
work_out=$(mktemp -d)/engine-targets
source bench/gpu_diar_common.sh "$work_out"
mkdir -p "$pkg" && tar xf "${STENO_GPU_PACKAGE:-gpu-pkg/steno-gpu.tar.xz}" -C "$pkg"
engine_bench_setup
# The device machine's copy of .git can be older than the tree it runs: pass STENO_COMMIT.
echo "steno commit: ${STENO_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}" >>"$out/machine.txt"

# 1. The arms (their own tests off: step 2 runs the one test program this package has).
STENO_SKIP_TESTS=1 STENO_ARMS_VAR=STENO_BENCH_DTYPE STENO_ARMS="bf16 fp8" STENO_ARMS_NAME="$name" \
  STENO_ARMS_FILTER='^(end_to_end|offline_mix)/|^encoder/b32x45s|^decoder/(persistent|graph-while)/b32x45s' \
  timeout --kill-after=10 330 bench/run_gpu_engine_arms.sh "$out/arms" >"$out/logs/arms.log" 2>&1 ||
  { echo "arms FAILED (logs/arms.log)"; status=1; }
tar xzf "$out/arms/results.tar.gz" -C "$out/arms" 2>/dev/null && rm -f "$out/arms/results.tar.gz"
python3 bench/engine_targets.py "$out/arms" --name "$name" --out "$out/targets.md" --json "$out/targets.json" ||
  status=1

# 2. The engine's CUDA tests, fp8's accuracy bar among them.
run engine_cuda_test 150 engine_cuda_test

# 3. Per-kernel times of the encoder at 32 x 45 s (fp8: past the model's 240 weight quantizations at load), and
# the persistent decoder's phases, on the arms' models.
for dt in bf16 fp8; do
  skip=0
  [ "$dt" = fp8 ] && skip=240
  echo "== profile-$dt"
  timeout --kill-after=10 90 bench/profile_gpu_kernels.sh --model "$work/p06b-$dt" --dtype "$dt" --skip "$skip" \
    --count 400 --out "$out/prof-$dt.csv" >"$out/logs/profile-$dt.log" 2>&1 ||
    { echo "profile-$dt FAILED"; status=1; }
done
STENO_TDT_TRACE="$out/decoder-trace.txt" run decoder-trace 90 cuda_engine_bench --model="$work/p06b-bf16" \
  --model_name=0.6b --dtype=bf16 --benchmark_filter='^decoder/persistent/b32x45s' --benchmark_repetitions=1 \
  --benchmark_min_time=0.1 --benchmark_out="$out/decoder-trace.json" --benchmark_out_format=json

mkdir -p "$dest"
cp "$out/targets.md" "$out/targets.json" "$dest/" 2>/dev/null
(cd "$(dirname "$out")" && tar cJf "$dest/results.tar.xz" "$(basename "$out")")
exit "$status"
