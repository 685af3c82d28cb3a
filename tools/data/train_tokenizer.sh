#!/bin/sh
# Train the SentencePiece BPE tokenizer of the bundled model on the TRAIN sentences of the corpus only, with
# Debian's spm_train (package sentencepiece), the way NeMo's process_asr_text_tokenizer.py does it: plain BPE, pieces
# with U+2581, <unk> = 0, no BOS/EOS/PAD, character coverage 1.0 (all 27 symbols of the normalised text:
# a-z and the apostrophe).
#
#   tools/data/train_tokenizer.sh [CORPUS] [OUT_DIR] [VOCAB_SIZE]
#   defaults: build-data/corpus.txt build-data/tokenizer 256
#
# Writes OUT_DIR/tokenizer.model, tokenizer.vocab, vocab.txt (NeMo's format: '##' marks word-inner pieces) and
# train_text.txt, then checks that every train/dev/test transcript encodes without <unk> and decodes back exactly.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CORPUS=${1:-$ROOT/build-data/corpus.txt}
OUT=${2:-$ROOT/build-data/tokenizer}
VOCAB=${3:-256}
command -v spm_train >/dev/null || { echo "spm_train not found: apt-get install sentencepiece" >&2; exit 1; }
mkdir -p "$OUT"
# transcript = speak form without , . ? ! (see textnorm.py)
awk -F'\t' '$1 == "train" { print $3 }' "$CORPUS" | sed 's/[,.?!]//g' > "$OUT/train_text.txt"
awk -F'\t' '{ print $3 }' "$CORPUS" | sed 's/[,.?!]//g' > "$OUT/all_text.txt"
if grep -q "[^a-z' ]" "$OUT/all_text.txt"; then
  echo "corpus has characters outside a-z, apostrophe and space" >&2
  exit 1
fi
# relative paths: spm_train records them in the model, which then does not depend on where it was made
(cd "$OUT" && spm_train --input=train_text.txt --model_prefix=tokenizer --vocab_size="$VOCAB" \
  --model_type=bpe --character_coverage=1.0 --unk_id=0 --bos_id=-1 --eos_id=-1 --pad_id=-1 \
  --input_sentence_size=0 --shuffle_input_sentence=false --num_threads=1 --hard_vocab_limit=true \
  > spm_train.log 2>&1) || { tail -20 "$OUT/spm_train.log" >&2; exit 1; }
# NeMo's vocab.txt: the pieces after <unk>, '▁x' -> 'x', 'x' -> '##x'
tail -n +2 "$OUT/tokenizer.vocab" | cut -f1 | sed -e 's/^▁\(..*\)$/\1/' -e t -e '/^▁$/b' -e 's/^/##/' \
  > "$OUT/vocab.txt"

# checks: no <unk> (id 0) anywhere, exact round trip
spm_encode --model="$OUT/tokenizer.model" --output_format=id < "$OUT/all_text.txt" > "$OUT/.ids"
if grep -qw 0 "$OUT/.ids"; then
  echo "some transcripts encode to <unk>" >&2
  exit 1
fi
spm_decode --model="$OUT/tokenizer.model" --input_format=id < "$OUT/.ids" | cmp -s - "$OUT/all_text.txt" \
  || { echo "encode/decode round trip differs" >&2; exit 1; }
pieces=$(wc -l < "$OUT/tokenizer.vocab")
tokens=$(wc -w < "$OUT/.ids")
words=$(wc -w < "$OUT/all_text.txt")
rm -f "$OUT/.ids" "$OUT/all_text.txt"
echo "$OUT/tokenizer.model: $pieces pieces (bpe), $(wc -l < "$OUT/train_text.txt") training sentences;"
echo "all $(wc -l < "$CORPUS") corpus transcripts encode without <unk> and decode back exactly;"
echo "$(awk -v t="$tokens" -v w="$words" 'BEGIN { printf "%.2f", t / w }') tokens per word"
