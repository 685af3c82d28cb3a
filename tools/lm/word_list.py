#!/usr/bin/env python3
"""A model's lexicon (steno's asr/lexicon.h: beam search's unknown-word penalty): every word of the corpus's train
split, one per line in sorted order, gzip when OUT ends in .gz (byte for byte the same on every run).

  /usr/bin/python3 tools/lm/word_list.py --corpus build-data/corpus.txt --out models/steno-tdt-small-en/words.txt.gz

Only the train split is read, so that validation and test sentences add no word; the words are the training
transcripts' (tools/data/make_dataset.py: the spoken text less its commas, full stops and question marks) in the
normalisation the word error rate is measured in. They are the words make_dataset.py's --in-vocab allows.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "data"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "train"))

from make_dataset import read_corpus, transcript  # noqa: E402
from token_lm import open_text_for_writing  # noqa: E402
from wer import normalize  # noqa: E402


def word_list(rows):
    """The sorted words of the train split's transcripts."""
    return sorted({w for split, _, speak in rows if split == "train" for w in normalize(transcript(speak)).split()})


def read_words(path):
    """A word list as written here (or any: one word a line, .gz allowed), blank lines skipped."""
    import gzip
    with (gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz") else open(path, encoding="utf-8")) as f:
        return [w for w in (line.rstrip("\r\n") for line in f) if w]


def write_words(words, out):
    with open_text_for_writing(out) as f:
        f.writelines(w + "\n" for w in words)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="tools/data/build_corpus.py's corpus (.xz allowed)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    words = word_list(read_corpus(args.corpus))
    write_words(words, args.out)
    print(f"word_list: {len(words):,} words -> {args.out} ({os.path.getsize(args.out):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
