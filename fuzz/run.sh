#!/usr/bin/env bash
# Builds a libFuzzer target with clang (address and undefined-behaviour sanitizers) and runs it on its corpus.
#   fuzz/run.sh TARGET [SECONDS] [--no-merge]   (default 600; TARGET: state_dict_pickle, checkpoint, tar_members,
#                                      model_config_yaml, audio_decode, multipart, kserve_request, serve_config,
#                                      safetensors, http_transport, grpc_request, token_lm_arpa, lexicon; fuzz/smoke.sh runs them
#                                      all briefly, as CI does)
# The corpus is fuzz/corpus/TARGET, with the target's test fixtures as seeds; inputs that reach new code are merged
# back into it at the end (-merge=1: only what adds coverage; --no-merge leaves the corpus as it is), and any crash is
# left as fuzz/crash-* with the message (the exit status is then non-zero). A clean run with the merge adds a line
# to fuzz/runs.tsv (date, target, seconds, commit): the record of how long each target has been fuzzed.
# Needs clang and its runtime (Debian: clang-14 libclang-rt-14-dev); builds in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: fuzz/run.sh TARGET [SECONDS] [--no-merge]}
seconds=${2:-600}
merge=1
[ "${3:-}" = --no-merge ] && merge=0
out=build-fuzz
mkdir -p "$out"
libs=() defines=()
# What the KServe wires share: the tensors, and what each model accepts of a request (serve/frontend/kserve_model.h).
kserve_frontend=(src/serve/frontend/infer_tensors.cc src/serve/frontend/kserve_model.cc
  src/serve/frontend/diarization_formats.cc src/serve/frontend/speaker_transcript.cc src/diar/diarization_text.cc
  src/diar/speaker_attribution.cc src/serve/service.cc src/core/error.cc)
case $target in
  state_dict_pickle) sources=(src/nemo/state_dict_pickle.cc src/core/error.cc) seeds=tests/data/nemo-pickles ;;
  checkpoint) sources=(src/nemo/checkpoint.cc src/nemo/stored_zip.cc src/nemo/state_dict_pickle.cc src/core/error.cc)
    seeds=tests/data/nemo-pickles ;;
  tar_members) sources=(src/nemo/tar_members.cc src/core/error.cc) seeds=fuzz/seeds/tar_members ;;
  model_config_yaml) sources=(src/nemo/yaml_value.cc src/nemo/import_config.cc src/nemo/python_values.cc
    src/nemo/python_json.cc src/core/error.cc) seeds=fuzz/seeds/model_config_yaml libs=(-lyaml-cpp) ;;
  audio_decode) sources=(src/audio/*.cc src/core/error.cc src/core/logging.cc)
    seeds=fuzz/seeds/audio_decode libs=(-lsndfile -lsoxr -lmpg123 -lvorbis -logg -lspdlog)
    # FFmpeg's MP4 and Matroska paths too where its libraries are installed, as CMake's STENO_WITH_FFMPEG=AUTO does.
    ffmpeg=(libavformat libavcodec libswresample libavutil)
    if pkg-config --exists "${ffmpeg[@]}"; then  # opened at run time (src/audio/ffmpeg_api.h), by soname
      defines=(-DSTENO_HAVE_FFMPEG=1)
      for l in "${ffmpeg[@]}"; do
        so=$(objdump -p "$(pkg-config --variable=libdir "$l")/$l.so" | awk '/SONAME/ {print $2}')
        name=${l#lib}
        defines+=("-DSTENO_${name^^}_LIBRARY=\"$so\"")
      done
      sources+=(src/core/run_time_library.cc)
      libs+=(-ldl)
    else
      defines=(-DSTENO_HAVE_FFMPEG=0)
      kept=()
      for s in "${sources[@]}"; do [[ $s = src/audio/ffmpeg_* ]] || kept+=("$s"); done
      sources=("${kept[@]}")
    fi ;;
  multipart) sources=(src/serve/http/multipart.cc src/serve/http/header_value.cc src/core/error.cc)
    seeds=fuzz/seeds/multipart ;;
  kserve_request) sources=(src/serve/http/kserve_tensors.cc src/serve/http/message.cc "${kserve_frontend[@]}")
    seeds=fuzz/seeds/kserve_request ;;
  serve_config) sources=(src/serve/config.cc src/serve/options.cc src/vad/vad_mode.cc src/core/device.cc
    src/core/dtype.cc src/core/cuda/cuda_stub.cc src/core/error.cc) seeds=fuzz/seeds/serve_config ;;
  safetensors) sources=(src/core/safetensors.cc src/core/tensor.cc src/core/dtype.cc src/core/device.cc
    src/core/allocator.cc src/core/cuda/cuda_stub.cc src/core/error.cc) seeds=fuzz/seeds/safetensors ;;
  http_transport) sources=(src/serve/http/listener.cc src/serve/http/connection.cc src/serve/http/body_spool.cc
    src/serve/http/message.cc src/serve/http/errors.cc src/serve/service.cc src/core/error.cc src/core/logging.cc)
    seeds=fuzz/seeds/http_transport libs=(-lspdlog -lpthread) ;;
  grpc_request) sources=(src/serve/grpc/tensor_codec.cc "$out/proto/grpc_service.pb.cc" "${kserve_frontend[@]}")
    seeds=fuzz/seeds/grpc_request libs=(-lprotobuf) proto=1 ;;
  token_lm_arpa) sources=(src/asr/token_lm.cc src/asr/gzip_text.cc src/core/error.cc) seeds=fuzz/seeds/token_lm_arpa ;;
  lexicon) sources=(src/asr/lexicon.cc src/asr/gzip_text.cc src/core/error.cc) seeds=fuzz/seeds/lexicon ;;
  *) echo "fuzz/run.sh: unknown target $target" >&2; exit 2 ;;
esac
if [ "${proto:-0}" = 1 ]; then  # the KServe messages, generated as the build does (protoc from protobuf-compiler)
  mkdir -p "$out/proto"
  protoc -Iproto --cpp_out="$out/proto" proto/grpc_service.proto
fi
clang++ -std=c++20 -O1 -gline-tables-only -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -Isrc -I"$out/proto" \
  "${defines[@]}" "fuzz/${target}_fuzz.cc" "${sources[@]}" -lfmt -lz "${libs[@]}" -o "$out/${target}_fuzz"
corpus=fuzz/corpus/$target
mkdir -p "$corpus" "$out/new-$target"
"$out/${target}_fuzz" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=1024 -timeout=10 \
  -artifact_prefix=fuzz/ "$out/new-$target" "$corpus" "$seeds"
if [ "$merge" = 1 ]; then
  "$out/${target}_fuzz" -merge=1 "$corpus" "$out/new-$target"
  # The record of fuzzing time per target (issue: each target >= 30 minutes in all), one line per clean run.
  printf '%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "$seconds" "$(git rev-parse --short HEAD 2>/dev/null || echo -)" \
    >>fuzz/runs.tsv
fi
echo "fuzz/run.sh: $target ran ${seconds} s without a crash; corpus: $(ls "$corpus" | wc -l) inputs" \
  "$([ "$merge" = 1 ] || echo "(not merged: --no-merge)")"
