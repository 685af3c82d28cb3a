#!/usr/bin/env bash
# Every fuzz target built and run briefly, as CI does: each replays its committed corpus and seeds, then fuzzes
# for SECONDS (default 20; scripts/test.sh gives 15) without changing the corpus. Fails on the first target that
# does not build or that crashes, leaks, hangs (10 s an input) or exceeds 1 GiB. Long runs that grow the corpus:
# fuzz/run.sh TARGET SECONDS.
#   fuzz/smoke.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
targets=(audio_decode multipart kserve_request serve_config safetensors http_transport grpc_request state_dict_pickle checkpoint
  tar_members model_config_yaml)
mkdir -p build-fuzz
start=$SECONDS
for t in "${targets[@]}"; do
  echo "fuzz/smoke.sh: $t"
  fuzz/run.sh "$t" "$seconds" --no-merge >"build-fuzz/smoke-$t.log" 2>&1 || {
    tail -40 "build-fuzz/smoke-$t.log" >&2
    echo "fuzz/smoke.sh: $t FAILED (log: build-fuzz/smoke-$t.log)" >&2
    exit 1
  }
  tail -1 "build-fuzz/smoke-$t.log"
done
echo "fuzz/smoke.sh: ${#targets[@]} targets passed in $((SECONDS - start)) s"
