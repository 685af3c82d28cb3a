#!/usr/bin/env bash
# Every fuzz target built and run briefly, as CI does: each replays its committed corpus and seeds, then fuzzes
# for SECONDS (default 20; scripts/test.sh gives 15) without changing the corpus, as many at once as there are
# cores. Fails when a target does not build or crashes, leaks, hangs (10 s an input) or exceeds 1 GiB. Long runs that grow the corpus:
# fuzz/run.sh TARGET SECONDS.
#   fuzz/smoke.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
targets=(audio_decode multipart kserve_request serve_config safetensors http_transport grpc_request state_dict_pickle checkpoint
  tar_members model_config_yaml token_lm_arpa lexicon)
mkdir -p build-fuzz
# As many targets at once as there are cores (FUZZ_SMOKE_JOBS to say otherwise): each builds single-threaded and
# fuzzes on one core, and CI's two cores halve the smoke run's share of its time.
jobs_max=${FUZZ_SMOKE_JOBS:-$(nproc)}
start=$SECONDS
rm -f build-fuzz/smoke-*.rc
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  echo "fuzz/smoke.sh: $t"
  ( rc=0; fuzz/run.sh "$t" "$seconds" --no-merge >"build-fuzz/smoke-$t.log" 2>&1 || rc=$?
    echo "$rc" >"build-fuzz/smoke-$t.rc" ) &
done
wait
failed=()
for t in "${targets[@]}"; do
  if [ "$(cat "build-fuzz/smoke-$t.rc" 2>/dev/null)" = 0 ]; then
    tail -1 "build-fuzz/smoke-$t.log"
  else
    tail -40 "build-fuzz/smoke-$t.log" >&2
    echo "fuzz/smoke.sh: $t FAILED (log: build-fuzz/smoke-$t.log)" >&2
    failed+=("$t")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz/smoke.sh: failed: ${failed[*]}" >&2; exit 1; }
echo "fuzz/smoke.sh: ${#targets[@]} targets passed in $((SECONDS - start)) s"
