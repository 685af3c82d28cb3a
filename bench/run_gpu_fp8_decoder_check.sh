#!/usr/bin/env bash
# Why the FP8 arm's decoder took 127 ms at 32 x 45 s against bf16's 13 ms (bench/results/h200-targets): is it the
# precision (something in the FP8 encoder path gives some rows an output the decoder loops on), or the model (the
# arm's model is calibrated with the encoder in FP8, so its joint differs from the bf16 arm's)? One call on the
# GPU machine with the targets package (carry ["gpu-pkg/steno-gpu-targets.tar.xz"]):
#   STENO_GPU_PACKAGE=gpu-pkg/steno-gpu-targets.tar.xz bench/run_gpu_fp8_decoder_check.sh "$OUT"
# 1. the persistent decoder at 32 x 45 s and the whole path at 8 x 45 s for each precision with each arm's model,
#    with the decoder's phase trace (its `runs` column: the loop's iterations, i.e. the longest row's steps);
# 2. the 32 clips of that shape as WAV files, transcribed by `steno transcribe` in one batch and one at a time,
#    in fp8 and bf16 with the FP8 arm's model: which clips, and whether the batch matters (clips.txt).
# Results in OUT: clips.txt, results.tar.xz (the benchmarks' JSON, the traces, the transcripts, logs/).
set -uo pipefail
cd "$(dirname "$0")/.."
dest=${1:?usage: bench/run_gpu_fp8_decoder_check.sh OUT_DIR}
source bench/gpu_diar_common.sh "$dest"
mkdir -p "$pkg" && tar xf "${STENO_GPU_PACKAGE:-gpu-pkg/steno-gpu-targets.tar.xz}" -C "$pkg"
engine_bench_setup
random_06b "$work" fp8; m8=$model06
random_06b "$work" bf16; m16=$model06

for dt in fp8 bf16; do
  for m in "$m8" "$m16"; do
    tag=$dt-on-$(basename "$m")
    STENO_TDT_TRACE="$out/trace-$tag.txt" run "bench-$tag" 90 cuda_engine_bench --model="$m" --model_name=0.6b \
      --dtype="$dt" --benchmark_filter='^decoder/persistent/b32x45s|^end_to_end/b8x45s' --benchmark_repetitions=1 \
      --benchmark_min_time=0.1 --benchmark_out="$out/bench-$tag.json" --benchmark_out_format=json
    grep -E "^(decoder|end_to_end)/" "$out/logs/bench-$tag.log" | sed 's/  */ /g'
    echo "-- trace $tag" && cat "$out/trace-$tag.txt" 2>/dev/null
  done
done

# The shape's clips: clip i = stream[(i * 7 s + k) mod S] (cuda_engine_bench's rule).
clips=$work/clips-b32x45s
python3 - "$work/workload" "$clips" <<'EOF'
import json, os, sys, wave
import numpy as np
src, dst = sys.argv[1], sys.argv[2]
meta = json.load(open(os.path.join(src, "workload.json")))
s = np.fromfile(os.path.join(src, meta["stream"]), dtype="<f4")
rate, off = meta["sample_rate"], meta["clip_offset_samples"]
os.makedirs(dst, exist_ok=True)
n = 45 * rate
for i in range(32):
    x = s[(i * off + np.arange(n)) % len(s)]
    with wave.open(os.path.join(dst, f"clip{i:02d}.wav"), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(rate)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())
EOF
for dt in fp8 bf16; do
  for b in 32 1; do
    echo "== transcribe-$dt-b$b"
    timeout --kill-after=10 120 "$pkg/run.sh" steno transcribe --model "$m8" --device cuda --dtype "$dt" \
      --batch-size "$b" -f json "$clips"/clip*.wav >"$out/transcribe-$dt-b$b.json" \
      2>"$out/logs/transcribe-$dt-b$b.log" || { echo "transcribe-$dt-b$b FAILED"; status=1; }
  done
done
python3 - "$out" <<'EOF' | tee "$out/clips.txt"
import json, os, sys
out = sys.argv[1]
def load(name):  # {clip file name: text}
    with open(os.path.join(out, name)) as f:
        return {os.path.basename(r["file"]): r["text"] for r in json.load(f)["files"]}
runs = {n: load(f"transcribe-{n}.json") for n in ("fp8-b32", "fp8-b1", "bf16-b32", "bf16-b1")}
names = sorted(set().union(*runs.values()))
print("clip  " + "  ".join(f"{n:>9}" for n in runs), "(words)")
for c in names:
    print(c, "  ".join(f"{len(runs[n].get(c, '').split()):9d}" for n in runs),
          "" if runs["fp8-b32"].get(c) == runs["fp8-b1"].get(c) else " fp8 batch != alone")
EOF
# A call brings back 8 files at most: everything but the summary in one archive.
(cd "$out" && tar cJf results.tar.xz --remove-files -- *.json trace-*.txt logs machine.txt 2>/dev/null)
exit $status
