#!/usr/bin/env bash
# Builds a libFuzzer target with clang (address and undefined-behaviour sanitizers) and runs it on its corpus.
#   fuzz/run.sh TARGET [SECONDS]      (default 600; TARGET: state_dict_pickle, checkpoint, tar_members,
#                                      model_config_yaml)
# The corpus is fuzz/corpus/TARGET, with the target's test fixtures as seeds; inputs that reach new code are merged
# back into it at the end (-merge=1: only what adds coverage), and any crash is left as fuzz/crash-* with the message.
# Needs clang and its runtime (Debian: clang-14 libclang-rt-14-dev); builds in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: fuzz/run.sh TARGET [SECONDS]}
seconds=${2:-600}
out=build-fuzz
mkdir -p "$out"
libs=()
case $target in
  state_dict_pickle) sources=(src/nemo/state_dict_pickle.cc src/core/error.cc) seeds=tests/data/nemo-pickles ;;
  checkpoint) sources=(src/nemo/checkpoint.cc src/nemo/stored_zip.cc src/nemo/state_dict_pickle.cc src/core/error.cc)
    seeds=tests/data/nemo-pickles ;;
  tar_members) sources=(src/nemo/tar_members.cc src/core/error.cc) seeds=fuzz/seeds/tar_members ;;
  model_config_yaml) sources=(src/nemo/yaml_value.cc src/nemo/import_config.cc src/nemo/python_values.cc
    src/nemo/python_json.cc src/core/error.cc) seeds=fuzz/seeds/model_config_yaml libs=(-lyaml-cpp) ;;
  *) echo "fuzz/run.sh: unknown target $target" >&2; exit 2 ;;
esac
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -Isrc \
  "fuzz/${target}_fuzz.cc" "${sources[@]}" -lfmt -lz "${libs[@]}" -o "$out/${target}_fuzz"
corpus=fuzz/corpus/$target
mkdir -p "$corpus" "$out/new-$target"
"$out/${target}_fuzz" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=1024 -timeout=10 \
  -artifact_prefix=fuzz/ "$out/new-$target" "$corpus" "$seeds"
"$out/${target}_fuzz" -merge=1 "$corpus" "$out/new-$target"
echo "fuzz/run.sh: $target ran ${seconds} s without a crash; corpus: $(ls "$corpus" | wc -l) inputs"
