#!/usr/bin/env bash
# The encoder's fused glue (steno/ops/fused.h) against the plain ops, side by side on the GPU machine
# (bench/run_gpu_engine_arms.sh says how it runs and what it writes): $STENO_FUSED_OPS=0 and 1 over the audio
# upload (pageable and staged), features, encoder, the encoder's time by op, the decoder's graph-while loop, end
# to end, and the offline mix at batch 128; files h200-fusions-{0,1}-{1,2}.json.
#   mkdir -p /tmp/steno && tar xf gpu-pkg/steno-gpu.tar.xz -C /tmp/steno && bench/run_gpu_engine_fusions.sh
cd "$(dirname "$0")/.." || exit 1
STENO_ARMS_VAR=STENO_FUSED_OPS STENO_ARMS="0 1" STENO_ARMS_NAME=h200-fusions \
  STENO_ARMS_FILTER='^(upload|features|encoder|encoder_ops|end_to_end)/|^decoder/graph-while/|^offline_mix/b128' \
  exec bench/run_gpu_engine_arms.sh "$@"
