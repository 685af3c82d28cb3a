#!/usr/bin/env bash
# Make the working tree small enough for a training call on the GPU machine, and whole again afterwards. A `run`
# call carries the tree plus the ignored paths it names in at most 64 MiB; the synthesizers' .debs (40 MB), the
# corpus (1.5 MB xz) and the bundled model (18 MB) leave ~5 MB for the rest, so the test data, fuzz corpora, bench
# results and the other models (none of which a training call reads) go out of the tree for the call. MBROLA's and
# Pico's .debs-voices (21 MB) and RHVoice's .debs-rhvoice (36 MB) do not fit beside .debs: a call that needs them
# stages .debs on the machine first (tools/train/README.md, stages 6 and 8), so `out` prints each carried piece's
# size.
#
#   tools/train/carry_slim.sh out [PLACE]     # moves them to PLACE (default ../steno-carry-aside), prints the size
#   tools/train/carry_slim.sh out-gpu [PLACE] # for a call with the GPU package (scripts/package-gpu.sh, ~31 MB):
#                                             # keeps bench's scripts, the ASR and VAD models and the test data the
#                                             # CUDA test programs read
#   tools/train/carry_slim.sh out-gpu-lm [PLACE] # out-gpu keeping the bundled LM, for the call with the smaller
#                                             # targets package (bench/run_gpu_engine_targets.sh), whose
#                                             # engine_cuda_test runs the beam search test; the LM does not fit
#                                             # beside the whole tests package
#   tools/train/carry_slim.sh back [PLACE]    # moves them back (git checkout restores any that PLACE lost)
#
# PLACE must outlive the session's shell (not /tmp of a machine that may be replaced); `back` also works from git
# alone, since every moved path is tracked.
set -euo pipefail
cd "$(dirname "$0")/../.."
paths=(bench tests/data fuzz/corpus fuzz/seeds models/steno-sortformer-small models/silero-vad
       models/steno-tdt-small-en/lm.arpa.gz)
# The bundled model's token LM (4 MB) goes out of out and out-gpu (training does not read it; beside the whole
# CUDA tests package it would pass the limit); out-gpu-lm keeps it for engine_cuda_test's beam search test. The
# bundled model decodes with that LM by default (its config.json), so without it `steno transcribe` / `serve` on the
# bundled model stop naming the missing file: give them `--decoding greedy` in such a call, or carry the LM.
# out-gpu: what the serving benchmarks and the CUDA test programs do not read (the tracked tree is ~85 MB, the
# package ~31 MB). Of tests/data they read the bundled test set, the encoder-graph test's model
# (golden/mel128_local_attn) and the reference conversations (sortformer-tiny/conv*.wav): 63.8 of the 64 MiB in all.
gpu_paths=(bench/results fuzz/corpus fuzz/seeds models/steno-sortformer-small models/steno-tdt-small-en/lm.arpa.gz)
gpu_keep='^tests/data/(testset/|golden/mel128_local_attn/|golden/tokenizer\.model$|sortformer-tiny/conv[0-9]+\.wav$)'
while IFS= read -r f; do gpu_paths+=("$f"); done < <(git ls-files tests/data | grep -Ev "$gpu_keep")
place=${2:-../steno-carry-aside}
case ${1:-} in
  out|out-gpu|out-gpu-lm)
    [ "$1" = out-gpu ] && paths=("${gpu_paths[@]}")
    if [ "$1" = out-gpu-lm ]; then
      paths=()
      for p in "${gpu_paths[@]}"; do [ "$p" = models/steno-tdt-small-en/lm.arpa.gz ] || paths+=("$p"); done
    fi
    for p in "${paths[@]}"; do
      [ -e "$p" ] || continue
      mkdir -p "$place/$(dirname "$p")"
      mv -T "$p" "$place/$p"
    done
    tree_kb=$(du -sk --exclude=.git --exclude='build*' --exclude='.debs*' --exclude=gpu-pkg . | cut -f1)
    carried=(.debs .debs-voices .debs-rhvoice build-data/corpus.txt.xz)
    [ "$1" != out ] && carried=(gpu-pkg)
    sizes=$(for c in "${carried[@]}"; do [ -e "$c" ] && echo "$c $(( $(du -sk "$c" | cut -f1) / 1024 )) MB"; done |
            paste -sd, - | sed 's/,/, /g')
    echo "carry_slim: tree $((tree_kb / 1024)) MB; to carry: $sizes (the tree and the carry within 64 MiB a call)"
    ;;
  back)
    paths+=("${gpu_paths[@]}")
    for p in "${paths[@]}"; do
      # -L too: a moved symbolic link dangles in PLACE (its target stayed), and -e alone would leave it there.
      if { [ -e "$place/$p" ] || [ -L "$place/$p" ]; } && [ ! -e "$p" ] && [ ! -L "$p" ]; then
        mkdir -p "$(dirname "$p")" && mv -T "$place/$p" "$p"
      fi
    done
    # Anything PLACE no longer had comes from git; only what is missing (a checkout of a present path would undo
    # the uncommitted edits in it).
    for p in "${paths[@]}"; do [ -e "$p" ] || git checkout -- "$p" 2>/dev/null || true; done
    [ -d "$place" ] && find "$place" -depth -type d -empty -delete
    git status --short -- "${paths[@]}" | head -5
    echo "carry_slim: tree whole again"
    ;;
  *) sed -n '2,11p' "$0" >&2; exit 2 ;;
esac
