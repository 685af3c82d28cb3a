#!/usr/bin/env bash
# The persistent TDT decoder kernel against the graph-while loop, side by side on the GPU machine
# (bench/run_gpu_engine_arms.sh says how it runs and what it writes): $STENO_TDT_LOOP=graph-while and persistent
# over the decoder alone in both loops (the decoder benchmarks pick their loop themselves, so both arms measure
# both: four samples of each), end to end, and the offline mix at batch 128; files
# h200-decoder-persistent-{graph-while,persistent}-{1,2}.json. The CUDA engine tests run first with the default
# loop.
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && bench/run_gpu_decoder_persistent.sh
cd "$(dirname "$0")/.." || exit 1
STENO_ARMS_VAR=STENO_TDT_LOOP STENO_ARMS="graph-while persistent" STENO_ARMS_NAME=h200-decoder-persistent \
  STENO_ARMS_FILTER='^decoder/(persistent|graph-while)/|^end_to_end/|^offline_mix/b128' \
  exec bench/run_gpu_engine_arms.sh "$@"
