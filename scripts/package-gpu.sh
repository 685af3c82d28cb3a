#!/usr/bin/env bash
# Builds steno with the CUDA backend here (sm_90 + PTX) and packs what the GPU machine needs to run it into one
# compressed file: the binaries (steno, the test and benchmark programs) and the shared libraries they use that
# the GPU machine lacks (everything but the C/C++ runtime and CUDA's own libraries, which it has).
#
#   scripts/package-gpu.sh [OUT_FILE]          (default: gpu-pkg/steno-gpu.tar.xz; gpu-pkg/ is git-ignored)
#
# STENO_GPU_PROGRAMS names the programs (build targets) to pack; the default is what GPU work runs: steno, the
# CUDA test programs and the engine benchmark. A run call carries at most 64 MiB with the tree; the tracked tree is
# ~85 MB, so `tools/train/carry_slim.sh out-gpu` first moves out what such a call does not read (to ~28 MB, `back`
# restores it), and the package must stay under ~35 MB: pack only what the call needs.
# On the GPU machine, from the repository root (the carried working tree):
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno
#   /tmp/steno/run.sh steno transcribe --device cuda tests/data/testset/espeak/audio/test-0000009.flac
#   /tmp/steno/run.sh ops_cuda_test
# run.sh puts the carried libraries and CUDA's on the library path, and links this checkout to the absolute path
# the tests were built with (they find tests/data and models/ through it) when that path does not exist there,
# and the packed build test data (converted nemo-tiny and sortformer-tiny models and goldens) to the build
# directory's testdata/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-gpu-pkg/steno-gpu.tar.xz}
build=${STENO_GPU_BUILD:-build-gpu}

# gRPC and FFmpeg are off: the GPU machine has neither, and carrying them (FFmpeg's codec libraries alone are tens
# of MB) is not worth it for engine work.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTENO_WITH_CUDA=ON -DSTENO_WITH_GRPC=OFF \
  -DSTENO_WITH_FFMPEG=OFF >/dev/null
read -r -a targets <<< "${STENO_GPU_PROGRAMS:-steno ops_cuda_test asr_cuda_test engine_cuda_test engine_bench}"
cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
programs=()
for t in "${targets[@]}"; do
  f=$(find "$build/apps" "$build/tests" "$build/bench" -type f -executable -name "$t" | head -1)
  [ -n "$f" ] || { echo "package-gpu: no program $t in $build" >&2; exit 1; }
  programs+=("$f")
done
cp "${programs[@]}" "$stage/bin/"

# The engine tests read the converted nemo-tiny models and NeMo's goldens from $build/testdata, which the
# prepare_nemo_tiny test fixture makes (ctest); make it here if this build never ran ctest, and ship it.
if [ ! -f "$build/testdata/golden-nemo25/golden.safetensors" ]; then
  tests/engine/prepare_nemo_tiny.sh "${PYTHON:-/usr/bin/python3}" "$root" "$build/testdata" >/dev/null
fi
# The diarization tests read the converted sortformer-tiny models and golden set the same way.
if [ ! -f "$build/testdata/golden-sortformer-tiny/golden.safetensors" ]; then
  tests/diar/prepare_sortformer_tiny.sh "${PYTHON:-/usr/bin/python3}" "$root" "$build/testdata" >/dev/null
fi
# STENO_GPU_TESTDATA names the testdata/ entries to pack (default: all of them; none: nothing) when the call's size
# is tight.
mkdir -p "$stage/testdata"
read -r -a testdata <<< "${STENO_GPU_TESTDATA:-$(ls "$build/testdata" | tr '\n' ' ')}"  # one line: read takes one
[ "${testdata[*]}" = none ] && testdata=()  # STENO_GPU_TESTDATA=none: programs that read no test data
for d in "${testdata[@]}"; do cp -r "$build/testdata/$d" "$stage/testdata/"; done
build_abs=$(cd "$build" && pwd)

# Libraries the GPU machine provides itself: the C and C++ runtimes and the CUDA toolkit's.
system_lib='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libnvrtc|libnvJitLink)'
# The libraries steno opens at run time (oneDNN, OpenBLAS: CMake lists them) go too, with what they link.
mapfile -t run_time_libs < "$build/run-time-libraries.txt"
for p in "${programs[@]}" "${run_time_libs[@]}"; do
  ldd "$p" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $system_lib ]] && continue
  cp -L "$path" "$stage/lib/$name"
done
for lib in "${run_time_libs[@]}"; do cp -L "$lib" "$stage/lib/"; done

cat > "$stage/run.sh" <<RUN
#!/usr/bin/env bash
# Runs a packaged steno program: run.sh PROGRAM [ARGS...] (see scripts/package-gpu.sh).
set -euo pipefail
here=\$(cd "\$(dirname "\$0")" && pwd)
if [ ! -e "$root" ]; then mkdir -p "\$(dirname "$root")" && ln -s "\$PWD" "$root"; fi
# ... and the build's test data to where the tests were built to find it.
if [ ! -e "$build_abs/testdata" ]; then mkdir -p "$build_abs" && ln -s "\$here/testdata" "$build_abs/testdata"; fi
export LD_LIBRARY_PATH="\$here/lib:/usr/local/cuda/lib64\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
prog=\$1; shift
exec "\$here/bin/\$prog" "\$@"
RUN
chmod +x "$stage/run.sh"

mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - . | xz -T0 -9 > "$out"
echo "package-gpu: $out ($(du -h "$out" | cut -f1)): ${#programs[@]} programs, $(ls "$stage/lib" | wc -l) libraries"
